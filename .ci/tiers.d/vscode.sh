#!/usr/bin/env bash
# VS Code in a real browser (code-server + playwright-core + Debian's chromium):
# build the extension and run its unit tests, package the .vsix, then the
# real-editor test. Every step must succeed: a tier that cannot be set up
# (no npm registry, no chromium) fails, it is never reported as passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! (cd editors/vscode && npm ci --no-audit --no-fund); then
  echo "VS Code tier FAILED: npm ci failed (no npm registry?)" >&2
  exit 1
fi
(cd editors/vscode && npm test && npm run package)
PYTHON="$PWD/.venv/bin/python" bash editors/vscode/test/e2e/ci.sh
