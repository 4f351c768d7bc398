// The command line that starts gdg-lsp. Pure, unit-tested.
//
// The server speaks LSP on stdio. vscode-languageclient appends `--stdio`
// itself when `transport: TransportKind.stdio` is set, so the extension never
// sets a transport and puts exactly one `--stdio` into the arguments.

export interface ServerExecutable {
  command: string;
  args: string[];
  // no `transport`: see above
  options?: { env?: NodeJS.ProcessEnv; cwd?: string };
}

export function serverArgs(userArgs: readonly unknown[] | undefined): string[] {
  const args = (userArgs ?? []).filter((a): a is string => typeof a === "string" && a !== "");
  const rest = args.filter((a) => a !== "--stdio");
  return ["--stdio", ...rest];
}

export function serverExecutable(
  command: string,
  userArgs: readonly unknown[] | undefined,
  env?: NodeJS.ProcessEnv,
  cwd?: string,
): ServerExecutable {
  const exe: ServerExecutable = { command, args: serverArgs(userArgs) };
  if (env !== undefined || cwd !== undefined) {
    exe.options = {};
    if (env !== undefined) {
      exe.options.env = env;
    }
    if (cwd !== undefined) {
      exe.options.cwd = cwd;
    }
  }
  return exe;
}
