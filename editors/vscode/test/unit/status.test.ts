import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  alternativesLine,
  askAgainWhenReady,
  formatAcceptance,
  formatExplain,
  formatLatency,
  formatStatus,
  isUnguaranteed,
  itemLabel,
  shortSqlSource,
  unguaranteedReason,
  withLoadProgress,
} from "../../src/status";

describe("formatLatency", () => {
  it("uses ms below a second and seconds above", () => {
    assert.equal(formatLatency(812.4), "812 ms");
    assert.equal(formatLatency(1440), "1.4 s");
    assert.equal(formatLatency(undefined), "?");
    assert.equal(formatLatency(Number.NaN), "?");
  });
});

describe("formatStatus", () => {
  it("shows loading with the server's message", () => {
    const view = formatStatus("running", { state: "loading", message: "loading smollm2-135m-instruct" }, undefined);
    assert.equal(view.text, "$(sync~spin) gdg loading");
    assert.match(view.tooltip, /loading smollm2-135m-instruct/);
    const part = formatStatus("running", { state: "loading", message: "converting", percentage: 40 }, undefined);
    assert.equal(part.text, "$(sync~spin) gdg loading 40%");
    assert.equal(view.severity, "normal");
  });

  it("shows ready and the model before any suggestion", () => {
    const view = formatStatus(
      "running",
      { state: "ready", message: "ready", model: "smollm2-135m-instruct", device: "cpu", loadMs: 5280 },
      undefined,
    );
    assert.equal(view.text, "$(check) gdg ready");
    assert.match(view.tooltip, /smollm2-135m-instruct on cpu, loaded in 5\.3 s/);
  });

  it("shows the last latency and rung after a suggestion", () => {
    const view = formatStatus(
      "running",
      { state: "ready" },
      { text: "eturn count", rung: "gamma", guaranteed: true, tokens: 4, stopReason: "max-lines", timingsMs: { total: 2364.96 } },
    );
    assert.equal(view.text, "$(check) gdg 2.4 s · gamma");
    assert.match(view.tooltip, /rung gamma \(every name in scope\)/);
    assert.match(view.tooltip, /4 tokens, stopped by max-lines/);
  });

  it("says why nothing was suggested", () => {
    const view = formatStatus(
      "running",
      { state: "ready" },
      { text: "", rung: "gamma", reason: "the model produced nothing (timeout)", timingsMs: { total: 90 } },
    );
    assert.equal(view.text, "$(check) gdg 90 ms · gamma");
    assert.match(view.tooltip, /Nothing suggested: the model produced nothing \(timeout\)/);
  });

  it("marks failures and a missing server as errors", () => {
    const failed = formatStatus("running", { state: "failed", message: "no such model: x" }, undefined);
    assert.equal(failed.severity, "error");
    assert.match(failed.tooltip, /no such model: x/);
    const missing = formatStatus("not-found", undefined, undefined, "gdg-lsp was not found (looked in PATH)");
    assert.equal(missing.text, "$(error) gdg-lsp not found");
    assert.equal(missing.tooltip, "gdg-lsp was not found (looked in PATH)");
    assert.equal(formatStatus("stopped", undefined, undefined).severity, "warning");
  });

  it("shows starting until the server reports", () => {
    assert.equal(formatStatus("starting", undefined, undefined).text, "$(sync~spin) gdg starting");
    assert.equal(formatStatus("running", { state: "idle" }, undefined).text, "$(sync~spin) gdg starting");
  });
});

describe("formatExplain", () => {
  it("shows the text, or the error, or the raw answer", () => {
    assert.equal(formatExplain({ text: "hole: Stmt\nΓ: 166 names" }), "hole: Stmt\nΓ: 166 names");
    assert.equal(formatExplain({ error: "file:///x.py is not open" }), "gdg/explain: file:///x.py is not open");
    assert.equal(formatExplain({ rung: "gamma" }), '{\n  "rung": "gamma"\n}');
    assert.equal(formatExplain(null), "gdg/explain returned null");
  });
});

describe("the SQL data source", () => {
  it("is named after the model state for a SQL file, with its problems in the tooltip", () => {
    const view = formatStatus("running", { state: "ready" }, undefined, undefined, {
      label: "folder billing", rule: "folder", dialect: "sqlite", description: "folder billing (folder, SQLite)", tables: 4,
    });
    assert.equal(view.text, "$(check) gdg ready · $(database) billing");
    assert.match(view.tooltip, /SQL data source: folder billing \(folder, SQLite\), 4 tables/);
    assert.equal(view.severity, "normal");
    const broken = formatStatus("running", { state: "ready" }, undefined, undefined, {
      label: "the whole workspace (every schema, merged)", problems: ["gdg.sql.sources[0]: ddl 'x/*.sql' matches no file"],
    });
    assert.equal(broken.severity, "warning");
    assert.match(broken.tooltip, /matches no file/);
  });

  it("is left out while the server is not running", () => {
    const view = formatStatus("stopped", undefined, undefined, undefined, { label: "folder billing" });
    assert.doesNotMatch(view.text, /billing/);
  });

  it("drops the setting's index from a named entry", () => {
    assert.equal(shortSqlSource({ label: "warehouse (gdg.sql.sources[2])" }), "warehouse");
  });
});

describe("askAgainWhenReady", () => {
  it("asks again once, when the model has just become ready", () => {
    assert.equal(askAgainWhenReady({ state: "loading" }, { state: "ready" }), true);
    assert.equal(askAgainWhenReady(undefined, { state: "ready" }), true);
    assert.equal(askAgainWhenReady({ state: "ready" }, { state: "ready" }), false);
    assert.equal(askAgainWhenReady({ state: "loading" }, { state: "loading", percentage: 40 }), false);
    assert.equal(askAgainWhenReady({ state: "loading" }, { state: "failed" }), false);
  });
});

describe("a suggestion without the guarantee", () => {
  it("turns the item to a warning and says which positions are open", () => {
    const view = formatStatus(
      "running",
      { state: "ready" },
      { text: "_statistics(average, spread)", rung: "base", guaranteed: false, openPositions: ["undefined_thing_statistics"], timingsMs: { total: 812 } },
    );
    assert.equal(view.severity, "warning");
    assert.equal(view.text, "$(warning) gdg 812 ms · base · not guaranteed");
    assert.match(view.tooltip, /no name in scope vouches for undefined_thing_statistics \(rung base\)/);
    assert.equal(isUnguaranteed({ text: "x", guaranteed: false }), true);
  });

  it("is not a warning when nothing was suggested or the guarantee holds", () => {
    assert.equal(isUnguaranteed({ text: "", guaranteed: false }), false);
    assert.equal(isUnguaranteed({ text: "x", guaranteed: true }), false);
    assert.equal(isUnguaranteed(undefined), false);
    assert.match(unguaranteedReason({ rung: "base" }), /rung base does not hold every name/);
  });
});

describe("the server's own words for it", () => {
  const reason = "rung base: its names are not drawn from Γ; the diagnostics find no name in it that does not exist";
  const info = {
    text: "return undefined_thing",
    id: "a1",
    rung: "gamma",
    guaranteed: true,
    notGuaranteedBecause: null,
    candidates: [
      { id: "a1", guaranteed: true, notGuaranteedBecause: null },
      { id: "a2", guaranteed: false, notGuaranteedBecause: reason },
      { id: "a3", guaranteed: false },
    ],
  };

  it("says notGuaranteedBecause when the server sent it", () => {
    assert.equal(unguaranteedReason({ rung: "base", openPositions: ["x"], notGuaranteedBecause: reason }), `Not guaranteed: ${reason}.`);
    const view = formatStatus("running", { state: "ready" }, { text: "x", rung: "base", guaranteed: false, notGuaranteedBecause: reason });
    assert.match(view.tooltip, /Not guaranteed: rung base: its names are not drawn from Γ/);
  });

  it("labels each alternative by its own candidate", () => {
    assert.deepEqual(itemLabel(info, "a1"), { guaranteed: true });
    assert.deepEqual(itemLabel(info, "a2"), { guaranteed: false, reason: `Not guaranteed: ${reason}.` });
    assert.equal(itemLabel(info, "a3")?.guaranteed, false); // without its own words: the rung's
    assert.match(itemLabel(info, "a3")!.reason!, /rung gamma does not hold every name/);
    assert.equal(itemLabel(info, "zz"), undefined);
    assert.deepEqual(itemLabel({ text: "x", id: "b1", guaranteed: false, notGuaranteedBecause: reason }, "b1"), {
      guaranteed: false,
      reason: `Not guaranteed: ${reason}.`,
    });
  });
});

describe("alternatives", () => {
  it("says when they are on their way, all there, or cut and why", () => {
    assert.equal(alternativesLine({ alternatives: { wanted: 1, found: 1 } }), undefined);
    assert.match(alternativesLine({ alternatives: { wanted: 3, found: 1, pending: true } })!, /1 of 3, the others being decoded/);
    assert.match(alternativesLine({ alternatives: { wanted: 3, found: 3, pending: false } })!, /3 of 3 \(Alt\+\] \/ Alt\+\[\)/);
    assert.match(
      alternativesLine({ alternatives: { wanted: 3, found: 2, cut: "time", pending: false } })!,
      /2 of 3: the others were cut by the time budget \(gdg\.timeoutMs\)/,
    );
  });

  it("puts a cut in the status item", () => {
    const view = formatStatus(
      "running",
      { state: "ready" },
      { text: "x", rung: "gamma", guaranteed: true, timingsMs: { total: 900 }, alternatives: { wanted: 3, found: 2, cut: "time" } },
    );
    assert.equal(view.text, "$(check) gdg 900 ms · gamma · 2/3 cut");
    assert.match(view.tooltip, /Alternatives: 2 of 3: the others were cut/);
    const whole = formatStatus("running", { state: "ready" }, { text: "x", rung: "gamma", guaranteed: true, timingsMs: { total: 900 }, alternatives: { wanted: 3, found: 3 } });
    assert.equal(whole.text, "$(check) gdg 900 ms · gamma");
  });
});

describe("the model load's progress", () => {
  it("shows the percentage from the first progress message on", () => {
    const begun = withLoadProgress(undefined, { kind: "begin", message: "loading smollm2", percentage: 0 });
    assert.equal(formatStatus("running", begun, undefined).text, "$(sync~spin) gdg loading 0%");
    const later = withLoadProgress(begun, { kind: "report", message: "Warming up", percentage: 95 });
    assert.equal(formatStatus("running", later, undefined).text, "$(sync~spin) gdg loading 95%");
    assert.match(formatStatus("running", later, undefined).tooltip, /Warming up/);
    assert.equal(withLoadProgress(later, { kind: "report" }).percentage, 95); // a report without one keeps it
  });

  it("never turns a ready or failed model back to loading", () => {
    assert.equal(withLoadProgress({ state: "ready" }, { kind: "report", percentage: 50 }).state, "ready");
    assert.equal(withLoadProgress({ state: "failed" }, { kind: "begin", percentage: 0 }).state, "failed");
    assert.equal(withLoadProgress({ state: "loading", percentage: 80 }, { kind: "end" }).percentage, 80);
  });
});

describe("what the extension holds back", () => {
  it("is named after the rest of the item, with its reason in the tooltip", () => {
    const view = formatStatus("running", { state: "ready" }, undefined, undefined, undefined, {
      label: "snoozed until 14:05",
      detail: "Suggestions are snoozed until 14:05; Alt+\\ still asks.",
    });
    assert.equal(view.text, "$(check) gdg ready · $(bell-slash) snoozed until 14:05");
    assert.match(view.tooltip, /snoozed until 14:05; Alt\+\\ still asks/);
    const stopped = formatStatus("stopped", undefined, undefined, undefined, undefined, { label: "manual", detail: "" });
    assert.doesNotMatch(stopped.text, /manual/);
  });
});

describe("formatAcceptance", () => {
  it("sums up what happened to the suggestions shown, per language and model below", () => {
    const line = formatAcceptance({
      enabled: true,
      session: { all: { shown: 2, accepted: 1 } },
      total: {
        all: { shown: 10, accepted: 4, partiallyAccepted: 1, dismissed: 5, charsAccepted: 120, charsChecked2m: 100, charsRetained2m: 95 },
        rows: [{ language: "python", model: "smollm2", shown: 10, accepted: 4 }],
      },
    })!;
    assert.equal(line.label, "10 shown, 4 accepted, 1 partly, 5 dismissed; 120 characters accepted, 95% still there after 2 min");
    assert.match(line.detail, /^This session: 2 shown, 1 accepted/);
    assert.match(line.detail, /python · smollm2: 10 shown, 4 accepted, 0 partly/);
  });

  it("says when counting is off, and nothing before the server answers", () => {
    assert.match(formatAcceptance({ enabled: false })!.label, /off \(gdg\.stats\.enabled\)/);
    assert.equal(formatAcceptance(undefined), undefined);
    assert.equal(formatAcceptance({ enabled: true }), undefined);
  });
});
