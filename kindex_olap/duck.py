"""kindex's DuckDB connections: the one place for what every one of them needs.

DuckDB draws a progress bar on stdout for a statement that runs over two seconds, even when
stdout is not a terminal: "99%" inside `kindex query -f csv`'s rows or an ingest's JSON report.
Every connection kindex opens has it off.
"""

from __future__ import annotations

from typing import Any

import duckdb


def connect(
    database: str = ":memory:", *, read_only: bool = False, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to `database` without a progress bar (a connection's own setting:
    DuckDB refuses it in `config`)."""
    con = duckdb.connect(database, read_only=read_only, config=config or {})
    con.execute("SET enable_progress_bar = false").fetchall()
    return con
