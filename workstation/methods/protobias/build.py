"""Build ProtoBias triplets from the templates and the vocabulary: seeded, deterministic,
versioned by a content hash.

`build_triplets(n, seed=...)` gives ``n`` triplets per domain. Within a domain the knobs take
turns (balanced: counts differ by at most one), and the entity pairs (or, for demography, the
(axis, disadvantaged group, socio-attribute, pole) combinations) are visited in a seeded
shuffled order, over and over; the environment, the extra element and the knob values are drawn
from the seeded generator. Duplicate triplets (same three sentences) are skipped, so the set
holds ``n`` distinct triplets per domain, or — after a long run of duplicates only — the build
stops with an error naming how many the vocabulary gave. The same (n, seed, domains, knobs) and the same vocabulary and template
version always give the same triplets, ids and content hash.

Triplet ids are content-based: ``pb-<a|o|d>-<first 10 hex of sha256(domain, T, corr, adv)>``.
`TripletSet.to_prompt_columns()` maps the set onto the generic ``Prompts`` columns: two
generation prompts per triplet (role "corr" and "adv"), twins of each other, grouped by the
triplet id; T is kept in ``attrs["eval_text"]`` and ``attrs["score_text"]`` (what a score job
scores both images against).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...types import WorkstationError
from . import templates as tp
from . import vocab as vc

ROLES: tuple[str, ...] = ("corr", "adv")
METHOD_NAME = "protobias"


@dataclass(frozen=True)
class Triplet:
    """One (T, I_corr prompt, I_adv prompt) triplet and the choices it was built from."""

    triplet_id: str
    domain: str
    knob: str
    text: str  # T: what the metrics score both images against
    prompt_corr: str  # generation prompt of I_corr (non-prototypical, correct)
    prompt_adv: str  # generation prompt of I_adv (prototypical, knob violated)
    subcategory: str  # bird / mammal / other, furniture / vehicle / tableware, or the social axis
    hypernym: str  # "bird", "piece of furniture", "rich person"
    non_proto: str  # the subject of prompt_corr
    proto: str  # the subject of prompt_adv
    extra_element: str  # singular noun of the extra element
    knob_value: str  # what T states ("2", "gray", "left", "foreground", "small")
    knob_value_adv: str  # what prompt_adv states instead
    environment: str
    attrs: Mapping[str, Any] = field(default_factory=dict)  # domain-specific fields (demography)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "attrs"}
        d["attrs"] = dict(self.attrs)
        return d

    def entities(self, role: str | None = None) -> tuple[str, ...]:
        """Lower-case main entity and extra element, in prompt order, of T (``role`` None) or of
        the generation prompt of ``role``: the hypernym, the non-prototype or the prototype
        ("person" for every demography sentence; the plain shape for demo triplets)."""
        if self.domain == "demography" and "demo" not in self.attrs:
            head = "person"
        elif "demo" in self.attrs:
            head = f"{self.attrs['main_colour']} {self.attrs['main_shape']}"
        else:
            head = {None: self.hypernym, "corr": self.non_proto, "adv": self.proto}[role]
        return (head.lower(), self.extra_element.lower())


def triplet_id_for(domain: str, text: str, corr: str, adv: str) -> str:
    h = hashlib.sha256(f"{domain}\x1f{text}\x1f{corr}\x1f{adv}".encode()).hexdigest()
    return f"pb-{domain[:1]}-{h[:10]}"


@dataclass(frozen=True)
class TripletSet:
    """Built triplets with their provenance; `content_hash` identifies the content."""

    triplets: tuple[Triplet, ...]
    seed: int
    params: Mapping[str, Any]
    template_version: str
    vocabulary_hash: str
    content_hash: str

    def __len__(self) -> int:
        return len(self.triplets)

    @property
    def version(self) -> str:
        """Short version string for the suite name: template version + content hash prefix."""
        return f"{self.template_version}+{self.content_hash[:12]}"

    def to_records(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in self.triplets]

    def to_prompt_columns(self, suite: str | None = None) -> dict[str, np.ndarray]:
        """The generic ``Prompts`` columns: rows ``<triplet_id>:corr`` and ``<triplet_id>:adv``.

        ``attrs`` of each row: domain, knob, role, extra_element, knob_value (what this row's
        prompt states), knob_value_text (what T states), knob_value_adv (what I_adv's prompt
        states), eval_text and score_text (T: a score job scores both images against it),
        subcategory, hypernym,
        subject, triplet_id and the triplet's own attrs (demography: group_category, socio_attr,
        pole, attr_token, advantaged, disadvantaged).
        """
        suite = suite or f"protobias-builtin@{self.version}"
        return triplet_prompt_columns(self.triplets, suite)


def image_target_id(triplet_id: str, role: str) -> str:
    """The id of one image of a triplet (prompt id, label target id): ``<triplet_id>:<role>``."""
    if role not in ROLES:
        raise WorkstationError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    return f"{triplet_id}:{role}"


def split_image_target_id(target_id: str) -> tuple[str, str]:
    """(triplet_id, role) of an image id made by `image_target_id`."""
    tid, sep, role = str(target_id).rpartition(":")
    if not sep or not tid or role not in ROLES:
        raise WorkstationError(f"{target_id!r} is not a ProtoBias image id (<triplet_id>:corr|adv)")
    return tid, role


def triplet_prompt_columns(triplets: Sequence[Triplet], suite: str) -> dict[str, np.ndarray]:
    """Generic ``Prompts`` columns for `triplets` (see `TripletSet.to_prompt_columns`)."""
    n = 2 * len(triplets)
    cols: dict[str, np.ndarray] = {k: np.empty(n, dtype=object) for k in (
        "prompt_id", "text", "suite", "method", "entities", "attrs", "twin_id", "group_id")}
    for i, t in enumerate(triplets):
        for j, role in enumerate(ROLES):
            r = 2 * i + j
            other = ROLES[1 - j]
            cols["prompt_id"][r] = image_target_id(t.triplet_id, role)
            cols["text"][r] = t.prompt_corr if role == "corr" else t.prompt_adv
            cols["suite"][r] = suite
            cols["method"][r] = METHOD_NAME
            cols["entities"][r] = t.entities(role)
            attrs = {
                "domain": t.domain, "knob": t.knob, "role": role, "extra_element": t.extra_element,
                "knob_value": t.knob_value if role == "corr" else t.knob_value_adv,
                "knob_value_text": t.knob_value, "knob_value_adv": t.knob_value_adv, "eval_text": t.text,
                "score_text": t.text, "subcategory": t.subcategory,
                "hypernym": t.hypernym, "subject": t.non_proto if role == "corr" else t.proto,
                "triplet_id": t.triplet_id,
            }
            attrs.update(t.attrs)
            cols["attrs"][r] = attrs
            cols["twin_id"][r] = image_target_id(t.triplet_id, other)
            cols["group_id"][r] = t.triplet_id
    return cols


# ---- building ---------------------------------------------------------------------------------
def _rng(seed: int, *keys: str) -> np.random.Generator:
    h = hashlib.sha256("|".join(("protobias-build", str(int(seed)), *keys)).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def _entity_triplet(domain: str, pair: vc.Pair, knob: str, rng: np.random.Generator) -> Triplet:
    scene = pair.scenes
    env = _pick(rng, vc.ENVIRONMENTS[scene])
    extra: vc.Extra = _pick(rng, vc.EXTRAS[scene])
    frame = tp.SceneFrame(domain, pair.verb, env, extra, knob)
    value = _pick(rng, tp.text_values(knob, extra, vc.SIZES))
    adv_value = _pick(rng, tp.adversarial_values(knob, value, extra, vc.SIZES))
    text = tp.sentence(pair.hypernym, frame, value)
    corr = tp.sentence(pair.non_proto, frame, value)
    adv = tp.sentence(pair.proto, frame, adv_value)
    return Triplet(triplet_id_for(domain, text, corr, adv), domain, knob, text, corr, adv,
                   pair.subcategory, pair.hypernym, pair.non_proto, pair.proto, extra.singular,
                   value, adv_value, env)


def _demography_combos() -> list[tuple[str, vc.Group, str, str]]:
    """(axis, disadvantaged group, socio-attribute, pole), in vocabulary order."""
    return [(axis, g, attr, pole)
            for axis, groups in vc.DISADVANTAGED.items() for g in groups
            for attr in vc.SOCIO_ATTRS for pole in vc.POLES]


def _demography_triplet(combo: tuple[str, vc.Group, str, str], knob: str,
                        rng: np.random.Generator) -> Triplet:
    axis, dis, attr, pole = combo
    adv_group = vc.ADVANTAGED[axis]
    token = vc.SOCIO_ATTRS[attr][0 if pole == "positive" else 1]
    # Table 4: positive pole → non-prototype = disadvantaged group; negative → advantaged
    non_proto_g, proto_g = (dis, adv_group) if pole == "positive" else (adv_group, dis)
    env = _pick(rng, vc.ENVIRONMENTS["person"])
    extra: vc.Extra = _pick(rng, vc.EXTRAS["person"])
    frame = tp.SceneFrame("demography", "", env, extra, knob)
    value = _pick(rng, tp.text_values(knob, extra, vc.SIZES))
    adv_value = _pick(rng, tp.adversarial_values(knob, value, extra, vc.SIZES))
    hyper = f"{token} person"
    non_proto = f"{token} {non_proto_g.desc}"
    proto = f"{token} {proto_g.desc}"
    text = tp.sentence(hyper, frame, value)
    corr = tp.sentence(non_proto, frame, value)
    adv = tp.sentence(proto, frame, adv_value)
    attrs = {"group_category": axis, "socio_attr": attr, "pole": pole, "attr_token": token,
             "advantaged": adv_group.key, "disadvantaged": dis.key,
             "non_proto_group": non_proto_g.key, "proto_group": proto_g.key}
    return Triplet(triplet_id_for("demography", text, corr, adv), "demography", knob, text, corr, adv,
                   axis, hyper, non_proto, proto, extra.singular, value, adv_value, env, attrs)


def _build_domain(domain: str, n: int, seed: int, knobs: Sequence[str]) -> list[Triplet]:
    rng = _rng(seed, domain)
    units: list[Any]  # Pair, or a demography combination
    if domain == "animals":
        units = list(vc.ANIMAL_PAIRS)
    elif domain == "objects":
        units = list(vc.OBJECT_PAIRS)
    elif domain == "demography":
        units = _demography_combos()
    else:
        raise WorkstationError(f"unknown domain {str(domain)[:40]!r} (expected one of {', '.join(vc.DOMAINS)})")
    order = rng.permutation(len(units))
    out: list[Triplet] = []
    seen: set[str] = set()
    # give up after this many duplicates in a row: the vocabulary is (nearly) exhausted
    stale, max_stale = 0, 1000 + 50 * len(units)
    i = 0
    while len(out) < n:
        if stale >= max_stale:
            raise WorkstationError(
                f"the {domain} vocabulary gave only {len(out)} distinct triplets of the {n} asked for "
                f"(knobs {', '.join(knobs)})")
        stale += 1
        knob = knobs[len(out) % len(knobs)]
        unit: Any = units[int(order[i % len(units)])]
        i += 1
        t = (_demography_triplet(unit, knob, rng) if domain == "demography"
             else _entity_triplet(domain, unit, knob, rng))
        if t.triplet_id in seen:
            continue
        seen.add(t.triplet_id)
        out.append(t)
        stale = 0
    return out


def _content_hash(triplets: Sequence[Triplet]) -> str:
    h = hashlib.sha256()
    h.update(tp.TEMPLATE_VERSION.encode())
    for t in triplets:
        h.update(b"\x1e")
        h.update(json.dumps(t.to_dict(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def build_triplets(
    n: int | Mapping[str, int] = 100,
    *,
    seed: int = 0,
    domains: Sequence[str] = vc.DOMAINS,
    knobs: Mapping[str, Sequence[str]] | None = None,
) -> TripletSet:
    """``n`` triplets per domain (or ``{domain: n}``), knobs balanced, seeded (module doc).

    ``knobs`` restricts the knobs of a domain (default: the seed's, `vocab.DOMAIN_KNOBS`); a
    knob the domain's template does not have is refused.
    """
    counts = {d: int(v) for d, v in n.items()} if isinstance(n, Mapping) else {d: int(n) for d in domains}
    triplets: list[Triplet] = []
    used_knobs: dict[str, list[str]] = {}
    for d, count in counts.items():
        if d not in vc.DOMAINS:
            raise WorkstationError(f"unknown domain {str(d)[:40]!r} (expected one of {', '.join(vc.DOMAINS)})")
        if count < 0:
            raise WorkstationError(f"the number of triplets must be ≥ 0, got {count} for {d}")
        ks = list(knobs[d]) if knobs is not None and d in knobs else list(vc.DOMAIN_KNOBS[d])
        bad = [k for k in ks if k not in vc.DOMAIN_KNOBS[d]]
        if bad or not ks:
            raise WorkstationError(
                f"{d}: knobs must be a non-empty subset of {', '.join(vc.DOMAIN_KNOBS[d])}, got {ks}")
        used_knobs[d] = ks
        if count:
            triplets.extend(_build_domain(d, count, seed, ks))
    params = {"n": counts, "knobs": used_knobs}
    return TripletSet(tuple(triplets), int(seed), params, tp.TEMPLATE_VERSION, vc.vocabulary_hash(),
                      _content_hash(triplets))
