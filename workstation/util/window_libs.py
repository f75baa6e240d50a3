"""Whether the workstation's window can start on this Linux machine, and what it lacks if not.

PySide6's wheels bring Qt itself but not the X11 client libraries that Qt's xcb platform plugin
loads (libxcb-icccm4, libxcb-keysyms1, libxcb-cursor0, ...): on a stock Debian or Ubuntu machine
without a desktop's development packages the window aborts at start. This module asks the
system's dynamic loader about the plugin's own shared libraries (`ldd` on ``libqxcb.so`` and on
Qt's xcb integration library, as installed), adds the few libraries Qt opens only at run time
(``RUNTIME_SONAMES``), and names each missing library with the Debian package that holds it.
Qt is never imported here.

* `missing_libraries()` — the sonames the xcb platform needs and cannot find.
* `window_problem()` — one line saying why a window cannot start here (no display, missing
  libraries), or None; `main.py gui` and `main.py demo` call it before any long work.
* ``python -m workstation.util.window_libs [--install]`` — what `packaging/setup.sh` runs: lists
  what is missing; with ``--install``, running as root where apt-get exists, installs the
  packages, and otherwise prints the one command that does.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: libraries Qt's xcb platform opens with dlopen at start (not in its ELF dependencies), which it
#: refuses to start without
RUNTIME_SONAMES: tuple[str, ...] = ("libxcb-cursor.so.0",)

#: Debian packages whose names do not follow the soname rule (see `debian_package`)
PACKAGE_EXCEPTIONS: dict[str, str] = {
    "libglib-2.0.so.0": "libglib2.0-0", "libgobject-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0", "libgio-2.0.so.0": "libglib2.0-0",
    "libGLdispatch.so.0": "libglvnd0", "libz.so.1": "zlib1g", "libgcc_s.so.1": "libgcc-s1",
    "libharfbuzz.so.0": "libharfbuzz0b", "libbrotlidec.so.1": "libbrotli1",
    "libbrotlicommon.so.1": "libbrotli1", "libxcb-cursor.so.0": "libxcb-cursor0",
}

#: how long one `ldd` or `apt-cache` may take (seconds)
TOOL_TIMEOUT_S = 30.0

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$")


def qt_dir() -> Path | None:
    """The folder of the installed PySide6's Qt (``.../PySide6/Qt``), found without importing it."""
    try:
        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for loc in spec.submodule_search_locations or []:
        q = Path(loc) / "Qt"
        if q.is_dir():
            return q
    return None


def xcb_files(qt: Path) -> list[Path]:
    """The xcb platform plugin and Qt's xcb integration library under `qt` (those present)."""
    files = [qt / "plugins" / "platforms" / "libqxcb.so"]
    lib = qt / "lib"
    if lib.is_dir():
        files += sorted(lib.glob("libQt6XcbQpa.so*"))[:1]
    return [f for f in files if f.is_file()]


def ldd_missing(files: Sequence[Path], ldd: str = "ldd") -> list[str]:
    """Sonames that `ldd` reports as ``not found`` for any of `files` (their whole dependency tree)."""
    exe = shutil.which(ldd)
    if exe is None:
        return []
    missing: list[str] = []
    for f in files:
        try:
            out = subprocess.run([exe, str(f)], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                                 check=False).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in out.splitlines():
            m = _NOT_FOUND.match(line)
            if m and m.group(1) not in missing:
                missing.append(m.group(1))
    return missing


def load_error(soname: str) -> str | None:
    """Why the dynamic loader cannot load `soname` (a name or a path) as Qt's dlopen would; None
    when it loads."""
    try:
        ctypes.CDLL(soname)
    except OSError as e:
        return str(e) or f"{soname} cannot be loaded"
    return None


def loadable(soname: str) -> bool:
    return load_error(soname) is None


def missing_libraries(qt: Path | None = None) -> list[str]:
    """The shared libraries Qt's xcb platform needs and this machine lacks, by soname; [] when
    nothing is missing or no PySide6 with an xcb plugin is installed."""
    qt = qt_dir() if qt is None else qt
    if qt is None:
        return []
    files = xcb_files(qt)
    if not files:
        return []
    missing = ldd_missing(files)
    missing += [s for s in RUNTIME_SONAMES if s not in missing and not loadable(s)]
    return missing


def debian_package(soname: str) -> str:
    """The Debian (and Ubuntu) package that holds `soname`: the library's name and its soname
    version, lower-case, with a hyphen between them where the name ends in a digit
    (``libxcb-icccm.so.4`` → ``libxcb-icccm4``, ``libxkbcommon-x11.so.0`` → ``libxkbcommon-x11-0``),
    except for the few packages named otherwise (`PACKAGE_EXCEPTIONS`)."""
    if soname in PACKAGE_EXCEPTIONS:
        return PACKAGE_EXCEPTIONS[soname]
    m = re.fullmatch(r"(.+?)\.so\.(\d+)(?:\..*)?", soname)
    if not m:
        return soname.split(".so")[0].lower()
    name, version = m.group(1).lower().replace("_", "-"), m.group(2)
    return f"{name}-{version}" if name[-1].isdigit() else f"{name}{version}"


def _apt_known(pkg: str) -> bool:
    """Whether apt knows a package of that name (True where apt-cache cannot tell)."""
    exe = shutil.which("apt-cache")
    if exe is None:
        return True
    try:
        r = subprocess.run([exe, "show", "--no-all-versions", pkg], capture_output=True, text=True,
                           timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return r.returncode == 0 and bool(r.stdout.strip())


def packages_for(sonames: Sequence[str], check_apt: bool = False) -> list[str]:
    """The Debian packages that provide `sonames`, each once. With `check_apt`, a name apt does not
    know is tried with Ubuntu's ``t64`` suffix too."""
    out: list[str] = []
    for s in sonames:
        pkg = debian_package(s)
        if check_apt and not _apt_known(pkg) and _apt_known(pkg + "t64"):
            pkg += "t64"
        if pkg not in out:
            out.append(pkg)
    return out


def install_command(packages: Sequence[str], as_root: bool) -> list[str]:
    """The apt-get command that installs `packages` (with sudo unless running as root)."""
    return [*([] if as_root else ["sudo"]), "apt-get", "install", "-y", "--no-install-recommends", *packages]


def describe_missing(missing: Sequence[str], packages: Sequence[str]) -> str:
    """One line: what is missing and the command that installs it."""
    cmd = " ".join(install_command(packages, as_root=False))
    where = (f"install them with `{cmd}`" if shutil.which("apt-get") or not _is_linux()
             else f"install the packages that hold them (on Debian or Ubuntu: {' '.join(packages)})")
    setup = "" if getattr(sys, "frozen", False) else " (or run `bash packaging/setup.sh` as root)"
    return f"Qt's xcb platform needs {', '.join(missing)}, which this machine lacks; {where}{setup}"


def _is_linux() -> bool:
    return sys.platform.startswith("linux")


def _platform(env: Mapping[str, str]) -> str | None:
    """The Qt platform a window would use: QT_QPA_PLATFORM's first choice, else xcb on an X11
    display; None where Qt would choose another platform (a Wayland session without X11)."""
    chosen = (env.get("QT_QPA_PLATFORM") or "").split(";")[0].split(":")[0].strip()
    if chosen:
        return chosen
    if env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY"):
        return None
    return "xcb"


def window_problem(env: Mapping[str, str] | None = None, qt: Path | None = None) -> str | None:
    """Why the workstation's window cannot start here, in one line; None when nothing stands in
    its way that can be seen before Qt starts. Only Linux's xcb platform is checked."""
    env = os.environ if env is None else env
    if not _is_linux() or _platform(env) != "xcb":
        return None
    if not env.get("DISPLAY"):
        return ("there is no display to open it on (DISPLAY is not set): run it on the machine's "
                "desktop or over `ssh -X`")
    qt = qt_dir() if qt is None else qt
    if qt is None:
        return None
    files = xcb_files(qt)
    if not files:
        return None
    error = load_error(str(files[0]))
    if error is None and all(loadable(s) for s in RUNTIME_SONAMES):
        return None  # the loader resolved everything (the usual case: no `ldd` run)
    missing = missing_libraries(qt)
    if missing:
        return describe_missing(missing, packages_for(missing))
    return f"Qt's xcb platform plugin cannot be loaded: {error}" if error else None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m workstation.util.window_libs",
        description="Check the system libraries that Qt's xcb platform (the workstation's window on "
                    "Linux) needs; optionally install the missing ones.")
    ap.add_argument("--install", action="store_true",
                    help="install missing packages with apt-get when running as root; otherwise print the command")
    ap.add_argument("--qt-dir", type=Path, metavar="DIR", help="the Qt folder to check (default: PySide6's)")
    args = ap.parse_args(argv)
    if not _is_linux():
        return 0
    qt = args.qt_dir or qt_dir()
    if qt is None or not xcb_files(qt):
        print("window libraries: no PySide6 with an xcb platform plugin installed; nothing to check")
        return 0
    missing = missing_libraries(qt)
    if not missing:
        print("window libraries: everything Qt's xcb platform needs is installed")
        return 0
    apt = shutil.which("apt-get")
    packages = packages_for(missing, check_apt=apt is not None)
    print(f"window libraries: missing {', '.join(missing)} (Debian packages: {' '.join(packages)})")
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if args.install and as_root and apt is not None:
        print(f"installing: {' '.join(packages)}", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        cmd = install_command(packages, as_root=True)

        def run_apt(args: list[str]) -> int:
            return subprocess.run(args, env=env, check=False, stdout=subprocess.DEVNULL).returncode

        if run_apt(cmd) != 0:
            run_apt(["apt-get", "update", "-q"])
            run_apt(cmd)
        still = missing_libraries(qt)
        if still:
            print(f"window libraries: still missing {', '.join(still)}; the window will not start "
                  "(the command line and the tests work without it)")
            return 1
        print("window libraries: installed")
        return 0
    print("the window needs them; install them with:")
    print("  " + " ".join(install_command(packages, as_root=as_root)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
