#!/usr/bin/env bash
# Alternating before/after at 1M: per round, per checkout (OLD, then NEW), a first open (detection
# cache emptied; READY seconds from process start) and a Browse slider measurement (30 moves of
# margin and t_det, p95), each a fresh process importing ui/workstation/bench_gui from its checkout.
#
#   WORK=DIR bash tests/benchmarks/ab_browse.sh OLD NEW ROUNDS        (env: N, MOVES, ROTATE=1, PY)
#
# WORK holds bench_gui's synthetic project (`bench_gui.py --n N --work WORK` builds it, or its
# `build_project`); the rounds' copies, caches and results go to WORK/ab.
#
# Each checkout works on its own copy of WORK/synthetic_N_f32 (made afresh at the start: a newer
# checkout may migrate its copy) and its own cache folder. ROTATE=1 begins each round with the
# checkout that ended the previous one (OLD NEW, NEW OLD, ...); default strict OLD NEW OLD NEW.
set -u
OLD=$(realpath "$1"); NEW=$(realpath "$2"); ROUNDS=${3:-5}
HERE=$(dirname "$(realpath "$0")")
WORK=${WORK:?set WORK to the folder of the synthetic project}; N=${N:-1000000}; MOVES=${MOVES:-30}; ROTATE=${ROTATE:-0}
PY=${PY:-$HERE/../../.venv/bin/python}
NAME=synthetic_${N}_f32
MASTER=$WORK/$NAME
AB=$WORK/ab
RES=$AB/results.tsv
[ -f "$MASTER/project.duckdb" ] || { echo "no project $MASTER (build it first)"; exit 2; }
for t in "$OLD" "$NEW"; do [ -f "$t/main.py" ] && [ -f "$t/tests/benchmarks/bench_gui.py" ] || { echo "not a checkout: $t"; exit 2; }; done
mkdir -p "$AB"
: > "$RES"
export QT_QPA_PLATFORM=offscreen
for side in old new; do
  rm -rf "$AB/$side"; mkdir -p "$AB/$side"
  timeout 600 cp -a "$MASTER" "$AB/$side/$NAME" || { echo "copy failed"; exit 3; }
  mkdir -p "$AB/cache-$side"
done
echo "old=$OLD ($(git -C "$OLD" rev-parse --short HEAD))  new=$NEW ($(git -C "$NEW" rev-parse --short HEAD))  rounds=$ROUNDS moves=$MOVES rotate=$ROTATE"
echo "$(nproc) cores; $(uptime)"
tree_of() { [ "$1" = old ] && echo "$OLD" || echo "$NEW"; }
one() {  # side round
  local side=$1 r=$2 tree proj cache out t0 line
  tree=$(tree_of "$side"); proj=$AB/$side/$NAME; cache=$AB/cache-$side
  t0=$(date +%s.%N)
  echo "round $r $side: first open   [$(cut -d' ' -f1-3 /proc/loadavg)]"
  out=$(WORKSTATION_CACHE_DIR=$cache timeout -k 10 420 "$PY" "$HERE/ab_browse_first_open.py" "$tree" "$proj" "$cache" "$AB/settings-$side.json" 2>&1)
  echo "$out" | grep -v '^RESULT' | tail -n 5
  line=$(echo "$out" | grep '^RESULT' | tail -n 1)
  [ -n "$line" ] && echo -e "$side\t$r\t${line#RESULT }" >> "$RES" || echo "  FAILED (rc $?)"
  echo "round $r $side: Browse slider [$(cut -d' ' -f1-3 /proc/loadavg)]"
  out=$(WORKSTATION_CACHE_DIR=$cache WORKSTATION_SETTINGS=$AB/settings-$side-slider.ini \
        timeout -k 10 600 "$PY" "$HERE/ab_browse_slider.py" "$tree" "$proj" --moves "$MOVES" 2>&1)
  echo "$out" | grep -v '^RESULT' | tail -n 5
  line=$(echo "$out" | grep '^RESULT' | tail -n 1)
  [ -n "$line" ] && echo -e "$side\t$r\t${line#RESULT }" >> "$RES" || echo "  FAILED"
  echo "  ($side, round $r: $(echo "$(date +%s.%N) - $t0" | bc) s)"
}
T0=$(date +%s)
for r in $(seq 1 "$ROUNDS"); do
  if [ "$ROTATE" = 1 ] && [ $((r % 2)) = 0 ]; then order="new old"; else order="old new"; fi
  for side in $order; do one "$side" "$r"; done
done
echo "all rounds: $(( $(date +%s) - T0 )) s; $(uptime)"
"$PY" - "$RES" <<'PYEOF'
import statistics, sys
rows = {}
for ln in open(sys.argv[1]):
    side, r, rest = ln.rstrip("\n").split("\t")
    for kv in rest.split():
        k, v = kv.split("=")
        rows.setdefault((side, k), {})[int(r)] = float(v)
for k in ("ready_s", "cpu_s", "browse_p95_ms", "browse_p50_ms", "checker_p50_ms"):
    o, n = rows.get(("old", k), {}), rows.get(("new", k), {})
    if not o and not n:
        continue
    f = lambda d: (f"median {statistics.median(d.values()):.2f} (min {min(d.values()):.2f}, max {max(d.values()):.2f}, "
                   f"n={len(d)}) [{', '.join(f'{d[i]:.2f}' for i in sorted(d))}]") if d else "none"
    print(f"{k}: old {f(o)}; new {f(n)}")
    both = sorted(set(o) & set(n))
    if both:
        print(f"  new/old round by round: {', '.join(f'{n[i] / o[i]:.2f}' for i in both)}; "
              f"median {statistics.median(n[i] / o[i] for i in both):.2f}")
PYEOF
