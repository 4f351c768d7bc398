import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { clockTime, GateState, languageEnabled, refusal, snoozeEnd, triggerMode } from "../../src/gate";

const NOW = Date.UTC(2026, 11, 2, 14, 0, 0);

function state(over: Partial<GateState> = {}): GateState {
  return { enable: { "*": true }, trigger: "automatic", snoozedUntil: 0, ...over };
}

const typing = { languageId: "python", explicit: false, typingThrough: false };

describe("languageEnabled", () => {
  it("takes the language's own entry, else '*', else on", () => {
    assert.equal(languageEnabled({ "*": true, sql: false }, "sql"), false);
    assert.equal(languageEnabled({ "*": false, python: true }, "python"), true);
    assert.equal(languageEnabled({ "*": false }, "p4"), false);
    assert.equal(languageEnabled({}, "p4"), true);
    assert.equal(languageEnabled(undefined, "p4"), true);
    assert.equal(languageEnabled({ sql: "no" }, "sql"), true); // not a boolean: the default
  });
});

describe("refusal", () => {
  it("lets VS Code's asks through by default", () => {
    assert.equal(refusal(state(), typing, NOW), undefined);
  });

  it("refuses every ask in a language turned off, even an explicit one", () => {
    const off = state({ enable: { "*": true, python: false } });
    assert.match(refusal(off, typing, NOW)!, /off for python/);
    assert.match(refusal(off, { ...typing, explicit: true }, NOW)!, /off for python/);
  });

  it("refuses automatic asks while snoozed, until the snooze ends; asking still works", () => {
    const snoozed = state({ snoozedUntil: NOW + 60_000 });
    assert.equal(refusal(snoozed, typing, NOW), "snoozed");
    assert.equal(refusal(snoozed, { ...typing, explicit: true }, NOW), undefined);
    assert.equal(refusal(snoozed, typing, NOW + 60_001), undefined);
  });

  it("in manual mode answers only asks the user made, and keeps their ghost while it is typed", () => {
    const manual = state({ trigger: "manual" });
    assert.match(refusal(manual, typing, NOW)!, /manual/);
    assert.equal(refusal(manual, { ...typing, explicit: true }, NOW), undefined);
    assert.equal(refusal(manual, { ...typing, typingThrough: true }, NOW), undefined);
  });
});

describe("snooze", () => {
  it("ends N minutes from now; nothing for 0 or nonsense", () => {
    assert.equal(snoozeEnd(15, NOW), NOW + 15 * 60_000);
    assert.equal(snoozeEnd(0, NOW), 0);
    assert.equal(snoozeEnd(-5, NOW), 0);
    assert.equal(snoozeEnd(Number.NaN, NOW), 0);
  });

  it("says its end as a local clock time", () => {
    const end = new Date(2026, 11, 2, 9, 5).getTime();
    assert.equal(clockTime(end), "09:05");
  });
});

describe("triggerMode", () => {
  it("is automatic unless the setting says manual", () => {
    assert.equal(triggerMode("manual"), "manual");
    assert.equal(triggerMode("automatic"), "automatic");
    assert.equal(triggerMode(undefined), "automatic");
    assert.equal(triggerMode("sometimes"), "automatic");
  });
});
