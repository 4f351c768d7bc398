// The level of a line the server wrote on stderr. gdg-lsp logs as
// "2026-12-02 21:33:01,123 INFO gdg_lsp.server: message"; vscode-languageclient
// shows every stderr line as an error, so the extension reads the level itself.
// A line without one keeps the level of the line before (a logged traceback's
// lines), Python's report of an uncaught exception is an error. Pure.

export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";

const LEVELS: Record<string, LogLevel> = {
  DEBUG: "debug",
  INFO: "info",
  WARNING: "warn",
  WARN: "warn",
  ERROR: "error",
  CRITICAL: "error",
  FATAL: "error",
};

const LINE = /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)? (DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) (.*)$/;

export interface LogLine {
  level: LogLevel;
  /** The line without the server's timestamp (the output channel writes its own). */
  text: string;
}

/** Reads stderr lines in order; `read` says how to show each one. */
export class StderrLevels {
  private last: LogLevel = "info";

  read(line: string): LogLine {
    const m = LINE.exec(line);
    if (m) {
      this.last = LEVELS[m[1]];
      return { level: this.last, text: m[2] };
    }
    if (line.startsWith("Traceback (most recent call last)")) {
      this.last = "error"; // Python's own report of an uncaught exception
    }
    return { level: this.last, text: line };
  }
}
