"""Making a folder a lake: an empty Delta table and an empty Parquet file per table, and the
format file (kindex-lake.json). Called by writers while they hold the lock (`lake.recovery`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kindex_olap.atomic import write_atomic
from kindex_olap.errors import DAMAGED_LAKE_HINT, ConfigError, LakeError
from kindex_olap.lake.empty import write_empty_tables
from kindex_olap.lake.store import FORMAT_FILE, FORMAT_VERSION, Lake, delta_error, delta_failure
from kindex_olap.lake.tables import PARTITIONED
from kindex_olap.schema import TABLES


def check_new_lake_folder(lake: Lake) -> None:
    """Refuse to make a folder that holds other things a lake: its tables would land among a
    user's files (`--lake ~` wrote 24 folders beside them), and `kindex vacuum` deletes what a
    table folder holds that no lake commit names. A new or empty folder, a lake, or one whose
    creation was cut short (its table folders and _kindex only) is taken; hidden files too
    (.gitkeep keeps data/parquet in git)."""
    if lake.exists() or not lake.root.is_dir():
        return
    ours = {*TABLES, lake.meta.name}
    with os.scandir(lake.root) as entries:
        others = sorted(
            e.name for e in entries if e.name not in ours and not e.name.startswith(".")
        )
    if others:
        shown = ", ".join(repr(name) for name in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        raise ConfigError(
            f"lake path {lake.root} is not a lake and holds other files ({shown}{more})",
            hint="name a new or empty folder for the lake, e.g. --lake data/parquet",
        )


def create(lake: Lake) -> None:
    """Make the folder a lake (idempotent; call while holding the lock): an empty Delta
    table per table, an empty Parquet file per table, then the format file."""
    if lake.exists():
        lake.check_format()
    elif lake.root.exists() and not lake.root.is_dir():
        raise ConfigError(f"lake path {lake.root} exists and is not a folder")
    create_tables(lake, existing=lake.exists())
    if not lake.exists():
        write_format(lake.root, FORMAT_VERSION)


def create_tables(lake: Lake, existing: bool = False) -> None:
    """A Delta table (version 0, no files) for every table that has none yet. In an
    `existing` lake, a table whose data files or lake commits are there without its log
    has lost it: creating it afresh would hide every run committed before (and `kindex
    vacuum` would then delete their files), so that is refused."""
    from deltalake import CommitProperties, Schema
    from deltalake.transaction import create_table_with_add_actions

    from kindex_olap.schema import arrow_schema

    write_empty_tables(lake.meta / "empty")
    for table in TABLES:
        path = lake.table_path(table)
        if (path / "_delta_log").is_dir() and any((path / "_delta_log").glob("*.json")):
            continue
        if existing and (table == "runs" or any(path.rglob("*.parquet"))):
            # runs' log is the lake's log: an existing lake always has it
            raise LakeError(
                f"{path / '_delta_log'} holds no Delta commit, but the lake has "
                f"{'lake commits' if table == 'runs' else 'data files'} of {table}",
                hint=DAMAGED_LAKE_HINT,
            )
        path.mkdir(parents=True, exist_ok=True)
        try:
            create_table_with_add_actions(
                str(path),
                Schema.from_arrow(arrow_schema(table)),
                [],
                mode="error",
                partition_by=PARTITIONED.get(table),
                name=table,
                commit_properties=CommitProperties(custom_metadata={"kindex.commit": "0"}),
            )
        except delta_error() as e:
            raise delta_failure(e, f"cannot create the Delta table {path}", path) from e


def write_format(root: Path, version: int) -> None:
    text = json.dumps({"format": version, "tool": "kindex-olap", "tables": "delta"}, indent=2)
    write_atomic(root / FORMAT_FILE, (text + "\n").encode())
