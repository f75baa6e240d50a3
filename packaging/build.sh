#!/usr/bin/env bash
# Build the standalone PyInstaller bundle(s) and smoke-test each (packaging/smoke_test.py).
#   bash packaging/build.sh            the viewer bundle: dist/viewer/workstation/ (browse, label, audit,
#                                      calibrate, report, demo, OpenCV/YOLOX detection; no torch,
#                                      diffusers or transformers)
#   bash packaging/build.sh full       the full bundle: dist/full/workstation/ (with the model backends)
#   bash packaging/build.sh both       both; their sizes are reported side by side
# After each build: the bundle's ten largest parts (packaging/bundle_parts.py), then one line with
# its size and the build's and the smoke test's seconds.
#   (--with-ml is accepted for full.) WORKSTATION_SKIP_SETUP=1 skips packaging/setup.sh (CI has run it).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-viewer}" in
  viewer) variants="viewer" ;;
  full|--with-ml) variants="full" ;;
  both) variants="viewer full" ;;
  *) echo "usage: bash packaging/build.sh [viewer|full|both]" >&2; exit 2 ;;
esac
if [ "${WORKSTATION_SKIP_SETUP:-}" != "1" ]; then bash packaging/setup.sh; fi
if ! .venv/bin/python -c "import PyInstaller" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "pyinstaller>=6.5"
fi
summary=""
for v in $variants; do
  t0=$(date +%s)
  if [ "$v" = "full" ]; then export WORKSTATION_BUNDLE_ML=1; else export WORKSTATION_BUNDLE_ML=0; fi
  .venv/bin/python -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "dist/$v" --workpath "build/pyinstaller-$v" packaging/workstation.spec
  t1=$(date +%s)
  .venv/bin/python packaging/smoke_test.py "dist/$v/workstation/workstation" --variant "$v" \
    --screenshot "build/smoke-$v.png"
  t2=$(date +%s)
  size=$(du -sm "dist/$v/workstation" | cut -f1)
  .venv/bin/python packaging/bundle_parts.py "dist/$v/workstation" --top 10 --label "BUNDLE $v"
  line="BUNDLE $v: dist/$v/workstation, ${size} MiB, built in $((t1 - t0)) s, smoke test $((t2 - t1)) s"
  echo "$line"
  summary="$summary$line"$'\n'
done
printf '%s' "$summary"
