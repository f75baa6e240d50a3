"""Any method's prompts as JSONL, one prompt per line (what `suite --out` writes and
`generate --suite FILE` reads back): prompt_id, text, method, suite, entities, attrs, twin_id,
group_id. Every problem names the file and the line; nothing is returned partially."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from ..dataset import Prompts
from ..types import InputError
from ..util.output import write_output_text
from ..util.jsonsafe import dumps
from ..util.textio import quote
from .jsonl import read_jsonl, require

MAX_PROMPTS = 1_000_000
MAX_TEXT = 2_000


def _ident(v: Any, key: str, path: Path, line: int) -> str:
    if not isinstance(v, str) or not v.strip() or len(v) > 500 or any(c in v for c in "\x00\n\r"):
        raise InputError(path, f"field '{key}' must be a one-line text of at most 500 characters", line)
    return v


def read_prompts_jsonl(path: str | Path, methods: Collection[str] | None = None) -> Prompts:
    """The prompts of a file `write_prompts_jsonl` wrote; ``methods``: the method names a prompt
    may name (a prompt of another method is an error naming its line)."""
    path = Path(path)
    rows: dict[str, list[Any]] = {k: [] for k in ("prompt_id", "text", "method", "suite", "entities", "attrs",
                                                  "twin_id", "group_id")}
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path, "prompt file"):
        pid = _ident(require(obj, "prompt_id", path, line), "prompt_id", path, line)
        if pid in seen:
            raise InputError(path, f"duplicate prompt_id {quote(pid, 40)} (first on line {seen[pid]})", line)
        seen[pid] = line
        if len(seen) > MAX_PROMPTS:
            raise InputError(path, f"more than {MAX_PROMPTS} prompts", line)
        text = require(obj, "text", path, line, str)
        if len(text) > MAX_TEXT:
            raise InputError(path, f"prompt text longer than {MAX_TEXT} characters", line)
        method = _ident(require(obj, "method", path, line), "method", path, line)
        if methods is not None and method not in methods:
            raise InputError(path, f"unknown method {quote(method, 40)}; methods: {', '.join(sorted(methods))}", line)
        ents = obj.get("entities") or []
        if not isinstance(ents, list) or not all(isinstance(e, str) and e.strip() for e in ents):
            raise InputError(path, "field 'entities' must be a list of names", line)
        attrs = obj.get("attrs") or {}
        if not isinstance(attrs, dict):
            raise InputError(path, "field 'attrs' must be an object", line)
        rows["prompt_id"].append(pid)
        rows["text"].append(text)
        rows["method"].append(method)
        rows["suite"].append(str(obj.get("suite") or path.stem))
        rows["entities"].append(tuple(e.strip().lower() for e in ents))
        rows["attrs"].append(attrs)
        rows["twin_id"].append(str(obj.get("twin_id") or ""))
        rows["group_id"].append(str(obj.get("group_id") or ""))
    if not seen:
        raise InputError(path, "prompt file has no prompts")
    for i, t in enumerate(rows["twin_id"]):
        if t and t not in seen:
            raise InputError(path, f"twin_id {quote(t, 40)} of {quote(rows['prompt_id'][i], 40)} is not in the file",
                             seen[rows["prompt_id"][i]])
    return Prompts.build(rows["prompt_id"], rows["text"], method=rows["method"], suite=rows["suite"],
                         entities=rows["entities"], attrs=rows["attrs"], twin_id=rows["twin_id"],
                         group_id=rows["group_id"])


def write_prompts_jsonl(prompts: Prompts, path: str | Path, *, overwrite: bool = False,
                        projects: Iterable[str | Path | None] = ()) -> int:
    """Write the prompts to ``path`` as JSONL (an output the user named: `util.output`; an
    existing file is replaced only with ``overwrite``). Returns the number written."""
    lines = [dumps({"prompt_id": prompts.prompt_id[i], "text": prompts.text[i], "method": prompts.method[i],
                    "suite": prompts.suite[i], "entities": list(prompts.entities[i]), "attrs": prompts.attrs[i],
                    "twin_id": prompts.twin_id[i], "group_id": prompts.group_id[i]}, sort_keys=True)
             for i in range(len(prompts))]
    write_output_text(path, "\n".join(lines) + "\n", "prompt file", overwrite=overwrite, projects=projects)
    return len(lines)


def check_prompt_texts(project: Any, prompts: Prompts, source: object, lines: dict[str, int] | None = None) -> None:
    """A prompt id the project holds with another text is an error naming the file and line."""
    ids = prompts.prompt_id.tolist()
    if not ids:
        return
    have = dict(project.con.execute("SELECT prompt_id, text FROM prompts WHERE prompt_id IN (SELECT unnest(?))",
                                    [ids]).fetchall())
    for pid, text in zip(ids, prompts.text.tolist()):
        if pid in have and have[pid] != text:
            raise InputError(source, f"prompt {pid!r} is already in the project {project.folder} with another "
                                     f"text ({have[pid]!r:.80} vs {text!r:.80})", (lines or {}).get(pid))
