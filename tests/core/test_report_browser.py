"""The HTML report in a real browser: headless Chromium (Debian's `chromium` package, installed by
`bash packaging/setup.sh --tests`) opens every page of a report of every method, as an auditor
who was sent the folder would.

Every page loads; every image is decoded with a size; every link leads to a file of the bundle
(or to an anchor of the page); the browser logs no console error, no exception and no failed
load. A screenshot of each page is kept in `build/report-pages/` for a person to look at.

The browser is driven through the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages on file descriptors 3 and 4), with the standard library alone; every read has a
deadline.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEEP = ROOT / "build" / "report-pages"
PAGE_WIDTH = 1280
MAX_SHOT_HEIGHT = 12000
STEP_TIMEOUT_S = 60.0


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


class BrowserGone(RuntimeError):
    pass


class Chromium:
    """Headless Chromium with one page, driven over the DevTools pipe."""

    def __init__(self, exe: str, profile: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()  # we write commands; the browser reads them on fd 3
        self._out_r, out_w = os.pipe()  # the browser writes on fd 4; we read
        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync", "--mute-audio",
                "--hide-scrollbars", f"--user-data-dir={profile}", "--remote-debugging-pipe",
                f"--window-size={PAGE_WIDTH},900", "about:blank"]
        # fd 3 and 4 as the protocol wants them, set up by bash (no preexec_fn; dash takes one-digit fds only)
        script = f'exec "$0" "$@" 3<&{cmd_r} 4>&{out_w} {cmd_r}<&- {out_w}>&-'
        self.proc = subprocess.Popen([shutil.which("bash") or "bash", "-c", script, *args], pass_fds=(cmd_r, out_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""

    # ---- the protocol ----------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer in time")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise BrowserGone("the browser closed its pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)  # type: ignore[no-any-return]

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True,
             timeout: float = STEP_TIMEOUT_S) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})  # type: ignore[no-any-return]
            self.events.append(m)

    def wait_event(self, name: str, timeout: float = STEP_TIMEOUT_S) -> dict[str, Any]:
        for k, e in enumerate(self.events):
            if e.get("method") == name:
                return self.events.pop(k)
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("method") == name:
                return m
            self.events.append(m)

    # ---- a page ----------------------------------------------------------------------------
    def open_page(self) -> None:
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def load(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads seen since the page was loaded."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(f"console {p['type']}: " + " ".join(str(a.get("value", a.get("description", "")))
                                                              for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('text', '')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                entry = p["entry"]
                out.append(f"log {entry['level']}: {entry.get('text', '')} {entry.get('url', '')}".strip())
            elif m == "Network.loadingFailed" and not p.get("canceled"):
                out.append(f"failed load: {p.get('errorText', '')}")
        return out

    def screenshot(self, path: Path) -> tuple[int, int]:
        size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
        w, h = int(size[0]), min(int(size[1]), MAX_SHOT_HEIGHT)
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                    "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}})
        path.write_bytes(base64.b64decode(shot["data"]))
        return w, h

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False, timeout=10)
        except (RuntimeError, TimeoutError, BrowserGone, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a small project holding every method's demo."""
    from workstation.cli import main
    from workstation.methods import METHODS, get_method
    from workstation.store import Project

    folder = tmp_path_factory.mktemp("report_browser")
    with Project.create(folder / "project") as p:
        for name in METHODS.names():
            get_method(name).build_demo(p, small=True, workers=0)
    assert main(["report", "--project", str(folder / "project"), "--out", str(folder / "report")]) == 0
    return folder / "report"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Any:
    exe = chromium_binary()
    if exe is None:
        pytest.skip("Chromium is not installed (Debian: `apt-get install chromium`, or "
                    "`bash packaging/setup.sh --tests` as root): the report's browser check is skipped")
    b = Chromium(exe, tmp_path_factory.mktemp("chromium-profile"))
    try:
        b.open_page()
    except BaseException:
        err = ""
        if b.proc.poll() is not None and b.proc.stderr:
            try:
                err = (b.proc.communicate(timeout=10)[1] or b"").decode(errors="replace")[-2000:]
            except (subprocess.TimeoutExpired, ValueError):
                err = "(its output was not readable within 10 s)"
        b.close()
        raise AssertionError(f"Chromium did not start: {err}")
    yield b
    b.close()


LINKS_JS = """Array.from(document.querySelectorAll('a[href]')).map(a => [a.getAttribute('href'), a.href,
    a.hash && a.href.split('#')[0] === location.href.split('#')[0] ? !!document.getElementById(a.hash.slice(1)) : null])"""
IMAGES_JS = """Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight,
    i.getBoundingClientRect().width])"""
STYLED_JS = """[document.styleSheets.length, !!document.querySelector('table'),
    getComputedStyle(document.querySelector('table') || document.body).borderCollapse]"""


def check_page(browser: Chromium, page: Path, bundle: Path) -> list[str]:
    """What is wrong with one page of the report, as the browser shows it."""
    browser.load(page.as_uri())
    bad = browser.problems()
    for src, complete, w, h, shown in browser.evaluate(IMAGES_JS):
        if not complete or not w or not h:
            bad.append(f"image {src} did not load")
        elif shown > PAGE_WIDTH:
            bad.append(f"image {src} is wider than the page ({shown:.0f} px)")
    for href, url, anchor_found in browser.evaluate(LINKS_JS):
        u = urlparse(url)
        if u.scheme != "file":
            bad.append(f"link {href} leaves the report ({u.scheme})")
            continue
        target = Path(unquote(u.path))
        if not target.is_file():
            bad.append(f"link {href} leads to no file")
        elif not target.resolve().is_relative_to(bundle.resolve()):
            bad.append(f"link {href} leads out of the report's folder")
        if anchor_found is False:
            bad.append(f"link {href} names an anchor the page lacks")
    return bad


def test_every_page_of_the_report_loads_whole_in_chromium(report: Path, browser: Chromium) -> None:
    from workstation.methods import METHODS

    pages = sorted(report.rglob("*.html"))
    methods = METHODS.names()
    assert report / "index.html" in pages
    assert {p.parent.name for p in pages if p.parent != report} == set(methods)
    KEEP.mkdir(parents=True, exist_ok=True)
    bad: dict[str, list[str]] = {}
    for page in pages:
        name = "index" if page.parent == report else page.parent.name
        problems = check_page(browser, page, report)
        sheets, has_table, collapse = browser.evaluate(STYLED_JS)
        if not sheets or (has_table and collapse != "collapse"):
            problems.append(f"the page is unstyled ({sheets} style sheets, tables {collapse})")
        if problems:
            bad[str(page.relative_to(report))] = problems
        w, h = browser.screenshot(KEEP / f"{name}.png")
        assert w > 0 and h > 100
    assert not bad, json.dumps(bad, indent=1)
    print(f"screenshots of the report's pages: {KEEP}")
