// The channel vscode-languageclient writes its LSP message trace to. The client
// traces only while that channel's log level is Trace, so `gdg.trace.server`
// alone printed nothing (the Output view's level stays Info). This channel
// says Trace exactly while the setting is on and writes each traced message
// into the gdg-lsp log at Info, where it is seen.

import * as vscode from "vscode";

export class ServerTrace implements vscode.LogOutputChannel {
  private readonly changed = new vscode.EventEmitter<vscode.LogLevel>();
  readonly onDidChangeLogLevel = this.changed.event;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly setting: () => string | undefined,
  ) {}

  get name(): string {
    return this.log.name;
  }

  get logLevel(): vscode.LogLevel {
    const value = this.setting();
    return value === undefined || value === "off" ? vscode.LogLevel.Info : vscode.LogLevel.Trace;
  }

  /** gdg.trace.server changed: the client asks logLevel again and tells the server ($/setTrace). */
  settingChanged(): void {
    this.changed.fire(this.logLevel);
  }

  trace(message: string): void {
    this.log.info(message);
  }
  debug(message: string): void {
    this.log.debug(message);
  }
  info(message: string): void {
    this.log.info(message);
  }
  warn(message: string): void {
    this.log.warn(message);
  }
  error(error: string | Error): void {
    this.log.error(error);
  }
  append(value: string): void {
    this.log.append(value);
  }
  appendLine(value: string): void {
    this.log.appendLine(value);
  }
  replace(value: string): void {
    this.log.replace(value);
  }
  clear(): void {
    this.log.clear();
  }
  show(preserveFocus?: boolean): void;
  show(column?: vscode.ViewColumn, preserveFocus?: boolean): void;
  show(first?: boolean | vscode.ViewColumn, preserveFocus?: boolean): void {
    this.log.show(typeof first === "boolean" ? first : preserveFocus);
  }
  hide(): void {
    this.log.hide();
  }
  dispose(): void {
    this.changed.dispose(); // the log itself belongs to the extension
  }
}
