"""Long work (generation, detection, evaluation) as stored, resumable jobs run in worker processes.

A job is a spec in ``PROJECT/jobs/<job_id>/spec.json`` (``spec``); its items are split over
shards by a stable hash (``shards``); a worker process does the items batch by batch
(``work``, ``worker``), writing images and Parquet chunks atomically (``chunks``); the process
that holds the project watches it and ingests the chunks transactionally (``runner``,
``ingest``); jobs run one after another (``queue``); projects or job folders made on other
machines merge into one (``merge``). Nothing here imports torch or Qt at import time.
"""

from __future__ import annotations

from .chunks import DiskFull
from .progress import (
    CANCELLED,
    DONE,
    FAILED,
    INTERRUPTED,
    QUEUED,
    RUNNING,
    STARTING,
    Progress,
    format_progress,
)
from .kinds import KINDS, JobKind, job_kind
from .shards import Shard, shard_of
from .spec import (
    PROCEDURAL,
    SCENE,
    JobPaths,
    JobSpec,
    create_detect_job,
    create_evaluate_job,
    create_generate_job,
    load_spec,
)

__all__ = [
    "CANCELLED", "DONE", "FAILED", "INTERRUPTED", "KINDS", "JobKind", "job_kind", "PROCEDURAL", "QUEUED", "RUNNING", "SCENE",
    "STARTING", "DiskFull", "JobPaths", "JobSpec", "Progress", "Shard", "create_detect_job",
    "create_evaluate_job", "create_generate_job", "format_progress", "load_spec", "shard_of",
]
