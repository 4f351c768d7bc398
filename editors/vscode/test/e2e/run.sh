#!/usr/bin/env bash
# Runs the VS Code real-editor test (after setup.sh). Exit 0 when it passed.
#   PYTHON=/path/to/venv/bin/python editors/vscode/test/e2e/run.sh
# PYTHON must be able to `import gdg_lsp`'s dependencies; the server itself is
# taken from this checkout (or set GDG_SERVER to a gdg-lsp executable).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -f "$HERE/.work/setup-ok" ]; then
  echo "the e2e tier is not set up: run $HERE/setup.sh first" >&2
  exit 2
fi
export PYTHON="${PYTHON:-python3}"
"$PYTHON" -c "import torch, xgrammar, pygls" 2>/dev/null || {
  echo "$PYTHON cannot import gdg-lsp's dependencies: set PYTHON to the project's venv python" >&2
  exit 2
}
exec node "$HERE/e2e.mjs"
