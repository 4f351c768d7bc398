import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { discoverServer, DiscoveryEnv, expandSettingPath, findOnPath, venvCandidates } from "../../src/discovery";

function env(executables: string[], overrides: Partial<DiscoveryEnv> = {}): DiscoveryEnv {
  const set = new Set(executables);
  return {
    platform: "linux",
    pathEnv: "/usr/local/bin:/usr/bin",
    homeDir: "/home/ada",
    workspaceFolders: ["/work/proj"],
    isExecutable: (file) => set.has(file),
    ...overrides,
  };
}

describe("discoverServer", () => {
  it("prefers the setting over PATH", () => {
    const e = env(["/opt/gdg/bin/gdg-lsp", "/usr/bin/gdg-lsp", "/work/proj/.venv/bin/gdg-lsp"]);
    assert.deepEqual(discoverServer("/opt/gdg/bin/gdg-lsp", e), {
      found: true,
      command: "/opt/gdg/bin/gdg-lsp",
      source: "setting",
    });
  });

  it("reports a setting that points nowhere instead of silently searching elsewhere", () => {
    const e = env(["/usr/bin/gdg-lsp"]);
    const result = discoverServer("~/missing/gdg-lsp", e);
    assert.equal(result.found, false);
    if (!result.found) {
      assert.equal(result.settingProblem, true);
      assert.match(result.message, /gdg\.server\.path/);
      assert.match(result.message, /\/home\/ada\/missing\/gdg-lsp/);
    }
  });

  it("searches PATH in order when the setting is empty", () => {
    const e = env(["/usr/bin/gdg-lsp", "/usr/local/bin/gdg-lsp"]);
    assert.deepEqual(discoverServer("  ", e), { found: true, command: "/usr/local/bin/gdg-lsp", source: "PATH" });
  });

  it("never runs the workspace's own .venv or venv gdg-lsp, and names it with the setting that would", () => {
    const planted = ["/work/proj/.venv/bin/gdg-lsp", "/work/proj/venv/bin/gdg-lsp"];
    const result = discoverServer(undefined, env(planted));
    assert.equal(result.found, false);
    if (!result.found) {
      assert.equal(result.settingProblem, false);
      assert.match(result.message, /\/work\/proj\/\.venv\/bin\/gdg-lsp/);
      assert.match(result.message, /gdg\.server\.path/);
    }
    // the user names it: then, and only then, it runs
    assert.deepEqual(discoverServer("${workspaceFolder}/.venv/bin/gdg-lsp", env(planted)), {
      found: true,
      command: "/work/proj/.venv/bin/gdg-lsp",
      source: "setting",
    });
  });

  it("skips PATH entries inside a workspace folder and relative ones", () => {
    const planted = ["/work/proj/.venv/bin/gdg-lsp", "bin/gdg-lsp", "/work/proj/sub/gdg-lsp", "/usr/bin/gdg-lsp"];
    const e = env(planted, { pathEnv: "/work/proj/.venv/bin:bin:/work/proj/sub/../sub:/usr/bin" });
    assert.deepEqual(discoverServer(undefined, e), { found: true, command: "/usr/bin/gdg-lsp", source: "PATH" });
    assert.equal(findOnPath(env(planted.slice(0, 3), { pathEnv: "/work/proj/.venv/bin:bin" })), undefined);
    // a folder beside the workspace whose name starts the same is not inside it
    const beside = env(["/work/proj-tools/gdg-lsp"], { pathEnv: "/work/proj-tools" });
    assert.equal(findOnPath(beside), "/work/proj-tools/gdg-lsp");
  });

  it("compares Windows paths without case", () => {
    const e = env([], {
      platform: "win32",
      pathEnv: "c:\\proj\\.venv\\Scripts",
      pathExt: ".EXE",
      workspaceFolders: ["C:\\Proj"],
      isExecutable: () => true,
    });
    assert.equal(findOnPath(e), undefined);
  });

  it("says where it looked and how to fix it when nothing is found", () => {
    const result = discoverServer(undefined, env([]));
    assert.equal(result.found, false);
    if (!result.found) {
      assert.equal(result.settingProblem, false);
      assert.match(result.message, /pip install gdg-lsp/);
      assert.match(result.message, /gdg\.server\.path/);
      assert.doesNotMatch(result.message, /The workspace has/);
    }
  });

  it("uses Windows names and separators on win32", () => {
    const e = env(["C:\\tools\\gdg-lsp.exe"], {
      platform: "win32",
      pathEnv: "C:\\Windows;C:\\tools",
      pathExt: ".COM;.EXE",
      workspaceFolders: ["C:\\proj"],
    });
    assert.equal(findOnPath(e), "C:\\tools\\gdg-lsp.exe");
    assert.deepEqual(venvCandidates(e), ["C:\\proj\\.venv\\Scripts\\gdg-lsp.exe", "C:\\proj\\venv\\Scripts\\gdg-lsp.exe"]);
  });
});

describe("expandSettingPath", () => {
  it("expands ~, ${workspaceFolder} and relative paths", () => {
    const e = env([]);
    assert.equal(expandSettingPath("~/bin/gdg-lsp", e), "/home/ada/bin/gdg-lsp");
    assert.equal(expandSettingPath("${workspaceFolder}/.venv/bin/gdg-lsp", e), "/work/proj/.venv/bin/gdg-lsp");
    assert.equal(expandSettingPath("tools/gdg-lsp", e), "/work/proj/tools/gdg-lsp");
    assert.equal(expandSettingPath("/abs/gdg-lsp", e), "/abs/gdg-lsp");
  });
});
