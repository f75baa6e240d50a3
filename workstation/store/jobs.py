"""The project's record of jobs (their files live under ``jobs/<job_id>/``)."""

from __future__ import annotations

import json
from typing import Any

from ..util.jsonsafe import dumps
from .base import Repo, _now


class JobsRepo(Repo):
    """Job records: kind, spec, state, progress and the last message."""

    def record(self, job_id: str, kind: str, spec: dict[str, Any], status: str = "queued",
               done: int = 0, total: int = 0, message: str = "") -> None:
        from ..util.ids import check_job_id

        self._check_writable()
        try:
            check_job_id(job_id)  # it names the folder jobs/<job_id>/ of the project
        except ValueError as e:
            from ..types import WorkstationError

            raise WorkstationError(str(e)) from None
        with self._lock:
            now = _now()
            exists = self.con.execute("SELECT 1 FROM jobs WHERE job_id=?", [job_id]).fetchone()
            if exists:
                self.con.execute("UPDATE jobs SET status=?, done=?, total=?, message=?, updated_at=? "
                                 "WHERE job_id=?", [status, done, total, message, now, job_id])
            else:
                self.con.execute("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 [job_id, kind, dumps(spec), status, now, now, done, total,
                                  message])

    def remove(self, job_id: str) -> None:
        """Forget a job's record (its folder is the caller's to remove)."""
        self._check_writable()
        with self._lock:
            self.con.execute("DELETE FROM jobs WHERE job_id = ?", [str(job_id)])

    def all(self) -> list[dict[str, Any]]:
        rows = self.con.execute("SELECT job_id, kind, spec, status, created_at, updated_at, done, total, message "
                                "FROM jobs ORDER BY created_at").fetchall()
        return [{"job_id": r[0], "kind": r[1], "spec": json.loads(r[2] or "{}"), "status": r[3],
                 "created_at": r[4], "updated_at": r[5], "done": r[6], "total": r[7], "message": r[8]}
                for r in rows]
