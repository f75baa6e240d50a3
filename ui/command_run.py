"""A command of the core's command line run for the window: a process of its own, a progress
dialog that shows how far it is, and Cancel.

The window's doors to the command line's long work (File → Import a SpatialBench-UC run…,
File → Write report…) run the very command a user would type (`main.py import-sbuc …`, `main.py
report …`), so the window and the command line cannot differ; each of those commands writes all
or nothing, so a cancel (the process is killed) leaves nothing half-written. The command prints
its progress as lines (`workstation.progress.LINES_ENV`), which the dialog shows.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal
from PySide6.QtWidgets import QProgressDialog, QWidget

from workstation.progress import LINES_ENV

_PERCENT = re.compile(r"\((\d+)%\)")


def command_line(args: Sequence[str]) -> tuple[str, list[str]]:
    """(program, arguments) that run `main.py ARGS` (a frozen build runs itself)."""
    if getattr(sys, "frozen", False):
        return sys.executable, list(args)
    import importlib.util

    spec = importlib.util.find_spec("main")
    main_py = spec.origin if spec is not None and spec.origin else str(Path(__file__).resolve().parents[1] / "main.py")
    return sys.executable, [main_py, *args]


class CommandRun(QObject):
    """Run one command, or several in turn (each only when the one before succeeded), with a
    progress dialog; `finished(ok, output)` when the last has ended."""

    finished = Signal(bool, str)

    def __init__(self, parent: QWidget, title: str, args: Sequence[str] | Sequence[Sequence[str]],
                 what: str) -> None:
        super().__init__(parent)
        steps = [list(a) for a in args] if args and not isinstance(args[0], str) else [list(args)]  # type: ignore[arg-type]
        self.steps: list[list[str]] = steps  # type: ignore[assignment]  # lists of str either way
        self.args = steps[-1]
        self.output: list[str] = []
        self.cancelled = False
        self.proc = QProcess(self)
        self.proc.setProcessChannelMode(QProcess.ProcessChannelMode.MergedChannels)
        env = QProcessEnvironment.systemEnvironment()
        env.insert(LINES_ENV, "0.5")
        env.insert("PYTHONUNBUFFERED", "1")
        self.proc.setProcessEnvironment(env)
        self.proc.readyReadStandardOutput.connect(self._read)
        self.proc.finished.connect(self._done)
        self.proc.errorOccurred.connect(self._error)
        self.dialog = QProgressDialog(what, "Cancel", 0, 0, parent)
        self.dialog.setObjectName("commandProgress")
        self.dialog.setWindowTitle(title)
        self.dialog.setMinimumDuration(0)
        self.dialog.setMinimumWidth(520)
        self.dialog.canceled.connect(self.cancel)
        self._what = what
        self._ended = False

    def start(self) -> None:
        self.dialog.show()
        self._start_step()

    def _start_step(self) -> None:
        program, args = command_line(self.steps[0])
        self.proc.start(program, args)

    def _read(self) -> None:
        data = bytes(self.proc.readAllStandardOutput().data()).decode("utf-8", "replace")
        for line in data.splitlines():
            line = line.strip()
            if not line:
                continue
            self.output.append(line)
            m = _PERCENT.search(line)
            if m:
                self.dialog.setRange(0, 100)
                self.dialog.setValue(min(int(m.group(1)), 99))
            self.dialog.setLabelText(f"{self._what}\n{line[:160]}")

    def cancel(self) -> None:
        """Stop the command (it writes all or nothing: a killed one leaves nothing behind)."""
        if self.proc.state() != QProcess.ProcessState.NotRunning:
            self.cancelled = True
            self.proc.kill()

    def _error(self, err: Any) -> None:
        if err == QProcess.ProcessError.FailedToStart:
            self.output.append(f"the command could not start: {self.proc.errorString()}")
            self._done(-1, None)

    def _done(self, code: int, _status: Any) -> None:
        if self._ended:
            return
        self._read()
        if code == 0 and not self.cancelled and len(self.steps) > 1:
            self.steps.pop(0)
            self.dialog.setRange(0, 0)
            self._start_step()
            return
        self._ended = True
        self.dialog.reset()
        self.dialog.hide()
        ok = code == 0 and not self.cancelled
        self.finished.emit(ok, "\n".join(self.output))

    def wait(self, msecs: int) -> bool:
        """Block until the command ends (tests and scripts)."""
        return bool(self.proc.waitForFinished(msecs))


def error_line(output: str) -> str:
    """The line of a command's output that says what went wrong (its last line, usually)."""
    lines = [x for x in output.splitlines() if x.strip()]
    for line in reversed(lines):
        if line.lower().startswith(("error", "workstation: error")) or "error:" in line.lower():
            return line
    return lines[-1] if lines else "the command ended without saying why"

