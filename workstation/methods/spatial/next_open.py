"""Readying the workstation's next open of a project after a command changed its samples or
detections: the detection cache's entry of the spatial samples and the checker's preparation."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ...store import Project


def prepare_next_open(project: "Project") -> bool:
    """After a command changed the project's samples or detections: read them once as the
    window's open does, so that the detection cache (see `store.detection_cache`) holds the
    spatial samples' detections and the checker's preparation of them, and the window's next
    open of the project maps both instead of scanning the database and preparing again (≈3 s of
    a 1M-sample open on a 2-core machine). Only where the cache would be used (from
    `WORKSTATION_DETECTION_CACHE_MIN` detections; not when it is off). Says what it did; a
    failure (an unwritable or full cache folder) or an interruption (Ctrl+C) costs only that
    next open its speed and is reported as a note, never raised. Whether both are kept."""
    import logging
    import time

    from . import prepared_cache
    from .checker import prepare
    from .store import load_dataset
    from ...store import detection_cache

    least = detection_cache.min_detections()
    if least is None:
        return False
    n_det = int((project.con.execute("SELECT count(*) FROM detections").fetchone() or (0,))[0])
    if n_det == 0 or n_det < least:
        return False
    t0 = time.perf_counter()
    why = "the cache folder could not be written"
    try:
        ds = load_dataset(project)  # the window's selection: its cache entry
        if ds.n == 0 or not len(ds.detections):
            return False
        n, at = ds.n, prepare(ds).kept_at  # no place when the detections are not an entry's
        del ds
        prepared_cache.wait_for_writes()
        kept = at is not None and prepared_cache.is_kept(at)
    except KeyboardInterrupt:  # the command's own work is done: only this extra step stops
        kept, why = False, "interrupted"
    except Exception as e:  # noqa: BLE001 - the command's own work is done and stays
        logging.getLogger(__name__).debug("preparing the next open failed", exc_info=True)
        kept, why = False, str(e) or type(e).__name__
    if not kept:
        print(f"note: the detection cache was not prepared for the workstation's next open of "
              f"{project.folder} ({why} — see {detection_cache.cache_root()}); that open reads the "
              f"database instead", file=sys.stderr)
        return False
    print(f"detection cache ready for the workstation's next open: {n:,} samples, {n_det:,} detections "
          f"({time.perf_counter() - t0:.1f} s)")
    return True
