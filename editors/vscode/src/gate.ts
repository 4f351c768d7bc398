// Whether VS Code's ask for ghost text goes to the server: the language's
// gdg.editor.enable entry, a snooze, and gdg.editor.trigger (manual: only when
// you ask). Pure, unit-tested.

export type TriggerMode = "automatic" | "manual";

/** gdg.editor.enable: `{"*": true, "sql": false}`; a language's own entry wins over "*". */
export function languageEnabled(enable: unknown, languageId: string): boolean {
  if (enable === null || typeof enable !== "object" || Array.isArray(enable)) {
    return true;
  }
  const table = enable as Record<string, unknown>;
  const own = table[languageId];
  if (typeof own === "boolean") {
    return own;
  }
  const all = table["*"];
  return typeof all === "boolean" ? all : true;
}

export function triggerMode(value: unknown): TriggerMode {
  return value === "manual" ? "manual" : "automatic";
}

export interface Ask {
  languageId: string;
  /** The user asked (Alt+\ or the palette), not VS Code after a keystroke. */
  explicit: boolean;
  /** The text typed since the ghost on screen appeared is its start: VS Code asks again to keep it. */
  typingThrough: boolean;
}

export interface GateState {
  enable: unknown;
  trigger: TriggerMode;
  /** Epoch ms until which automatic suggestions are snoozed (0: not snoozed). */
  snoozedUntil: number;
}

/** Why an ask is not sent to the server, or undefined when it is. */
export function refusal(state: GateState, ask: Ask, now: number): string | undefined {
  if (!languageEnabled(state.enable, ask.languageId)) {
    return `off for ${ask.languageId} (gdg.editor.enable)`;
  }
  if (ask.explicit || ask.typingThrough) {
    return undefined; // asked for, or keeping a ghost steady while its start is typed
  }
  if (state.snoozedUntil > now) {
    return "snoozed";
  }
  if (state.trigger === "manual") {
    return "manual (gdg.editor.trigger): ask with Alt+\\";
  }
  return undefined;
}

/** A snooze's end, `minutes` from `now` (0 or less: no snooze). */
export function snoozeEnd(minutes: number, now: number): number {
  return Number.isFinite(minutes) && minutes > 0 ? now + Math.round(minutes * 60_000) : 0;
}

/** "14:05", the local time a snooze ends, for the status item. */
export function clockTime(epochMs: number): string {
  const t = new Date(epochMs);
  return `${String(t.getHours()).padStart(2, "0")}:${String(t.getMinutes()).padStart(2, "0")}`;
}
