"""Verdict sets in a project: replacing one, what a crash in the middle leaves, and the table's
shape in projects made before it changed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np

from tests.proc import Lines
from workstation.cli import main
from workstation.methods.spatial.checker import evaluate
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.store import MIGRATIONS, SpatialStore
from workstation.store import DB_NAME, Project


ROOT = Path(__file__).resolve().parents[2]


def verdict_rows(folder: Path) -> dict[int, list[tuple]]:
    """Every stored verdict row, by config version, sorted by sample."""
    with Project.open(folder, read_only=True) as p:
        rows = p.con.execute("SELECT eval_id, sample_id, verdict, reason, reason_text, conf FROM spatial_verdicts "
                             "ORDER BY eval_id, sample_id").fetchall()
    out: dict[int, list[tuple]] = {}
    for r in rows:
        out.setdefault(int(r[0]), []).append(tuple(r[1:]))
    return out


def indexes(folder: Path) -> list[str]:
    con = duckdb.connect(str(folder / DB_NAME), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes() "
                                          "WHERE table_name = 'spatial_verdicts'").fetchall()]
    finally:
        con.close()


def test_replacing_a_set_for_some_samples_keeps_the_rest_and_the_other_versions(project: Path) -> None:
    imported = verdict_rows(project)
    assert list(imported) == [1] and len(imported[1]) == 800
    with Project.open(project) as p:
        st = SpatialStore(p)
        ds = p.samples.load_dataset(method="spatial")
        cfg = CheckerConfig(margin=0.2)
        cid = st.save_config(cfg)
        st.save_verdicts(cid, ds, evaluate(ds, cfg))
    first = verdict_rows(project)[cid]
    with Project.open(project) as p:
        ds = p.samples.load_dataset(method="spatial")
        part = ds.subset(np.arange(100))
        wider = CheckerConfig(margin=0.45)  # other verdicts for the first 100 samples, stored under cid
        SpatialStore(p).save_verdicts(cid, part, evaluate(part, wider))
        expect_part = evaluate(part, wider)
        part_ids = set(part.samples.sample_id.tolist())
    after = verdict_rows(project)
    assert after[1] == imported[1]  # the other version untouched
    assert len(after[cid]) == 800  # one row per sample: the 100 replaced, not added
    kept = [r for r in after[cid] if r[0] not in part_ids]
    assert kept == [r for r in first if r[0] not in part_ids]
    got = {r[0]: r for r in after[cid] if r[0] in part_ids}
    names = ("PASS", "FAIL", "UNDECIDABLE")
    assert [got[s][1] for s in part.samples.sample_id.tolist()] == [names[c] for c in expect_part.verdict.tolist()]
    assert [got[s][3] for s in part.samples.sample_id.tolist()] == list(expect_part.reason_texts())
    assert sum(got[s][1] != r[1] for s in part_ids for r in first if r[0] == s) > 0  # the replacement differs


def test_evaluating_again_stores_one_set_the_same_as_the_first(project: Path) -> None:
    assert main(["evaluate", "--project", str(project)]) == 0
    once = verdict_rows(project)
    assert main(["evaluate", "--project", str(project)]) == 0
    assert verdict_rows(project) == once
    assert sum(len(rows) for rows in once.values()) == 800 * len(once)


def test_the_verdict_table_has_no_index_and_an_older_projects_index_goes(tmp_path: Path) -> None:
    """Replacing a set deletes its rows; an index on the table would be updated row by row at
    the commit (tens of seconds for a million samples). A project whose spatial tables were made
    with the index loses it at its next writable open, its verdicts kept."""
    folder = tmp_path / "older"
    with Project.create(folder) as p:  # the spatial tables as their first version made them
        p.ensure_schema("spatial", MIGRATIONS[:1])
        p.con.execute("INSERT INTO spatial_verdicts (eval_id, sample_id, verdict, reason, reason_text, conf) "
                      "VALUES (1, 's1', 'PASS', '', '', 0.9), (1, 's2', 'UNDECIDABLE', 'missing', 'missing: dog', 0)")
        assert p.component_version("spatial") == 1
    assert indexes(folder) == ["spatial_verdict_eval"]
    with Project.open(folder, read_only=True) as p:  # read-only: read as it is, nothing changed
        assert SpatialStore(p).configs() == [] and p.component_version("spatial") == 1
    assert indexes(folder) == ["spatial_verdict_eval"]
    with Project.open(folder) as p:
        SpatialStore(p)
        assert p.component_version("spatial") == len(MIGRATIONS) == 3
    assert indexes(folder) == []
    assert verdict_rows(folder) == {1: [("s1", "PASS", "", "", 0.9), ("s2", "UNDECIDABLE", "missing", "missing: dog", 0.0)]}
    new = tmp_path / "new"
    with Project.create(new) as p:
        SpatialStore(p)
    assert indexes(new) == []


def test_a_process_killed_while_replacing_a_set_leaves_the_old_set(project: Path) -> None:
    before = verdict_rows(project)
    # the replacement's insert waits (the old rows already deleted in its transaction) until killed
    code = (
        "import sys, time\n"
        "import workstation.store.base as base\n"
        "real = base.ProjectBase.insert_columns\n"
        "def slow(self, table, columns):\n"
        "    if table == 'spatial_verdicts':\n"
        "        n = self.con.execute('SELECT count(*) FROM spatial_verdicts').fetchone()[0]\n"
        "        print('WRITING', n, flush=True); time.sleep(60)\n"
        "    return real(self, table, columns)\n"
        "base.ProjectBase.insert_columns = slow\n"
        "from workstation.cli import main\n"
        f"sys.exit(main(['evaluate', '--project', {str(project)!r}]))\n")  # the active version's set again
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    with Lines(proc, timeout=300) as out:  # leaving the block kills the child if it still runs
        line = out.wait_for(lambda x: x.startswith("WRITING")).split()
        assert line == ["WRITING", "0"]  # the old rows deleted, the transaction not committed
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    after = verdict_rows(project)
    assert after == before
