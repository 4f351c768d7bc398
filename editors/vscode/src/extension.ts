// The VS Code side of gdg-lsp: starts the server, passes it the `gdg`
// settings, shows the model's state and the active document's last suggestion
// in one status item, and offers explain / restart / logs / snooze commands.
// Inline suggestions come from vscode-languageclient (10.1+ registers inline
// completion); inline.ts stands between it and the editor.

import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import * as readline from "node:readline";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  State,
  WorkDoneProgress,
  WorkDoneProgressCreateParams,
  WorkDoneProgressCreateRequest,
} from "vscode-languageclient/node";

import { discoverServer, DiscoveryEnv } from "./discovery";
import { clockTime, GateState, languageEnabled, refusal, snoozeEnd, triggerMode } from "./gate";
import { GhostText } from "./inline";
import { serverExecutable } from "./serverCommand";
import { StderrLevels } from "./serverLog";
import { ServerTrace } from "./serverTrace";
import { needsRestart, serverSettings } from "./settings";
import {
  AcceptanceInfo,
  askAgainWhenReady,
  ClientPhase,
  formatAcceptance,
  formatExplain,
  formatStatus,
  GateNotice,
  ModelStatus,
  SqlSourceInfo,
  SuggestionInfo,
  withLoadProgress,
} from "./status";

export const LANGUAGES = ["python", "sql", "p4", "tilelang", "shellscript", "jq"];

function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (process.platform !== "win32") {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

function discoveryEnv(): DiscoveryEnv {
  return {
    platform: process.platform,
    pathEnv: process.env.PATH,
    pathExt: process.env.PATHEXT,
    homeDir: os.homedir(),
    workspaceFolders: (vscode.workspace.workspaceFolders ?? [])
      .filter((f) => f.uri.scheme === "file")
      .map((f) => f.uri.fsPath),
    isExecutable,
  };
}

function gdgSettings(scope?: vscode.Uri): Record<string, unknown> {
  return serverSettings(vscode.workspace.getConfiguration("gdg", scope));
}

/** The explain report as a read-only document (gdg-explain:), replaced by each new report. */
class ExplainDocument implements vscode.TextDocumentContentProvider, vscode.Disposable {
  static readonly scheme = "gdg-explain";
  readonly uri = vscode.Uri.from({ scheme: ExplainDocument.scheme, path: "/gdg-lsp explain.txt" });
  private text = "";
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(ExplainDocument.scheme, this);

  provideTextDocumentContent(): string {
    return this.text;
  }

  async show(text: string): Promise<void> {
    this.text = text;
    this.changed.fire(this.uri);
    const doc = await vscode.workspace.openTextDocument(this.uri);
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true, preview: true });
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}

const SNOOZE_KEY = "gdg.snoozedUntil";
const SNOOZE_CHOICES = [5, 15, 30, 60, 120];
/** How long the cursor rests after the extension's own reasons to ask (an editor opened, a jump) before it asks. */
const ASK_AFTER_MS = 250;

/** The cursor is where a suggestion could go on: nothing but blanks after it on its line. */
function atLineEnd(editor: vscode.TextEditor): boolean {
  const cursor = editor.selection.active;
  return editor.selection.isEmpty && editor.document.lineAt(cursor.line).text.slice(cursor.character).trim() === "";
}

class GdgExtension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly output = vscode.window.createOutputChannel("gdg-lsp", { log: true });
  private readonly trace = new ServerTrace(this.output, () =>
    vscode.workspace.getConfiguration("gdg").get<string>("trace.server"),
  );
  private readonly explainDocument = new ExplainDocument();
  private readonly statusItem = vscode.window.createStatusBarItem("gdg.status", vscode.StatusBarAlignment.Right, 100);
  readonly ghost: GhostText;
  private phase: ClientPhase = "starting";
  private model: ModelStatus | undefined;
  /** The last gdg/suggestion of each document (the status item shows the active one's). */
  private readonly suggestions = new Map<string, SuggestionInfo>();
  private problem: string | undefined;
  private sqlSource: SqlSourceInfo | undefined;
  private sqlSourceTimer: NodeJS.Timeout | undefined;
  private snoozeTimer: NodeJS.Timeout | undefined;
  private askTimer: NodeJS.Timeout | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.ghost = new GhostText(
      {
        client: () => this.client,
        gate: () => this.gateState(),
        suggestion: (uri) => this.suggestions.get(uri),
        log: (message) => this.output.warn(message),
      },
      context.extensionUri,
    );
    this.statusItem.name = "gdg-lsp";
    this.statusItem.command = "gdg.menu";
    this.scheduleSnoozeEnd();
    this.updateLanguageKeys();
    this.render();
    this.statusItem.show();
  }

  // -- what is asked for (gate.ts) ----------------------------------------------------

  private gateState(): GateState {
    const config = vscode.workspace.getConfiguration("gdg");
    return {
      enable: config.get("editor.enable"),
      trigger: triggerMode(config.get("editor.trigger")),
      snoozedUntil: this.context.globalState.get<number>(SNOOZE_KEY, 0),
    };
  }

  private gateNotice(): GateNotice | undefined {
    const state = this.gateState();
    const language = vscode.window.activeTextEditor?.document.languageId;
    if (language && LANGUAGES.includes(language) && !languageEnabled(state.enable, language)) {
      return { label: `off for ${language}`, detail: `Ghost text is off for ${language} (gdg.editor.enable).` };
    }
    if (state.snoozedUntil > Date.now()) {
      const until = clockTime(state.snoozedUntil);
      return { label: `snoozed until ${until}`, detail: `Suggestions are snoozed until ${until}; Alt+\\ still asks.` };
    }
    if (state.trigger === "manual") {
      return { label: "manual", detail: "Suggestions come only when you ask: Alt+\\ (gdg.editor.trigger)." };
    }
    return undefined;
  }

  /** Keys bound "when editorLangId in gdg.enabledLanguages" work only where ghost text is on. */
  private updateLanguageKeys(): void {
    const enable = vscode.workspace.getConfiguration("gdg").get("editor.enable");
    void vscode.commands.executeCommand(
      "setContext",
      "gdg.enabledLanguages",
      LANGUAGES.filter((language) => languageEnabled(enable, language)),
    );
  }

  async snooze(minutes?: number): Promise<void> {
    if (minutes === undefined) {
      const pick = await vscode.window.showQuickPick(
        SNOOZE_CHOICES.map((m) => ({ label: m < 60 ? `${m} minutes` : `${m / 60} hour${m > 60 ? "s" : ""}`, minutes: m })),
        { title: "gdg-lsp: snooze suggestions for" },
      );
      if (!pick) {
        return;
      }
      minutes = pick.minutes;
    }
    await this.context.globalState.update(SNOOZE_KEY, snoozeEnd(minutes, Date.now()));
    this.scheduleSnoozeEnd();
    this.render();
  }

  async resume(): Promise<void> {
    await this.context.globalState.update(SNOOZE_KEY, 0);
    this.scheduleSnoozeEnd();
    this.render();
  }

  private scheduleSnoozeEnd(): void {
    clearTimeout(this.snoozeTimer);
    const left = this.gateState().snoozedUntil - Date.now();
    if (left > 0) {
      this.snoozeTimer = setTimeout(() => this.render(), Math.min(left + 500, 2 ** 31 - 1));
    }
  }

  private async setLanguageEnabled(language: string, enabled: boolean): Promise<void> {
    const config = vscode.workspace.getConfiguration("gdg");
    const current = config.inspect<Record<string, boolean>>("editor.enable")?.globalValue ?? {};
    await config.update("editor.enable", { ...current, [language]: enabled }, vscode.ConfigurationTarget.Global);
  }

  private async setTrigger(mode: "automatic" | "manual"): Promise<void> {
    await vscode.workspace.getConfiguration("gdg").update("editor.trigger", mode, vscode.ConfigurationTarget.Global);
  }

  /**
   * Ask for ghost text at the active editor's cursor without a keystroke (VS Code itself asks
   * only after an edit): when the model has just become ready, when an editor of ours opens, after
   * a jump (go to line). Only where the cursor ends its line, and only where automatic asks are on.
   */
  askSoon(editor: vscode.TextEditor | undefined, anywhere = false): void {
    clearTimeout(this.askTimer);
    if (!editor || !LANGUAGES.includes(editor.document.languageId) || this.model?.state !== "ready") {
      return;
    }
    this.askTimer = setTimeout(() => {
      const ask = { languageId: editor.document.languageId, explicit: false, typingThrough: false };
      if (
        editor !== vscode.window.activeTextEditor ||
        refusal(this.gateState(), ask, Date.now()) !== undefined ||
        (!anywhere && !atLineEnd(editor))
      ) {
        return;
      }
      void vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
    }, ASK_AFTER_MS);
  }

  // -- the status item ----------------------------------------------------------------

  private activeSuggestion(): SuggestionInfo | undefined {
    const uri = vscode.window.activeTextEditor?.document.uri.toString();
    return uri === undefined ? undefined : this.suggestions.get(uri);
  }

  render(): void {
    const view = formatStatus(
      this.phase,
      this.model,
      this.activeSuggestion(),
      this.problem,
      this.sqlSource,
      this.gateNotice(),
    );
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor =
      view.severity === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.severity === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  private setPhase(phase: ClientPhase, problem?: string): void {
    this.phase = phase;
    this.problem = problem;
    if (phase !== "running") {
      this.model = undefined;
    }
    this.render();
  }

  /**
   * The model load's work-done progress goes to this status item: VS Code's own progress item
   * would be a second one repeating the same messages, and this one shows the percentage from
   * the first message (`begin` carries 0%).
   */
  private followProgress(client: LanguageClient, params: WorkDoneProgressCreateParams): void {
    const listener = client.onProgress(WorkDoneProgress.type, params.token, (value) => {
      if (client !== this.client) {
        listener.dispose();
        return;
      }
      this.model = withLoadProgress(this.model, value);
      this.render();
      if (value.kind === "end") {
        listener.dispose();
      }
    });
  }

  // -- SQL data source ----------------------------------------------------------------

  /** Ask the server which database the active SQL file's names come from (gdg/sqlSource). */
  async refreshSqlSource(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = this.client;
    if (!editor || editor.document.languageId !== "sql" || !client || !client.isRunning()) {
      this.sqlSource = undefined;
      this.render();
      return;
    }
    try {
      const answer = await client.sendRequest<SqlSourceInfo | null>("gdg/sqlSource", {
        textDocument: { uri: editor.document.uri.toString() },
      });
      this.sqlSource = answer ?? undefined;
    } catch (err) {
      this.output.warn(`gdg/sqlSource: ${err instanceof Error ? err.message : String(err)}`);
      this.sqlSource = undefined;
    }
    this.render();
  }

  /** Refresh the data source a moment after a SQL file's text changed (its -- gdg: line may have). */
  sqlDocumentChanged(document: vscode.TextDocument): void {
    if (document.languageId !== "sql" || document !== vscode.window.activeTextEditor?.document) {
      return;
    }
    clearTimeout(this.sqlSourceTimer);
    this.sqlSourceTimer = setTimeout(() => void this.refreshSqlSource(), 600);
  }

  async chooseSqlSource(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== "sql") {
      void vscode.window.showInformationMessage("gdg-lsp: open a SQL file to choose its data source.");
      return;
    }
    // the server's code actions of this kind, one per source; each writes the -- gdg: line
    await vscode.commands.executeCommand("editor.action.codeAction", { kind: "source.gdg.sqlDataSource", apply: "never" });
  }

  activeEditorChanged(editor: vscode.TextEditor | undefined): void {
    this.render(); // that document's last suggestion, its language's gate
    void this.refreshSqlSource();
    this.askSoon(editor);
  }

  selectionChanged(event: vscode.TextEditorSelectionChangeEvent): void {
    if (event.kind === vscode.TextEditorSelectionChangeKind.Command && event.textEditor === vscode.window.activeTextEditor) {
      this.askSoon(event.textEditor); // go to line, a jump back: no keystroke will ask there
    }
  }

  // -- the server ---------------------------------------------------------------------

  /** The server's stderr lines at the level each one says (vscode-languageclient shows them all as errors). */
  private readStderr(input: NodeJS.ReadableStream, channel: vscode.LogOutputChannel): void {
    const levels = new StderrLevels();
    readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on("line", (line) => {
      const { level, text } = levels.read(line);
      channel[level](text);
    });
  }

  async start(): Promise<void> {
    const config = vscode.workspace.getConfiguration("gdg");
    const found = discoverServer(config.get<string>("server.path"), discoveryEnv());
    if (!found.found) {
      this.output.error(found.message);
      this.setPhase("not-found", found.message);
      // not awaited: activation must not wait for the user to answer
      void vscode.window.showErrorMessage(found.message, "Open Settings", "Show Logs").then((choice) => {
        if (choice === "Open Settings") {
          void vscode.commands.executeCommand("workbench.action.openSettings", "gdg.server.path");
        } else if (choice === "Show Logs") {
          this.output.show();
        }
      });
      return;
    }
    this.output.info(`starting ${found.command} (found via ${found.source})`);
    const exe = serverExecutable(found.command, config.get<unknown[]>("server.args"));
    const clientOptions: LanguageClientOptions = {
      documentSelector: LANGUAGES.flatMap((language) => [
        { scheme: "file", language },
        { scheme: "untitled", language },
      ]),
      initializationOptions: gdgSettings(),
      synchronize: { configurationSection: "gdg" },
      outputChannel: this.output,
      traceOutputChannel: this.trace,
      stdioOptions: {
        stdout: (input, channel) => this.readStderr(input, channel),
        stderr: (input, channel) => this.readStderr(input, channel),
      },
      middleware: {
        ...this.ghost.middleware(),
        workspace: {
          // send the server only its own keys (not gdg.server.* / gdg.trace.* / gdg.editor.*)
          didChangeConfiguration: async () => {
            await client.sendNotification(DidChangeConfigurationNotification.type, {
              settings: { gdg: gdgSettings() },
            });
          },
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            return params.items.map((item, i) =>
              item.section === "gdg" ? gdgSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined) : answers[i],
            );
          },
        },
      },
    };
    const client = new LanguageClient("gdg", "gdg-lsp", exe, clientOptions);
    this.client = client;
    client.onDidChangeState((event) => {
      if (client !== this.client) {
        return;
      }
      if (event.newState === State.Running) {
        this.setPhase("running");
        void this.refreshSqlSource();
      } else if (event.newState === State.Stopped) {
        this.setPhase("stopped");
      }
    });
    client.onNotification("gdg/status", (payload: ModelStatus) => {
      const previous = this.model;
      // a load's first gdg/status may come before its progress does: keep the percentage shown
      this.model =
        payload.state === "loading" && payload.percentage == null && previous?.state === "loading"
          ? { ...payload, percentage: previous.percentage }
          : payload;
      this.render();
      if (askAgainWhenReady(previous, payload)) {
        this.askSoon(vscode.window.activeTextEditor, true);
      }
    });
    client.onNotification("gdg/suggestion", (payload: SuggestionInfo) => {
      if (typeof payload.uri === "string") {
        this.suggestions.set(payload.uri, payload);
      }
      this.render();
      this.ghost.suggestionChanged(payload);
    });
    this.setPhase("starting");
    try {
      await client.start();
      // after start: replaces vscode-languageclient's handler, which opens VS Code's own progress item
      client.onRequest(WorkDoneProgressCreateRequest.type, (params) => this.followProgress(client, params));
    } catch (err) {
      const message = `gdg-lsp could not start: ${err instanceof Error ? err.message : String(err)}`;
      this.output.error(message);
      this.setPhase("stopped", message);
      void vscode.window.showErrorMessage(message, "Show Logs").then((c) => c && this.output.show());
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.warn(`stopping gdg-lsp: ${err instanceof Error ? err.message : String(err)}`);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    this.suggestions.clear();
    this.ghost.reset();
    await this.start();
  }

  showLogs(): void {
    this.output.show();
  }

  async explain(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = this.client;
    if (!editor || !LANGUAGES.includes(editor.document.languageId)) {
      void vscode.window.showInformationMessage(`gdg-lsp explains holes in ${LANGUAGES.join(", ")} files.`);
      return;
    }
    if (!client || !client.isRunning()) {
      void vscode.window.showWarningMessage("gdg-lsp is not running.", "Restart").then((c) => c && this.restart());
      return;
    }
    const position = editor.selection.active;
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: "gdg-lsp: explaining" },
      () =>
        client.sendRequest("gdg/explain", {
          textDocument: { uri: editor.document.uri.toString() },
          position: client.code2ProtocolConverter.asPosition(position),
          decode: true,
        }),
    );
    const where = `${vscode.workspace.asRelativePath(editor.document.uri)}:${position.line + 1}:${position.character + 1}`;
    await this.explainDocument.show(`# gdg-lsp explain ${where}\n\n${formatExplain(result)}\n`);
  }

  /** What the server counted of the suggestions shown (the gdg/status request's `acceptance`). */
  private async acceptance(): Promise<ReturnType<typeof formatAcceptance>> {
    const client = this.client;
    if (!client?.isRunning()) {
      return undefined;
    }
    try {
      const status = await client.sendRequest<{ acceptance?: AcceptanceInfo } | null>("gdg/status", {});
      return formatAcceptance(status?.acceptance);
    } catch (err) {
      this.output.warn(`gdg/status: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }

  async menu(): Promise<void> {
    const view = formatStatus(this.phase, this.model, this.activeSuggestion(), this.problem, this.sqlSource, this.gateNotice());
    const counted = await this.acceptance();
    const state = this.gateState();
    const language = vscode.window.activeTextEditor?.document.languageId;
    const ours = language !== undefined && LANGUAGES.includes(language);
    const actions: { label: string; run: () => unknown }[] = [
      { label: "$(question) Explain the hole at the cursor", run: () => this.explain() },
      ...(language === "sql"
        ? [{ label: "$(database) Choose the SQL data source for this file", run: () => this.chooseSqlSource() }]
        : []),
      state.snoozedUntil > Date.now()
        ? { label: "$(bell) Resume suggestions", run: () => this.resume() }
        : { label: "$(bell-slash) Snooze suggestions…", run: () => this.snooze() },
      ...(ours
        ? [
            languageEnabled(state.enable, language)
              ? { label: `$(circle-slash) Turn ghost text off for ${language}`, run: () => this.setLanguageEnabled(language, false) }
              : { label: `$(pass) Turn ghost text on for ${language}`, run: () => this.setLanguageEnabled(language, true) },
          ]
        : []),
      state.trigger === "manual"
        ? { label: "$(zap) Suggest while typing (gdg.editor.trigger: automatic)", run: () => this.setTrigger("automatic") }
        : { label: "$(keyboard) Suggest only when asked, Alt+\\ (gdg.editor.trigger: manual)", run: () => this.setTrigger("manual") },
      ...(counted
        ? [
            {
              label: `$(graph) ${counted.label}`,
              run: () => counted.detail && vscode.window.showInformationMessage("gdg-lsp: suggestions shown", { modal: true, detail: counted.detail }),
            },
          ]
        : []),
      { label: "$(debug-restart) Restart the server", run: () => this.restart() },
      { label: "$(output) Show logs", run: () => this.showLogs() },
      { label: "$(gear) Settings", run: () => vscode.commands.executeCommand("workbench.action.openSettings", "gdg.") },
    ];
    const pick = await vscode.window.showQuickPick(
      actions.map((a) => ({ label: a.label })),
      { title: view.tooltip.split("\n")[0], placeHolder: view.text.replace(/\$\([^)]*\)\s*/g, "") },
    );
    await actions.find((a) => a.label === pick?.label)?.run();
  }

  onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    if (event.affectsConfiguration("gdg.trace.server")) {
      this.trace.settingChanged();
    }
    if (event.affectsConfiguration("gdg.editor")) {
      this.updateLanguageKeys();
      this.render();
    }
    if (needsRestart((section) => event.affectsConfiguration(section))) {
      void this.restart();
    }
  }

  dispose(): void {
    clearTimeout(this.sqlSourceTimer);
    clearTimeout(this.snoozeTimer);
    clearTimeout(this.askTimer);
    void this.stop();
    this.ghost.dispose();
    this.statusItem.dispose();
    this.trace.dispose();
    this.output.dispose();
    this.explainDocument.dispose();
  }
}

let extension: GdgExtension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const ext = new GdgExtension(context);
  extension = ext;
  const ghost = ext.ghost;
  context.subscriptions.push(
    ext,
    vscode.commands.registerCommand("gdg.explain", () => ext.explain()),
    vscode.commands.registerCommand("gdg.restartServer", () => ext.restart()),
    vscode.commands.registerCommand("gdg.showLogs", () => ext.showLogs()),
    vscode.commands.registerCommand("gdg.menu", () => ext.menu()),
    vscode.commands.registerCommand("gdg.chooseSqlSource", () => ext.chooseSqlSource()),
    vscode.commands.registerCommand("gdg.snooze", (minutes?: number) => ext.snooze(minutes)),
    vscode.commands.registerCommand("gdg.resume", () => ext.resume()),
    vscode.commands.registerCommand("gdg.acceptNextWord", () => ghost.acceptNext("word")),
    vscode.commands.registerCommand("gdg.acceptNextLine", () => ghost.acceptNext("line")),
    vscode.commands.registerCommand("gdg.listNames", () => ghost.listNames()),
    vscode.commands.registerCommand("gdg.showNextSuggestion", () => ghost.cycle(1)),
    vscode.commands.registerCommand("gdg.showPreviousSuggestion", () => ghost.cycle(-1)),
    vscode.workspace.onDidChangeConfiguration((e) => ext.onConfigurationChanged(e)),
    vscode.window.onDidChangeActiveTextEditor((editor) => ext.activeEditorChanged(editor)),
    vscode.window.onDidChangeTextEditorSelection((e) => ext.selectionChanged(e)),
    vscode.workspace.onDidChangeTextDocument((e) => ext.sqlDocumentChanged(e.document)),
    vscode.workspace.onDidSaveTextDocument((d) => ext.sqlDocumentChanged(d)),
  );
  await ext.start();
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}
