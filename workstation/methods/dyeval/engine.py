"""The automatic steps of DyEval's loop (seed 002, Fig. 2), as functions on a `TestTree`.

Each function asks the language model (`lm.LanguageModel`: templates or a local LM) and records
the answer as tree events; none generates images or judges them (the job system and the auditor
do, through `TestTree.generation_requests`, `add_image`, `judging_queue` and `record_label`).

* `write_prompts` — InputGen: n_i prompts for a node, de-duplicated (Step B);
* `start_locations` — dynamic failure location of a low-pass node's bugs (Step F);
* `reflect` — self-reflection over the node's records, location steps and triggers (Step G);
* `propose_topics` — TopicGen: n_t child topics for a high-pass node (Step I);
* `advance` — runs whichever of these `TestTree.pending_actions` asks for, until none is left;
  optionally confirms prompts and accepts proposals too (the auditor's Steps C / J, for scripts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...types import WorkstationError
from .dedup import deduplicate
from .lm import LanguageModel, ReflectionContext, TestRecord, TopicContext, TriggerNote
from .metrics import FAIL
from .perspectives import PERSPECTIVES
from .tree import ACCEPTED, PROPOSED, TestTree


def add_perspective_roots(tree: TestTree, subtopics: Sequence[str] | None = None) -> list[str]:
    """Root nodes for the paper's initial topics (all nine, or those named), with their perspective."""
    want = None if subtopics is None else {s.strip().lower() for s in subtopics}
    out: list[str] = []
    for p in PERSPECTIVES:
        for s in p.subtopics:
            if want is None or s.name.lower() in want:
                out.append(tree.add_root(s.name, p.name))
    if want is not None and len(out) != len(want):
        names = ", ".join(sorted(want))
        raise WorkstationError("DyEval: unknown initial topic in " + (names if len(names) <= 80 else names[:80] + "…"))
    return out


def _score(tree: TestTree, owner: str) -> int | None:
    v = tree.outcome(owner).verdict
    return None if v is None else (0 if v == FAIL else 1)


def topic_context(tree: TestTree, node_id: str, *, existing: Sequence[str] = ()) -> TopicContext:
    """The node's topic with its ancestors' topics and the test records of the node and its
    ancestors ("if the test tree T includes additional information related to the current topic,
    such as parent nodes f, these are also incorporated as test contexts")."""
    node = tree.nodes[node_id]
    chain = []
    n = node
    while n.parent_id is not None:
        n = tree.nodes[n.parent_id]
        chain.append(n)
    chain.reverse()
    records = tuple(TestRecord(a.topic, tree.prompts[p].text, _score(tree, p))
                    for a in (*chain, node) for p in a.prompt_ids)
    refl = node.reflection or next((a.reflection for a in reversed(chain) if a.reflection), None)
    return TopicContext(node.topic, tuple(a.topic for a in chain), node.depth, node.perspective, records,
                        refl.text if refl is not None else "", tuple(existing))


def reflection_context(tree: TestTree, node_id: str) -> ReflectionContext:
    node = tree.nodes[node_id]
    s = tree.node_summary(node_id)
    records = tuple(TestRecord(node.topic, tree.prompts[p].text, _score(tree, p)) for p in node.prompt_ids)
    steps: list[TestRecord] = []
    triggers: list[TriggerNote] = []
    for lid in node.location_ids:
        m = tree.locations[lid].machine
        for st in m.steps[1:]:
            if st.reused_from is None and st.verdict is not None:
                steps.append(TestRecord(node.topic, st.text, 0 if st.verdict == FAIL else 1))
        triggers.extend(TriggerNote(t.kind, t.cell_text, t.context_text, t.text, t.elements) for t in m.triggers)
    return ReflectionContext(node.topic, records, tuple(steps), tuple(triggers), s.tests, s.passes, s.bugs,
                             tree.config.rho)


@dataclass(frozen=True)
class WriteReport:
    prompt_ids: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...]  # (text, the text it duplicates)
    rounds: int


def write_prompts(tree: TestTree, node_id: str, lm: LanguageModel, *, confirm: bool = False,
                  max_rounds: int = 3) -> WriteReport:
    """Ask for the prompts a node still lacks (up to n_i), de-duplicated against the node's prompts
    and each other (`dedup.py`, the config's n and threshold); asks again, up to ``max_rounds``
    times, while duplicates leave it short."""
    node = tree.nodes[node_id]
    cfg = tree.config
    added: list[str] = []
    dropped: list[tuple[str, str]] = []
    rounds = 0
    while len(node.prompt_ids) < node.n_i and rounds < max_rounds:
        rounds += 1
        existing = [tree.prompts[p].text for p in node.prompt_ids]
        need = node.n_i - len(node.prompt_ids)
        gen = lm.write_prompts(topic_context(tree, node_id, existing=existing), need)
        cands = [w for w in gen.value if len(w.text.split()) <= cfg.max_prompt_words]
        res = deduplicate([w.text for w in cands], existing, n=cfg.dedup_n, threshold=cfg.dedup_threshold)
        dropped.extend((cands[i].text, dup) for i, dup in res.dropped)
        for i in res.kept[:need]:
            w = cands[i]
            added.append(tree.add_prompt(node_id, w.text, w.graph, gen.provenance, w.graph_provenance))
        if not res.kept:
            break
    if confirm and node.prompt_ids and not node.prompts_confirmed:
        tree.confirm_prompts(node_id)
    return WriteReport(tuple(added), tuple(dropped), rounds)


def start_locations(tree: TestTree, node_id: str, lm: LanguageModel) -> list[str]:
    """Start failure location for every bug of the node not yet located; a bug without a scene
    graph is parsed first (recorded as a graph event), one whose graph stays empty is skipped."""
    node = tree.nodes[node_id]
    located = {tree.locations[x].prompt_id for x in node.location_ids}
    out: list[str] = []
    for pid in tree.bugs(node_id):
        if pid in located:
            continue
        p = tree.prompts[pid]
        if p.graph is None:
            g = lm.parse_scene_graph(p.text)
            tree.set_prompt_graph(pid, g.value, g.provenance)
        graph = tree.prompts[pid].graph
        if graph is None or graph.size == 0:
            continue
        out.append(tree.start_location(node_id, pid))
    return out


def reflect(tree: TestTree, node_id: str, lm: LanguageModel) -> str:
    g = lm.reflect(reflection_context(tree, node_id))
    tree.set_reflection(node_id, g.value, g.provenance)
    return g.value


def propose_topics(tree: TestTree, node_id: str, lm: LanguageModel) -> list[str]:
    """n_t child topics (distinct from the node's existing proposals, case-insensitive)."""
    node = tree.nodes[node_id]
    existing = [tree.proposals[p].text for p in node.proposal_ids] + [node.topic]
    gen = lm.propose_topics(topic_context(tree, node_id, existing=existing), tree.config.n_t)
    seen = {" ".join(e.lower().split()) for e in existing}
    texts: list[str] = []
    for t in gen.value:
        k = " ".join(t.lower().split())
        if k and k not in seen:
            seen.add(k)
            texts.append(t)
    if not texts:
        return []
    return tree.add_proposals(node_id, texts, gen.provenance)


def advance(tree: TestTree, lm: LanguageModel, *, auto_confirm: bool = False, auto_accept: bool = False,
            max_iterations: int = 1000) -> int:
    """Do every automatic action `TestTree.pending_actions` lists (and, when asked, the auditor's
    confirmations and acceptances) until none is left; returns the number of events added."""
    n0 = len(tree.log)
    for _ in range(max_iterations):
        did = False
        for a in tree.pending_actions():
            if a.kind == "write_prompts":
                did |= bool(write_prompts(tree, a.node_id, lm, confirm=auto_confirm).prompt_ids)
            elif a.kind == "confirm_prompts" and auto_confirm:
                tree.confirm_prompts(a.node_id)
                did = True
            elif a.kind == "start_locations":
                started = start_locations(tree, a.node_id, lm)
                if not started:  # nothing could be located: reflect on what there is
                    reflect(tree, a.node_id, lm)
                did = True
            elif a.kind == "reflect":
                reflect(tree, a.node_id, lm)
                did = True
            elif a.kind == "propose_topics":
                did |= bool(propose_topics(tree, a.node_id, lm))
            elif a.kind == "decide_proposals" and auto_accept:
                for pid in a.detail:
                    if tree.proposals[pid].state == PROPOSED:
                        tree.decide_proposal(pid, ACCEPTED)
                did = True
            if did:
                break  # the state changed: list the actions again
        if not did:
            break
    return len(tree.log) - n0
