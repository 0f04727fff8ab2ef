"""The empty Parquet file of each table (its columns, no rows), read where a lake commit lists
no data file of the table. Apart from lake.create so that the read side (lake.store) can make
them again without importing the write side."""

from __future__ import annotations

from pathlib import Path

from kindex_olap.atomic import atomic_path
from kindex_olap.schema import TABLES


def write_empty_tables(folder: Path, again: tuple[str, ...] = ()) -> None:
    """One empty Parquet file per table (all its columns), for views over a table without data;
    those of the tables `again` written again (a full build of the layers: their columns may
    have changed since the lake was created)."""
    tables = [t for t in TABLES if t in again or not (folder / f"{t}.parquet").is_file()]
    if not tables:
        return
    import duckdb

    from kindex_olap.sqlfiles import read_sql

    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        con.execute(read_sql("schema/tables.sql"))
        for table in tables:
            with atomic_path(folder / f"{table}.parquet") as tmp:
                con.table(table).write_parquet(str(tmp), compression="zstd")
    finally:
        con.close()
