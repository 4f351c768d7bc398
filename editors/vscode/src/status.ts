// What the status bar item says: the model's state (gdg/status and the load's
// work-done progress), the active document's last suggestion (gdg/suggestion:
// latency, rung, a warning when it carries no guarantee) and what the extension
// holds back (snoozed, manual). Pure, unit-tested.

export type ModelState = "idle" | "loading" | "ready" | "failed";

/** The payload of the gdg/status notification. */
export interface ModelStatus {
  state: ModelState;
  message?: string | null;
  model?: string | null;
  device?: string | null;
  loadMs?: number | null;
  /** How far the model load is (while loading), when the server knows. */
  percentage?: number | null;
}

/** The payload of the gdg/suggestion notification (the fields the status bar uses). */
export interface SuggestionInfo {
  uri?: string;
  text?: string;
  rung?: string | null;
  guaranteed?: boolean;
  /** Reference positions of the text no Γ slot covered (why it is not guaranteed). */
  openPositions?: string[];
  stopReason?: string | null;
  reason?: string | null;
  tokens?: number;
  language?: string;
  constraint?: string;
  gammaSize?: number;
  timingsMs?: { total?: number; [phase: string]: number | undefined };
  /** Why it is not guaranteed, in one line (null when it is). */
  notGuaranteedBecause?: string | null;
  /** The served item's id (its accept command's argument). */
  id?: string | null;
  /** Every candidate served, in the order served, each with its own label. */
  candidates?: CandidateInfo[];
  /** How the search for gdg.candidates went. */
  alternatives?: AlternativesInfo;
  /** "alternatives": the others of a suggestion shown, decoded after it. */
  update?: string;
}

/** One served candidate of a gdg/suggestion. */
export interface CandidateInfo {
  id?: string;
  text?: string;
  guaranteed?: boolean;
  notGuaranteedBecause?: string | null;
}

/** gdg/suggestion's `alternatives`: how many were wanted and found, why fewer, whether more are coming. */
export interface AlternativesInfo {
  wanted?: number;
  found?: number;
  cut?: string | null;
  pending?: boolean;
  /** The document shows something else by now: they are for a suggestion gone. */
  stale?: boolean;
}

/** The answer to gdg/sqlSource: which database a SQL file's names come from. */
export interface SqlSourceInfo {
  label: string;
  rule?: string;
  dialect?: string;
  description?: string;
  tables?: number;
  problems?: string[];
}

/**
 * Whether to ask for ghost text again after a gdg/status: the model has just become ready. An
 * ask made while it loaded was answered empty when its budget ran out first, and VS Code asks
 * again only at the next edit: without this the user would see nothing until they type.
 */
export function askAgainWhenReady(previous: ModelStatus | undefined, next: ModelStatus): boolean {
  return next.state === "ready" && previous?.state !== "ready";
}

/** The data source as the status bar shows it: "billing" for "folder billing". */
export function shortSqlSource(source: SqlSourceInfo): string {
  return source.label.replace(/^folder /, "").replace(/ \(gdg\.sql\.sources\[\d+\]\)$/, "");
}

/** A $/progress value of the model load (LSP work-done progress). */
export interface LoadProgress {
  kind: "begin" | "report" | "end";
  message?: string;
  percentage?: number;
}

/**
 * The model's state with a work-done progress value of its load folded in: the status item
 * shows the load's percentage from the first message on. The end changes nothing: the server's
 * gdg/status says ready or failed.
 */
export function withLoadProgress(model: ModelStatus | undefined, progress: LoadProgress): ModelStatus {
  const base: ModelStatus = model ?? { state: "loading" };
  if (progress.kind === "end" || base.state === "ready" || base.state === "failed") {
    return base;
  }
  return {
    ...base,
    state: "loading",
    message: progress.message ?? base.message,
    percentage: typeof progress.percentage === "number" ? progress.percentage : base.percentage,
  };
}

/** Where the client is, before the server says anything. */
export type ClientPhase = "starting" | "running" | "stopped" | "not-found";

/** A word on what the extension holds back (gate.ts): "snoozed until 14:05", "manual", "off for sql". */
export interface GateNotice {
  label: string;
  detail: string;
}

export interface StatusView {
  text: string;
  tooltip: string;
  severity: "normal" | "warning" | "error";
}

export function formatLatency(ms: number | undefined | null): string {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) {
    return "?";
  }
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  return `${(ms / 1000).toFixed(1)} s`;
}

function present(value: string | null | undefined): value is string {
  return typeof value === "string" && value !== "";
}

export function formatStatus(
  phase: ClientPhase,
  model: ModelStatus | undefined,
  suggestion: SuggestionInfo | undefined,
  problem?: string,
  sqlSource?: SqlSourceInfo,
  gate?: GateNotice,
): StatusView {
  const view = withGate(formatModelStatus(phase, model, suggestion, problem), phase, gate);
  if (!sqlSource || phase !== "running") {
    return view;
  }
  const lines = [
    `SQL data source: ${sqlSource.description ?? sqlSource.label}` +
      (typeof sqlSource.tables === "number" ? `, ${sqlSource.tables} tables` : ""),
    ...(sqlSource.problems ?? []).map((p) => `  ${p}`),
    "Change it: “gdg-lsp: Choose the SQL Data Source for This File”.",
  ];
  const warn = (sqlSource.problems ?? []).length > 0 && view.severity === "normal";
  return {
    text: `${view.text} · $(database) ${shortSqlSource(sqlSource)}`,
    tooltip: `${view.tooltip}\n${lines.join("\n")}`,
    severity: warn ? "warning" : view.severity,
  };
}

function withGate(view: StatusView, phase: ClientPhase, gate: GateNotice | undefined): StatusView {
  if (!gate || phase !== "running") {
    return view;
  }
  return { ...view, text: `${view.text} · $(bell-slash) ${gate.label}`, tooltip: `${view.tooltip}\n${gate.detail}` };
}

/** Why a suggestion carries no guarantee, in the words of the status item's tooltip: the server's own line when it sent one. */
export function unguaranteedReason(suggestion: SuggestionInfo): string {
  if (present(suggestion.notGuaranteedBecause)) {
    return `Not guaranteed: ${suggestion.notGuaranteedBecause}.`;
  }
  const open = suggestion.openPositions ?? [];
  const rung = present(suggestion.rung) ? suggestion.rung : "no rung";
  return open.length > 0
    ? `Not guaranteed: no name in scope vouches for ${open.slice(0, 3).join(", ")}${open.length > 3 ? ", …" : ""} (rung ${rung}).`
    : `Not guaranteed: rung ${rung} does not hold every name to the names in scope.`;
}

/**
 * The label of the served item `id` (alternatives each have their own): whether it is guaranteed
 * and, when not, the reason to show beside it; undefined when the suggestion does not name it.
 */
export function itemLabel(suggestion: SuggestionInfo | undefined, id: string | undefined): { guaranteed: boolean; reason?: string } | undefined {
  if (!suggestion || id === undefined) {
    return undefined;
  }
  const candidate = (suggestion.candidates ?? []).find((c) => c.id === id);
  if (candidate) {
    return candidate.guaranteed === false
      ? {
          guaranteed: false,
          reason: unguaranteedReason({
            ...suggestion,
            notGuaranteedBecause: present(candidate.notGuaranteedBecause) ? candidate.notGuaranteedBecause : suggestion.notGuaranteedBecause,
          }),
        }
      : { guaranteed: true };
  }
  if (suggestion.id === id) {
    return isUnguaranteed(suggestion) ? { guaranteed: false, reason: unguaranteedReason(suggestion) } : { guaranteed: true };
  }
  return undefined;
}

/** The alternatives of a suggestion when more than one was asked for (gdg.candidates), else undefined. */
export function alternativesOf(suggestion: SuggestionInfo | undefined): Required<Omit<AlternativesInfo, "cut">> & { cut?: string } | undefined {
  const a = suggestion?.alternatives;
  if (!a || typeof a.wanted !== "number" || a.wanted <= 1) {
    return undefined;
  }
  return {
    wanted: a.wanted,
    found: a.found ?? 0,
    pending: a.pending === true,
    stale: a.stale === true,
    ...(present(a.cut) ? { cut: a.cut } : {}),
  };
}

const CUT_WORDS: Record<string, string> = {
  time: "by the time budget (gdg.timeoutMs)",
  cancelled: "by a newer request",
  attempts: "because the model gave no other distinct one",
};

/** The alternatives in a line: being decoded, all there, or cut and why. */
export function alternativesLine(suggestion: SuggestionInfo | undefined): string | undefined {
  const a = alternativesOf(suggestion);
  if (!a) {
    return undefined;
  }
  if (a.pending) {
    return `Alternatives: ${a.found} of ${a.wanted}, the others being decoded (Alt+] shows them when they come).`;
  }
  if (a.cut !== undefined && a.found < a.wanted) {
    return `Alternatives: ${a.found} of ${a.wanted}: the others were cut ${CUT_WORDS[a.cut] ?? a.cut}.`;
  }
  return `Alternatives: ${a.found} of ${a.wanted} (Alt+] / Alt+[).`;
}

/** A suggestion that was shown (it has text) without the guarantee that every name exists. */
export function isUnguaranteed(suggestion: SuggestionInfo | undefined): boolean {
  return suggestion !== undefined && present(suggestion.text) && suggestion.guaranteed === false;
}

function formatModelStatus(
  phase: ClientPhase,
  model: ModelStatus | undefined,
  suggestion: SuggestionInfo | undefined,
  problem?: string,
): StatusView {
  if (phase === "not-found") {
    return { text: "$(error) gdg-lsp not found", tooltip: problem ?? "gdg-lsp was not found", severity: "error" };
  }
  if (phase === "stopped") {
    return {
      text: "$(debug-stop) gdg stopped",
      tooltip: problem ?? "The gdg-lsp server is not running. Run “gdg-lsp: Restart the Server”.",
      severity: "warning",
    };
  }
  const state = model?.state ?? "idle";
  if (phase === "starting" || state === "idle") {
    return { text: "$(sync~spin) gdg starting", tooltip: "Starting gdg-lsp…", severity: "normal" };
  }
  if (state === "loading") {
    const what = present(model?.message) ? model!.message! : "loading the model";
    const pct = typeof model?.percentage === "number" ? ` ${Math.round(model.percentage)}%` : "";
    return { text: `$(sync~spin) gdg loading${pct}`, tooltip: `gdg-lsp: ${what}`, severity: "normal" };
  }
  if (state === "failed") {
    const why = present(model?.message) ? model!.message! : "the model could not be loaded";
    return {
      text: "$(error) gdg failed",
      tooltip: `gdg-lsp: ${why}. Names in scope are still offered as completion items. Check gdg.model and gdg.device, then the logs.`,
      severity: "error",
    };
  }
  const lines: string[] = [];
  if (present(model?.model)) {
    const loaded = typeof model?.loadMs === "number" ? `, loaded in ${formatLatency(model.loadMs)}` : "";
    lines.push(`Model: ${model!.model} on ${model?.device ?? "?"}${loaded}`);
  }
  if (!suggestion) {
    lines.push("No suggestion yet.");
    return { text: "$(check) gdg ready", tooltip: lines.join("\n"), severity: "normal" };
  }
  const latency = formatLatency(suggestion.timingsMs?.total);
  const rung = present(suggestion.rung) ? suggestion.rung : "no rung";
  const guarantee = suggestion.guaranteed === true ? " (every name in scope)" : "";
  lines.push(`Last suggestion: ${latency}, rung ${rung}${guarantee}`);
  if (typeof suggestion.tokens === "number") {
    lines.push(`${suggestion.tokens} tokens, stopped by ${suggestion.stopReason ?? "?"}`);
  }
  if (!present(suggestion.text)) {
    lines.push(`Nothing suggested${present(suggestion.reason) ? `: ${suggestion.reason}` : ""}`);
  }
  const alternatives = alternativesLine(suggestion);
  if (alternatives) {
    lines.push(alternatives);
  }
  const a = alternativesOf(suggestion);
  const cut = a && a.cut !== undefined && a.found < a.wanted ? ` · ${a.found}/${a.wanted} cut` : "";
  if (isUnguaranteed(suggestion)) {
    lines.push(unguaranteedReason(suggestion));
    return { text: `$(warning) gdg ${latency} · ${rung} · not guaranteed${cut}`, tooltip: lines.join("\n"), severity: "warning" };
  }
  return { text: `$(check) gdg ${latency} · ${rung}${cut}`, tooltip: lines.join("\n"), severity: "normal" };
}

/** The text the explain command shows for a gdg/explain answer. */
export function formatExplain(result: unknown): string {
  if (result === null || typeof result !== "object") {
    return `gdg/explain returned ${JSON.stringify(result)}`;
  }
  const r = result as { text?: unknown; error?: unknown };
  if (typeof r.error === "string" && r.error !== "") {
    return `gdg/explain: ${r.error}`;
  }
  if (typeof r.text === "string") {
    return r.text;
  }
  return JSON.stringify(result, null, 2);
}

/** Counters of one table of the server's acceptance statistics (gdg/status `acceptance`). */
export interface AcceptanceCounts {
  shown?: number;
  accepted?: number;
  partiallyAccepted?: number;
  dismissed?: number;
  typedThrough?: number;
  charsAccepted?: number;
  charsChecked2m?: number;
  charsRetained2m?: number;
}

/** The `acceptance` field of the answer to the gdg/status request. */
export interface AcceptanceInfo {
  enabled?: boolean;
  session?: { all?: AcceptanceCounts };
  total?: { all?: AcceptanceCounts; rows?: (AcceptanceCounts & { language?: string; model?: string })[] };
}

function countsLine(c: AcceptanceCounts): string {
  const n = (v: number | undefined) => v ?? 0;
  const retained =
    n(c.charsChecked2m) > 0 ? `, ${Math.round((100 * n(c.charsRetained2m)) / n(c.charsChecked2m))}% still there after 2 min` : "";
  return (
    `${n(c.shown)} shown, ${n(c.accepted)} accepted, ${n(c.partiallyAccepted)} partly, ` +
    `${n(c.dismissed)} dismissed; ${n(c.charsAccepted)} characters accepted${retained}`
  );
}

/** The status menu's line on what happened to the suggestions shown (counted locally by the server). */
export function formatAcceptance(info: AcceptanceInfo | undefined): { label: string; detail: string } | undefined {
  if (!info) {
    return undefined;
  }
  if (info.enabled === false) {
    return { label: "Suggestion statistics are off (gdg.stats.enabled)", detail: "" };
  }
  const all = info.total?.all;
  if (!all) {
    return undefined;
  }
  const rows = (info.total?.rows ?? []).map((r) => `${r.language ?? "?"} · ${r.model ?? "?"}: ${countsLine(r)}`);
  const session = info.session?.all ? [`This session: ${countsLine(info.session.all)}`] : [];
  return { label: countsLine(all), detail: [...session, ...rows].join("\n") };
}
