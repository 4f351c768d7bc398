#!/usr/bin/env bash
# The VS Code real-editor tier for CI, after the main test command:
#   PYTHON=/path/to/venv/bin/python bash editors/vscode/test/e2e/ci.sh
# Sets the tier up (setup.sh) and runs it (run.sh). A setup that fails (no
# chromium, no registry, no compiler) fails the tier: a test that cannot run
# has not passed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOG="$HERE/.work/setup.log"
mkdir -p "$HERE/.work"
began=$SECONDS
if ! bash "$HERE/setup.sh" >"$LOG" 2>&1; then
  echo "VS Code e2e tier FAILED: setup failed after $((SECONDS - began)) s (log: $LOG)" >&2
  tail -n 30 "$LOG" >&2
  exit 1
fi
echo "VS Code e2e setup: $((SECONDS - began)) s"
began=$SECONDS
status=0
bash "$HERE/run.sh" || status=$?
echo "VS Code e2e run: $((SECONDS - began)) s (exit $status)"
exit "$status"
