"""`report` killed with SIGKILL while it writes leaves its temporary folder beside OUT
(``.OUT.<token>.partial``); the next report of the same OUT clears it — and only folders that are
recognisably this program's temporaries of that same output: never a user's folder of a look-alike
name, never a link, never another output's, never one a live report is writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.proc import Lines
from workstation.cli import main
from workstation.evaluation.bundle import PARTIAL_MARKER, REPORT_MARKER

ROOT = Path(__file__).resolve().parents[2]

# a report that kills itself (SIGKILL) once its sections are built, before the bundle is in place
CHILD = r'''
import os, signal, sys
import workstation.evaluation.bundle as bundle

real = bundle.write_bundle

def write_bundle(out_dir, build, **kw):
    def dying_build(folder):
        sections = build(folder)
        print("DYING", folder, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        return sections
    return real(out_dir, dying_build, **kw)

bundle.write_bundle = write_bundle
from workstation.cli import main
sys.exit(main(["report", "--project", sys.argv[1], "--out", sys.argv[2]]))
'''


def _killed_report(project: Path, out: Path) -> Path:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(project), str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    with Lines(proc, timeout=180) as lines:
        line = lines.wait_for(lambda ln: ln.startswith("DYING"))
        proc.wait(60)
    assert proc.returncode == -signal.SIGKILL, lines.tail()
    return Path(line.split(" ", 1)[1].strip())


def _beside(out: Path) -> set[str]:
    return {p.name for p in out.parent.iterdir()}


def test_the_next_report_clears_what_a_killed_one_left(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports" / "repX"
    out.parent.mkdir()
    left = _killed_report(project, out)
    assert left.is_dir() and left.name.startswith(".repX.") and left.name.endswith(".partial")
    assert (left / PARTIAL_MARKER).is_file() and not out.exists()
    marker, pid = (left / PARTIAL_MARKER).read_text(), _pid_of(left)
    left_again = _killed_report(project, out)  # a second one, killed too: it cleared the first's
    assert not left.exists() and left_again.is_dir()
    # look-alikes that are not this program's temporaries of this output: all stay
    mine = out.parent / ".repX.thesisdr.partial"  # a user's folder of the same shape, without the marker
    mine.mkdir()
    (mine / "chapter.tex").write_text("a year of work")
    other = out.parent / ".repY.abcdefgh.partial"  # another output's temporary
    other.mkdir()
    (other / PARTIAL_MARKER).write_text(marker.replace('"repX"', '"repY"'))
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / PARTIAL_MARKER).write_text(marker)
    link = out.parent / ".repX.linkedto.partial"
    link.symlink_to(target, target_is_directory=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        busy = out.parent / ".repX.busybusy.partial"  # a report still writing (its process is alive)
        busy.mkdir()
        (busy / PARTIAL_MARKER).write_text(marker.replace(f'"pid": {pid}', f'"pid": {live.pid}'))
        assert main(["report", "--project", str(project), "--out", str(out)]) == 0
        assert (out / "index.html").is_file() and (out / REPORT_MARKER).is_file()
        assert not left_again.exists()
        assert _beside(out) == {"repX", mine.name, other.name, link.name, busy.name}
        assert (mine / "chapter.tex").read_text() == "a year of work"
        assert (target / PARTIAL_MARKER).is_file() and link.is_symlink()
    finally:
        live.kill()
        live.wait(30)


def test_a_bundle_set_aside_by_a_killed_overwrite_goes_once_the_new_one_is_in_place(project: Path,
                                                                                   tmp_path: Path) -> None:
    out = tmp_path / "rep"
    assert main(["report", "--project", str(project), "--out", str(out)]) == 0
    old = tmp_path / ".rep.k1ll3d0x.old"  # what `replace_folder` leaves when killed between its renames
    os.replace(out, old)
    not_ours = tmp_path / ".rep.mydrafts.old"
    not_ours.mkdir()
    (not_ours / "draft.txt").write_text("mine")
    assert main(["report", "--project", str(project), "--out", str(out)]) == 0
    assert (out / REPORT_MARKER).is_file() and not old.exists()
    assert (not_ours / "draft.txt").read_text() == "mine"


def _pid_of(partial: Path) -> int:
    import json

    return int(json.loads((partial / PARTIAL_MARKER).read_text())["pid"])
