"""`dyeval`: DyEval test trees from the command line — make a tree, take its next steps, judge,
decide on proposals, export.

    python main.py dyeval new-tree --project DIR (--topic TEXT ... | --perspectives [NAMES]) [--tree ID]
                                   [--config FILE.yaml] [--set KEY=VALUE ...]
    python main.py dyeval step   --project DIR [--tree ID] [--lm templates|FOLDER] [--confirm]
                                 [--only write,generate,score,locate,reflect,propose] [--no-run]
                                 [--generator procedural|diffusers --model DIR] [--size N]
    python main.py dyeval show   --project DIR [--tree ID] [--todo FILE.csv [--overwrite]]
    python main.py dyeval label  FILE.csv --project DIR [--tree ID] [--annotator NAME]
    python main.py dyeval accept --project DIR [--tree ID] (PROPOSAL ... [--text NEW] | --all)
    python main.py dyeval reject --project DIR [--tree ID] PROPOSAL ...
    python main.py dyeval export --project DIR [--tree ID] --out FILE.json [--overwrite]

`step` does what the tree can do without a human: write prompts (templates or a local LM),
generate their images (jobs; the procedural generator unless --model is given), score them for
CLIPScore pre-marks (when the tree's config names a CLIP folder), start failure location on
low-pass nodes, reflect, propose child topics on high-pass ones — and stops where the auditor
decides (confirm prompts with --confirm; judge; accept / reject proposals). `show --todo`
writes the images waiting for a judgement as a CSV whose ``value`` column (PASS / FAIL) `label`
reads back. Every change is stored as it happens: stop anywhere and run `step` again later.
An existing FILE.csv or FILE.json is replaced only with --overwrite (never a link, the project's
database or a file inside the project but in its exports/ or reports/ folder).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...types import InputError, WorkstationError
from ...command_base import add_command, add_output_arg, add_project_arg, open_project, reading_project


MIN_SIZE, MAX_SIZE = 64, 4096  # `dyeval step --size`: the procedural renderer's image side


def register(sub: Any) -> None:
    p = add_command(sub, "dyeval", "DyEval test trees: new-tree, step, show, label, accept, reject, export",
                    doc=__doc__)
    s = p.add_subparsers(dest="dyeval_command", metavar="ACTION")
    s.required = True

    def common(q: argparse.ArgumentParser, tree: bool = True) -> None:
        add_project_arg(q)
        if tree:
            q.add_argument("--tree", metavar="ID", help="the tree (default: the newest)")

    q = add_command(s, "new-tree", "make a tree with root topics or the paper's four perspectives",
                    run_new_tree)
    common(q, tree=False)
    q.add_argument("--tree", metavar="ID", help="its id (default t1, t2, ...)")
    q.add_argument("--topic", action="append", default=[], metavar="TEXT", help="a root topic (repeatable)")
    q.add_argument("--perspectives", nargs="?", const="", default=None, metavar="NAMES",
                   help="roots for the paper's initial topics: all nine, or the comma-separated sub-topics named")
    q.add_argument("--config", type=Path, metavar="FILE", help="DyEval settings (YAML / JSON)")
    q.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting (n_i, n_x, rho, ...)")

    q = add_command(s, "step", "take the tree's automatic next steps (write, generate, locate, propose)",
                    run_step)
    common(q)
    q.add_argument("--lm", metavar="templates|FOLDER", help="who writes (default: the tree's config)")
    q.add_argument("--only", metavar="KINDS", help="comma-separated: write, generate, score, locate, reflect, propose")
    q.add_argument("--confirm", action="store_true", help="confirm written prompts for generation")
    q.add_argument("--no-run", action="store_true", help="store the jobs without running them")
    q.add_argument("--generator", metavar="NAME", help="generator backend (default procedural, diffusers with --model)")
    q.add_argument("--model", metavar="DIR", help="a local text-to-image model folder")
    q.add_argument("--size", type=int, default=256, help="procedural image size (default 256)")

    q = add_command(s, "show", "the tree, its figures and what to do next", run_show)
    common(q)
    add_output_arg(q, "--todo", "FILE.csv", "write the images waiting for a judgement", what="judgement sheet")

    q = add_command(s, "label", "import PASS / FAIL judgements from a CSV (image_id, value[, annotator, notes])",
                    run_label)
    q.add_argument("file", type=Path, metavar="FILE.csv")
    common(q)
    q.add_argument("--annotator", metavar="NAME", help="for rows without an annotator column")

    q = add_command(s, "accept", "accept proposed topics (--text edits one first)", run_accept)
    common(q)
    q.add_argument("proposals", nargs="*", metavar="PROPOSAL")
    q.add_argument("--text", metavar="NEW", help="accept one proposal with this text instead")
    q.add_argument("--all", action="store_true", help="accept every open proposal")

    q = add_command(s, "reject", "reject proposed topics", run_reject)
    common(q)
    q.add_argument("proposals", nargs="+", metavar="PROPOSAL")

    q = add_command(s, "export", "the whole tree as JSON (topics, prompts, graphs, image paths, judgements)",
                    run_export)
    common(q)
    add_output_arg(q, "--out", "FILE.json", "the JSON file to write", what="tree export", required=True)


# --- helpers ---------------------------------------------------------------------------------------------


@contextmanager
def _open_tree(folder: Path, tree: str | None) -> Iterator[Any]:
    """The tree's runner, synchronised, on the project opened for writing (closed on leaving)."""
    from .runner import DyEvalRunner

    with open_project(folder) as project:
        r = DyEvalRunner(project, tree)
        r.sync()
        yield r


def _fmt(x: float | None) -> str:
    return "  – " if x is None else f"{x:.2f}"


def print_tree(r: Any, out: Any = None) -> None:
    out = out or sys.stdout
    t = r.tree
    s = t.tree_summary()
    judged = sum(1 for i in t.images.values() if i.label is not None)
    roots = [n for n in t.bfs_order() if t.nodes[n].parent_id is None]
    print(f"tree {t.tree_id} ({'; '.join(t.nodes[n].topic for n in roots)}): {len(t.nodes)} node(s), "
          f"{judged}/{len(t.images)} image(s) judged, APR {_fmt(s.apr)}, AFR {_fmt(s.afr)}, #Bugs {s.bugs}", file=out)

    def node(nid: str, indent: int) -> None:
        n = t.nodes[nid]
        ns = t.node_summary(nid)
        label = f"{'  ' * indent}{nid} {n.topic}"
        print(f"  {label:<48} APR {_fmt(ns.apr)}  #Bugs {ns.bugs:<3} {t.node_state(nid)}", file=out)
        for lid in n.location_ids:
            m = t.locations[lid].machine
            trig = "; ".join(f"'{x.text}'" for x in m.triggers)
            state = "done" if m.done else f"{len(m.pending())} step(s) waiting"
            print(f"  {'  ' * (indent + 1)}{lid} failure location of '{t.prompts[t.locations[lid].prompt_id].text}': "
                  f"{len(m.rendered_steps())} test(s), {state}" + (f"; triggers {trig}" if trig else ""), file=out)
        for pid in n.proposal_ids:
            p = t.proposals[pid]
            if p.state == "proposed":
                print(f"  {'  ' * (indent + 1)}{pid} proposed: '{p.text}'", file=out)
        for c in n.child_ids:
            node(c, indent + 1)

    for root in roots:
        node(root, 0)


_HINT = {
    "write": "step --only write",
    "confirm": "step --confirm   (or review / edit the prompts in the window's DyEval tab first)",
    "generate": "step --only generate",
    "judge": "show --todo todo.csv, fill its value column, then: label todo.csv --annotator NAME   (or keys "
             "P / F in the window's DyEval tab)",
    "locate": "step --only locate   (correct the scene graphs in the window first, if the parse is wrong)",
    "reflect": "step --only reflect",
    "propose": "step --only propose",
    "decide": "accept ID ... [--text NEW]  /  reject ID ...   (reorder in the window)",
}


def print_next(r: Any, out: Any = None) -> None:
    out = out or sys.stdout
    acts = r.next_actions()
    if not acts:
        print("nothing left to do: every node is done (accept more topics, or make a new tree)", file=out)
        return
    base = f"python main.py dyeval {{}} --project {r.project.folder} --tree {r.tree_id}"
    print("next:", file=out)
    for a in acts:
        verb, _, rest = _HINT.get(a.kind, "").partition(" ")
        hint = base.format(verb) + (f" {rest}" if rest else "")
        print(f"  - [{a.by}] {a.text}\n      → {hint}", file=out)


# --- commands ----------------------------------------------------------------------------------------------


def run_new_tree(args: argparse.Namespace) -> int:
    from .config import DyEvalConfig
    from .config import load_config
    from .runner import DyEvalRunner
    from ...store import Project
    from ...command_base import parse_options

    from .engine import add_perspective_roots
    from .store import check_tree_id
    from .tree import TestTree
    from ...util.textio import quote

    cfg = load_config(args.config) if args.config else DyEvalConfig()
    sets = parse_options(args.set)
    if sets:
        known = set(DyEvalConfig().to_dict())
        for k in sets:
            if k not in known:
                raise WorkstationError(f"--set {quote(k, 40)}: unknown DyEval setting; settings: {', '.join(sorted(known))}")
        try:
            cfg = DyEvalConfig.from_dict({**cfg.to_dict(), **sets})
        except WorkstationError as e:
            raise WorkstationError(f"--set: {str(e).removeprefix('DyEval config: ')}") from None
    persp = None
    if args.perspectives is not None:
        persp = [x.strip() for x in args.perspectives.split(",") if x.strip()]
    if not args.topic and persp is None:
        raise WorkstationError("give a root topic (--topic TEXT) or --perspectives")
    # everything checked before a project is created or opened: a refused tree leaves nothing behind
    if args.tree is not None:
        check_tree_id(args.tree)
    trial = TestTree.new(cfg, "check")
    for t in args.topic:
        if not " ".join(str(t).split()):
            raise WorkstationError("--topic: a root topic cannot be empty")
        trial.add_root(t)
    if persp is not None:
        add_perspective_roots(trial, persp or None)
    folder = Path(args.project)
    made = [q for q in reversed((folder, *folder.parents)) if not q.exists()]
    try:
        with Project.create(folder, exist_ok=True) as p:
            r = DyEvalRunner.create(p, cfg, tree_id=args.tree, topics=args.topic, perspectives=persp)
            print(f"made tree {r.tree_id} in {args.project} with {len(r.tree.nodes)} root topic(s)")
            print_tree(r)
            print_next(r)
    except BaseException:
        if made:  # a project this command created is removed again
            import shutil

            shutil.rmtree(made[0], ignore_errors=True)
        raise
    return 0


def run_step(args: argparse.Namespace) -> int:
    from .runner import STEP_KINDS
    from ...progress import TerminalProgress

    from ...util.numbers import whole_number

    kinds = STEP_KINDS if not args.only else tuple(k.strip() for k in args.only.split(",") if k.strip())
    unknown = sorted(set(kinds) - set(STEP_KINDS))
    if unknown or not kinds:
        raise WorkstationError(f"--only: unknown step {unknown[0][:40] if unknown else ''!r}; steps: {', '.join(STEP_KINDS)}")
    size = whole_number(args.size, "--size", MIN_SIZE, MAX_SIZE, "pixels a side of a procedural image")
    if size % 8:
        raise WorkstationError(f"--size must be a multiple of 8 pixels, got {size}")
    if args.generator:
        from ...jobs.spec import check_generator_name

        check_generator_name(args.generator)
    generator = args.generator or ("diffusers" if args.model else None)
    model = str(Path(args.model).expanduser().resolve()) if args.model else None
    if model and not Path(model).exists():
        raise WorkstationError(f"model folder not found: {model}")
    with _open_tree(args.project, args.tree) as r:
        if args.lm:
            r.set_lm(args.lm)
        with TerminalProgress(f"dyeval {r.tree_id}", unit="img") as bar:
            def show(p: Any) -> None:
                if p.total:
                    bar(p.done, p.total, p.message)

            rep = r.step(kinds, confirm=args.confirm, run=not args.no_run, generator=generator, model=model,
                         size=size, on_progress=show)
        for line in rep.done:
            print(f"- {line}")
        if rep.jobs:
            print(f"jobs: {', '.join(dict.fromkeys(rep.jobs))}" + (" (stored; run them with `jobs resume`)"
                                                                   if args.no_run else ""))
        if not rep.done and not rep.jobs:
            print("nothing to do automatically now")
        print_tree(r)
        print_next(r)
    return 0


def run_show(args: argparse.Namespace) -> int:
    from .runner import DyEvalRunner
    from ...util.output import output_file

    with reading_project(args.project) as project:
        from .store import TreeStore

        st = TreeStore(project)
        ids = st.tree_ids()
        if not args.tree and len(ids) > 1:
            print(f"trees: {', '.join(ids)} (showing the newest; choose with --tree)")
        r = DyEvalRunner(project, args.tree)
        from .link import sync_tree

        sync_tree(project, r.tree)  # read-only: in memory
        print_tree(r)
        print_next(r)
        if args.todo:
            from .report import safe_cell

            q = r.tree.judging_queue()
            with output_file(args.todo, "judgement sheet", overwrite=args.overwrite, projects=[args.project]) as tmp:
                with open(tmp, "w", newline="", encoding="utf-8") as fh:
                    w = csv.writer(fh)
                    w.writerow(["image_id", "value", "node_id", "topic", "owner", "kind", "text", "image_path",
                                "premark", "clip_score"])
                    for j in q:
                        w.writerow([safe_cell(x) for x in (j.image_id, "", j.node_id, r.tree.nodes[j.node_id].topic,
                                                             j.owner, j.kind, j.text, j.path,
                                                             "FAIL" if j.premark_fail else "", j.clip_score)])
            print(f"wrote {len(q)} image(s) to judge to {args.todo}: fill the value column with PASS or FAIL, then "
                  f"`dyeval label {args.todo} --project {args.project} --annotator NAME`")
    return 0


MAX_LABEL_FILE_BYTES = 64 * 1024 * 1024


def read_label_csv(path: Path, default_annotator: str | None) -> list[tuple[str, str, str, str | None, int]]:
    """Rows (image id, value, annotator, notes, line) of a judgement CSV; rows with no value are
    skipped. The CSV is parsed strictly: an unterminated quote or text after a closing quote is an
    error naming the line its row starts on (a lenient reader would swallow the rows after it)."""
    import io

    from ...util.csvsafe import numbered_rows
    from ...util.ids import check_id
    from ...util.textio import quote, read_text

    text = read_text(path, MAX_LABEL_FILE_BYTES, "judgement file")  # UTF-8 errors name the line
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    cols: list[str] | None = None
    out: list[tuple[str, str, str, str | None, int]] = []
    for start, row in numbered_rows(reader, path):
        if cols is None:
            cols = [c.strip().lower() for c in row]
            if len(set(cols)) != len(cols):
                raise InputError(path, "a column is named twice in the header", start)
            if not (("image_id" in cols or "sample_id" in cols) and ("value" in cols or "label" in cols)):
                raise InputError(path, "expected the columns image_id (or sample_id) and value (PASS / FAIL)", start)
            continue
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(cols):
            raise InputError(path, f"expected {len(cols)} fields as in the header, got {len(row)}", start)
        rec = dict(zip(cols, row))
        id_col = "image_id" if "image_id" in cols else "sample_id"
        val_col = "value" if "value" in cols else "label"
        iid = (rec.get(id_col) or "").strip().lstrip("'")
        value = (rec.get(val_col) or "").strip()
        if not value:
            continue
        v = {"P": "PASS", "F": "FAIL"}.get(value.upper(), value.upper())
        if v not in ("PASS", "FAIL"):
            raise InputError(path, f"value {quote(value, 40)} is not PASS or FAIL", start)
        if not iid:
            raise InputError(path, "a row without an image_id", start)
        ann = (rec.get("annotator") or "").strip() or (default_annotator or "")
        if not ann:
            raise InputError(path, "no annotator: add an annotator column or give --annotator NAME", start)
        try:
            iid = check_id(iid, "image_id")
            ann = check_id(ann, "annotator")
        except ValueError as e:
            raise InputError(path, str(e), start) from None
        notes = (rec.get("notes") or "").strip() or None
        if notes is not None and len(notes) > 10_000:
            raise InputError(path, f"notes of {len(notes):,} characters (at most 10,000)", start)
        out.append((iid, v, ann, notes, start))
    if cols is None:
        raise InputError(path, "the judgement file is empty (no header row)")
    return out


def run_label(args: argparse.Namespace) -> int:
    from .link import sync_tree
    from .runner import DyEvalRunner
    from ...util.textio import quote

    rows = read_label_csv(args.file, args.annotator)
    # every row checked against the tree (read-only, in memory) before the project is opened for writing
    with reading_project(args.project) as project:
        r = DyEvalRunner(project, args.tree)
        sync_tree(project, r.tree)
        for iid, _v, _a, _n, line in rows:
            if iid not in r.tree.images:
                raise InputError(args.file, f"image {quote(iid, 40)} is not in tree {r.tree_id}", line)
        tree_id = r.tree_id
    with _open_tree(args.project, tree_id) as r:
        n = r.import_labels([row[:4] for row in rows])  # type: ignore[misc]
        print(f"recorded {n} judgement(s) in tree {r.tree_id}")
        print_tree(r)
        print_next(r)
    return 0


def run_accept(args: argparse.Namespace) -> int:

    if not args.proposals and not args.all:
        raise WorkstationError("name the proposals to accept (see `dyeval show`), or --all")
    if args.text is not None and len(args.proposals) != 1:
        raise WorkstationError("--text edits exactly one proposal")
    with _open_tree(args.project, args.tree) as r:
        ids = args.proposals or [p for p, q in r.tree.proposals.items() if q.state == "proposed"]
        for pid in ids:
            child = r.accept(pid, args.text)
            print(f"accepted {pid} '{r.tree.proposals[pid].text}' as node {child}")
        print_next(r)
    return 0


def run_reject(args: argparse.Namespace) -> int:

    with _open_tree(args.project, args.tree) as r:
        for pid in args.proposals:
            r.reject(pid)
            print(f"rejected {pid} '{r.tree.proposals[pid].text}'")
        print_next(r)
    return 0


def run_export(args: argparse.Namespace) -> int:
    from .export import export_dict
    from .link import sync_tree
    from .runner import DyEvalRunner
    from ...util import dumps
    from ...util.output import write_output_text

    with reading_project(args.project) as project:
        r = DyEvalRunner(project, args.tree)
        sync_tree(project, r.tree)
        d = export_dict(r.tree)
        d["project_folder"] = str(Path(project.folder).resolve())
        write_output_text(args.out, dumps(d, indent=1), "tree export", overwrite=args.overwrite,
                          projects=[args.project])
    t = r.tree
    print(f"exported tree {t.tree_id} ({len(t.nodes)} nodes, {len(t.prompts)} prompts, {len(t.images)} images, "
          f"{len(t.locations)} failure location(s)) to {args.out}")
    return 0
