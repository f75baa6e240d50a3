#!/usr/bin/env bash
# Build the PyInstaller bundle into dist/workstation and smoke-test it.
#   bash packaging/build.sh            workstation without the model backends
#   bash packaging/build.sh --with-ml  with torch / diffusers / transformers
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/setup.sh
.venv/bin/python -m pip install -q --disable-pip-version-check "pyinstaller>=6.5"
if [ "${1:-}" = "--with-ml" ]; then export WORKSTATION_BUNDLE_ML=1; fi
.venv/bin/pyinstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller packaging/workstation.spec
.venv/bin/python packaging/smoke_test.py dist/workstation/workstation
