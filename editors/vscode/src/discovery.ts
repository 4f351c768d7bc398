// Finding the gdg-lsp executable: the setting, then PATH. Pure: the file system
// and the environment come in as arguments, so the order and the messages are
// unit-tested without VS Code.
//
// Nothing inside a workspace folder runs unless the user names it in
// gdg.server.path (a machine-scoped setting, which no folder can set): a cloned
// repository can ship .venv/bin/gdg-lsp, and a PATH entry inside the workspace
// (a venv activated in the terminal VS Code was started from) or a relative one
// would run the repository's program just the same. Such a gdg-lsp is only
// mentioned in the message, with the setting that would run it.

import * as path from "node:path";

export interface DiscoveryEnv {
  platform: NodeJS.Platform;
  /** The PATH environment variable. */
  pathEnv: string | undefined;
  /** PATHEXT on Windows (".EXE;.CMD;..."). */
  pathExt?: string;
  homeDir: string;
  /** Workspace folders, in order (file system paths). */
  workspaceFolders: string[];
  isExecutable(file: string): boolean;
}

export type ServerSource = "setting" | "PATH";

export type Discovery =
  | { found: true; command: string; source: ServerSource }
  | { found: false; message: string; settingProblem: boolean };

export const SERVER_NAME = "gdg-lsp";
export const INSTALL_HINT = "pip install gdg-lsp";

/** `~` and `${workspaceFolder}` expanded; a relative path is taken from the first workspace folder. */
export function expandSettingPath(value: string, env: DiscoveryEnv): string {
  const folder = env.workspaceFolders[0];
  let out = value.trim();
  if (folder !== undefined) {
    out = out.replace(/\$\{workspaceFolder\}/g, folder);
  }
  out = out.replace(/\$\{userHome\}/g, env.homeDir);
  if (out === "~" || out.startsWith("~/") || out.startsWith("~\\")) {
    out = env.homeDir + out.slice(1);
  }
  const p = pathFor(env.platform);
  if (!p.isAbsolute(out) && folder !== undefined) {
    out = p.join(folder, out);
  }
  return out;
}

function pathFor(platform: NodeJS.Platform): typeof path.posix {
  return platform === "win32" ? path.win32 : path.posix;
}

function executableNames(platform: NodeJS.Platform, pathExt: string | undefined): string[] {
  if (platform !== "win32") {
    return [SERVER_NAME];
  }
  const exts = (pathExt || ".EXE;.CMD;.BAT").split(";").filter(Boolean);
  return exts.map((ext) => SERVER_NAME + ext.toLowerCase());
}

/** Whether `file` lies in one of the workspace folders (as written: the extension cannot resolve links). */
export function insideWorkspace(file: string, env: DiscoveryEnv): boolean {
  const p = pathFor(env.platform);
  const fold = (s: string) => (env.platform === "win32" ? s.toLowerCase() : s);
  const target = fold(p.resolve(file));
  return env.workspaceFolders.some((folder) => {
    const root = fold(p.resolve(folder));
    const rel = p.relative(root, target);
    return rel === "" || (!rel.startsWith("..") && !p.isAbsolute(rel));
  });
}

/** The first PATH entry that holds an executable gdg-lsp; relative entries and entries
 * inside a workspace folder are skipped. */
export function findOnPath(env: DiscoveryEnv): string | undefined {
  const p = pathFor(env.platform);
  const sep = env.platform === "win32" ? ";" : ":";
  for (const dir of (env.pathEnv || "").split(sep)) {
    if (!dir || !p.isAbsolute(dir) || insideWorkspace(dir, env)) {
      continue;
    }
    for (const name of executableNames(env.platform, env.pathExt)) {
      const candidate = p.join(dir, name);
      if (env.isExecutable(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/** .venv and venv of each workspace folder, in order: never run, only named in the message. */
export function venvCandidates(env: DiscoveryEnv): string[] {
  const p = pathFor(env.platform);
  const out: string[] = [];
  for (const folder of env.workspaceFolders) {
    for (const venv of [".venv", "venv"]) {
      if (env.platform === "win32") {
        out.push(p.join(folder, venv, "Scripts", SERVER_NAME + ".exe"));
      } else {
        out.push(p.join(folder, venv, "bin", SERVER_NAME));
      }
    }
  }
  return out;
}

export function discoverServer(settingPath: string | undefined, env: DiscoveryEnv): Discovery {
  if (settingPath && settingPath.trim() !== "") {
    const command = expandSettingPath(settingPath, env);
    if (env.isExecutable(command)) {
      return { found: true, command, source: "setting" };
    }
    return {
      found: false,
      settingProblem: true,
      message:
        `gdg-lsp: the setting gdg.server.path points to "${command}", which is not an executable file. ` +
        `Fix the path, or clear the setting to search PATH.`,
    };
  }
  const onPath = findOnPath(env);
  if (onPath) {
    return { found: true, command: onPath, source: "PATH" };
  }
  const inWorkspace = venvCandidates(env).find((candidate) => env.isExecutable(candidate));
  const hint =
    inWorkspace !== undefined
      ? ` The workspace has ${inWorkspace}: a program inside the workspace runs only when you name it in ` +
        `gdg.server.path (user settings).`
      : "";
  return {
    found: false,
    settingProblem: false,
    message:
      `gdg-lsp was not found on PATH (entries inside the workspace are not searched). Install it with ` +
      `\`${INSTALL_HINT}\` (into a virtual environment on PATH), or set gdg.server.path to the gdg-lsp executable.` +
      hint,
  };
}
