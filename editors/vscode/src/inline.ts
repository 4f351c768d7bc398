// gdg-lsp's ghost text in VS Code, between vscode-languageclient and the editor:
//  - asks go to the server only where gate.ts allows (language, snooze, manual);
//  - the items served are kept (ghost.ts), so the extension knows what is on screen;
//  - while that ghost is on screen the server's completion items are held back: VS Code hides
//    a ghost whenever its suggest widget shows an item the ghost does not extend, and Tab then
//    inserts the item (README: "Ghost text and the suggest list");
//  - what the server hears about a suggestion (ACCEPT_PROTOCOL.md): didShowCompletion when an
//    answer reaches the screen, didPartiallyAcceptCompletion after accept-word / accept-line
//    through our keys; a full accept runs the item's command, which vscode-languageclient
//    forwards to workspace/executeCommand;
//  - a suggestion without the guarantee is marked in the gutter beside the ghost (each alternative
//    by its own label, its hover the server's reason);
//  - Alt+] while the server still decodes the alternatives (gdg/suggestion alternatives.pending):
//    VS Code's show-next asks again explicitly, and when they come after that ask's answer, show-next
//    runs once more and draws the next of them all; a cut is said in the status bar.

import * as vscode from "vscode";
import type { LanguageClient, Middleware } from "vscode-languageclient/node";

import { acceptedLength, extendsSelected, GhostBook, itemAt, Pos, ServedItem, suggestionId } from "./ghost";
import { GateState, refusal } from "./gate";
import { alternativesLine, alternativesOf, itemLabel, SuggestionInfo } from "./status";

export const DID_SHOW = "textDocument/didShowCompletion";
export const DID_PARTIALLY_ACCEPT = "textDocument/didPartiallyAcceptCompletion";
/** How soon after Ctrl+Space VS Code's ask for items is taken as that key's. */
const LIST_ASKED_MS = 1000;
/** How long the status bar says that the alternatives were cut. */
const CUT_MESSAGE_MS = 5000;

export interface GhostHost {
  client(): LanguageClient | undefined;
  gate(): GateState;
  /** The last gdg/suggestion for the document. */
  suggestion(uri: string): SuggestionInfo | undefined;
  log(message: string): void;
}

function toServed(item: vscode.InlineCompletionItem): ServedItem {
  const insertText = typeof item.insertText === "string" ? item.insertText : item.insertText.value;
  const served: ServedItem = { insertText };
  if (item.range) {
    served.range = {
      start: { line: item.range.start.line, character: item.range.start.character },
      end: { line: item.range.end.line, character: item.range.end.character },
    };
  }
  if (item.command) {
    served.command = { title: item.command.title, command: item.command.command, arguments: item.command.arguments };
  }
  return served;
}

function typedSince(document: vscode.TextDocument, cursor: vscode.Position): (start: Pos) => string | undefined {
  return (start) => {
    const from = new vscode.Position(start.line, start.character);
    return from.isAfter(cursor) ? undefined : document.getText(new vscode.Range(from, cursor));
  };
}

/**
 * The answer to VS Code's ask for completion items while our ghost is on screen. Not an empty
 * list: VS Code then asks the providers ranked below ours, and its word-based one lists the
 * document's words (`return`, which the ghost extends: VS Code selects it, and Tab inserts only
 * the word). One item that the typed text never matches (a zero-width space, filtered over the
 * character before the cursor) is a result, so nothing below is asked, and the widget finds
 * nothing to show. Incomplete: the next key asks again.
 */
function holdBack(position: vscode.Position): vscode.CompletionList {
  const item = new vscode.CompletionItem("gdg-lsp: ghost text shown", vscode.CompletionItemKind.Text);
  item.filterText = "\u200b";
  item.insertText = "";
  if (position.character > 0) {
    item.range = new vscode.Range(position.translate(0, -1), position);
  }
  return new vscode.CompletionList([item], true);
}

export class GhostText implements vscode.Disposable {
  private readonly book = new GhostBook();
  /** Documents with an ask in flight (VS Code asked, the server has not answered). */
  private readonly asking = new Set<string>();
  private readonly unguaranteed: vscode.TextEditorDecorationType;
  private readonly disposables: vscode.Disposable[] = [];
  private ghostKey = false;
  /** When Ctrl+Space was pressed: VS Code reports typing's asks for items with the same trigger kind. */
  private listAskedAt = 0;
  /** The document whose Alt+] came while its alternatives were still being decoded, and the step asked. */
  private awaiting: { uri: string; step: 1 | -1 } | undefined;

  constructor(
    private readonly host: GhostHost,
    extensionUri: vscode.Uri,
  ) {
    this.unguaranteed = vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.joinPath(extensionUri, "media", "unguaranteed.svg"),
      gutterIconSize: "contain",
      overviewRulerColor: new vscode.ThemeColor("editorWarning.foreground"),
      overviewRulerLane: vscode.OverviewRulerLane.Right,
    });
    this.disposables.push(
      this.unguaranteed,
      vscode.window.onDidChangeTextEditorSelection((e) => this.recheck(e.textEditor)),
      vscode.window.onDidChangeActiveTextEditor(() => this.clearMarks()),
      vscode.workspace.onDidCloseTextDocument((d) => this.book.forget(d.uri.toString())),
    );
  }

  /** The middleware vscode-languageclient calls around the two completion features. */
  middleware(): Pick<Middleware, "provideInlineCompletionItems" | "provideCompletionItem"> {
    return {
      provideInlineCompletionItems: (document, position, context, token, next) =>
        this.provideInline(document, position, context, token, next),
      provideCompletionItem: (document, position, context, token, next) =>
        this.provideCompletion(document, position, context, token, next),
    };
  }

  /** The served item VS Code shows in `document` with the cursor at `cursor`, if any. */
  private onScreen(document: vscode.TextDocument, cursor: vscode.Position): ServedItem | undefined {
    return this.book.onScreen(document.uri.toString(), typedSince(document, cursor));
  }

  private async provideInline(
    document: vscode.TextDocument,
    position: vscode.Position,
    context: vscode.InlineCompletionContext,
    token: vscode.CancellationToken,
    next: (
      document: vscode.TextDocument,
      position: vscode.Position,
      context: vscode.InlineCompletionContext,
      token: vscode.CancellationToken,
    ) => vscode.ProviderResult<vscode.InlineCompletionItem[] | vscode.InlineCompletionList>,
  ): Promise<vscode.InlineCompletionItem[] | vscode.InlineCompletionList | null | undefined> {
    const uri = document.uri.toString();
    const why = refusal(
      this.host.gate(),
      {
        languageId: document.languageId,
        explicit: context.triggerKind === vscode.InlineCompletionTriggerKind.Invoke,
        typingThrough: this.onScreen(document, position) !== undefined,
      },
      Date.now(),
    );
    if (why !== undefined) {
      this.book.forget(uri);
      return [];
    }
    const version = document.version;
    this.asking.add(uri);
    let result: vscode.InlineCompletionItem[] | vscode.InlineCompletionList | null | undefined;
    try {
      result = await next(document, position, context, token);
    } finally {
      this.asking.delete(uri);
    }
    if (token.isCancellationRequested || document.version !== version) {
      return result; // VS Code drops an answer to an older text too
    }
    const items = (Array.isArray(result) ? result : (result?.items ?? [])).map(toServed);
    const served = this.book.record(uri, version, items);
    const shown = served && itemAt(served, served.index);
    if (!shown || !this.drawable(document, context, shown)) {
      this.setGhostKey(false);
      this.clearMarks();
      return result;
    }
    this.showing(document, shown);
    return result;
  }

  /** Whether VS Code draws `item` (with its suggest list open, only when it extends the selected item). */
  private drawable(document: vscode.TextDocument, context: vscode.InlineCompletionContext, item: ServedItem): boolean {
    const selected = context.selectedCompletionInfo;
    if (!selected) {
      return true;
    }
    const at = (p: Pos) => new vscode.Position(p.line, p.character);
    return extendsSelected(item, { start: selected.range.start, text: selected.text }, (from, to) =>
      document.getText(new vscode.Range(at(from), at(to))),
    );
  }

  /** `item` reached the screen: tell the server once per showing, mark it when it has no guarantee. */
  private showing(document: vscode.TextDocument, item: ServedItem): void {
    const uri = document.uri.toString();
    this.setGhostKey(true);
    if (this.book.firstShowing(uri, item)) {
      this.notify(DID_SHOW, { item });
    }
    this.mark(document, item);
  }

  /** The gutter mark of `item` when its own label says it carries no guarantee, with the server's reason. */
  private mark(document: vscode.TextDocument, item: ServedItem): void {
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
    const label = itemLabel(this.host.suggestion(document.uri.toString()), suggestionId(item));
    if (editor && item.range && label && !label.guaranteed) {
      const line = item.range.start.line;
      editor.setDecorations(this.unguaranteed, [
        {
          range: new vscode.Range(line, 0, line, 0),
          hoverMessage: new vscode.MarkdownString(`gdg-lsp: ${label.reason}`),
        },
      ]);
    } else {
      this.clearMarks();
    }
  }

  /**
   * A gdg/suggestion came. The mark follows the label of the item on screen; the alternatives an
   * Alt+] waited for, decoded after that key's ask was answered, are fetched and shown (VS Code's
   * show-next asks again; the server answers from what it holds, without a decode).
   */
  suggestionChanged(info: SuggestionInfo): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.uri.toString() !== info.uri) {
      return;
    }
    const shown = this.onScreen(editor.document, editor.selection.active);
    if (shown) {
      this.mark(editor.document, shown);
    }
    const awaiting = this.awaiting;
    if (info.update === "alternatives" && awaiting?.uri === info.uri) {
      this.awaiting = undefined;
      if (shown && !alternativesOf(info)?.stale) {
        void this.showArrived(awaiting.step);
      }
    }
  }

  /**
   * The alternatives an Alt+] waited for are on the server now. VS Code keeps the answer to an
   * explicit ask at the same text and place, and a second one would not reach the server: the
   * ghost is hidden, asked for again (all of them come, from what the server holds), and cycled.
   */
  private async showArrived(step: 1 | -1): Promise<void> {
    await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
    await vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
    await this.cycle(step);
  }

  /** After a keystroke or a cursor move: once the text or the cursor left the ghost, VS Code drops it too. */
  private recheck(editor: vscode.TextEditor): void {
    if (editor !== vscode.window.activeTextEditor) {
      return;
    }
    const uri = editor.document.uri.toString();
    if (this.book.get(uri) && !this.onScreen(editor.document, editor.selection.active)) {
      this.book.forget(uri);
      this.setGhostKey(false);
      this.clearMarks();
    }
  }

  private clearMarks(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      editor.setDecorations(this.unguaranteed, []);
    }
  }

  private setGhostKey(shown: boolean): void {
    if (shown !== this.ghostKey) {
      this.ghostKey = shown;
      void vscode.commands.executeCommand("setContext", "gdg.ghostShown", shown);
    }
  }

  private async provideCompletion(
    document: vscode.TextDocument,
    position: vscode.Position,
    context: vscode.CompletionContext,
    token: vscode.CancellationToken,
    next: (
      document: vscode.TextDocument,
      position: vscode.Position,
      context: vscode.CompletionContext,
      token: vscode.CancellationToken,
    ) => vscode.ProviderResult<vscode.CompletionItem[] | vscode.CompletionList>,
  ): Promise<vscode.CompletionItem[] | vscode.CompletionList | null | undefined> {
    const listAsked = Date.now() - this.listAskedAt < LIST_ASKED_MS;
    this.listAskedAt = 0;
    if (!listAsked && this.onScreen(document, position)) {
      // the ghost says what comes next; a list would hide it and take Tab (Ctrl+Space still lists)
      return holdBack(position);
    }
    const result = await next(document, position, context, token);
    const uri = document.uri.toString();
    if (result && (this.asking.has(uri) || this.book.get(uri))) {
      // a ghost is coming (or was here): ask again at the next key, so the list can step aside for it
      const list = Array.isArray(result) ? new vscode.CompletionList(result, true) : result;
      list.isIncomplete = true;
      return list;
    }
    return result;
  }

  private notify(method: string, params: unknown): void {
    const client = this.host.client();
    if (client?.isRunning()) {
      client.sendNotification(method, params).catch((err: unknown) => this.host.log(`${method}: ${String(err)}`));
    }
  }

  /** Ctrl+Space while our ghost is on screen: the list of names, as asked (it hides the ghost). */
  async listNames(): Promise<void> {
    this.listAskedAt = Date.now();
    await vscode.commands.executeCommand("editor.action.triggerSuggest");
  }

  /** Accept-word / accept-line through our keys: VS Code's command, then didPartiallyAcceptCompletion. */
  async acceptNext(unit: "word" | "line"): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const item = editor && this.onScreen(editor.document, editor.selection.active);
    await vscode.commands.executeCommand(
      unit === "word" ? "editor.action.inlineSuggest.acceptNextWord" : "editor.action.inlineSuggest.acceptNextLine",
    );
    if (!editor || !item?.range) {
      return;
    }
    const start = new vscode.Position(item.range.start.line, item.range.start.character);
    const cursor = editor.selection.active;
    const accepted = cursor.isBefore(start)
      ? 0
      : acceptedLength(item.insertText, editor.document.getText(new vscode.Range(start, cursor)));
    if (accepted > 0 && accepted < item.insertText.length) {
      this.notify(DID_PARTIALLY_ACCEPT, { item, acceptedLength: accepted });
    } else if (accepted >= item.insertText.length) {
      // the last word: VS Code accepted the whole item and ran its command
      this.book.forget(editor.document.uri.toString());
      this.setGhostKey(false);
      this.clearMarks();
    }
  }

  /**
   * Alt+] / Alt+[ through our keys: VS Code cycles (asking again, explicitly: the server waits for
   * alternatives still being decoded, within its budget), and the alternative it shows is reported
   * shown. Still on their way after that: shown when they come (`suggestionChanged`). Cut: said.
   */
  async cycle(step: 1 | -1): Promise<void> {
    await vscode.commands.executeCommand(
      step > 0 ? "editor.action.inlineSuggest.showNext" : "editor.action.inlineSuggest.showPrevious",
    );
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      return;
    }
    const uri = editor.document.uri.toString();
    const item = this.book.cycle(uri, step);
    if (item) {
      this.showing(editor.document, item);
    }
    const info = this.host.suggestion(uri);
    const alternatives = alternativesOf(info);
    if (alternatives?.pending) {
      this.awaiting = { uri, step };
    } else if (alternatives?.cut !== undefined && alternatives.found < alternatives.wanted) {
      vscode.window.setStatusBarMessage(`gdg-lsp: ${alternativesLine(info)}`, CUT_MESSAGE_MS);
    }
  }

  /** The server restarted: what it served before means nothing now. */
  reset(): void {
    for (const document of vscode.workspace.textDocuments) {
      this.book.forget(document.uri.toString());
    }
    this.setGhostKey(false);
    this.clearMarks();
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
