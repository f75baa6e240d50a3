"""`audit-sample` and `audit-metrics`: the human audit from the command line.

    python main.py audit-sample --project DIR --size N --seed S --out FILE.csv [--overwrite]
    python main.py audit-metrics --project DIR --out FILE.json [--overwrite]

`audit-sample` draws a seeded stratified sample (method × relation × checker verdict, spread over
confidence bins) of the active verdict set, stores it as an audit set (a labelling queue in the
GUI) and writes it as CSV with empty `human_verdict` / `notes` columns: filled in, the file can be
read back with `labels import`.

`audit-metrics` compares the checker with the human labels over the audited samples: the 3×3
confusion and the 2×2 over samples both decided, at the active config's τ (a PASS/FAIL with
confidence below τ counts as UNDECIDABLE); risk–coverage over every unique confidence and over a
τ grid; κ and percent agreement between annotators (and of annotators with themselves on
re-checks) when there are several.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..types import VERDICT_CODE, VERDICTS
from ....types import WorkstationError
from ....util.csvsafe import escape_row
from ....util.jsonsafe import dumps
from ....util.output import output_file, write_output_text
from ....command_base import add_command, add_output_arg, add_project_arg, open_project, reading_project
from .common import active_verdicts, load_samples
from ..store import TASK, SpatialStore
from ..data import spatial_columns

DEFAULT_TAU_GRID = tuple(round(0.05 * i, 2) for i in range(21))
SAMPLE_COLUMNS = ("sample_id", "run", "prompt_id", "prompt", "relation", "object_a", "object_b", "seed",
                  "checker_verdict", "reason", "confidence", "image_path", "human_verdict", "notes")


def _floats(text: str, what: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise WorkstationError(f"{what} must be comma-separated numbers, got {text!r}") from None
    if not vals or not all(math.isfinite(v) for v in vals):
        raise WorkstationError(f"{what} must be comma-separated finite numbers, got {text!r}")
    return vals


def register(sub: Any) -> None:
    p = add_command(sub, "audit-sample", "draw a stratified audit sample and store it as an audit set",
                    run_sample)
    add_project_arg(p)
    p.add_argument("--size", required=True, type=int, metavar="N", help="number of samples")
    p.add_argument("--seed", required=True, type=int, metavar="S", help="random seed (same seed, same sample)")
    add_output_arg(p, "--out", "FILE.csv", "output CSV", what="audit sample", required=True)
    p.add_argument("--strata", default="run,relation,verdict",
                   help="comma-separated strata from run, relation, verdict, reason (default: %(default)s)")
    p.add_argument("--conf-bins", type=int, default=5, metavar="K", help="confidence bins per stratum (default 5)")
    p.add_argument("--exclude-labelled", action="store_true", help="leave out samples that already have a label")
    p.add_argument("--name", help="audit set name (default: audit-<size>-seed<seed>)")
    p.add_argument("--no-store", action="store_true", help="only write the CSV, do not store an audit set")
    p.add_argument("--disagree", metavar="JUDGE_A,JUDGE_B",
                   help="draw from where two judges disagree (`judges` lists them): SHARE of the samples from "
                        "their disagreements, the rest from where they agree or one did not decide, each "
                        "sample's inclusion probability recorded (replaces --strata and --conf-bins)")
    p.add_argument("--disagree-share", type=float, default=0.8, metavar="SHARE",
                   help="with --disagree: the share of the samples drawn from the disagreements (default 0.8)")

    m = add_command(sub, "audit-metrics", "checker vs human confusion, risk–coverage and annotator agreement → JSON",
                    run_metrics)
    add_project_arg(m)
    add_output_arg(m, "--out", "FILE.json", "output JSON", what="audit metrics", required=True)
    m.add_argument("--annotator", metavar="NAME", help="use only this annotator's labels for the checker comparison")
    m.add_argument("--taus", default=",".join(f"{t:g}" for t in DEFAULT_TAU_GRID), metavar="T1,T2,...",
                   help="τ grid for the risk–coverage table (default 0, 0.05, ..., 1)")


# ---------------------------------------------------------------------------------------------
# audit-sample
# ---------------------------------------------------------------------------------------------


def run_sample(args: argparse.Namespace) -> int:
    """Draw a seeded stratified sample of the active verdict set for a human audit (strata: method ×
    relation × checker verdict, spread over confidence bins), store it as an audit set and write it as
    CSV (sample_id, run, prompt, relation, checker verdict, confidence, ... and empty human_verdict /
    notes columns to fill in)."""
    from ..audit import stratified_sample, strata_table
    from ..types import RELATIONS

    strata = tuple(s.strip() for s in args.strata.split(",") if s.strip())
    if args.size <= 0:
        raise WorkstationError(f"--size must be a positive number of samples, got {args.size}")
    if args.out.suffix.lower() != ".csv":
        raise WorkstationError(f"--out must be a .csv file, got {args.out}")
    opener = reading_project if args.no_store else open_project
    with opener(args.project) as project:
        ds = load_samples(project)
        cid, cfg, v = active_verdicts(project, ds)
        exclude = SpatialStore(project).human_verdicts(ds) >= 0 if args.exclude_labelled else None
        drawn = None
        if args.disagree:
            drawn = disagreement_draw(project, ds, args.disagree, args.size, args.seed, args.disagree_share, exclude)
            rows, strata, table = drawn[0], ("judges",), drawn[4]
        else:
            rows = stratified_sample(ds, v, args.size, args.seed, strata=strata, conf_bins=args.conf_bins,
                                     exclude=exclude)
        if len(rows) == 0:
            raise WorkstationError("no sample is eligible for the audit (all are labelled already?)")
        s = ds.samples
        sc = spatial_columns(ds)
        text = dict(zip(ds.prompts.prompt_id.tolist(), ds.prompts.text.tolist()))
        name = args.name or f"audit-{args.size}-seed{args.seed}"
        params = {"size": args.size, "seed": args.seed, "strata": list(strata), "conf_bins": args.conf_bins,
                  "config_version": cid, "exclude_labelled": bool(args.exclude_labelled)}
        if drawn is None:
            table = strata_table(ds, v, rows, strata)
        else:
            params.update(disagree=list(drawn[5]), disagree_share=float(args.disagree_share), conf_bins=1)
        # the audit set and the file land together: the file is put in place inside the
        # transaction, and a file that cannot be written rolls the audit set back
        aid = None
        with contextlib.nullcontext() if args.no_store else project.transaction():
            if not args.no_store and drawn is None:
                aid = SpatialStore(project).create_audit_set(name, s.sample_id[rows].tolist(), params)
            elif not args.no_store:
                assert drawn is not None
                from ..store import TASK

                aid = project.audit.create_set(name, TASK, s.sample_id[rows].tolist(), params, design=drawn[1],
                                               population=drawn[2], draw=drawn[3])
            with output_file(args.out, "audit sample", overwrite=args.overwrite, projects=[args.project]) as tmp:
                with tmp.open("w", encoding="utf-8", newline="") as fh:
                    w = csv.writer(fh)
                    w.writerow(SAMPLE_COLUMNS)
                    for i in rows.tolist():
                        w.writerow(escape_row([
                            s.sample_id[i], s.run_id[i], s.prompt_id[i], text.get(s.prompt_id[i], ""),
                            RELATIONS[int(sc.relation[i])], sc.label_a[i], sc.label_b[i], int(s.seed[i]),
                            VERDICTS[int(v.verdict[i])], v.reason_text(i), f"{float(v.conf[i]):.6f}",
                            s.image_path[i], "", ""]))
    n_strata = sum(1 for r in table if r["sampled"])
    stored = f"stored as audit set #{aid} '{name}'; " if aid is not None else ""
    print(f"drew {len(rows)} of {ds.n} samples from {n_strata} strata ({', '.join(strata)}) "
          f"with seed {args.seed} under checker config v{cid}; {stored}wrote {args.out}")
    return 0


def disagreement_draw(project: Any, ds: Any, judges: str, size: int, seed: int, share: float,
                      exclude: np.ndarray | None) -> tuple[Any, ...]:
    """`audit-sample --disagree A,B`: (rows drawn in a shuffled queue order, design, population, the
    per-row draw record, the strata table, the two judges) of a draw over the strata where judges A
    and B agree, disagree, or not both decide (`evaluation.audit_sets.disagreement_indices`)."""
    from ....evaluation.audit_sets import count_strata, disagreement_indices, draw_provenance
    from ....evaluation.judges import JudgeRun, disagreement_strata
    from ..judges import spatial_judges

    names = tuple(x.strip() for x in judges.split(",") if x.strip())
    if len(names) != 2 or names[0] == names[1]:
        raise WorkstationError(f"--disagree names two different judges (JUDGE_A,JUDGE_B), got {judges!r}")
    run = JudgeRun(project, spatial_judges(project))
    codes_t, stratum_names = disagreement_strata(run.output(names[0]), run.output(names[1]))
    pos = {str(t): i for i, t in enumerate(run.targets.ids.tolist())}
    codes = codes_t[np.array([pos[str(x)] for x in ds.samples.sample_id.tolist()], np.int64)]
    picked = disagreement_indices(codes, size, seed, share=share, exclude=exclude)
    picked = picked[np.random.default_rng(seed).permutation(len(picked))]  # a queue that hides the strata
    design, population, draw = draw_provenance(codes, picked, conf=None, conf_bins=1, exclude=exclude)
    table = count_strata(codes, [(n,) for n in stratum_names], ("judges",), picked)
    return picked, design, population, draw, table, names


# ---------------------------------------------------------------------------------------------
# audit-metrics
# ---------------------------------------------------------------------------------------------


def _clean(x: Any) -> Any:
    """JSON-safe: NaN/inf → None, numpy → Python."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return _clean(x.tolist())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _confusion_dict(cs: Any) -> dict[str, Any]:
    d = cs.to_dict()
    d["rows"] = "checker (PASS, FAIL, UNDECIDABLE)"
    d["columns"] = "human (PASS, FAIL, UNDECIDABLE)"
    d["decided_2x2"] = [[cs.tp, cs.fp], [cs.fn, cs.tn]]
    return d


def recheck_pairs(events: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(sample, annotator, label, order) of two events per re-checked (sample, annotator): the
    latest first-pass event and the latest re-check event (source "recheck"), both with a
    verdict. A corrected first-pass label is an edit, not a second opinion: it is not counted."""
    latest: dict[tuple[str, str, bool], Any] = {}
    for e in events:  # in event order
        latest[(e.sample_id, e.annotator, (e.source or "") == "recheck")] = e
    rows: list[tuple[str, str, int, int]] = []
    for (sid, who, rc), e in latest.items():
        first = latest.get((sid, who, False))
        if not rc or first is None or VERDICT_CODE.get(e.verdict or "", -1) < 0 \
                or VERDICT_CODE.get(first.verdict or "", -1) < 0:
            continue
        rows.append((sid, who, VERDICT_CODE[first.verdict], 0))
        rows.append((sid, who, VERDICT_CODE[e.verdict], 1))
    return (np.array([r[0] for r in rows], dtype=object), np.array([r[1] for r in rows], dtype=object),
            np.array([r[2] for r in rows], np.float64), np.array([r[3] for r in rows], np.int64))


def audit_metrics(project: Any, annotator: str | None = None,
                  taus: tuple[float, ...] = DEFAULT_TAU_GRID) -> dict[str, Any]:
    """Everything `audit-metrics` writes, as a JSON-ready dict."""
    from ....evaluation.agreement import annotator_agreement, self_agreement
    from ..audit import confusion_summary
    from ..calibration import apply_tau, operating_point, risk_coverage

    ds = load_samples(project)
    cid, cfg, v = active_verdicts(project, ds)
    from ....evaluation.selection import load_selection, set_names

    selection = load_selection(project, TASK)  # the kept label selection, as the report reads it
    if annotator:
        selection = selection.replace(annotators=(annotator,))
    chosen = SpatialStore(project).human_selected(ds, selection)
    human = chosen.codes.astype(np.int64)
    audited = np.flatnonzero((human >= 0) & (human <= 2))
    op_weights, op_note = chosen.draw_basis(ds.n)
    if len(audited) == 0:
        who = f" from annotator {annotator!r}" if annotator else ""
        raise WorkstationError(f"the project has no human labels{who}; import labels (`labels import`) "
                               "or label samples in the workstation first")
    verdict = np.asarray(v.verdict)[audited]
    conf = np.asarray(v.conf, np.float64)[audited]
    h = human[audited]
    at_tau = apply_tau(verdict, conf, cfg.tau)
    out: dict[str, Any] = {
        "project": str(Path(project.folder).resolve()),
        "config_version": cid, "config_hash": project.evaluations.get(cid)["content_hash"], "config_name": cfg.name,
        "tau": cfg.tau, "samples": ds.n, "audited": int(len(audited)),
        "annotator": annotator, "annotators": SpatialStore(project).annotators(),
        "labels": {**chosen.resolved.provenance(), "line": chosen.resolved.describe(set_names(project, TASK))},
        "human_counts": {VERDICTS[k]: int((h == k).sum()) for k in range(3)},
        "checker_counts": {VERDICTS[k]: int((at_tau == k).sum()) for k in range(3)},
        "confusion": _confusion_dict(confusion_summary(at_tau, h)),
    }
    if cfg.tau > 0:
        out["confusion_without_tau"] = _confusion_dict(confusion_summary(verdict, h))
    uniq = risk_coverage(verdict, conf, h)
    grid = risk_coverage(verdict, conf, h, taus=np.asarray(taus, np.float64))
    out["risk_coverage"] = {"unique": uniq.rows(), "grid": grid.rows(),
                            "at_tau": risk_coverage(verdict, conf, h, taus=[cfg.tau]).rows()[0]}
    prompts = np.asarray(ds.samples.prompt_id, dtype=object)[audited]
    out["operating_point"] = {k: e.to_dict() for k, e in
                              operating_point(verdict, conf, h, prompts, cfg.tau, weights=op_weights).items()}
    out["operating_point_draw"] = op_note

    events_all = SpatialStore(project).label_events()  # agreement always looks at every annotator
    codes = [VERDICT_CODE.get(e.verdict or "", -1) for e in events_all]
    ev_ok = [i for i, c in enumerate(codes) if c >= 0]
    sample = np.array([events_all[i].sample_id for i in ev_ok], dtype=object)
    ann = np.array([events_all[i].annotator for i in ev_ok], dtype=object)
    lab = np.array([codes[i] for i in ev_ok], np.float64)
    order = np.array([events_all[i].event_id for i in ev_ok], np.int64)
    prompt_of = dict(zip(np.asarray(ds.samples.sample_id).tolist(), np.asarray(ds.samples.prompt_id).tolist()))
    pairs = annotator_agreement(sample, ann, lab, order, unit_of=lambda s: prompt_of.get(s, s)) \
        if len(set(ann.tolist())) > 1 else []
    out["agreement"] = {"between_annotators": pairs,
                        "intervals": "95 %, the bootstrap over the samples' prompts (2,000 resamples, seed 0)"}
    sa = self_agreement(*recheck_pairs(events_all))
    out["agreement"]["self"] = {"pairs": sa.n_pairs, "percent_agreement": sa.percent, "kappa": sa.kappa,
                                "kappa_lo": sa.kappa_lo, "kappa_hi": sa.kappa_hi, "small": sa.small,
                                "counts": "consistency re-checks: the latest first-pass label vs the "
                                          "latest re-check label of the same annotator"}
    rated = [i for i in ev_ok if events_all[i].rating is not None]
    if len({events_all[i].annotator for i in rated}) > 1:
        out["agreement"]["ratings_between_annotators"] = annotator_agreement(
            np.array([events_all[i].sample_id for i in rated], dtype=object),
            np.array([events_all[i].annotator for i in rated], dtype=object),
            np.array([events_all[i].rating for i in rated], np.float64),
            np.array([events_all[i].event_id for i in rated], np.int64), weighted_categories=4)
    return _clean(out)


def run_metrics(args: argparse.Namespace) -> int:
    """Compare the active verdict set with the human labels over the audited samples and write JSON: 3×3
    and decided 2×2 confusion at the config's τ, risk–coverage over every unique confidence and over a
    τ grid, and Cohen's κ / percent agreement between annotators when there are several."""
    taus = tuple(_floats(args.taus, "--taus"))
    with reading_project(args.project) as project:
        result = audit_metrics(project, args.annotator, taus)
    write_output_text(args.out, dumps(result, indent=2) + "\n", "audit metrics", overwrite=args.overwrite,
                      projects=[args.project])
    c = result["confusion"]
    print(f"audit over {result['audited']} labelled samples (checker config v{result['config_version']}, "
          f"tau {result['tau']:g}): PASS/PASS {c['tp']}, PASS/FAIL {c['fp']}, FAIL/PASS {c['fn']}, "
          f"FAIL/FAIL {c['tn']}; checker UNDECIDABLE {c['undecidable_checker']}, "
          f"human UNDECIDABLE {c['undecidable_human']}")
    acc = c["accuracy"]
    print(f"  accuracy over samples both decided: {'n/a' if acc is None else f'{acc:.4f}'}")
    for pr in result["agreement"]["between_annotators"]:
        k, pa = pr["kappa"], pr["percent_agreement"]
        print(f"  {pr['annotator_a']} vs {pr['annotator_b']}: {pr['n']} samples, agreement "
              f"{'n/a' if pa is None else f'{pa:.4f}'}, kappa {'n/a' if k is None else f'{k:.4f}'}")
    print(f"wrote {args.out}")
    return 0
