#!/usr/bin/env bash
# Create .venv and install the project with its dev extras; re-install only when
# pyproject.toml changes. Used by `make run`, `make test` and CI.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: Python 3.11+ is required (found: $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing analyst[dev] into $VENV (once per pyproject.toml change)"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip 2>&1 | grep -v -i warning || true
  # The CPU build of torch first: left to the resolver, pip would fetch a multi-GB CUDA build.
  "$VENV/bin/python" -m pip install --quiet "torch==${TORCH_VERSION:-2.13.0}" 2>&1 | grep -v -i '^warning' || true
  "$VENV/bin/python" -m pip install --quiet -e '.[dev]' 2>&1 | grep -v -i '^warning' || true
  "$VENV/bin/python" -c 'import agent.cli, graphs.builder, memory.checkpoint' \
    || { echo "bootstrap: install failed" >&2; exit 1; }
  rm -f "$VENV"/.installed-*
  touch "$stamp"
fi
