"""The project's schema: the kernel's migrations, and one migration chain per component.

The kernel's tables (runs, prompts, samples, detections, label events, evaluations, audit sets,
jobs, settings) are versioned by ``meta.schema_version``; each entry of `KERNEL_MIGRATIONS`
migrates version i to i+1. A method keeps its own tables (``<method>_*``) and their chain of
migrations, which `ensure_component` runs the first time the method touches a project (their
versions live in ``schema_components``). Migration steps are SQL statements, or callables taking
the connection for the steps SQL alone cannot say.

Version 3 gave methods their shape: prompts carry entities and the method's own fields
(``attrs``) instead of a relation and two objects; label events carry a task and a target
instead of a sample and a verdict; checker configs became evaluations of a method; verdict sets
became the spatial method's table. Every label, note and config version is kept (tested on a
project written by version 2's code).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from .errors import ProjectError


class Migrating(Protocol):
    """What a migration needs of the project it runs on: its connection, folder and transactions."""

    folder: Path
    read_only: bool

    @property
    def con(self) -> Any: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

SCHEMA_VERSION = 8

_V1_V2: list[list[Any]] = [
    [
        """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
        """CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, method VARCHAR, model VARCHAR, params VARCHAR,
            provenance VARCHAR, source VARCHAR, created_at TIMESTAMP)""",
        """CREATE TABLE prompts (
            prompt_id VARCHAR PRIMARY KEY, suite VARCHAR, text VARCHAR, relation VARCHAR,
            object_a VARCHAR, object_b VARCHAR, counterfactual_id VARCHAR, pair_id VARCHAR,
            content_hash VARCHAR)""",
        """CREATE TABLE samples (
            sample_id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, prompt_id VARCHAR NOT NULL,
            seed BIGINT, image_path VARCHAR, width DOUBLE, height DOUBLE,
            recorded_stability DOUBLE, has_secondary BOOLEAN, has_perturbed BOOLEAN,
            truth VARCHAR, ord BIGINT)""",
        """CREATE TABLE detections (
            sample_id VARCHAR NOT NULL, source TINYINT, detector VARCHAR, variant VARCHAR,
            label VARCHAR, score DOUBLE, x1 DOUBLE, y1 DOUBLE, x2 DOUBLE, y2 DOUBLE)""",
        """CREATE TABLE checker_configs (
            config_id INTEGER PRIMARY KEY, name VARCHAR, content_hash VARCHAR, params VARCHAR,
            note VARCHAR, parent_id INTEGER, created_at TIMESTAMP)""",
        """CREATE TABLE verdicts (
            config_id INTEGER NOT NULL, sample_id VARCHAR NOT NULL, verdict VARCHAR,
            reason VARCHAR, reason_text VARCHAR, conf DOUBLE, c_detection DOUBLE,
            c_geometry DOUBLE, c_stability DOUBLE, c_agreement DOUBLE, delta DOUBLE,
            iou_ab DOUBLE)""",
        """CREATE SEQUENCE label_event_seq START 1""",
        """CREATE TABLE label_events (
            event_id BIGINT PRIMARY KEY DEFAULT nextval('label_event_seq'),
            sample_id VARCHAR NOT NULL, annotator VARCHAR NOT NULL, verdict VARCHAR,
            rating TINYINT, notes VARCHAR, created_at TIMESTAMP, audit_set_id INTEGER,
            source VARCHAR)""",
        """CREATE TABLE audit_sets (
            audit_set_id INTEGER PRIMARY KEY, name VARCHAR, params VARCHAR, blind BOOLEAN,
            created_at TIMESTAMP)""",
        """CREATE TABLE audit_items (
            audit_set_id INTEGER, position INTEGER, sample_id VARCHAR, is_recheck BOOLEAN)""",
        """CREATE TABLE jobs (
            job_id VARCHAR PRIMARY KEY, kind VARCHAR, spec VARCHAR, status VARCHAR,
            created_at TIMESTAMP, updated_at TIMESTAMP, done BIGINT, total BIGINT,
            message VARCHAR)""",
        """CREATE TABLE saved_filters (name VARCHAR PRIMARY KEY, spec VARCHAR)""",
        """CREATE TABLE settings (key VARCHAR PRIMARY KEY, value VARCHAR)""",
        """CREATE INDEX det_sample ON detections(sample_id)""",
        """CREATE INDEX verdict_cfg ON verdicts(config_id, sample_id)""",
        """CREATE INDEX label_sample ON label_events(sample_id)""",
    ],
    # 1 -> 2: image variants a detector ran on are recorded even when it found nothing there,
    # so "no detections on the blurred copy" is not mistaken for "never detected".
    [
        """CREATE TABLE image_variants (name VARCHAR PRIMARY KEY)""",
        """INSERT INTO image_variants SELECT DISTINCT variant FROM detections WHERE variant IS NOT NULL""",
    ],
]


def _v3_methods(con: Any) -> None:
    """Version 2 → 3: the method shape (see the module docstring)."""
    # prompts: entities and method fields
    con.execute("""CREATE TABLE prompts_v3 (
        prompt_id VARCHAR PRIMARY KEY, suite VARCHAR, method VARCHAR NOT NULL, text VARCHAR,
        entities VARCHAR[], attrs VARCHAR, twin_id VARCHAR, group_id VARCHAR, content_hash VARCHAR)""")
    con.execute("""INSERT INTO prompts_v3 SELECT prompt_id, suite, 'spatial', text, [lower(object_a), lower(object_b)],
        '{"relation": "' || relation || '"}', coalesce(counterfactual_id, ''), coalesce(pair_id, ''), content_hash
        FROM prompts""")
    con.execute("DROP TABLE prompts")
    con.execute("ALTER TABLE prompts_v3 RENAME TO prompts")
    # label events: task and target
    con.execute("""CREATE TABLE label_events_v3 (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('label_event_seq'), task VARCHAR NOT NULL,
        target_kind VARCHAR NOT NULL, target_id VARCHAR NOT NULL, annotator VARCHAR NOT NULL, value VARCHAR,
        rating TINYINT, notes VARCHAR, created_at TIMESTAMP, audit_set_id INTEGER, source VARCHAR)""")
    con.execute("""INSERT INTO label_events_v3 SELECT event_id, 'spatial.verdict', 'sample', sample_id, annotator,
        verdict, rating, notes, created_at, audit_set_id, source FROM label_events""")
    con.execute("DROP INDEX IF EXISTS label_sample")
    con.execute("DROP TABLE label_events")
    con.execute("ALTER TABLE label_events_v3 RENAME TO label_events")
    con.execute("CREATE INDEX label_target ON label_events(task, target_id)")
    # audit sets: of a task's targets
    con.execute("ALTER TABLE audit_sets ADD COLUMN task VARCHAR")
    con.execute("UPDATE audit_sets SET task = 'spatial.verdict'")
    con.execute("""CREATE TABLE audit_items_v3 (audit_set_id INTEGER, position INTEGER, target_id VARCHAR,
        is_recheck BOOLEAN)""")
    con.execute("INSERT INTO audit_items_v3 SELECT audit_set_id, position, sample_id, is_recheck FROM audit_items")
    con.execute("DROP TABLE audit_items")
    con.execute("ALTER TABLE audit_items_v3 RENAME TO audit_items")
    # evaluations: versions of any method's config
    con.execute("""CREATE TABLE evaluations (
        eval_id INTEGER PRIMARY KEY, method VARCHAR NOT NULL, name VARCHAR, content_hash VARCHAR,
        config VARCHAR, note VARCHAR, parent_id INTEGER, created_at TIMESTAMP)""")
    con.execute("""INSERT INTO evaluations SELECT config_id, 'spatial', name, content_hash, params, note, parent_id,
        created_at FROM checker_configs""")
    con.execute("DROP TABLE checker_configs")
    con.execute("""CREATE TABLE schema_components (component VARCHAR PRIMARY KEY, version INTEGER)""")
    # verdict sets: the spatial method's own table (its chain starts at version 1 with it)
    n_verdicts = con.execute("SELECT count(*) FROM verdicts").fetchall()[0][0]
    n_configs = con.execute("SELECT count(*) FROM evaluations").fetchall()[0][0]
    if n_verdicts or n_configs:
        for stmt in SPATIAL_V1:
            con.execute(stmt)
        con.execute("""INSERT INTO spatial_verdicts SELECT config_id, sample_id, verdict, reason, reason_text, conf,
            c_detection, c_geometry, c_stability, c_agreement, delta, iou_ab FROM verdicts""")
        con.execute("INSERT INTO schema_components VALUES ('spatial', 1)")
    con.execute("DROP INDEX IF EXISTS verdict_cfg")
    con.execute("DROP TABLE verdicts")
    con.execute("""INSERT OR REPLACE INTO settings SELECT 'active_eval.spatial', value FROM settings
        WHERE key = 'active_config'""")
    con.execute("DELETE FROM settings WHERE key = 'active_config'")


# The spatial method's first table, as version 2 projects held it (the spatial method's own
# migration chain starts with the same statements).
SPATIAL_V1: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS spatial_verdicts (
        eval_id INTEGER NOT NULL, sample_id VARCHAR NOT NULL, verdict VARCHAR, reason VARCHAR,
        reason_text VARCHAR, conf DOUBLE, c_detection DOUBLE, c_geometry DOUBLE, c_stability DOUBLE,
        c_agreement DOUBLE, delta DOUBLE, iou_ab DOUBLE)""",
    """CREATE INDEX IF NOT EXISTS spatial_verdict_eval ON spatial_verdicts(eval_id, sample_id)""",
)

# Version 3 → 4: scores of images against texts by automatic metrics (a backend family of its own).
_V4_SCORES: list[Any] = [
    """CREATE TABLE scores (
        sample_id VARCHAR NOT NULL, scorer VARCHAR NOT NULL, text VARCHAR NOT NULL, score DOUBLE,
        detail VARCHAR, created_at TIMESTAMP)""",
    """CREATE INDEX score_sample ON scores(sample_id, scorer)""",
]

# Version 4 → 5: where a label comes from. An audit set records the design of its
# draw (``uniform``, ``stratified``, ``plan``; ``unknown`` for the sets of earlier versions, whose
# draw is not recorded) and the number of targets it was drawn from; each drawn item its stratum,
# that stratum's size (in units), the unit it belongs to and its inclusion probability at the
# draw. Nothing recorded before is rewritten: the new columns of earlier rows stay empty and read
# as "not known" (`workstation.evaluation.draws`).
_V5_PROVENANCE: list[Any] = [
    "ALTER TABLE audit_sets ADD COLUMN design VARCHAR",
    "ALTER TABLE audit_sets ADD COLUMN population BIGINT",
    "ALTER TABLE audit_items ADD COLUMN inclusion DOUBLE",
    "ALTER TABLE audit_items ADD COLUMN stratum INTEGER",
    "ALTER TABLE audit_items ADD COLUMN stratum_size BIGINT",
    "ALTER TABLE audit_items ADD COLUMN unit_id VARCHAR",
]

# Version 5 → 6: pauses of blind audits (an annotator shown something the audit hides, after
# asking) and the items each pause showed unblinded (`store.audit.AuditRepo.pause`).
_V6_AUDIT_PAUSES: list[Any] = [
    """CREATE TABLE audit_pauses (
        pause_id INTEGER PRIMARY KEY, audit_set_id INTEGER NOT NULL, annotator VARCHAR NOT NULL,
        started_at TIMESTAMP NOT NULL, ended_at TIMESTAMP, reason VARCHAR)""",
    """CREATE TABLE audit_unblinded (
        pause_id INTEGER NOT NULL, audit_set_id INTEGER NOT NULL, annotator VARCHAR NOT NULL,
        target_id VARCHAR NOT NULL, seen_at TIMESTAMP NOT NULL)""",
    """CREATE INDEX audit_unblinded_set ON audit_unblinded(audit_set_id, annotator)""",
]

# Version 6 → 7: several raters per audit set, gold items. An audit set may assign each of its
# targets to named raters (``audit_assignments``: a target with k raters has k rows; a set without
# rows is anyone's); an item may be a seeded gold item (``audit_items.is_gold``, never shown by a
# queue), and ``gold_answers`` keeps the known answers of a task's targets that a lead imported.
# Earlier sets have no assignment rows and no gold items: they read as before.
_V7_RATERS_AND_GOLD: list[Any] = [
    "ALTER TABLE audit_items ADD COLUMN IF NOT EXISTS is_gold BOOLEAN",
    """CREATE TABLE IF NOT EXISTS audit_assignments (
        audit_set_id INTEGER NOT NULL, target_id VARCHAR NOT NULL, annotator VARCHAR NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS audit_assignments_set ON audit_assignments(audit_set_id, annotator)""",
    """CREATE TABLE IF NOT EXISTS gold_answers (
        task VARCHAR NOT NULL, target_id VARCHAR NOT NULL, value VARCHAR NOT NULL, source VARCHAR,
        note VARCHAR, created_at TIMESTAMP)""",
]


# The spatial method's tables at its versions 2 and 3 (its chain, `methods.spatial.store.MIGRATIONS`,
# is SPATIAL_V1, SPATIAL_V2, SPATIAL_V3): version 3 holds the stability term an imported run recorded
# per sample, a column of the kernel's samples table before kernel version 8: one row per sample
# (the spatial store writes it so) and no key, for the reason version 2 dropped the verdicts' index:
# a key's index makes deleting a run's rows cost a minute at a million samples (0.5 s without).
SPATIAL_V2: tuple[str, ...] = ("DROP INDEX IF EXISTS spatial_verdict_eval",)
SPATIAL_V3: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS spatial_stability (sample_id VARCHAR NOT NULL, recorded DOUBLE)""",
)


def _v8_spatial_stability(con: Any) -> None:
    """Version 7 → 8: the samples' recorded stability (a spatial term) leaves the kernel's samples
    table for the spatial method's ``spatial_stability`` (rows only where it is finite). Where any
    sample has one, the spatial tables are brought to the version that holds it first. The
    samples table is rebuilt without the column (DuckDB cannot drop a column of a table with a
    primary key): every other column, value and order is kept."""
    cols = {r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'samples'"
                                      ).fetchall()}
    if "recorded_stability" not in cols:
        return  # already without it (a project upgraded once, its version number written back)
    n_finite = con.execute("SELECT count(*) FROM samples WHERE isfinite(recorded_stability)").fetchall()[0][0]
    if n_finite:
        row = con.execute("SELECT version FROM schema_components WHERE component = 'spatial'").fetchone()
        at = int(row[0]) if row else 0
        chain = (SPATIAL_V1, SPATIAL_V2, SPATIAL_V3)
        for stmts in chain[min(at, len(chain)):]:
            for stmt in stmts:
                con.execute(stmt)
        con.execute("""DELETE FROM spatial_stability WHERE sample_id IN (SELECT sample_id FROM samples)""")
        con.execute("""INSERT INTO spatial_stability SELECT sample_id, recorded_stability FROM samples
            WHERE isfinite(recorded_stability)""")
        con.execute("INSERT OR REPLACE INTO schema_components VALUES ('spatial', ?)", [max(at, len(chain))])
    con.execute("""CREATE TABLE samples_v8 (
        sample_id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, prompt_id VARCHAR NOT NULL,
        seed BIGINT, image_path VARCHAR, width DOUBLE, height DOUBLE,
        has_secondary BOOLEAN, has_perturbed BOOLEAN, truth VARCHAR, ord BIGINT)""")
    con.execute("""INSERT INTO samples_v8 SELECT sample_id, run_id, prompt_id, seed, image_path, width,
        height, has_secondary, has_perturbed, truth, ord FROM samples ORDER BY ord""")
    con.execute("DROP TABLE samples")
    con.execute("ALTER TABLE samples_v8 RENAME TO samples")


KERNEL_MIGRATIONS: list[list[Any]] = _V1_V2 + [[_v3_methods], _V4_SCORES, _V5_PROVENANCE, _V6_AUDIT_PAUSES,
                                                _V7_RATERS_AND_GOLD, [_v8_spatial_stability]]


def _run(con: Any, step: Any) -> None:
    if callable(step):
        step(con)
    else:
        con.execute(step)


def kernel_version(con: Any) -> int:
    try:
        row = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except Exception:
        return 0
    return int(row[0]) if row else 0


def migrate_kernel(project: Migrating) -> None:
    v = kernel_version(project.con)
    if v > SCHEMA_VERSION:
        raise ProjectError(
            f"project {project.folder} was written by a newer version (schema {v} > {SCHEMA_VERSION})")
    for target in range(v, SCHEMA_VERSION):
        with project.transaction():
            for step in KERNEL_MIGRATIONS[target]:
                _run(project.con, step)
            project.con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(target + 1)])


def component_version(con: Any, component: str) -> int:
    try:
        row = con.execute("SELECT version FROM schema_components WHERE component = ?", [component]).fetchone()
    except Exception:
        return 0
    return int(row[0]) if row else 0


def ensure_component(project: Migrating, component: str, migrations: Sequence[Sequence[Any]]) -> int:
    newest = len(migrations)
    # a component seen at its newest version outside a transaction stays there while this
    # project object is open (one writer holds the file): the check is asked on every step
    known: dict[str, int] = project.__dict__.setdefault("_components_at", {})
    if known.get(component) == newest:
        return newest
    v = component_version(project.con, component)
    if v > newest:
        raise ProjectError(f"project {project.folder}: the tables of {component!r} were written by a newer "
                           f"version (schema {v} > {newest})")
    if v == newest:
        if not getattr(project, "_in_tx", False):
            known[component] = newest
        return v
    if project.read_only:
        raise ProjectError(f"project {project.folder} is open read-only and its {component!r} tables are at "
                           f"version {v} (this version needs {newest}); open it once for writing to upgrade them")
    for target in range(v, newest):
        with project.transaction():
            for step in migrations[target]:
                _run(project.con, step)
            project.con.execute("INSERT OR REPLACE INTO schema_components VALUES (?, ?)", [component, target + 1])
    return newest
