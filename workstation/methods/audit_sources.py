"""Where audit plans get their tables: one adapter per method, the method object's
``audit_source`` (`workstation.evaluation.base.AuditSource`: a module imported only when used, a
title and a description), so a new method is planned for without a line outside its folder.
Each fills the generic `workstation.evaluation.plan.AuditTable` — items, the automated outcome
with its confidence, the cluster (prompt) and the human label — from a project, so one core (`workstation.evaluation.plan`) plans and estimates for every method:

* ``spatial``   — the checker's PASS / FAIL / UNDECIDABLE per image against human P/F/U;
* ``metalogic`` — the comparison's MISALIGNED / ALIGNED / UNDECIDABLE per image pair against the
  human pair judgement;
* ``protobias`` — a metric's preference (I_corr over I_adv) per triplet against the humans'
  ratings (option ``metric``);
* ``dyeval``    — the CLIPScore pre-mark per image of a test tree against human PASS / FAIL
  (options ``tree_id``, ``threshold``).

Each also says which of a frozen table's items are still in the project (``present_items``):
a plan follows its population, so the items of a removed run leave it (`AuditPlan.set_present`).

The audit plan window asks the same registry what a new plan may choose (``plan_options``), what
it would be made on (``plan_basis``) and what a stored plan was made on (``made_on``): functions a
source module may define.

`create_plan` makes and stores a plan, `open_plan` reads one back with the project's current
labels and population (a plan that cannot be used is refused in one line, `PlanStale`), `refresh`
brings an open plan up to date, `next_targets` draws and stores; `plans_losing` says what removing
a run takes from each plan; `report_section` is the report's "Audit plans" section.
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..evaluation.audit_sets import flag_text, flagged_labels
from ..evaluation.base import AuditSource, PlanOption, ReportSection
from ..evaluation.plan import (AuditPlan, AuditTable, Goal, PlanStale, PlanTarget, SecondJudge, check_design, load_plan,
                               save_draws, save_plan, stored_table)
from ..types import WorkstationError
from ..util.csvsafe import write_dict_rows


def source_of(method: Any) -> AuditSource | None:
    """The registered method's audit source (its method object's ``audit_source``, an
    `AuditSource`); None for a method without one or a name that is not a method's."""
    from . import METHODS, get_method

    if not isinstance(method, str) or method not in METHODS:
        return None
    try:
        src = getattr(get_method(method), "audit_source", None)
    except WorkstationError:
        return None
    return src if isinstance(src, AuditSource) else None


def source_names() -> list[str]:
    """The registered methods with an audit source."""
    from . import METHODS

    return [n for n in METHODS.names() if source_of(n) is not None]


def title_of(method: str) -> str:
    """How the audit plan window lists the method's audit table (its source's title)."""
    src = source_of(method)
    return src.title if src is not None else str(method)


class _Part:
    """One function of every method's audit source, by method name: ``audit_table``,
    ``human_labels`` or ``present_items`` of the source's module (imported when used)."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __contains__(self, method: object) -> bool:
        return source_of(method) is not None

    def get(self, method: str) -> Callable[..., Any]:
        src = source_of(method)
        if src is None:
            raise WorkstationError(f"no audit source for method {str(method)[:40]!r} "
                                   f"(have: {', '.join(source_names()) or 'none'})")
        try:
            module = importlib.import_module(src.module)
        except ImportError as e:
            raise WorkstationError(f"the {method} audit source {src.module!r} could not be loaded: {e}") from None
        fn = getattr(module, self.attr, None)
        if not callable(fn):
            raise WorkstationError(f"the {method} audit source {src.module!r} has no {self.attr}()")
        return fn  # type: ignore[no-any-return]


#: each method's audit table of a project (``audit_table``), its current human labels of a (frozen)
#: table's items, read from the label log (``human_labels``), and which of a (frozen) table's items
#: the project still holds (``present_items(project, table, *, without_run=None)``: as if run
#: ``without_run`` were removed too)
SOURCES = _Part("audit_table")
HUMANS = _Part("human_labels")
PRESENT = _Part("present_items")


def _optional(method: Any, attr: str) -> Callable[..., Any] | None:
    """The function ``attr`` of the method's audit source module where it defines one (else None,
    as for a name that is no method's with a source)."""
    src = source_of(method)
    if src is None:
        return None
    try:
        module = importlib.import_module(src.module)
    except ImportError as e:
        raise WorkstationError(f"the {method} audit source {src.module!r} could not be loaded: {e}") from None
    fn = getattr(module, attr, None)
    return fn if callable(fn) else None


def plan_options(project: Any, method: str) -> list[PlanOption]:
    """The options of the method's audit table that a new plan of this project may choose (its
    source's ``plan_options``; none where it has none)."""
    fn = _optional(method, "plan_options")
    return list(fn(project)) if fn is not None else []


def plan_basis(project: Any, method: str) -> str:
    """What a new plan of the method would be made on, where the window could show another
    (its source's ``plan_basis``; "" where it has none)."""
    fn = _optional(method, "plan_basis")
    return str(fn(project)) if fn is not None else ""


def made_on(table: AuditTable) -> str:
    """What a plan's table was made on (its method's source's ``made_on``; "" where it has none)."""
    fn = _optional(table.method, "made_on")
    return str(fn(table)) if fn is not None else ""


def available(project: Any) -> list[str]:
    """The methods with data in this project (their tables may still need an evaluation)."""
    from . import get_method

    out = []
    for name in source_names():
        try:
            if get_method(name).has_data(project):
                out.append(name)
        except WorkstationError:
            continue
    return out


def audit_table(project: Any, method: str, **options: Any) -> AuditTable:
    """The method's audit table of the project now (options: the adapter's, e.g. ``metric``; an
    option the method does not take is one `WorkstationError`)."""
    import inspect

    fn = SOURCES.get(method)
    try:
        inspect.signature(fn).bind(project, **options)
    except TypeError:
        takes = [n for n, q in inspect.signature(fn).parameters.items() if q.kind is q.KEYWORD_ONLY]
        raise WorkstationError(f"the {method} audit source takes the options {', '.join(takes) or 'none'}, got "
                               f"{', '.join(sorted(options))[:80]}") from None
    return fn(project, **options)


def current_human(project: Any, method: str) -> Callable[[AuditTable], np.ndarray]:
    """A function giving the project's current human codes for a (frozen) table's items."""
    def human(frozen: AuditTable) -> np.ndarray:
        return HUMANS.get(method)(project, frozen)
    return human


def create_plan(project: Any, method: str, goal: Goal, *, name: str = "", seed: int = 0, blind: bool = True,
                recheck_fraction: float = 0.1, bins: int | None = None,
                second_judge: Callable[[AuditTable], SecondJudge] | None = None, **options: Any) -> AuditPlan:
    """Make a plan on the method's table now, and store it with its audit set. The goal and the
    design (a seed from 0 to 2**63-1, whole confidence bins, a re-check fraction in [0, 0.5]) are
    checked before the table is built: anything else is one `WorkstationError`. ``second_judge``
    gives the second judge of the table's items (`SecondJudge.aligned`); the plan records its name
    and its scores' digest."""
    goal.validate()
    kw: dict[str, Any] = {} if bins is None else {"bins": bins}
    check_design(seed=seed, recheck_fraction=recheck_fraction, **kw)
    if not isinstance(name, str):
        raise WorkstationError(f"a plan's name is text, got {repr(name)[:40]}")
    if method not in SOURCES:
        raise WorkstationError(f"no audit source for method {str(method)[:40]!r} (have: {', '.join(source_names())})")
    table = audit_table(project, method, **options)
    table.source = dict(table.source, options={k: v for k, v in options.items()})
    judge = None if second_judge is None else second_judge(table)
    plan = AuditPlan(table, goal, seed=seed, recheck_fraction=recheck_fraction, name=name, second_judge=judge, **kw)
    save_plan(project, plan, name=name, blind=blind)
    return plan


def current_present(project: Any, method: str) -> Callable[[AuditTable], np.ndarray]:
    """A function giving which of a (frozen) table's items the project still holds."""
    def present(frozen: AuditTable) -> np.ndarray:
        return np.asarray(PRESENT.get(method)(project, frozen), bool)
    return present


def _population_key(project: Any) -> tuple[Any, ...]:
    """What changes when samples leave or come back (a run removed, imported, merged)."""
    return (project.samples.count(), tuple(project.samples.run_ids()))


def judge_choices(project: Any, method: str) -> list[tuple[str, str]]:
    """The judges a plan of ``method`` may name as its second judge, as (name, title): the
    method's judges (`workstation.evaluation.judges`), listed without computing anything."""
    from . import method_judges

    mj = method_judges(project, method) if method in SOURCES else None
    return [] if mj is None else [(j.name, j.title) for j in mj.judges]


def judge_scores(out: Any, positive: str) -> np.ndarray:
    """A judge's output as a plan's second-judge score, one per target: where it gives an outcome,
    1 for the table's positive value, 0 for another decided value, none (NaN) where it abstains
    or did not judge; a judge of scores alone gives its score where it lies in [0, 1]."""
    j = out.judge
    if j.values:
        return np.fromiter((np.nan if v is None or v == j.abstain else float(v == positive)
                            for v in out.outcome.tolist()), np.float64, len(out.outcome))
    s = np.asarray(out.score, np.float64)
    fin = s[np.isfinite(s)]
    if len(fin) and (fin.min() < 0.0 or fin.max() > 1.0):
        raise WorkstationError(f"the judge {j.name[:60]!r} gives scores outside [0, 1] ({float(fin.min()):.3g} to "
                               f"{float(fin.max()):.3g}) and no outcome: it cannot be a plan's second judge")
    return s


def second_judge_of(project: Any, method: str, name: str) -> Callable[[AuditTable], SecondJudge]:
    """The method's judge ``name`` as a plan's second judge (`create_plan` / `open_plan` take it):
    computed when the plan asks, its scores by item id (`judge_scores`); a judge none of whose
    targets is an item of the plan's table is refused in one line."""
    from ..evaluation.judges import JudgeRun
    from . import method_judges

    def make(table: AuditTable) -> SecondJudge:
        mj = method_judges(project, method)
        if mj is None:
            raise WorkstationError(f"{method} has no judges in this project: {name[:60]!r} cannot be a second judge")
        mj.judge(name)  # an unknown name: one line listing the method's judges
        run = JudgeRun(project, mj)
        out = run.output(name)
        scores = dict(zip(map(str, run.targets.ids.tolist()), judge_scores(out, table.positive).tolist()))
        judge = SecondJudge.aligned(name, table, scores)
        if not np.isin(table.item_id.astype(str), list(scores)).any():
            raise WorkstationError(f"the judge {name[:60]!r} judges none of the plan's {table.item_title}s")
        return judge

    return make


def _stored_judge(project: Any, plan_id: int, method: str) -> Callable[[AuditTable], SecondJudge] | None:
    """The second judge a stored plan names (its design's record), from the method's judges."""
    rec = project.plans.get(plan_id)
    d = rec.get("design") if isinstance(rec, dict) else None
    j = d.get("second_judge") if isinstance(d, dict) else None
    name = j.get("name") if isinstance(j, dict) else None
    if not isinstance(name, str) or name not in {n for n, _t in judge_choices(project, method)}:
        return None  # none, or not one of the method's judges: `load_plan` says what the plan needs
    return second_judge_of(project, method, name)


def open_plan(project: Any, plan_id: int,
              second_judge: Callable[[AuditTable], SecondJudge] | None = None) -> AuditPlan:
    """A stored plan with the project's current labels of its items and the items it still holds.
    A plan whose method has no audit source here, whose stored values are not a plan's, none of
    whose items is left, or made with a second judge that is not given or whose scores changed
    (``second_judge`` as `create_plan` takes it; without it, the judge the plan names is taken from
    the method's judges: `second_judge_of`) is refused: `PlanStale`, one line with the reason."""
    rec = project.plans.get(plan_id)
    method = rec.get("method")
    if not isinstance(method, str) or method not in SOURCES:
        raise PlanStale(f"audit plan #{rec['plan_id']} cannot be used: its method {str(method)[:40]!r} has no "
                        f"audit source here (have: {', '.join(source_names())})")
    key = _population_key(project)
    if second_judge is None:
        try:
            second_judge = _stored_judge(project, plan_id, method)
        except WorkstationError as e:
            raise PlanStale(f"audit plan #{rec['plan_id']} cannot be used: {e}") from None
    plan = load_plan(project, plan_id, current_human(project, method), current_present(project, method),
                     second_judge=second_judge)
    plan.population_key = key  # type: ignore[attr-defined]
    return plan


def _follow_population(project: Any, plan: AuditPlan) -> None:
    key = _population_key(project)
    if getattr(plan, "population_key", None) != key:
        plan.set_present(current_present(project, plan.table.method)(plan.table))
        plan.population_key = key  # type: ignore[attr-defined]


def refresh(project: Any, plan: AuditPlan) -> None:
    """Bring an open plan up to date with the project: its labels from the label log, and which of
    its items are still in the project when samples came or went since it was opened."""
    _follow_population(project, plan)
    plan.update_labels(current_human(project, plan.table.method)(plan.table))


def plans_losing(project: Any, run_id: str) -> list[tuple[int, str, int, int]]:
    """What removing run ``run_id`` takes from each stored plan: (plan id, name, items that would
    leave it, items it still holds), for the plans that lose any. A plan that cannot be used is
    left out (it is refused when opened)."""
    out = []
    for rec in project.plans.all():
        method = rec.get("method")
        if not isinstance(method, str) or method not in SOURCES:
            continue
        try:
            table = stored_table(project, int(rec["plan_id"]), rec)
            now = np.asarray(PRESENT.get(method)(project, table), bool)
            after = np.asarray(PRESENT.get(method)(project, table, without_run=run_id), bool)
        except WorkstationError:
            continue
        lost = int((now & ~after).sum())
        if lost:
            out.append((int(rec["plan_id"]), str(rec.get("name") or ""), lost, int(now.sum())))
    return out


def next_targets(project: Any, plan: AuditPlan, k: int = 1) -> list[PlanTarget]:
    """The next ``k`` targets to label (pending first); new draws are stored before they are
    returned, so closing the project keeps the queue. Items no longer in the project are never
    handed out (the plan follows its population first)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise WorkstationError(f"the number of targets must be a whole number, got {repr(k)[:40]}")
    _follow_population(project, plan)
    if project.read_only:
        now = plan.pending()[:max(0, int(k))]
        if len(now) < k and not plan.status().reached:
            raise WorkstationError("this project is open read-only: the plan cannot draw new targets")
        return now
    now, new = plan.next_targets(k)
    if new:
        save_draws(project, plan, new)
    return now


def report_section(project: Any, out_dir: Path, methods: Sequence[str] | None = None) -> ReportSection | None:
    """The report's "Audit plans" section: every stored plan (of ``methods`` when given) with
    each of its estimates — value, interval, the estimator, what it assumes, the labels it used —
    as a table (``estimates.csv``) and HTML. None when the project has no plan."""
    plans = [p for p in project.plans.all() if methods is None or p["method"] in methods]
    if not plans:
        return None
    rows: list[dict[str, Any]] = []
    nan = float("nan")
    for rec in plans:
        base = {"plan_id": int(rec["plan_id"]), "plan": str(rec["name"] or ""), "method": str(rec["method"])}
        try:
            plan = open_plan(project, int(rec["plan_id"]))
        except WorkstationError as refused:  # a stale plan is named with its reason, never estimated
            goal = rec.get("goal") if isinstance(rec.get("goal"), dict) else {}
            rows.append({**base, "goal": str(goal.get("quantity", "")), "reached": False, "estimator": "stale",
                         "estimate": nan, "low": nan, "high": nan, "half_width": nan, "confidence": nan, "labels": 0,
                         "units": 0, "items_in_scope": 0, "removed": 0, "strata": 0, "assumes": "",
                         "note": str(refused), "source": "", "seen_unblinded": 0})
            continue
        st = plan.status()
        aid = rec.get("audit_set_id")
        flagged = flagged_labels(project, str(rec["task"]), int(aid)) if aid is not None else 0
        for e in (st.estimate,) + st.alternatives:
            rows.append({
                **base, "goal": st.goal_text, "reached": bool(st.reached), "estimator": e.title,
                "estimate": e.value, "low": e.low, "high": e.high, "half_width": e.half_width,
                "confidence": e.confidence, "labels": e.labels, "units": e.units, "items_in_scope": st.items,
                "removed": st.removed, "strata": st.strata, "assumes": e.assumes,
                "note": "; ".join(x for x in (e.note, plan.removed_note(), flag_text(flagged)) if x),
                "seen_unblinded": flagged,
                "source": ", ".join(f"{k}={v}" for k, v in plan.table.source.items() if k != "options"),
            })
    out_dir.mkdir(parents=True, exist_ok=True)
    write_dict_rows(out_dir / "estimates.csv", rows)

    def pct(x: float) -> str:
        return "—" if not np.isfinite(x) else f"{100 * x:.1f} %"

    body = ["<table><tr><th>plan</th><th>goal</th><th>estimator</th><th>estimate</th><th>interval</th>"
            "<th>labels</th><th>reached</th></tr>"]
    for r in rows:
        if r["estimator"] == "stale":
            body.append(f"<tr><td>#{r['plan_id']} {html.escape(r['plan'])}</td>"
                        f"<td colspan='6' class='text'>{html.escape(r['note'])}</td></tr>")
            continue
        gone = f" ({r['removed']} removed from the project)" if r["removed"] else ""
        flag = f"; {html.escape(flag_text(r['seen_unblinded']))}" if r["seen_unblinded"] else ""
        body.append(
            f"<tr><td>#{r['plan_id']} {html.escape(r['plan'])}</td><td>{html.escape(r['goal'])}</td>"
            f"<td title='{html.escape(r['assumes'])}'>{html.escape(r['estimator'])}</td><td>{pct(r['estimate'])}</td>"
            f"<td>[{pct(r['low'])}, {pct(r['high'])}] ({100 * r['confidence']:g} %)</td>"
            f"<td>{r['labels']} of {r['items_in_scope']}{gone}{flag}</td><td>{'yes' if r['reached'] else 'no'}</td></tr>")
    body.append("</table><p class='src'>Each estimate's assumptions are in <code>audit_plans/estimates.csv</code> "
                "(hover an estimator for them); <a href='audit_plans/index.html'>how a plan draws its items and "
                "what each estimate assumes</a> is in this report. A plan follows its items: those of a "
                "removed run leave it and its estimate is over the rest.</p>")
    write_plans_page(out_dir / "index.html")
    return ReportSection("audit_plans", "Audit plans", html="".join(body), tables={"estimates": rows},
                         meta={"plans": len(plans)})


#: the report's page on audit plans (`audit_plans/index.html`): what docs/audit-plans.md says of
#: goals, draws, the stopping rule and the estimates, for a reader of the report alone
PLANS_PAGE = (
    ("Goals", "A goal is a quantity, a half-width and a confidence: the <b>true rate</b> (the share of all "
     "items a human labels positive), the <b>precision</b> (of the items the automated outcome calls "
     "positive, the share a human labels positive) or the <b>agreement</b> (of the items the automated "
     "outcome decides, the share a human labels the same). Each is a share over items the automated "
     "outcome fixes, so its denominator is known exactly. Items are labelled one by one, or as whole "
     "prompts (every seed of a drawn prompt; the intervals then treat the prompt as the unit)."),
    ("How the plan draws what is labelled", "The items in scope are split into strata by the automated "
     "outcome and its confidence. Inside every stratum the order is a seeded random permutation: the plan "
     "never picks an item because of what it looks like. Every stratum gets its first two labels; after "
     "that the next item comes from the stratum where one more label shrinks the interval most (Neyman "
     "allocation, judged from the automated outcome's confidence, never from the labels seen so far). A "
     "drawn item without a label stays the next target. Only labels of items the plan drew count."),
    ("Stopping rule", "The goal is reached when every stratum has its first labels and the interval's "
     "half-width is at most the goal's. When every item in scope is labelled, the rate is known exactly."),
)


def write_plans_page(path: Path) -> None:
    """The report's page on how audit plans draw and estimate (`PLANS_PAGE`, `ppi.ASSUMES`)."""
    from ..evaluation.bundle import page_start
    from ..evaluation.ppi import ASSUMES

    names = {"design": "stratified by the automated outcome, weighted by the plan's design (the plan's estimate)",
             "design_ppi": "prediction-powered inside strata", "ppi": "prediction-powered (PPI++)",
             "ppi_clustered": "prediction-powered, prompt clusters", "wilson": "labels only, Wilson",
             "cluster_bootstrap": "labels only, prompt bootstrap"}
    parts = [page_start("Audit plans: how they draw and estimate"), "<h1>Audit plans: how they draw and estimate</h1>",
             "<p><a href='../index.html'>Back to the report</a></p>"]
    for head, text in PLANS_PAGE:
        parts += [f"<h2>{html.escape(head)}</h2>", f"<p>{text}</p>"]
    parts.append("<h2>What each estimate assumes</h2><ul>")
    parts += [f"<li><b>{html.escape(names.get(k, k))}</b>: {html.escape(v)}</li>" for k, v in ASSUMES.items()]
    parts.append("</ul></body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
