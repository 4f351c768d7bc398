// What the extension knows of gdg-lsp's ghost text. VS Code's stable API never
// says whether an inline item was drawn, so this module keeps the items the
// server served for the last ask of each document and answers, from the text
// typed since, whether one is still the ghost on screen. Pure, unit-tested.

export interface Pos {
  line: number;
  character: number;
}

export interface ProtocolCommand {
  title: string;
  command: string;
  arguments?: unknown[];
}

/** An InlineCompletionItem as the server served it (LSP form), sent back in didShow / didPartiallyAccept. */
export interface ServedItem {
  insertText: string;
  range?: { start: Pos; end: Pos };
  command?: ProtocolCommand;
}

/** The server's id of a served item: the argument of its accept command (ACCEPT_PROTOCOL.md). */
export function suggestionId(item: ServedItem): string | undefined {
  const first = item.command?.arguments?.[0];
  if (first !== null && typeof first === "object" && typeof (first as { id?: unknown }).id === "string") {
    return (first as { id: string }).id;
  }
  return undefined;
}

/**
 * The part of `insertText` still to be written when `typed` (the document's text from the item's
 * start to the cursor) has been typed, or undefined once the typed text left it or wrote it all:
 * then VS Code no longer shows the item.
 */
export function restAfter(insertText: string, typed: string): string | undefined {
  return insertText.length > typed.length && insertText.startsWith(typed) ? insertText.slice(typed.length) : undefined;
}

/**
 * How much of `insertText` (UTF-16 units, the length LSP counts) the document holds after a partial
 * accept: the common start of the item's text and `written`, the document's text from the item's
 * start to the cursor.
 */
export function acceptedLength(insertText: string, written: string): number {
  const most = Math.min(insertText.length, written.length);
  let n = 0;
  while (n < most && insertText.charCodeAt(n) === written.charCodeAt(n)) {
    n++;
  }
  return n;
}

/**
 * Whether VS Code draws `item` while its suggest list is open with `selected` chosen: only a
 * ghost that extends the selected item (both edits written out from the earlier of their starts,
 * the item's must begin with the selected one's). `textBetween` reads the document.
 */
export function extendsSelected(
  item: ServedItem,
  selected: { start: Pos; text: string },
  textBetween: (from: Pos, to: Pos) => string,
): boolean {
  if (!item.range) {
    return false;
  }
  const start = item.range.start;
  const from = before(start, selected.start) ? start : selected.start;
  const written = textBetween(from, start) + item.insertText;
  return written.startsWith(textBetween(from, selected.start) + selected.text);
}

function before(a: Pos, b: Pos): boolean {
  return a.line < b.line || (a.line === b.line && a.character < b.character);
}

/** The items served for one ask of one document, and which of them VS Code shows (Alt+] / Alt+[ cycle). */
export interface Served {
  uri: string;
  version: number;
  items: ServedItem[];
  index: number;
}

/** The served item at `index`, VS Code's way: cycling wraps around both ends. */
export function itemAt(served: Served, index: number): ServedItem | undefined {
  const n = served.items.length;
  return n === 0 ? undefined : served.items[((index % n) + n) % n];
}

/**
 * The last items served per document, and which one was last reported shown (didShowCompletion
 * is sent once per item per showing: the typed-through rest of an item keeps its id and is the
 * same showing).
 */
export class GhostBook {
  private readonly served = new Map<string, Served>();
  private readonly shownIds = new Map<string, string>();

  /** Items served for `uri` at `version` (an empty answer forgets what was there). */
  record(uri: string, version: number, items: ServedItem[]): Served | undefined {
    if (items.length === 0) {
      this.forget(uri);
      return undefined;
    }
    const served = { uri, version, items, index: 0 };
    this.served.set(uri, served);
    return served;
  }

  get(uri: string): Served | undefined {
    return this.served.get(uri);
  }

  /** The item VS Code shows after cycling `step` (+1 next, -1 previous). */
  cycle(uri: string, step: number): ServedItem | undefined {
    const served = this.served.get(uri);
    if (!served) {
      return undefined;
    }
    served.index = (((served.index + step) % served.items.length) + served.items.length) % served.items.length;
    return itemAt(served, served.index);
  }

  /** The item shown now in `uri`, if the text typed since its start (`typedSince(start)`) still matches it. */
  onScreen(uri: string, typedSince: (start: Pos) => string | undefined): ServedItem | undefined {
    const served = this.served.get(uri);
    const item = served && itemAt(served, served.index);
    if (!item?.range) {
      return undefined;
    }
    const typed = typedSince(item.range.start);
    return typed !== undefined && restAfter(item.insertText, typed) !== undefined ? item : undefined;
  }

  /** Whether `item` is newly shown (its didShow not yet sent in this showing); notes it as shown. */
  firstShowing(uri: string, item: ServedItem): boolean {
    const id = suggestionId(item) ?? `${item.insertText}\u0000${JSON.stringify(item.range)}`;
    if (this.shownIds.get(uri) === id) {
      return false;
    }
    this.shownIds.set(uri, id);
    return true;
  }

  /** The ghost is gone (accepted, dismissed, left, the document closed): an item shown again counts again. */
  forget(uri: string): void {
    this.served.delete(uri);
    this.shownIds.delete(uri);
  }
}
