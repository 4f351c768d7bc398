// The VS Code real-editor test: code-server with the packaged extension, driven
// through Debian's chromium by playwright-core, every VS Code setting at its
// default (the suggest list opens while typing, as a new user has it).
//
// Python (examples/stats.py at its hole, opened while the model loads):
//   the status item shows the load's percentage, then the ghost appears without a
//   keystroke; Esc hides it and Alt+\ (the extension's ask-now key) brings it back;
//   the ghost's first characters are typed one by one and after each key the ghost
//   must stay on screen, never hidden by the suggest list, showing the rest;
//   Ctrl+Right accepts one word and the rest stays; Tab inserts exactly the rest
//   (the saved file says so); the explain command reports Γ.
// SQL (a query over a schema file, opened once the model is ready): the ghost
//   without a keystroke, typed through key by key, Tab.
// Then the extension's log: the server's lines at their levels, and what the
// server was told (didShowCompletion, didPartiallyAcceptCompletion, the accept
// command when the server's items carry one).
// Screenshots of each step are written to docs/screenshots/ when what they show
// changed (docs/screenshots/vscode-e2e.json describes them).
//
// Run it through run.sh (after setup.sh). Environment:
//   GDG_SERVER   the gdg-lsp executable to use (default: a wrapper that runs
//                `$PYTHON -m gdg_lsp` from this checkout)
//   PYTHON       the Python with gdg-lsp's dependencies (default: python3)
//   CHROMIUM     the browser (default: /usr/bin/chromium)
//   E2E_TIMEOUT_MS  overall limit (default 900000)
//   E2E_SCREENSHOTS the folder screenshots are kept in (default: docs/screenshots; empty: none)
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
const SHOTS = process.env.E2E_SCREENSHOTS ?? path.join(REPO, "docs", "screenshots");

const PYTHON_FILE = "stats.py";
const PYTHON_HOLE = { line: 22, column: 5 }; // 1-based: the blank line inside summary(), four spaces in
const SQL_FILE = "db/customers.sql";
const SQL_SCHEMA = `CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, city TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total REAL, placed_at TEXT);
`;
const SQL_SOURCE = "-- the names and emails of customers in Lyon\nSELECT ";
const SQL_HOLE = { line: 2, column: 8 };
/** How many of the ghost's first characters are typed, one key at a time. */
const KEYS = 3;
/** How long the ghost is watched after each key (it must be on screen at every look). */
const WATCH_MS = 700;

const started = Date.now();
const log = (...args) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...args);
const timings = {};
const mark = (name) => {
  timings[name] = Date.now() - started;
  log(name);
};
const fail = (message) => Object.assign(new Error(message), { fatal: true });

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
    shots: path.join(work, "screenshots"),
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
  // VS Code's own settings stay at their defaults (quick suggestions on, the suggest list
  // while typing): only what keeps a test machine quiet, and gdg-lsp's own
  fs.writeFileSync(
    path.join(dirs.userData, "User", "settings.json"),
    JSON.stringify(
      {
        "gdg.server.path": server,
        "gdg.server.args": ["--log-file", serverLog],
        "gdg.device": "cpu",
        // the test is about the editor, not latency: a loaded 2-core CI box must not time out
        "gdg.timeoutMs": 30000,
        // the LSP messages in the extension's log: what the server was told
        "gdg.trace.server": "verbose",
        "files.autoSave": "off",
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
  const files = {
    python: path.join(dirs.workspace, PYTHON_FILE),
    sql: path.join(dirs.workspace, SQL_FILE),
  };
  fs.copyFileSync(path.join(REPO, "examples", "stats.py"), files.python);
  fs.mkdirSync(path.dirname(files.sql), { recursive: true });
  fs.writeFileSync(path.join(dirs.workspace, "db", "schema.sql"), SQL_SCHEMA);
  fs.writeFileSync(files.sql, SQL_SOURCE);
  return { dirs, files, serverLog };
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

/** What VS Code's Accept Next Word takes of a ghost's rest: a word, or the blanks before one. */
function nextWord(rest) {
  const word = /[A-Za-z0-9_]+/.exec(rest); // Python's and SQL's words, as their language configurations say
  let until = word ? (word.index === 0 ? word[0].length : word.index) : rest.length;
  const blanks = /\s+/.exec(rest);
  if (blanks && blanks.index + blanks[0].length < until) {
    until = blanks.index + blanks[0].length;
  }
  return rest.slice(0, until);
}

/** The editor as the user sees it, read from the page. */
class Screen {
  constructor(page, dirs) {
    this.page = page;
    this.dirs = dirs;
    this.shots = {};
  }

  /** The ghost text on screen ("" for none), the cursor line's text, whether the suggest list shows. */
  async look() {
    return this.page.evaluate(() => {
      const editor = document.querySelector(".editor-instance .monaco-editor.focused") ?? document.querySelector(".editor-instance .monaco-editor");
      const ghost = [...editor.querySelectorAll(".view-lines .ghost-text-decoration, .view-lines .ghost-text-decoration-preview, .view-lines .ghost-text")]
        .map((e) => e.textContent)
        .join("")
        .replace(/\u00a0/g, " ");
      const widget = editor.querySelector(".suggest-widget");
      const list = widget && widget.classList.contains("visible")
        ? [...widget.querySelectorAll(".monaco-list-row")].map((r) => r.getAttribute("aria-label"))
        : null;
      return { ghost, list };
    });
  }

  async ghost() {
    const { ghost } = await this.look();
    return ghost.trim() === "" ? null : ghost;
  }

  /** The status bar items that speak for gdg-lsp (there must be one). */
  async statusItems() {
    return (await this.page.locator(".statusbar-item").allInnerTexts()).map((t) => t.trim()).filter((t) => /gdg/.test(t));
  }

  /** A small picture of the lines around the cursor, kept as `name` with what it shows. */
  async shot(name, shows) {
    const cursor = await this.page.locator(".editor-instance .monaco-editor.focused .cursors-layer .cursor").first().boundingBox();
    const editor = await this.page.locator(".editor-instance .monaco-editor.focused").first().boundingBox();
    if (!cursor || !editor) {
      throw new Error(`no cursor to photograph for ${name}`);
    }
    const clip = { x: editor.x, y: Math.max(editor.y, cursor.y - 2 * cursor.height), width: Math.min(760, editor.width), height: 5 * cursor.height };
    await this.page.screenshot({ path: path.join(this.dirs.shots, name), clip });
    this.shots[name] = shows;
  }
}

/** Keep the run's screenshots in `folder` where what they show changed (or they are new). */
function keepScreenshots(screen, folder) {
  if (!folder) {
    return [];
  }
  fs.mkdirSync(folder, { recursive: true });
  const indexFile = path.join(folder, "vscode-e2e.json");
  const index = fs.existsSync(indexFile) ? JSON.parse(fs.readFileSync(indexFile, "utf8")) : {};
  const written = [];
  for (const [name, shows] of Object.entries(screen.shots)) {
    const target = path.join(folder, name);
    if (!fs.existsSync(target) || JSON.stringify(index[name]) !== JSON.stringify(shows)) {
      fs.copyFileSync(path.join(screen.dirs.shots, name), target);
      index[name] = shows;
      written.push(target);
    }
  }
  if (written.length > 0) {
    fs.writeFileSync(indexFile, JSON.stringify(index, null, 2) + "\n");
  }
  return written;
}

async function openAt(page, file, hole) {
  await waitFor("quick open", 60_000, async () => {
    await page.keyboard.press("Control+P");
    await page.waitForSelector(".quick-input-widget input", { state: "visible", timeout: 3000 });
    return true;
  });
  await page.keyboard.type(file);
  const base = path.basename(file);
  // the list shows recent files at once: Enter only once the typed name is its first row
  await waitFor(`${file} first in Quick Open`, 30_000, async () =>
    (await page.locator(".quick-input-list .monaco-list-row[data-index='0']").getAttribute("aria-label", { timeout: 1000 }))?.includes(base),
  100);
  await page.keyboard.press("Enter");
  await page.waitForSelector(`.tab.active[aria-label*='${base}'], .tab.active:has-text('${base}')`);
  await page.locator(".editor-instance .monaco-editor.focused").first().waitFor({ state: "visible" });
  // Go to Line, as a user jumps to a place (no keystroke in the text)
  await page.keyboard.press("Control+G");
  await page.waitForSelector(".quick-input-widget input", { state: "visible" });
  await page.keyboard.type(`${hole.line}:${hole.column}`);
  await page.keyboard.press("Enter");
  const where = `Ln ${hole.line}, Col ${hole.column}`;
  await waitFor(`the cursor at ${where}`, 10_000, async () => (await page.locator(".statusbar-item", { hasText: where }).count()) > 0);
}

/**
 * Type the ghost's first characters one key at a time. After each key the ghost must be on screen
 * at every look for WATCH_MS, never behind the suggest list, and end as the rest of what it was.
 */
async function typeThrough(screen, language, ghost) {
  let rest = ghost;
  const keys = rest.slice(0, Math.min(KEYS, rest.length - 1));
  for (const [i, key] of [...keys].entries()) {
    await screen.page.keyboard.type(key);
    rest = rest.slice(1);
    const until = Date.now() + WATCH_MS;
    let looks = 0;
    let seen;
    while (Date.now() < until) {
      seen = await screen.look();
      looks++;
      if (seen.list) {
        throw fail(`${language}: after typing ${JSON.stringify(key)} the suggest list opened over the ghost: ${seen.list.slice(0, 5).join(" | ")}`);
      }
      if (seen.ghost.trim() === "") {
        throw fail(`${language}: after typing ${JSON.stringify(key)} (key ${i + 1}) the ghost was gone (look ${looks})`);
      }
    }
    if (seen.ghost !== rest) {
      throw fail(`${language}: after typing ${JSON.stringify(key)} the ghost shows ${JSON.stringify(seen.ghost)}, not the rest ${JSON.stringify(rest)}`);
    }
    await screen.shot(`vscode-${language}-${i + 1}-typed.png`, {
      typed: keys.slice(0, i + 1),
      ghost: rest,
    });
    log(`${language}: typed ${JSON.stringify(keys.slice(0, i + 1))}, the ghost stayed at ${looks} looks: ${JSON.stringify(rest)}`);
  }
  return { typed: keys, rest };
}

async function save(page, file, before) {
  await page.keyboard.press("Control+S");
  return waitFor(`${path.basename(file)} saved`, 15_000, async () => {
    const text = fs.readFileSync(file, "utf8");
    return text !== before ? text : null;
  });
}

/** The extension's output channel, as code-server writes it to disk (with the LSP trace). */
function extensionLog(dirs) {
  const logs = path.join(dirs.userData, "logs");
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(full);
      } else if (entry.name === "gdg-lsp.log") {
        found.push(full);
      }
    }
  };
  if (fs.existsSync(logs)) {
    walk(logs);
  }
  return found.map((f) => fs.readFileSync(f, "utf8")).join("\n");
}

async function main() {
  const { dirs, files, serverLog } = prepare();
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
    const screen = new Screen(page, dirs);

    // -- Python: opened at its hole while the model loads ---------------------------------
    await openAt(page, PYTHON_FILE, PYTHON_HOLE);
    mark("stats.py open at its hole");
    const statusSeen = [];
    await waitFor("the model (status bar: gdg ready)", 600_000, async () => {
      const items = await screen.statusItems();
      if (items.length > 1) {
        throw fail(`two status items speak for gdg-lsp: ${JSON.stringify(items)}`);
      }
      const text = items[0] ?? "";
      if (text && statusSeen[statusSeen.length - 1] !== text) {
        statusSeen.push(text);
      }
      if (/failed|not found|stopped/.test(text)) {
        throw fail(`status bar says "${text}"`);
      }
      return /gdg ready|gdg [0-9.]+ m?s/.test(text);
    }, 100);
    mark(`model ready (status seen: ${statusSeen.join(" → ")})`);
    if (!statusSeen.some((t) => /gdg loading \d+%/.test(t))) {
      throw new Error(`the status item never showed the load's percentage: ${JSON.stringify(statusSeen)}`);
    }

    // no keystroke: the extension asks when the model becomes ready
    const ghost = await waitFor("the ghost at the hole, without a keystroke", 90_000, () => screen.ghost(), 100);
    mark(`ghost without a keystroke ${JSON.stringify(ghost)}`);
    await screen.shot("vscode-python-0-open.png", { typed: "", ghost });

    // Esc hides it; the ask-now key brings it back
    await page.keyboard.press("Escape");
    await waitFor("the ghost hidden by Esc", 5_000, async () => (await screen.ghost()) === null, 100);
    await page.keyboard.press("Alt+Backslash");
    const asked = await waitFor("the ghost after Alt+\\", 30_000, () => screen.ghost(), 100);
    if (asked !== ghost) {
      throw new Error(`Alt+\\ brought back ${JSON.stringify(asked)}, not ${JSON.stringify(ghost)}`);
    }
    mark("Alt+\\ asked again");

    const { typed, rest } = await typeThrough(screen, "python", ghost);
    mark("python: typed through");

    // Ctrl+Right: one word, and the rest stays on screen
    const word = nextWord(rest);
    if (word === "" || word === rest) {
      throw new Error(`the ghost's rest ${JSON.stringify(rest)} has no second word for Ctrl+Right to leave`);
    }
    await page.keyboard.press("Control+ArrowRight");
    const after = rest.slice(word.length);
    await waitFor(`the rest ${JSON.stringify(after)} after Ctrl+Right`, 10_000, async () => (await screen.ghost()) === after, 50);
    await screen.shot("vscode-python-4-ctrl-right.png", { typed: typed + word, ghost: after });
    mark(`Ctrl+Right accepted ${JSON.stringify(word)}, the rest stays`);

    // Tab: the rest, exactly
    await page.keyboard.press("Tab");
    await page.waitForTimeout(300); // (a new ghost may follow at once: the saved file tells what Tab did)
    const original = fs.readFileSync(files.python, "utf8");
    const lines = original.split("\n");
    lines[PYTHON_HOLE.line - 1] = lines[PYTHON_HOLE.line - 1] + ghost;
    const saved = await save(page, files.python, original);
    if (saved !== lines.join("\n")) {
      throw new Error(`stats.py differs from the ghost typed, word-accepted and tabbed in:\n--- expected\n${lines.join("\n")}\n--- saved\n${saved}`);
    }
    mark("python: Tab inserted the ghost's text");

    // -- SQL: opened at its hole once the model is ready ---------------------------------
    await openAt(page, SQL_FILE, SQL_HOLE);
    const sqlGhost = await waitFor("the SQL ghost, without a keystroke", 60_000, () => screen.ghost(), 100);
    mark(`sql: ghost without a keystroke ${JSON.stringify(sqlGhost)}`);
    await screen.shot("vscode-sql-0-open.png", { typed: "", ghost: sqlGhost });
    await typeThrough(screen, "sql", sqlGhost);
    await page.keyboard.press("Tab");
    await page.waitForTimeout(300);
    const sqlSaved = await save(page, files.sql, SQL_SOURCE);
    if (sqlSaved !== SQL_SOURCE + sqlGhost) {
      throw new Error(`${SQL_FILE} differs from the ghost typed and tabbed in:\n--- expected\n${SQL_SOURCE + sqlGhost}\n--- saved\n${sqlSaved}`);
    }
    mark("sql: Tab inserted the ghost's text");

    // the explain command after the accepted line: gdg/explain's answer
    await openAt(page, PYTHON_FILE, PYTHON_HOLE);
    await page.keyboard.press("End");
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
      return texts.find((t) => t.includes(`# gdg-lsp explain ${PYTHON_FILE}:${PYTHON_HOLE.line}:`)) ?? null;
    });
    if (!explained.includes("summary")) {
      throw new Error(`the explain report does not show Γ:\n${explained}`);
    }
    mark("explained");

    // -- what the logs say ---------------------------------------------------------------
    const serverLogText = fs.readFileSync(serverLog, "utf8");
    for (const complaint of ["unknown setting", "invalid gdg.", "must be an object"]) {
      if (serverLogText.includes(complaint)) {
        throw new Error(`gdg-lsp complained about the settings ("${complaint}"):\n${serverLogText}`);
      }
    }
    const channel = extensionLog(dirs);
    // (window/logMessage lines start with the server's level word; stderr lines lose it)
    if (!/\[info\] (INFO )?gdg_lsp\.server\.session: .* ready on/.test(channel)) {
      throw new Error(`the server's INFO lines are not shown at info in the gdg-lsp channel:\n${channel.slice(0, 3000)}`);
    }
    const asErrors = channel.split("\n").filter((l) => /\[error\] .*\bINFO\b/.test(l) || /\[error\] gdg_lsp\.[\w.]+: /.test(l));
    if (asErrors.length > 0) {
      throw new Error(`server log lines shown as errors:\n${asErrors.slice(0, 5).join("\n")}`);
    }
    for (const told of ["textDocument/didShowCompletion", "textDocument/didPartiallyAcceptCompletion"]) {
      if (!channel.includes(`Sending notification '${told}'`)) {
        throw new Error(`the server was never sent ${told} (gdg.trace.server: verbose in the gdg-lsp channel)`);
      }
    }
    if (channel.includes('"command": "gdg.didAcceptCompletion"') && !channel.includes("Sending request 'workspace/executeCommand")) {
      throw new Error("the served items carry the accept command, but Tab never ran it (workspace/executeCommand)");
    }

    const kept = keepScreenshots(screen, SHOTS);
    console.log(
      JSON.stringify(
        {
          ok: true,
          ghosts: { python: ghost, sql: sqlGhost },
          statusSeen,
          screenshotsWritten: kept.map((f) => path.relative(REPO, f)),
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
    console.error(`work dir (screenshot, code-server.log, gdg-lsp.log, user-data/logs): ${dirs.work}`);
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
