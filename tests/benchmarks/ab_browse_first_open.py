"""One first open (detection cache emptied) of PROJECT by CHECKOUT's `main.py gui`, whole process.

    python ab_browse_first_open.py CHECKOUT PROJECT CACHE SETTINGS     (a round of ab_browse.sh)

Before the clock: the project's stored tab set to Calibration (the condition of
docs/performance.md; Browse's slider run leaves Browse) and CACHE/detections removed. Then
bench_gui.cold_start of CHECKOUT (its own copy) with WORKSTATION_CACHE_DIR=CACHE: seconds from
process start to READY, to the process's end, its CPU. Prints `RESULT ready_s=... ...`.
"""
import json
import os
import shutil
import sys
from pathlib import Path

checkout = Path(sys.argv[1]).resolve()
project, cache, settings = Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
sys.path[:0] = [str(checkout), str(checkout / "tests" / "benchmarks")]
import bench_gui  # noqa: E402
import workstation  # noqa: E402
from workstation.store import Project  # noqa: E402

for mod in (bench_gui, workstation):
    assert Path(mod.__file__).resolve().is_relative_to(checkout), f"{mod.__name__} from {mod.__file__}"
KEY = "ui.place"
p = Project.open(project)
try:
    raw = p.get_setting(KEY)
    place = json.loads(raw) if raw else {}
    place["tab"] = "Calibration"
    p.set_setting(KEY, json.dumps(place))
finally:
    p.close()
shutil.rmtree(cache / "detections", ignore_errors=True)
settings.write_text("{}", encoding="utf-8")
load0 = os.getloadavg()[0]
cpu: list[float] = []
readies, walls, lines = bench_gui.cold_start(project, settings, repeat=1, checkout=checkout,
                                             extra_env={"WORKSTATION_CACHE_DIR": str(cache)}, cpu=cpu)
print(f"  {checkout.name}: first open READY at {readies[0]:.2f} s, process ended at {walls[0]:.2f} s, "
      f"CPU {cpu[0]:.2f} s; load {load0:.2f} -> {os.getloadavg()[0]:.2f}   {lines[0]}")
print(f"RESULT ready_s={readies[0]:.2f} wall_s={walls[0]:.2f} cpu_s={cpu[0]:.2f}", flush=True)
