"""Start the workstation's window: QApplication, theme, logging, excepthook, main window.

`run(project=None, read_only=False)` is what `python main.py gui` calls. Qt's own messages
and uncaught exceptions go to one log (and an exception also to a dialog, unless the platform
is offscreen). Nothing heavy is imported here: model libraries load when a job needs them.

Hooks for tests and benchmarks (environment variables, read once at start):
- `WORKSTATION_ACK=1`: print `ACK <n> <task> <target id>` on stdout after each committed label.
- `WORKSTATION_TEST_DRIVER=<file.py>`: run that file once the window is up, with `app`,
  `window` and `state` in its namespace (an end-to-end test drives the window from inside).
- `WORKSTATION_EXIT_WHEN_READY=1`: print `READY window_ms=… project_ms=… verdicts_ms=… torch=… allocator=…`
  once the window is shown, its project's samples shown and their verdicts in, then quit
  (cold-start benchmark).
- `WORKSTATION_SETTINGS=<file.ini>`: settings file to use instead of the user's.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from .main_window import MainWindow

T0 = time.perf_counter()

log = logging.getLogger("workstation.ui")

# how long the closed window's process waits for its background workers (a 1M-sample
# evaluation takes seconds) before it leaves without them
WORKERS_AT_EXIT_MS = 30_000


def _qt_message_handler(mode: Any, context: Any, message: str) -> None:
    from PySide6.QtCore import QtMsgType

    level = {QtMsgType.QtDebugMsg: logging.DEBUG, QtMsgType.QtInfoMsg: logging.INFO,
             QtMsgType.QtWarningMsg: logging.WARNING, QtMsgType.QtCriticalMsg: logging.ERROR,
             QtMsgType.QtFatalMsg: logging.CRITICAL}.get(mode, logging.INFO)
    logging.getLogger("qt").log(level, "%s", message)


def _rss_mb() -> float:
    """Resident memory of this process in MB (0 where it cannot be read)."""
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except Exception:  # noqa: BLE001
        try:
            with open("/proc/self/status", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("VmRSS"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
    return 0.0


def install_excepthook() -> None:
    """Uncaught exceptions: logged, and shown in a dialog when there is a screen to show it on."""

    def hook(etype: type[BaseException], value: BaseException, tb: Any) -> None:
        text = "".join(traceback.format_exception(etype, value, tb))
        log.error("uncaught exception:\n%s", text)
        try:
            from PySide6.QtWidgets import QApplication, QMessageBox

            app = QApplication.instance()
            if isinstance(app, QApplication) and app.platformName() not in ("offscreen", "minimal"):
                box = QMessageBox(QMessageBox.Icon.Critical, "Unexpected error",
                                  f"{etype.__name__}: {value}\n\nThe workstation keeps running; the details "
                                  "are in the log.", QMessageBox.StandardButton.Ok)
                box.setDetailedText(text)
                box.exec()
        except Exception:  # noqa: BLE001
            pass

    sys.excepthook = hook


def create_application(argv: Sequence[str] | None = None) -> Any:
    from PySide6.QtCore import QCoreApplication, Qt, qInstallMessageHandler
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from workstation.util.memory import keep_freed_memory_for_reuse, tune_allocator

    tune_allocator()
    keep_freed_memory_for_reuse()  # the window trims its heap itself once idle (ui/idle_trim.py)
    app = QApplication.instance()
    if app is None:
        QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
        QCoreApplication.setOrganizationName("t2i-audit")
        QCoreApplication.setApplicationName("workstation")
        app = QApplication(list(argv) if argv is not None else [sys.argv[0]])
    qInstallMessageHandler(_qt_message_handler)
    return app


def build_window(app: QApplication) -> MainWindow:
    from . import project_dialogs, theme
    from .main_window import MainWindow

    theme.apply_theme(app, str(project_dialogs.settings().value("theme", "dark") or "dark"))
    return MainWindow()


def _install_hooks(app: QApplication, window: MainWindow) -> None:
    driver = os.environ.get("WORKSTATION_TEST_DRIVER")
    if driver:
        from PySide6.QtCore import QTimer

        def run_driver() -> None:
            code = Path(driver).read_text(encoding="utf-8")
            ns = {"app": app, "window": window, "state": window.state, "__name__": "__driver__"}
            try:
                exec(compile(code, driver, "exec"), ns)  # noqa: S102 - test-only hook
            except SystemExit:
                raise
            except BaseException:
                traceback.print_exc()
                sys.stdout.flush()
                os._exit(3)

        QTimer.singleShot(0, run_driver)


def last_project() -> Path | None:
    """The project opened last in this workstation (Open recent's first), if it is still there."""
    from . import project_dialogs

    for folder in project_dialogs.recent_projects()[:1]:
        if project_dialogs.is_project(folder):
            return Path(folder)
    return None


def run(project: str | Path | None = None, read_only: bool = False, argv: Sequence[str] | None = None,
        early: Any = None, reopen_last: bool = False) -> int:
    """Open the window (then `project`, loaded in the background); returns the exit code.
    `early`: `project`'s load already under way (`ui.loading.EarlyLoad`), which the window takes.
    `reopen_last`: with no `project`, the project opened last comes back (`last_project`).
    Python's cyclic collection runs on the GUI thread only from here on (`ui.collector`)."""
    try:
        install_excepthook()
        app = create_application(argv)
        from . import collector

        collector.install(app)
        window = build_window(app)
    except BaseException:
        if early is not None:
            early.discard()
        raise
    window.show()
    app.processEvents()
    t_window = time.perf_counter()
    times = {"window": t_window, "project": t_window, "verdicts": t_window}

    def loaded(ok: bool) -> None:
        times["project"] = time.perf_counter()
        if ok and any(getattr(v, "checking", lambda w: False)(window)
                      for v in list(window.method_views.values())):  # the samples are shown; their verdicts follow
            window.verdicts_checked.connect(checked)
        else:
            checked()

    def checked() -> None:
        if times["verdicts"] > t_window:
            return
        times["verdicts"] = time.perf_counter()
        _install_hooks(app, window)
        if os.environ.get("WORKSTATION_EXIT_WHEN_READY"):
            from PySide6.QtCore import QTimer

            QTimer.singleShot(0, ready)

    def ready() -> None:
        from workstation.util.memory import python_allocator

        n = sum(int(getattr(v, "n_loaded", lambda w: 0)(window)) for v in list(window.method_views.values()))
        print(f"READY window_ms={(times['window'] - T0) * 1000:.0f} project_ms={(times['project'] - T0) * 1000:.0f} "
              f"verdicts_ms={(times['verdicts'] - T0) * 1000:.0f} "
              f"torch={'torch' in sys.modules} samples={n} rss_mb={_rss_mb():.0f} "
              f"allocator={python_allocator()}",
              flush=True)
        window.close()
        app.quit()

    from PySide6.QtCore import QTimer

    QTimer.singleShot(0, window.install_extra_panels)  # after the first paint
    if project is None and reopen_last and not os.environ.get("WORKSTATION_EXIT_WHEN_READY"):
        project = last_project()
    if project is not None:
        window.load_finished.connect(loaded)
        window.open_project_in_background(project, read_only=read_only, early=early)
    else:
        loaded(True)
    code = int(app.exec())
    await_workers()
    return code


def await_workers(timeout_ms: int = WORKERS_AT_EXIT_MS) -> bool:
    """Once the event loop has ended: ask the window's background workers to stop (a grid
    search stops at its next step; an evaluation runs to its end, and its result is dropped)
    and wait for them, up to `timeout_ms`. A worker still running when the interpreter tears
    down would find its signals already deleted and print an error. (A project's load and the
    check of its verdicts run on threads of their own, which Python's exit waits for.) Returns
    whether all of them ended in time; if not, the log says so."""
    from PySide6.QtCore import QThreadPool
    from superqt.utils import WorkerBase

    try:
        WorkerBase.await_workers(msecs=timeout_ms)
    except RuntimeError:
        log.warning("%d background task(s) still running at exit after %.0f s; leaving without them",
                    QThreadPool.globalInstance().activeThreadCount(), timeout_ms / 1000)
        return False
    return True
