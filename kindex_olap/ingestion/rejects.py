"""What ingest keeps aside: rejects on their way to the rejects table, with bounded memory, and
the committed rejects read back (`kindex rejects`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kindex_olap.ingestion.stage import Reject
from kindex_olap.lake.store import Lake, resolve_lake

SPILL_REJECTS = 20_000  # rejects held in memory before they go to a Parquet file


class RejectSpill:
    """Rejects on their way to the rejects table, written to Parquet files in the staging folder
    every SPILL_REJECTS, so that memory stays bounded however many there are (4M rejects kept as
    objects took 5 GB)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.buffer: list[Reject] = []
        self.files: list[str] = []

    def add(self, rejects: list[Reject]) -> None:
        self.buffer.extend(rejects)
        if len(self.buffer) >= SPILL_REJECTS:
            self._spill()

    def parts(self) -> list[str]:
        """The Parquet files holding every reject (rejected_at is the writer's to set)."""
        self._spill()
        return self.files

    def _spill(self) -> None:
        if not self.buffer:
            return
        import pyarrow.parquet as pq

        from kindex_olap.schema import rows_to_arrow

        rows = [
            {
                "source_file": r.source_file,
                "line": r.line,
                "reason": r.reason,
                "text": r.text.decode("utf-8", errors="replace"),
            }
            for r in self.buffer
        ]
        path = str(self.folder / f"rejects-{len(self.files):06d}.parquet")
        pq.write_table(rows_to_arrow("rejects", rows), path)
        self.files.append(path)
        self.buffer = []


def iter_rejects(lake: str | os.PathLike[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rejects table of the committed snapshot, newest first."""
    import duckdb

    from kindex_olap.lake.tables import read_table

    root, _ = resolve_lake(lake)
    snapshot = Lake(root).snapshot()
    con = duckdb.connect()
    rejects = read_table(con, "rejects", snapshot.files("rejects"))
    cursor = rejects.select("source_file, line, reason, text, rejected_at").order(
        "rejected_at DESC, source_file, line"
    )
    columns = cursor.columns
    for row in cursor.fetchall():
        yield dict(zip(columns, row, strict=True))
