// The server's `gdg` settings, read from VS Code's configuration. Pure.
//
// Every server key is sent with its effective value (the user's, else the
// default declared in package.json): the server merges what it receives over
// what it has, so a key left out would keep an old value after the user
// resets it. package.json's defaults equal the server's (a test checks).
// Client-only keys (gdg.server.*, gdg.trace.*, gdg.editor.*) are never sent: the server
// warns about keys it does not know.

/** The server's keys (gdg_lsp/settings.py), dotted as in VS Code. */
export const SERVER_KEYS = [
  "model",
  "device",
  "engine",
  "constraint",
  "grammarEngine",
  "maxTokens",
  "timeoutMs",
  "maxLines",
  "contextTokens",
  "suffix",
  "candidates",
  "showThreshold",
  "showUnguaranteed",
  "definitions",
  "threads",
  "batchSize",
  "diagnostics",
  "inline",
  "workAhead",
  "workAheadDebounceMs",
  "watchFiles",
  "sql.connections",
  "sql.sources",
  "sql.prompt",
  "p4.includePaths",
  "stats.enabled",
  "fragments.paths",
  "fragments.trustedFolders",
  "fragments.claims",
  "tilelang.version",
  "shell.tools",
  "jq.inputs",
  "python.interpreter",
  "python.memberWarnings",
  "python.definingAttrMethods",
  "backend",
  "remote.url",
  "remote.model",
  "remote.kind",
  "remote.dialect",
  "remote.apiKeyEnv",
  "remote.connectTimeoutMs",
  "remote.timeoutMs",
  "remote.retries",
  "remote.fallback",
  "limits.globFolders",
  "limits.globMatches",
  "limits.refs",
  "limits.refFolders",
  "limits.packedRefsBytes",
  "limits.scripts",
  "limits.includeBytes",
  "limits.sourceBytes",
  "limits.remoteResponseBytes",
  "limits.analysedChars",
] as const;

/** The keys only the extension reads (gdg.editor.*: which asks go to the server, gate.ts). */
export const CLIENT_KEYS = ["server.path", "server.args", "trace.server", "editor.enable", "editor.trigger"] as const;

/** The part of vscode.WorkspaceConfiguration (for the section `gdg`) this module needs. */
export interface ConfigurationLike {
  get<T>(key: string): T | undefined;
}

/** The settings object the server receives (nested, camelCase): `{maxTokens: 64, sql: {connections: [...]}}`. */
export function serverSettings(config: ConfigurationLike): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const value = config.get<unknown>(key);
    if (value === undefined || value === null) {
      continue;
    }
    const parts = key.split(".");
    let target = out;
    for (const part of parts.slice(0, -1)) {
      if (typeof target[part] !== "object" || target[part] === null) {
        target[part] = {};
      }
      target = target[part] as Record<string, unknown>;
    }
    target[parts[parts.length - 1]] = value;
  }
  return out;
}

/** Whether a configuration change needs a new server process, not only new settings. */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return affects("gdg.server");
}
