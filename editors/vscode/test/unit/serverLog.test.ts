import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { StderrLevels } from "../../src/serverLog";

describe("StderrLevels", () => {
  it("shows each server line at its own level, without the server's timestamp", () => {
    const levels = new StderrLevels();
    assert.deepEqual(levels.read("2026-12-02 21:59:55,826 INFO gdg_lsp.server.configuration: client code-server"), {
      level: "info",
      text: "gdg_lsp.server.configuration: client code-server",
    });
    assert.equal(levels.read("2026-12-02 21:59:55,826 WARNING gdg_lsp.server: x").level, "warn");
    assert.equal(levels.read("2026-12-02 21:59:55,826 DEBUG gdg_lsp.server: x").level, "debug");
    assert.equal(levels.read("2026-12-02 21:59:55,826 CRITICAL gdg_lsp.server: x").level, "error");
  });

  it("keeps a logged traceback's lines at the level of the line that began it", () => {
    const levels = new StderrLevels();
    assert.equal(levels.read("2026-12-02 21:59:55,826 ERROR gdg_lsp.server.handlers: completion failed").level, "error");
    assert.equal(levels.read('  File "x.py", line 3, in f').level, "error");
    assert.equal(levels.read("2026-12-02 21:59:56,001 INFO gdg_lsp.server: ok").level, "info");
    assert.deepEqual(levels.read("a line of a library's own"), { level: "info", text: "a line of a library's own" });
  });

  it("reads Python's report of an uncaught exception as an error", () => {
    const levels = new StderrLevels();
    assert.equal(levels.read("Traceback (most recent call last):").level, "error");
    assert.equal(levels.read("ValueError: boom").level, "error");
  });
});
