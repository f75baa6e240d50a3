"""The window's start-up check: what Qt's xcb platform needs from the system, named before any work.

A missing library is simulated for real: a copy of the installed xcb platform plugin whose
dependency on ``libxcb-icccm.so.4`` (or another of its libraries) is renamed to a library no
machine has, so the dynamic loader and `ldd` report it missing exactly as on a stock machine.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from workstation.util import window_libs

ROOT = Path(__file__).resolve().parents[2]
# (a library the plugin depends on, a name of the same length that no system has)
RENAMES = [(b"libxcb-icccm.so.4", b"libxcb-absnt.so.4"), (b"libxcb-keysyms.so.1", b"libxcb-absntxx.so.1"),
           (b"libxkbcommon-x11.so.0", b"libxkbabsnt0-x11.so.0")]


@pytest.fixture()
def broken_qt(tmp_path: Path) -> tuple[Path, str, str]:
    """A Qt folder whose xcb plugin needs a library that does not exist: (folder, soname, package)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the xcb platform exists on Linux only")
    real = window_libs.qt_dir()
    if real is None or not (real / "plugins" / "platforms" / "libqxcb.so").is_file():
        pytest.skip("no PySide6 with an xcb platform plugin installed")
    data = (real / "plugins" / "platforms" / "libqxcb.so").read_bytes()
    for old, new in RENAMES:
        if old + b"\0" in data:
            data = data.replace(old + b"\0", new + b"\0")
            break
    else:
        pytest.skip("the installed xcb plugin depends on none of the libraries this test renames")
    qt = tmp_path / "Qt"
    (qt / "plugins" / "platforms").mkdir(parents=True)
    (qt / "plugins" / "platforms" / "libqxcb.so").write_bytes(data)
    (qt / "lib").symlink_to(real / "lib")  # the plugin finds Qt's own libraries through ../../lib
    soname = new.decode()
    return qt, soname, window_libs.debian_package(soname)


def _window_env(monkeypatch: pytest.MonkeyPatch, qt: Path) -> None:
    """An X11 desktop as a user has it: a display, no platform chosen, the simulated Qt."""
    monkeypatch.setenv("DISPLAY", ":93")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(window_libs, "qt_dir", lambda: qt)


def test_the_loader_reports_the_missing_library_and_its_package(broken_qt) -> None:
    qt, soname, package = broken_qt
    assert soname in window_libs.missing_libraries(qt)
    assert package in window_libs.packages_for(window_libs.missing_libraries(qt))


def test_demo_refuses_in_one_line_before_building(broken_qt, tmp_path: Path, monkeypatch, capsys) -> None:
    from workstation.cli import main

    qt, soname, package = broken_qt
    _window_env(monkeypatch, qt)
    target = tmp_path / "demo"
    assert main(["demo", "--project", str(target)], extra_commands=("ui.command",)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: the window cannot start:"), err
    assert soname in err[0] and "apt-get install -y --no-install-recommends" in err[0] and package in err[0]
    assert "--no-gui" in err[0]
    assert not target.exists()  # nothing was built


def test_gui_refuses_in_one_line(broken_qt, monkeypatch, capsys) -> None:
    from workstation.cli import main

    qt, soname, package = broken_qt
    _window_env(monkeypatch, qt)
    assert main(["gui"], extra_commands=("ui.command",)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and soname in err[0] and package in err[0], err


def test_no_display_is_named(monkeypatch) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the xcb platform exists on Linux only")
    problem = window_libs.window_problem(env={})
    assert problem is not None and "DISPLAY is not set" in problem
    # another platform chosen (the tests' offscreen one, a Wayland session): nothing to check
    assert window_libs.window_problem(env={"QT_QPA_PLATFORM": "offscreen"}) is None
    assert window_libs.window_problem(env={"WAYLAND_DISPLAY": "wayland-0"}) is None


def _fake_tool(folder: Path, name: str, body: str) -> None:
    f = folder / name
    f.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    f.chmod(f.stat().st_mode | stat.S_IEXEC)


def test_setup_check_installs_as_root_or_prints_the_command(broken_qt, tmp_path: Path) -> None:
    """What `packaging/setup.sh` runs, with apt-get replaced by a recorder."""
    qt, soname, package = broken_qt
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "apt-get.args"
    _fake_tool(bin_dir, "apt-get", f'echo "$@" >> "{record}"')
    _fake_tool(bin_dir, "apt-cache", 'echo "Package: $4"')
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    r = subprocess.run([sys.executable, "-m", "workstation.util.window_libs", "--install", "--qt-dir", str(qt)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr  # the simulated library cannot be installed
    assert f"missing {soname}" in r.stdout or soname in r.stdout.splitlines()[0]
    if os.geteuid() == 0:
        calls = record.read_text(encoding="utf-8").splitlines()
        assert calls[0].startswith("install -y --no-install-recommends") and package in calls[0].split()
        assert f"still missing {soname}" in r.stdout
    else:
        assert "sudo apt-get install -y --no-install-recommends" in r.stdout and package in r.stdout
        assert not record.exists()


@pytest.mark.parametrize("soname,package", [
    ("libxcb-icccm.so.4", "libxcb-icccm4"), ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
    ("libxcb-cursor.so.0", "libxcb-cursor0"), ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    ("libX11-xcb.so.1", "libx11-xcb1"), ("libxcb-render-util.so.0", "libxcb-render-util0"),
    ("libdbus-1.so.3", "libdbus-1-3"), ("libEGL.so.1", "libegl1"), ("libfontconfig.so.1", "libfontconfig1"),
    ("libglib-2.0.so.0", "libglib2.0-0"),
])
def test_sonames_map_to_debian_packages(soname: str, package: str) -> None:
    assert window_libs.debian_package(soname) == package
