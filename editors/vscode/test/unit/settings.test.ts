import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { CLIENT_KEYS, ConfigurationLike, needsRestart, SERVER_KEYS, serverSettings } from "../../src/settings";

function config(values: Record<string, unknown>): ConfigurationLike {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

// the extension's package.json: the first one above this file (compiled or not)
function manifest(): { contributes: { configuration: { properties: Record<string, { default?: unknown }> } } } {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, "package.json"))) {
    dir = path.dirname(dir);
  }
  return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
}

describe("serverSettings", () => {
  it("nests dotted keys the way the server reads them", () => {
    const settings = serverSettings(
      config({
        model: "default",
        maxTokens: 64,
        "sql.connections": ["postgresql://localhost/db"],
        "p4.includePaths": ["/usr/share/p4c/p4include"],
        "tilelang.version": "0.1.6",
      }),
    );
    assert.deepEqual(settings, {
      model: "default",
      maxTokens: 64,
      sql: { connections: ["postgresql://localhost/db"] },
      p4: { includePaths: ["/usr/share/p4c/p4include"] },
      tilelang: { version: "0.1.6" },
    });
  });

  it("never sends the extension's own keys", () => {
    const values: Record<string, unknown> = { "server.path": "/x", "server.args": ["-v"], "trace.server": "verbose", device: "cpu" };
    assert.deepEqual(serverSettings(config(values)), { device: "cpu" });
  });

  it("leaves out keys without a value", () => {
    assert.deepEqual(serverSettings(config({})), {});
  });
});

describe("package.json", () => {
  it("contributes every server key and every client key, and nothing else under gdg.", () => {
    const declared = Object.keys(manifest().contributes.configuration.properties)
      .map((k) => k.replace(/^gdg\./, ""))
      .sort();
    assert.deepEqual(declared, [...SERVER_KEYS, ...CLIENT_KEYS].sort());
  });
});

describe("needsRestart", () => {
  it("restarts for gdg.server.* only", () => {
    assert.equal(needsRestart((s) => s === "gdg.server"), true);
    assert.equal(needsRestart((s) => s === "gdg.maxTokens"), false);
  });
});
