// What the status bar item says: the model's state (gdg/status) and the last
// suggestion's latency and rung (gdg/suggestion). Pure, unit-tested.

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
  stopReason?: string | null;
  reason?: string | null;
  tokens?: number;
  language?: string;
  constraint?: string;
  gammaSize?: number;
  timingsMs?: { total?: number; [phase: string]: number | undefined };
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

/** The data source as the status bar shows it: "billing" for "folder billing". */
/**
 * Whether to ask for ghost text again after a gdg/status: the model has just become ready. An
 * ask made while it loaded was answered empty when its budget ran out first, and VS Code asks
 * again only at the next edit: without this the user would see nothing until they type.
 */
export function askAgainWhenReady(previous: ModelStatus | undefined, next: ModelStatus): boolean {
  return next.state === "ready" && previous?.state !== "ready";
}

export function shortSqlSource(source: SqlSourceInfo): string {
  return source.label.replace(/^folder /, "").replace(/ \(gdg\.sql\.sources\[\d+\]\)$/, "");
}

/** Where the client is, before the server says anything. */
export type ClientPhase = "starting" | "running" | "stopped" | "not-found";

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
): StatusView {
  const view = formatModelStatus(phase, model, suggestion, problem);
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
  return { text: `$(check) gdg ${latency} · ${rung}`, tooltip: lines.join("\n"), severity: "normal" };
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
