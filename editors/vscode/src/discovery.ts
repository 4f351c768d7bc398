// Finding the gdg-lsp executable: the setting, then PATH, then the workspace's
// virtual environment. Pure: the file system and the environment come in as
// arguments, so the order and the messages are unit-tested without VS Code.

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

export type ServerSource = "setting" | "PATH" | "workspace venv";

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

/** The first PATH entry that holds an executable gdg-lsp. */
export function findOnPath(env: DiscoveryEnv): string | undefined {
  const p = pathFor(env.platform);
  const sep = env.platform === "win32" ? ";" : ":";
  for (const dir of (env.pathEnv || "").split(sep)) {
    if (!dir) {
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

/** .venv and venv of each workspace folder, in order. */
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
        `Fix the path, or clear the setting to search PATH and the workspace's .venv.`,
    };
  }
  const onPath = findOnPath(env);
  if (onPath) {
    return { found: true, command: onPath, source: "PATH" };
  }
  const candidates = venvCandidates(env);
  for (const candidate of candidates) {
    if (env.isExecutable(candidate)) {
      return { found: true, command: candidate, source: "workspace venv" };
    }
  }
  const looked = ["PATH", ...candidates].join(", ");
  return {
    found: false,
    settingProblem: false,
    message:
      `gdg-lsp was not found (looked in ${looked}). Install it with \`${INSTALL_HINT}\` ` +
      `(into a virtual environment on PATH or the workspace's .venv), or set gdg.server.path to the gdg-lsp executable.`,
  };
}
