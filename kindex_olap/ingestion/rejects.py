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
# Rejects of at most this much text, all still in memory at the end, go to the writer as one
# JSON Lines file (`few`), read and sorted at once: no Parquet part, no single-threaded sort.
FEW_REJECT_BYTES = 8 * 1024 * 1024


class RejectSpill:
    """Rejects on their way to the rejects table, written to Parquet files in the staging folder
    every SPILL_REJECTS, so that memory stays bounded however many there are (4M rejects kept as
    objects took 5 GB). Each part goes out as JSON Lines (orjson) and DuckDB turns it into
    Parquet, with the rejects table's column types: not pyarrow, which an ingest that rejects
    one document would otherwise import (0.2-0.3 s) to write it; and not JSON Lines read at the
    end, which DuckDB could not sort under the rejects' memory limit (4M rejects)."""

    def __init__(self, folder: Path, connection: Any = None) -> None:
        self.folder = folder
        self.buffer: list[Reject] = []
        self.buffer_bytes = 0  # of the rejects' text in the buffer
        self.files: list[str] = []
        self._con: Any = None
        # The ingest's work database, when given: its own database instance cost 25-70 ms.
        self._connection = connection

    def add(self, rejects: list[Reject]) -> None:
        self.buffer.extend(rejects)
        self.buffer_bytes += sum(len(r.text) for r in rejects)
        if len(self.buffer) >= SPILL_REJECTS:
            self._spill()

    def few(self) -> str | None:
        """The rejects as one JSON Lines file (columns of the rejects table but rejected_at)
        when none was spilled and their text is at most FEW_REJECT_BYTES; else None (and
        `parts` has them). Adding 1k bundles that reject one spent 8-15 ms on a Parquet part
        and a single-threaded sort of it."""
        if self.files or not self.buffer or self.buffer_bytes > FEW_REJECT_BYTES:
            return None
        return str(self._write_lines())

    def parts(self) -> list[str]:
        """The Parquet files holding every reject (rejected_at is the writer's to set)."""
        self._spill()
        if self._con is not None:
            self._con.close()
            self._con = None
        return self.files

    def _spill(self) -> None:
        if not self.buffer:
            return
        lines = self._write_lines()
        path = str(self.folder / f"rejects-{len(self.files):06d}.parquet")
        self._convert(str(lines), path)
        lines.unlink()
        self.files.append(path)

    def _write_lines(self) -> Path:
        """The buffered rejects as JSON Lines (the buffer is emptied)."""
        import orjson

        lines = self.folder / "rejects.ndjson"
        with open(lines, "wb") as handle:
            for r in self.buffer:
                text = r.text.decode("utf-8", errors="replace")
                row = {"source_file": r.source_file, "line": r.line, "reason": r.reason}
                handle.write(orjson.dumps({**row, "text": text}) + b"\n")
        self.buffer, self.buffer_bytes = [], 0
        return lines

    def _convert(self, lines: str, path: str) -> None:
        """JSON Lines of rejects -> Parquet, typed as the rejects table (rejected_at NULL)."""
        import duckdb

        from kindex_olap.ingestion.writer import json_rows_sql

        if self._con is None and self._connection is not None:
            self._con = self._connection.cursor()
            self._con.execute("SET VARIABLE ingested_at = NULL").fetchall()
        if self._con is None:
            self._con = duckdb.connect()
            self._con.execute("SET threads = 1").fetchall()
            self._con.execute("SET VARIABLE ingested_at = NULL").fetchall()
        self._con.execute("SET VARIABLE reject_lines = ?", [lines]).fetchall()
        select = json_rows_sql("rejects", "getvariable('reject_lines')", "rejected_at")
        self._con.sql(select).write_parquet(path)


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
