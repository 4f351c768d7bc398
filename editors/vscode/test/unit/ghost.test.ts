import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { acceptedLength, extendsSelected, GhostBook, itemAt, restAfter, ServedItem, suggestionId } from "../../src/ghost";

function item(insertText: string, line = 21, character = 4, id?: string): ServedItem {
  const at = { line, character };
  return {
    insertText,
    range: { start: at, end: at },
    ...(id ? { command: { title: "gdg-lsp: accepted", command: "gdg.didAcceptCompletion", arguments: [{ id }] } } : {}),
  };
}

/** The text typed from `start` to the cursor, as VS Code's document would give it. */
function typed(text: string) {
  return () => text;
}

describe("restAfter", () => {
  it("is the part still to write while the typed text is the item's start", () => {
    assert.equal(restAfter("return average, spread", ""), "return average, spread");
    assert.equal(restAfter("return average, spread", "ret"), "urn average, spread");
  });

  it("is undefined once the typed text leaves the item or writes all of it", () => {
    assert.equal(restAfter("return average, spread", "rex"), undefined);
    assert.equal(restAfter("return", "return"), undefined);
    assert.equal(restAfter("return", "returns"), undefined);
  });
});

describe("acceptedLength", () => {
  it("counts the item's UTF-16 units the document holds from the item's start", () => {
    assert.equal(acceptedLength("return average, spread", "return "), 7);
    assert.equal(acceptedLength("return average, spread", "return average, spread"), 22);
    assert.equal(acceptedLength("naïve + 😀 x", "naïve + 😀"), "naïve + 😀".length); // the emoji is 2 units
    assert.equal(acceptedLength("return", "rx"), 1);
  });
});

describe("suggestionId", () => {
  it("reads the id the server put in the accept command's argument", () => {
    assert.equal(suggestionId(item("x", 0, 0, "s-1")), "s-1");
    assert.equal(suggestionId(item("x")), undefined);
    assert.equal(suggestionId({ insertText: "x", command: { title: "", command: "c", arguments: ["s-1"] } }), undefined);
  });
});

describe("GhostBook", () => {
  const uri = "file:///stats.py";

  it("knows the served item is on screen while its start is typed", () => {
    const book = new GhostBook();
    book.record(uri, 3, [item("return average, spread")]);
    assert.equal(book.onScreen(uri, typed(""))?.insertText, "return average, spread");
    assert.equal(book.onScreen(uri, typed("ret"))?.insertText, "return average, spread");
    assert.equal(book.onScreen(uri, typed("rex")), undefined);
    assert.equal(book.onScreen(uri, typed(undefined as unknown as string)), undefined);
    assert.equal(book.onScreen("file:///other.py", typed("")), undefined);
  });

  it("forgets a document's items at an empty answer", () => {
    const book = new GhostBook();
    book.record(uri, 3, [item("return")]);
    assert.equal(book.record(uri, 4, []), undefined);
    assert.equal(book.get(uri), undefined);
  });

  it("cycles through alternatives the way VS Code does, wrapping at both ends", () => {
    const book = new GhostBook();
    const served = book.record(uri, 1, [item("a"), item("b"), item("c")])!;
    assert.equal(itemAt(served, 0)?.insertText, "a");
    assert.equal(book.cycle(uri, -1)?.insertText, "c");
    assert.equal(book.cycle(uri, 1)?.insertText, "a");
    assert.equal(book.cycle(uri, 1)?.insertText, "b");
    assert.equal(book.onScreen(uri, typed(""))?.insertText, "b");
    assert.equal(book.cycle("file:///none.py", 1), undefined);
  });

  it("reports an item shown once per showing: its typed-through rest keeps its id", () => {
    const book = new GhostBook();
    assert.equal(book.firstShowing(uri, item("return average, spread", 21, 4, "s-1")), true);
    assert.equal(book.firstShowing(uri, item("eturn average, spread", 21, 5, "s-1")), false);
    assert.equal(book.firstShowing(uri, item("x", 21, 5, "s-2")), true);
    book.forget(uri);
    assert.equal(book.firstShowing(uri, item("x", 21, 5, "s-2")), true);
  });

  it("tells items without an id apart by their text and place", () => {
    const book = new GhostBook();
    assert.equal(book.firstShowing(uri, item("return")), true);
    assert.equal(book.firstShowing(uri, item("return")), false);
    assert.equal(book.firstShowing(uri, item("return", 30, 4)), true);
  });
});

describe("extendsSelected", () => {
  // line 21 holds "    r" and the cursor is after the r
  const line = "    r";
  const between = (from: { character: number }, to: { character: number }) => line.slice(from.character, to.character);

  it("is true when the ghost writes the selected item first, from either start", () => {
    // the rest served after the typed "r", against VS Code's item "return" over that "r"
    assert.equal(extendsSelected(item("eturn average, spread", 21, 5), { start: { line: 21, character: 4 }, text: "return" }, between), true);
    assert.equal(extendsSelected(item("return average, spread", 21, 4), { start: { line: 21, character: 4 }, text: "return" }, between), true);
  });

  it("is false for a selected item the ghost does not begin with", () => {
    assert.equal(extendsSelected(item("eturn average, spread", 21, 5), { start: { line: 21, character: 4 }, text: "range" }, between), false);
    assert.equal(extendsSelected({ insertText: "x" }, { start: { line: 21, character: 4 }, text: "x" }, between), false);
  });
});
