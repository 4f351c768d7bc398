// Bundles the extension and vscode-languageclient into dist/extension.js
// (`vscode` is provided by the editor). --production minifies and drops the
// source map; the .vsix then needs no node_modules.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");

await esbuild.build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: "info",
});
