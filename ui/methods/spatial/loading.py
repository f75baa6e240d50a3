"""The spatial method's part of a project's load off the GUI thread, without Qt.

`SpatialLoad.read` is what `ui.loading.load_project` reads for spatial (registered in
`ui.methods.LOADS`): the samples with their detections, the active checker config, its
verdicts (or none: `evaluate_active` gives them on another thread) and the human labels. It runs
before Qt is even imported (`main.py gui --project DIR`, `ui.loading.EarlyLoad`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workstation.dataset import Dataset
from workstation.methods.spatial.config import CheckerConfig
from workstation.methods.spatial.store import SpatialStore
from workstation.store import Project, release_freed_memory


@dataclass
class SpatialLoaded:
    """What `SpatialLoad.read` gathered, for `SpatialSession` (any thread)."""

    dataset: Dataset
    config_id: int | None
    config: CheckerConfig
    verdicts: object
    human: np.ndarray

    @property
    def checking(self) -> bool:
        """Whether the checker is still to evaluate the samples (`evaluate_active`)."""
        return self.verdicts is None and self.dataset.n > 0


def rebuilt(dataset: Any) -> str:
    """What the open found unusable in the cache and rebuilt (`detection_cache.rebuilt_notes`),
    for the status bar's line: " — " and the notes, or ""."""
    from workstation.store.detection_cache import rebuilt_notes

    notes = rebuilt_notes(dataset)
    return "".join(f" — {n}" for n in notes)


class SpatialLoad:
    """The spatial part of a project's load (`ui.loading.load_project`)."""

    def read(self, project: Project, with_verdicts: bool, progress: Any) -> SpatialLoaded:
        """The samples, active config, verdicts (unless not `with_verdicts`) and labels;
        `progress` (an `ui.loading.OpenProgress`, or None) follows the read and can cancel it."""
        from workstation.methods.spatial.checker import evaluate
        from workstation.methods.spatial.data import spatial_columns
        from workstation.methods.spatial.store import load_dataset

        # the samples' relations and objects, which the views and the checker both read first,
        # are worked out while the detections are read
        ds = load_dataset(project, meanwhile=spatial_columns,
                          progress=progress.detections if progress is not None else None)
        if progress is not None:
            progress.enter("labels")
        cid, cfg = SpatialStore(project).active_config()
        verdicts = evaluate(ds, cfg) if ds.n and with_verdicts else None
        human = SpatialStore(project).human_verdicts(ds)
        return SpatialLoaded(ds, cid, cfg, verdicts, human)

    def opened_text(self, loaded: SpatialLoaded) -> tuple[str, bool]:
        """The status bar's words on what was opened, and whether work on it goes on (the check)."""
        n = loaded.dataset.n
        return (f"{n:,} samples" + (" — the checker is evaluating them…" if loaded.checking else "")
                + rebuilt(loaded.dataset), loaded.checking)


def evaluate_active(dataset: Dataset, cfg: CheckerConfig) -> tuple[Dataset, CheckerConfig, object]:
    """The checker's verdicts of `dataset` under `cfg` (any thread), for `SpatialSession.verdicts_ready`."""
    from workstation.methods.spatial.checker import evaluate

    verdicts = evaluate(dataset, cfg)
    release_freed_memory()  # the checker's one-off preparation leaves freed temporaries
    return dataset, cfg, verdicts


LOAD = SpatialLoad()
