"""The project's own text speaks of the project: no development history in any tracked file, a
README a newcomer can read through, and CI running the README's commands as written.

Development history is what a reader of the code cannot use: which round of work or which issue
a change came from (the patterns below, and the examples their own test reads). A labelling
session in the window is a user's word and is not matched: only numbered or ordinal ones are.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 500

_ORDINALS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
             "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|"
             r"twentieth|twenty-\w+|thirtieth|\d+(?:st|nd|rd|th)")
HISTORY = {
    "a numbered working session": re.compile(rf"\b(?:{_ORDINALS})\s+session\b|\bsession\s+#?\d+\b", re.I),
    "an issue's number": re.compile(r"\bissues?[\s-]*#?\d+\b", re.I),
    "the machine or work of a session": re.compile(
        r"\b(?:this|that|the last|the previous|an earlier)\s+session's\s+"
        r"(?:machine|commit|work|figures?|measurements?|changes?|runs?)\b", re.I),
}
BINARY_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".parquet", ".duckdb", ".onnx", ".safetensors",
                   ".whl", ".gz", ".zip", ".ico", ".pdf"}


def tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout (or git is missing): the tracked files cannot be listed")
    files = []
    for name in out.decode("utf-8", "surrogateescape").split("\0"):
        path = ROOT / name
        if name and path.suffix.lower() not in BINARY_SUFFIXES and path.is_file():
            files.append(path)
    return files


def history_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, what kind of history, the line) for each line that tells development history."""
    found = []
    for i, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in HISTORY.items():
            if pattern.search(line):
                found.append((i, kind, line.strip()))
                break
    return found


def test_the_history_patterns_match_history_and_spare_the_users_session() -> None:
    told = ["measured in the twentieth session", "README: the 3rd session's figures", "(issue 11, item 4)",
            "see issue #36", "issue-10 targets", "on this session's machine", "session 12 made it faster"]
    spared = ["labels committed this session", "a labelling session in the window", "the session's results",
              "MethodSession(method, state)", "tissue 3 samples"]
    assert [len(history_lines(t)) for t in told] == [1] * len(told)
    assert [history_lines(t) for t in spared] == [[]] * len(spared)


def test_no_tracked_file_tells_development_history() -> None:
    me = Path(__file__).resolve()
    found = []
    for path in tracked_text_files():
        if path.resolve() == me:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # a binary file
        for line_no, kind, line in history_lines(data.decode("utf-8", "replace")):
            found.append(f"{path.relative_to(ROOT)}:{line_no}: {kind}: {line[:120]}")
    assert not found, "development history in the project's files:\n" + "\n".join(found)


def test_the_readme_stays_short() -> None:
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n < README_MAX_LINES, f"README.md has {n} lines; keep it under {README_MAX_LINES}"


def readme_commands() -> list[str]:
    """The commands of the README's first two code blocks (set up and open the demo; set up and
    run the tests)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [b.strip() for b in blocks[:2]]


def test_the_readme_opens_with_two_commands_and_ci_runs_the_test_command_verbatim() -> None:
    demo, tests = readme_commands()
    assert "\n" not in demo and "\n" not in tests
    assert demo.startswith("bash packaging/setup.sh") and demo.endswith("main.py demo")
    assert tests.startswith("bash packaging/setup.sh") and tests.endswith("-m pytest")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in [ln.strip() for ln in ci], ".ci/run must run the README's test command as written"
