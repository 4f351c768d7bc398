import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { serverArgs, serverExecutable } from "../../src/serverCommand";

describe("serverArgs", () => {
  it("always has exactly one --stdio", () => {
    assert.deepEqual(serverArgs(undefined), ["--stdio"]);
    assert.deepEqual(serverArgs([]), ["--stdio"]);
    assert.deepEqual(serverArgs(["--stdio"]), ["--stdio"]);
    assert.deepEqual(serverArgs(["--log-level", "DEBUG", "--stdio", "--stdio"]), ["--stdio", "--log-level", "DEBUG"]);
  });

  it("keeps the user's arguments in order and drops non-strings", () => {
    assert.deepEqual(serverArgs(["--log-file", "/tmp/g.log", 3, "", null, "--log-level", "INFO"]), [
      "--stdio",
      "--log-file",
      "/tmp/g.log",
      "--log-level",
      "INFO",
    ]);
  });
});

describe("serverExecutable", () => {
  it("never sets a transport (the client would append a second --stdio)", () => {
    const exe = serverExecutable("/usr/bin/gdg-lsp", ["--stdio"]);
    assert.equal("transport" in exe, false);
    assert.deepEqual(exe, { command: "/usr/bin/gdg-lsp", args: ["--stdio"] });
    assert.equal(exe.args.filter((a) => a === "--stdio").length, 1);
  });

  it("passes env and cwd when given", () => {
    const exe = serverExecutable("gdg-lsp", [], { PATH: "/x" }, "/work");
    assert.deepEqual(exe.options, { env: { PATH: "/x" }, cwd: "/work" });
  });
});
