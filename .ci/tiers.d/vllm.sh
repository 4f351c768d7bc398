#!/usr/bin/env bash
# The remote-engine tier: vLLM CPU serving the default model, and the `remote`-marked
# end-to-end tests against it (tests/remote/test_real_engine.py: Python and SQL holes
# with 0 ghosts, local vs remote latency and tokens/s, four documents at once, a
# grammar-stripping proxy, the engine killed mid-request).
#
# vLLM is installed in its own virtual environment (scripts/remote_engines.sh; cached).
# When it cannot be installed or started here the tier says NOT RUN; once it runs,
# the tests must pass. The llama.cpp server tier is opt-in (a 7-minute compile):
# GDG_TIER_LLAMACPP=1 also runs the same tests against llama-cpp-python's server.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-$PWD/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"

if ! ENGINE_PY="$(bash scripts/remote_engines.sh vllm | tail -n 1)"; then
  echo "vLLM tier NOT RUN: the engine could not be installed here"
  exit 0
fi

# A Hugging Face folder of the default model (the converted cache is one).
if ! MODEL_DIR="$("$PY" scripts/hf_model_dir.py)"; then
  echo "vLLM tier NOT RUN: the default model could not be converted to a Hugging Face folder"
  exit 0
fi

PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
LOG="$(mktemp -t gdg-vllm.XXXXXX.log)"
# its own session: the test that kills the engine mid-request, and the cleanup,
# end the whole process group (the API server and its engine core)
setsid "$ENGINE_PY" -m vllm.entrypoints.openai.api_server --model "$MODEL_DIR" --served-model-name gdg-default \
  --host 127.0.0.1 --port "$PORT" --max-model-len 2048 --enforce-eager --gpu-memory-utilization "${GDG_VLLM_MEMORY_FRACTION:-0.1}" \
  --structured-outputs-config.backend xgrammar >"$LOG" 2>&1 &
ENGINE_PID=$!
cleanup() { kill -KILL -- "-$ENGINE_PID" 2>/dev/null || true; }
trap cleanup EXIT

ready=""
for _ in $(seq 1 180); do
  if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then ready=1; break; fi
  if ! kill -0 "$ENGINE_PID" 2>/dev/null; then break; fi
  sleep 1
done
if [ -z "$ready" ]; then
  echo "vLLM tier NOT RUN: the server did not become ready; its log:"
  tail -n 40 "$LOG"
  exit 0
fi

GDG_REMOTE_URL="http://127.0.0.1:$PORT" GDG_REMOTE_KIND=vllm GDG_REMOTE_PID="$ENGINE_PID" \
  "$PY" -m pytest tests/remote/test_real_engine.py -m remote -q -s -p no:cacheprovider

if [ "${GDG_TIER_LLAMACPP:-0}" = "1" ]; then
  LLAMA_PY="$(bash scripts/remote_engines.sh llamacpp | tail -n 1)"
  GGUF="$("$PY" -c 'from gdg_lsp.decoding import models; print(models.resolve("default").path)')"
  LPORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  setsid "$LLAMA_PY" -m llama_cpp.server --model "$GGUF" --model_alias gdg-default --host 127.0.0.1 \
    --port "$LPORT" --n_ctx 2048 >"$LOG.llama" 2>&1 &
  LLAMA_PID=$!
  trap 'cleanup; kill -KILL -- "-$LLAMA_PID" 2>/dev/null || true' EXIT
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$LPORT/v1/models" >/dev/null 2>&1 && break
    sleep 1
  done
  GDG_REMOTE_URL="http://127.0.0.1:$LPORT" GDG_REMOTE_KIND=llamacpp GDG_REMOTE_PID="$LLAMA_PID" \
    "$PY" -m pytest tests/remote/test_real_engine.py -m remote -q -s -p no:cacheprovider
fi
