"""What a project folder holds, by name: the store writes these, the output policy
(`util.outpaths`) protects them.

* `DB_NAME`, `WAL_NAME`: the project's database and its write-ahead log;
* `OWNED_FOLDERS`: folders only the program writes (`images/`: the samples' images, `jobs/`: each
  job's spec, inputs, result chunks and log);
* `OUTPUT_FOLDERS`: the project's own places for what the user asks to be written (exports,
  reports): the only places inside a project folder an output may go.
"""

from __future__ import annotations

DB_NAME = "project.duckdb"
WAL_NAME = DB_NAME + ".wal"
OWNED_FOLDERS: tuple[str, ...] = ("images", "jobs")
OUTPUT_FOLDERS: tuple[str, ...] = ("exports", "reports")

__all__ = ["DB_NAME", "OUTPUT_FOLDERS", "OWNED_FOLDERS", "WAL_NAME"]
