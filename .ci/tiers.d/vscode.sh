#!/usr/bin/env bash
# VS Code in a real browser (code-server + playwright-core + Debian's chromium):
# build the extension and its unit tests, then the real-editor test.
set -euo pipefail
cd "$(dirname "$0")/../.."
(cd editors/vscode && npm ci --no-audit --no-fund && npm test && npm run package)
PYTHON="$PWD/.venv/bin/python" bash editors/vscode/test/e2e/ci.sh
