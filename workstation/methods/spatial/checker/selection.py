"""Stage 3, the selection stage: which selections pass the cuts and the area filter, the selected
rows, and the stability terms that do not depend on the margin.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .geometry import _at_least
from .params import _Params, _SEL_TYPES, _rows_or_none
from .passes import _two_passes
from .prepared import Prepared
from .stages import _AreaStage


def _select_chunk(p: _Params, x: dict[str, Any], out: dict[str, np.ndarray], s: slice) -> None:
    """Which selections pass the score cut and the area filter, the selected rows, and the
    stability terms that depend on the selections only (not on the margin): samples ``s``.
    ``x["ok"]`` / ``x["vok"]``: whether the first rows pass the area filter; None where
    ``x["sc"]`` / ``x["vsc"]`` already hold the scores of the selections that pass it (-inf
    where none)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        def present(scores: np.ndarray, area_ok: np.ndarray | None, row: int, cut: float) -> np.ndarray:
            ok = _at_least(scores[row, s], cut)
            if area_ok is not None:
                ok &= area_ok[row, s]
            return ok

        sc, ar, rows = x["sc"], x["ok"], x["rows"]
        pa, pb = present(sc, ar, 0, p.cut1), present(sc, ar, 1, p.cut1)
        out["pa"][s] = pa
        out["pb"][s] = pb
        _rows_or_none(rows[0, s], pa, out["sel_a"][s])
        _rows_or_none(rows[1, s], pb, out["sel_b"][s])
        if p.use2:
            has2 = x["has2"][s]
            p2a = has2 & present(sc, ar, 2, p.cut2)
            p2b = has2 & present(sc, ar, 3, p.cut2)
            out["ok2"][s] = p2a & p2b
            _rows_or_none(rows[2, s], p2a, out["sel2_a"][s])
            _rows_or_none(rows[3, s], p2b, out["sel2_b"][s])
        else:
            out["ok2"][s] = False
            out["sel2_a"][s] = -1
            out["sel2_b"][s] = -1
        if p.stab_dets:
            both = {v: present(x["vsc"], x["vok"], v - 1, p.cut1) for v in set(p.pvars)}
            for v, b in both.items():
                out[f"both{v}"][s] = b
            succ = np.zeros(len(pa), np.int16)
            iou_sum = np.zeros(len(pa))
            iouak, ioubk = x["iouak"], x["ioubk"]
            for v in p.pvars:  # the reference's order of additions
                b = both[v]
                succ += b
                iou_sum += iouak[v - 1, s] * b
                iou_sum += ioubk[v - 1, s] * b
            out["iou_term"][s] = 0.5 * (iou_sum / (2.0 * succ))  # NaN where no variant found both
            out["nobody"][s] = succ == 0




def _selection(prep: Prepared, area: _AreaStage, p: _Params, has2: np.ndarray) -> dict[str, np.ndarray]:
    """The selection stage's arrays (see _select_chunk) for every sample."""
    types = {k: (prep.row0.dtype if k.startswith("sel") else t) for k, t in _SEL_TYPES.items()
             if p.stab_dets or k not in ("iou_term", "nobody")}  # rows in the prepared index dtype
    types.update({f"both{v}": np.bool_ for v in set(p.pvars) if p.stab_dets})
    return _two_passes(prep.n, area.idx, _select_chunk, p, *_selection_inputs(prep, area, has2), types)


def _selection_inputs(prep: Prepared, area: _AreaStage, has2: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    """`_select_chunk`'s inputs over every sample (the first rows', with whether they pass the
    area filter), and at the area stage's samples (their selections' scores)."""
    x_all: dict[str, Any] = {
        "sc": prep.score0, "ok": area.ok, "vsc": prep.vscore, "vok": area.vok, "rows": prep.row0,
        "has2": has2, "iouak": prep.geom["iouak"], "ioubk": prep.geom["ioubk"]}
    x_sub: dict[str, Any] = {
        "sc": area.eff, "ok": None, "vsc": area.veff, "vok": None, "rows": area.rows[:4],
        "has2": has2[area.idx], "iouak": area.geom["iouak"], "ioubk": area.geom["ioubk"]}
    return x_all, x_sub
