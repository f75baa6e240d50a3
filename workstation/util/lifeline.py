"""Worker processes die with the process that started them.

A worker blocked on a pipe whose parent was killed (SIGKILL, the OOM killer, a crashed GUI)
would otherwise live on for good, re-parented to init. `die_with_parent(parent_pid)` is called
first thing in a worker:

* on Linux it asks the kernel for SIGKILL when the parent dies (``prctl(PR_SET_PDEATHSIG)``
  through ctypes), then checks the parent is still the expected one (it may have died before
  the call);
* everywhere (the fallback, and the only way on macOS / Windows) a daemon thread polls the
  parent's pid every `POLL_SECONDS` and ends the process when the parent is gone.

The parent passes its pid explicitly (environment `PARENT_PID_ENV` for a job worker, an
initializer argument for a process pool) so a worker started some other way — a test calling
the worker function in-process, a user running ``jobs worker`` by hand — is not affected.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time

PARENT_PID_ENV = "WORKSTATION_PARENT_PID"
POLL_SECONDS = 1.0
PR_SET_PDEATHSIG = 1

log = logging.getLogger(__name__)
_started: set[int] = set()


def _parent_alive(pid: int) -> bool:
    if os.name == "nt":  # pragma: no cover - no getppid semantics to rely on
        import subprocess

        r = subprocess.run(["tasklist", "/FI", f"PID eq {pid}", "/NH"], capture_output=True, text=True)
        return str(pid) in r.stdout
    return os.getppid() == pid


def _set_pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int, poll: float) -> None:
    while True:
        time.sleep(poll)
        if not _parent_alive(parent_pid):
            os._exit(137)  # as if killed: the parent is gone, nobody reads our results


def die_with_parent(parent_pid: int | None = None, poll: float = POLL_SECONDS) -> bool:
    """Make this process end when `parent_pid` (default: `PARENT_PID_ENV`) ends.

    Returns False (and does nothing) when no parent pid is known. Ends the process at once when
    the parent is already gone."""
    if parent_pid is None:
        try:
            parent_pid = int(os.environ.get(PARENT_PID_ENV, "") or 0)
        except ValueError:
            parent_pid = 0
    if not parent_pid or parent_pid <= 0:
        return False
    _set_pdeathsig()
    if not _parent_alive(parent_pid):
        os._exit(137)
    if parent_pid not in _started:
        _started.add(parent_pid)
        threading.Thread(target=_watch, args=(parent_pid, poll), name="parent-watchdog", daemon=True).start()
    return True


__all__ = ["PARENT_PID_ENV", "die_with_parent"]
