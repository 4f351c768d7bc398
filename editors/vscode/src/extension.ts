// The VS Code side of gdg-lsp: starts the server, passes it the `gdg`
// settings, shows the model's state and the last suggestion in the status bar,
// and offers explain / restart / logs commands. Inline suggestions themselves
// come from vscode-languageclient (10.1+ registers inline completion).

import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  State,
} from "vscode-languageclient/node";

import { discoverServer, DiscoveryEnv } from "./discovery";
import { serverExecutable } from "./serverCommand";
import { needsRestart, serverSettings } from "./settings";
import {
  askAgainWhenReady,
  ClientPhase,
  formatExplain,
  formatStatus,
  ModelStatus,
  SqlSourceInfo,
  SuggestionInfo,
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

class GdgExtension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly output = vscode.window.createOutputChannel("gdg-lsp", { log: true });
  private readonly explainDocument = new ExplainDocument();
  private readonly statusItem = vscode.window.createStatusBarItem("gdg.status", vscode.StatusBarAlignment.Right, 100);
  private phase: ClientPhase = "starting";
  private model: ModelStatus | undefined;
  private suggestion: SuggestionInfo | undefined;
  private problem: string | undefined;
  private sqlSource: SqlSourceInfo | undefined;
  private sqlSourceTimer: NodeJS.Timeout | undefined;

  constructor() {
    this.statusItem.name = "gdg-lsp";
    this.statusItem.command = "gdg.menu";
    this.render();
    this.statusItem.show();
  }

  private render(): void {
    const view = formatStatus(this.phase, this.model, this.suggestion, this.problem, this.sqlSource);
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
      middleware: {
        workspace: {
          // send the server only its own keys (not gdg.server.* / gdg.trace.*)
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
      this.model = payload;
      this.render();
      const editor = vscode.window.activeTextEditor;
      if (askAgainWhenReady(previous, payload) && editor && LANGUAGES.includes(editor.document.languageId)) {
        void vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
      }
    });
    client.onNotification("gdg/suggestion", (payload: SuggestionInfo) => {
      this.suggestion = payload;
      this.render();
    });
    this.setPhase("starting");
    try {
      await client.start();
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
    this.suggestion = undefined;
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

  async menu(): Promise<void> {
    const view = formatStatus(this.phase, this.model, this.suggestion, this.problem);
    const actions: { label: string; run: () => unknown }[] = [
      { label: "$(question) Explain the hole at the cursor", run: () => this.explain() },
      ...(vscode.window.activeTextEditor?.document.languageId === "sql"
        ? [{ label: "$(database) Choose the SQL data source for this file", run: () => this.chooseSqlSource() }]
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
    if (needsRestart((section) => event.affectsConfiguration(section))) {
      void this.restart();
    }
  }

  dispose(): void {
    clearTimeout(this.sqlSourceTimer);
    void this.stop();
    this.statusItem.dispose();
    this.output.dispose();
    this.explainDocument.dispose();
  }
}

let extension: GdgExtension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const ext = new GdgExtension();
  extension = ext;
  context.subscriptions.push(
    ext,
    vscode.commands.registerCommand("gdg.explain", () => ext.explain()),
    vscode.commands.registerCommand("gdg.restartServer", () => ext.restart()),
    vscode.commands.registerCommand("gdg.showLogs", () => ext.showLogs()),
    vscode.commands.registerCommand("gdg.menu", () => ext.menu()),
    vscode.commands.registerCommand("gdg.chooseSqlSource", () => ext.chooseSqlSource()),
    vscode.workspace.onDidChangeConfiguration((e) => ext.onConfigurationChanged(e)),
    vscode.window.onDidChangeActiveTextEditor(() => void ext.refreshSqlSource()),
    vscode.workspace.onDidChangeTextDocument((e) => ext.sqlDocumentChanged(e.document)),
    vscode.workspace.onDidSaveTextDocument((d) => ext.sqlDocumentChanged(d)),
  );
  await ext.start();
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}
