// The VS Code real-editor test: code-server with the packaged extension,
// driven through Debian's chromium by playwright-core. It opens a Python file,
// types at a statement start, waits for gdg-lsp's ghost text, accepts it with
// Tab, saves, and checks the file on disk changed exactly as the ghost said;
// then runs the explain command and reads its report.
//
// Run it through run.sh (after setup.sh). Environment:
//   GDG_SERVER   the gdg-lsp executable to use (default: a wrapper that runs
//                `$PYTHON -m gdg_lsp` from this checkout)
//   PYTHON       the Python with gdg-lsp's dependencies (default: python3)
//   CHROMIUM     the browser (default: /usr/bin/chromium)
//   E2E_TIMEOUT_MS  overall limit (default 900000)
//   E2E_KEEP     keep the work folder of a passing run (a failing run's is always kept)

import { spawn, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXT = path.resolve(HERE, "../..");
const REPO = path.resolve(EXT, "../..");
const VSIX = path.join(EXT, "dist", "gdg-lsp.vsix");
const CODE_SERVER = path.join(HERE, "node_modules", "code-server", "out", "node", "entry.js");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const PYTHON = process.env.PYTHON || "python3";
const TOTAL_MS = Number(process.env.E2E_TIMEOUT_MS || 900_000);

const SOURCE = `import os


def count_python_files(root):
    count = 0
    for name in os.listdir(root):
        if name.endswith(".py"):
            count += 1
    
`;
const LINE = 9; // 1-based: the last line, four spaces inside the function
const lines0 = SOURCE.split("\n");
const TYPED = "r";

const started = Date.now();
const log = (...args) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...args);
const timings = {};
const mark = (name) => {
  timings[name] = Date.now() - started;
  log(name);
};

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

async function waitFor(what, timeoutMs, fn, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await fn();
      if (value) {
        return value;
      }
    } catch (err) {
      if (err.fatal) {
        throw err;
      }
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function prepare() {
  for (const [file, hint] of [
    [CODE_SERVER, "run test/e2e/setup.sh"],
    [VSIX, "run test/e2e/setup.sh (it builds the .vsix)"],
    [CHROMIUM, "apt-get install chromium"],
  ]) {
    if (!fs.existsSync(file)) {
      throw new Error(`${file} is missing: ${hint}`);
    }
  }
  const work = fs.mkdtempSync(path.join(HERE, ".work", "run-"));
  const dirs = {
    work,
    userData: path.join(work, "user-data"),
    extensions: path.join(work, "extensions"),
    workspace: path.join(work, "workspace"),
    browser: path.join(work, "chromium-profile"),
    xdg: path.join(work, "xdg"),
  };
  for (const d of Object.values(dirs)) {
    fs.mkdirSync(d, { recursive: true });
  }
  let server = process.env.GDG_SERVER;
  if (!server) {
    // the server from this checkout, run by the given Python
    server = path.join(work, "gdg-lsp");
    fs.writeFileSync(
      server,
      `#!/bin/sh\nPYTHONPATH=${JSON.stringify(REPO)}\${PYTHONPATH:+:$PYTHONPATH} exec ${JSON.stringify(PYTHON)} -m gdg_lsp "$@"\n`,
    );
    fs.chmodSync(server, 0o755);
  }
  const serverLog = path.join(work, "gdg-lsp.log");
  fs.mkdirSync(path.join(dirs.userData, "User"), { recursive: true });
  fs.writeFileSync(
    path.join(dirs.userData, "User", "settings.json"),
    JSON.stringify(
      {
        "gdg.server.path": server,
        "gdg.server.args": ["--log-file", serverLog],
        "gdg.device": "cpu",
        // the test is about the editor, not latency: a loaded 2-core CI box must not time out
        "gdg.timeoutMs": 30000,
        "editor.inlineSuggest.enabled": true,
        // no suggest widget: Tab must go to the inline suggestion
        "editor.quickSuggestions": { other: false, comments: false, strings: false },
        "editor.suggestOnTriggerCharacters": false,
        "editor.wordBasedSuggestions": "off",
        "files.autoSave": "off",
        "files.trimTrailingWhitespace": false,
        "security.workspace.trust.enabled": false,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "extensions.ignoreRecommendations": true,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.enableExperiments": false,
        "chat.disableAIFeatures": true,
      },
      null,
      2,
    ),
  );
  const file = path.join(dirs.workspace, "count.py");
  fs.writeFileSync(file, SOURCE);
  return { dirs, file, serverLog };
}

function codeServerArgs(dirs, extra) {
  return [
    CODE_SERVER,
    "--user-data-dir",
    dirs.userData,
    "--extensions-dir",
    dirs.extensions,
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-workspace-trust",
    "--disable-getting-started-override",
    ...extra,
  ];
}

function codeServerEnv(dirs) {
  return { ...process.env, XDG_CONFIG_HOME: dirs.xdg, XDG_DATA_HOME: dirs.xdg, PYTHON };
}

async function main() {
  const { dirs, file, serverLog } = prepare();
  log("work dir", dirs.work);
  execFileSync(process.execPath, codeServerArgs(dirs, ["--install-extension", VSIX]), {
    env: codeServerEnv(dirs),
    stdio: "inherit",
  });
  mark("extension installed");

  const port = await freePort();
  const cs = spawn(
    process.execPath,
    codeServerArgs(dirs, ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, dirs.workspace]),
    { env: codeServerEnv(dirs), stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  const csLog = fs.createWriteStream(path.join(dirs.work, "code-server.log"));
  cs.stdout.pipe(csLog);
  cs.stderr.pipe(csLog);
  let context;
  let page;
  let passed = false;
  const cleanup = async () => {
    await context?.close().catch(() => {});
    try {
      process.kill(-cs.pid, "SIGTERM"); // code-server and its extension host / gdg-lsp
    } catch {}
  };
  const overall = setTimeout(() => {
    console.error(`e2e: over ${TOTAL_MS} ms, giving up`);
    void cleanup().then(() => process.exit(1));
  }, TOTAL_MS);

  try {
    await waitFor("code-server", 120_000, async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 500);
    mark("code-server up");

    context = await chromium.launchPersistentContext(dirs.browser, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
      viewport: { width: 1400, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(60_000);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: 120_000 });
    mark("workbench loaded");

    // open the file with Quick Open, like a user
    await waitFor("quick open", 60_000, async () => {
      await page.keyboard.press("Control+P");
      await page.waitForSelector(".quick-input-widget input", { state: "visible", timeout: 3000 });
      return true;
    });
    await page.keyboard.type("count.py");
    await page.waitForSelector(".quick-input-list .monaco-list-row", { timeout: 30_000 });
    await page.keyboard.press("Enter");
    const editor = page.locator(".editor-instance .monaco-editor").first();
    await editor.waitFor({ state: "visible" });
    await page.waitForSelector(".tab.active[aria-label*='count.py'], .tab.active:has-text('count.py')");
    mark("file open");

    // the extension's status bar item says when the model is ready
    const status = page.locator(".statusbar-item", { hasText: /\bgdg(-lsp)? (ready|starting|loading|failed|stopped|not found|[0-9])/ }).first();
    await waitFor("the model (status bar: gdg ready)", 600_000, async () => {
      const text = (await status.innerText({ timeout: 1000 })).trim();
      if (/failed|not found|stopped/.test(text)) {
        throw Object.assign(new Error(`status bar says "${text}"`), { fatal: true });
      }
      return /gdg ready|gdg [0-9.]+ m?s/.test(text);
    }, 500);
    mark("model ready");

    // cursor to the end of the last line, then type at the statement start
    await editor.click();
    // (the last line of the document is the empty one after the final newline)
    await page.keyboard.press("Control+End");
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("End");
    await page.keyboard.type(TYPED, { delay: 50 });
    const where = `Ln ${LINE}, Col ${lines0[LINE - 1].length + TYPED.length + 1}`;
    await waitFor(`the cursor at ${where}`, 10_000, async () =>
      (await page.locator(".statusbar-item", { hasText: where }).count()) > 0,
    );
    const ghostLocator = page.locator(".view-lines .ghost-text-decoration, .view-lines .ghost-text");
    const readGhost = async () => {
      const text = (await ghostLocator.allInnerTexts()).join("");
      return text.trim() !== "" ? text : null;
    };
    // VS Code asks by itself after the keystroke; an empty answer (the model
    // chose to stop) is legitimate, so ask again with Alt+\ (Trigger Inline
    // Suggestion), as a user would, a few times
    let ghost = null;
    for (let attempt = 0; attempt < 4 && !ghost; attempt++) {
      if (attempt > 0) {
        log("no ghost text yet: Alt+\\");
        await page.keyboard.press("Alt+Backslash");
      }
      ghost = await waitFor("ghost text", 60_000, readGhost).catch(() => null);
    }
    if (!ghost) {
      throw new Error(`no ghost text appeared (status bar: ${(await status.innerText()).trim()})`);
    }
    mark(`ghost text ${JSON.stringify(ghost)}`);
    const statusAfter = (await status.innerText()).trim();

    await page.keyboard.press("Tab");
    // (a new ghost may follow at once: the saved file tells what Tab did)
    await page.waitForTimeout(300);
    await page.keyboard.press("Control+S");
    const lines = SOURCE.split("\n");
    lines[LINE - 1] = lines[LINE - 1] + TYPED + ghost.replace(/\u00a0/g, " ");
    const expected = lines.join("\n");
    const saved = await waitFor("the saved file", 15_000, async () => {
      const text = fs.readFileSync(file, "utf8");
      return text !== SOURCE ? text : null;
    });
    mark("saved");
    if (saved !== expected) {
      throw new Error(`the saved file differs from the typed text + the ghost text:\n--- expected\n${expected}\n--- saved\n${saved}`);
    }

    // the explain command: gdg/explain's answer
    await page.keyboard.press("F1");
    await page.waitForSelector(".quick-input-widget input", { state: "visible" });
    await page.keyboard.type("gdg-lsp: Explain the Hole");
    await page.waitForSelector(".quick-input-list .monaco-list-row[aria-label*='Explain the Hole']");
    await page.keyboard.press("Enter");
    // the report opens beside the file as a read-only document
    const explained = await waitFor("the explain document", 120_000, async () => {
      const texts = (await page.locator(".editor-instance .monaco-editor .view-lines").allInnerTexts()).map((t) =>
        t.replace(/\u00a0/g, " "), // the editor renders spaces as no-break spaces
      );
      return texts.find((t) => t.includes(`# gdg-lsp explain count.py:${LINE}:`)) ?? null;
    });
    if (!explained.includes("count_python_files")) {
      throw new Error(`the explain report does not show Γ:\n${explained}`);
    }
    mark("explained");

    // the server understood every setting the extension sent (no client-only keys leaked)
    const serverLogText = fs.readFileSync(serverLog, "utf8");
    for (const complaint of ["unknown setting", "invalid gdg.", "must be an object"]) {
      if (serverLogText.includes(complaint)) {
        throw new Error(`gdg-lsp complained about the settings ("${complaint}"):\n${serverLogText}`);
      }
    }

    console.log(
      JSON.stringify(
        {
          ok: true,
          ghost,
          statusBar: statusAfter,
          explainHead: explained.split("\n").slice(0, 6),
          timingsMs: timings,
          workDir: dirs.work,
        },
        null,
        2,
      ),
    );
    console.log("1 passed, 0 failed");
    passed = true;
  } catch (err) {
    if (page) {
      await page.screenshot({ path: path.join(dirs.work, "failure.png") }).catch(() => {});
    }
    console.error(`e2e failed: ${err.stack || err}`);
    console.error(`work dir (screenshot, code-server.log, gdg-lsp.log): ${dirs.work}`);
    if (fs.existsSync(serverLog)) {
      console.error("--- gdg-lsp.log (tail)\n" + fs.readFileSync(serverLog, "utf8").split("\n").slice(-30).join("\n"));
    }
    console.log("0 passed, 1 failed");
    process.exitCode = 1;
  } finally {
    clearTimeout(overall);
    await cleanup();
    if (passed && !process.env.E2E_KEEP) {
      fs.rmSync(dirs.work, { recursive: true, force: true }); // a failed run's folder stays, for its logs
    }
  }
}

await main();
