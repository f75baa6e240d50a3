"""One Browse slider measurement (bench_gui.py --part slider's first figure only) from CHECKOUT.

    python ab_browse_slider.py CHECKOUT PROJECT [--moves 30]     (a round of ab_browse.sh)

Imports `ui`, `workstation` and `bench_gui` from CHECKOUT (asserted), restarts on the C allocator
as bench_gui/main.py gui do, opens PROJECT in a 1500x940 window, shows Browse with a sample under
review and times `--moves` moves of margin and t_det together (bench_gui.slider_moves with
with_calibration=False). Needs QT_QPA_PLATFORM, WORKSTATION_CACHE_DIR, WORKSTATION_SETTINGS
set by the caller. Prints a line `RESULT browse_p95_ms=... ...`.
"""
import os
import sys
from pathlib import Path

checkout = Path(sys.argv[1]).resolve()
sys.path[:0] = [str(checkout), str(checkout / "tests" / "benchmarks")]
from workstation.util.memory import python_allocator, restart_with_c_allocator  # noqa: E402

restart_with_c_allocator()  # re-executes this script once, same arguments

import argparse  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("checkout", type=Path)
ap.add_argument("project", type=Path)
ap.add_argument("--moves", type=int, default=30)
args = ap.parse_args()
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import bench_gui  # noqa: E402
import ui  # noqa: E402
import workstation  # noqa: E402

for mod in (bench_gui, ui, workstation):
    assert Path(mod.__file__).resolve().is_relative_to(checkout), f"{mod.__name__} from {mod.__file__}"
from ui import app as ui_app, theme  # noqa: E402

app = ui_app.create_application([])
theme.apply_theme(app, "dark")
load0 = os.getloadavg()[0]
r = bench_gui.slider_moves(app, args.project, args.moves, with_calibration=False)
tot, ev, table = r["total"], r["evaluate"], r["table"]
pct = bench_gui.pct
print(f"  {checkout.name}: {r['n']:,} samples, {r['dets']:,} detections, opened in {r['open_s']:.2f} s; "
      f"allocator {python_allocator()}; load {load0:.2f} -> {os.getloadavg()[0]:.2f}")
print(f"  Browse: set_config -> views updated and painted p50 {pct(tot, 50):.1f} ms, p95 {pct(tot, 95):.1f} ms, "
      f"max {max(tot):.1f} ms over {len(tot)} moves; checker alone p50 {pct(ev, 50):.1f} / p95 {pct(ev, 95):.1f} ms; "
      f"table refresh p95 {pct(table, 95):.1f} ms; RSS after open {r['rss_open']:.0f} MB, peak {r['peak']:.0f} MB")
print(f"RESULT browse_p95_ms={pct(tot, 95):.1f} browse_p50_ms={pct(tot, 50):.1f} checker_p50_ms={pct(ev, 50):.1f} "
      f"open_s={r['open_s']:.2f} n={r['n']} dets={r['dets']}", flush=True)
assert "torch" not in sys.modules
