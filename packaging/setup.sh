#!/usr/bin/env bash
# Set up (or update) the project's virtual environment in .venv. Idempotent and quiet.
#   bash packaging/setup.sh          everything: the app, model backends, test tools
# Torch: this installs the CPU build torch==2.13.0 unless a torch is already in .venv.
# On a CUDA lab machine install your CUDA build into .venv first, e.g.
#   .venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cu124
# and this script keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
"$VPY" -m pip install -q --disable-pip-version-check --upgrade "pip>=24" >/dev/null
if ! "$VPY" -c "import torch" >/dev/null 2>&1; then
  "$VPY" -m pip install -q --disable-pip-version-check "${TORCH_SPEC:-torch==2.13.0}"
fi
"$VPY" -m pip install -q --disable-pip-version-check -e ".[ml,dev]"
# the project's own bytecode, written once here: where PYTHONDONTWRITEBYTECODE is set, Python
# would otherwise compile every module of the window again at each start
"$VPY" -m compileall -q workstation ui main.py >/dev/null
echo "environment ready: .venv ($("$VPY" --version))"
