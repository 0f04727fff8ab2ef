"""`kindex migrate`: a pre-Delta (format 1) lake is refused until migrated, keeps every row, and a
killed migration leaves the old lake as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import SEEDS, BundleFactory, seed_text
from test_delta_lake import FIXTURES, files_in_logs, files_on_disk, kindex

from kindex_olap.errors import LakeError
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.store import Lake
from kindex_olap.query.engine import connect


def legacy_rows(lake: Path) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    """The tables of a format-1 lake as the pre-Delta kindex read them: columns and rows."""
    current = int((lake / "_kindex" / "CURRENT").read_text())
    body = json.loads((lake / "_kindex" / "snapshots" / f"{current:08d}.json").read_text())
    con = duckdb.connect()
    out = {}
    for table, files in body["tables"].items():
        if files:
            paths = [str(lake / f) for f in files]
            cursor = con.execute(
                "SELECT * FROM read_parquet(?, union_by_name = true) ORDER BY ALL", [paths]
            )
            rows = cursor.fetchall()
            out[table] = ([d[0] for d in cursor.description or []], rows)
    return out


@pytest.mark.slow
def test_a_pre_delta_lake_is_refused_then_migrated(
    tmp_path: Path, make_bundle: BundleFactory
) -> None:
    lake = tmp_path / "lake"
    shutil.copytree(FIXTURES / "lake-v1", lake)
    before = legacy_rows(lake)
    assert len(before["runs"][1]) == 4 and len(before["rejects"][1]) == 2
    refused = kindex("sql", "--lake", str(lake), "SELECT 1", check=False)
    assert refused.returncode == 3
    assert "pre-Delta format" in refused.stderr and "kindex migrate" in refused.stderr
    with pytest.raises(LakeError, match="pre-Delta"):
        ingest([SEEDS], lake)
    done = kindex("migrate", "--lake", str(lake))
    assert "migrated" in done.stderr and "4 runs" in done.stderr
    assert "layers built" in done.stderr  # the stored noise model, a lake commit of its own
    con = connect(lake)
    for table, (columns, rows) in before.items():  # every row and value kept, rejects' text
        # the format-1 columns (columns added since, e.g. runs.samples, are NULL there)
        listed = ", ".join(f'"{c}"' for c in columns)
        after = con.execute(f"SELECT {listed} FROM {table} ORDER BY ALL").fetchall()
        assert after == rows, table
    con.close()
    assert not (lake / "_kindex" / "snapshots").exists()
    assert files_on_disk(lake) == files_in_logs(lake)
    # the migrated lake goes on: its ingested files are known, a new run lands
    assert ingest([SEEDS], lake).runs_added == 0
    (tmp_path / "new.txt").write_text(seed_text("New", make_bundle(variant=7)))
    assert ingest([tmp_path / "new.txt"], lake).runs_added == 1
    assert [c.operation for c in Lake(lake).log()] == ["migrate", "layers", "ingest"]
    again = kindex("migrate", "--lake", str(lake), check=False)
    assert again.returncode == 0 and "up to date" in again.stderr


@pytest.mark.slow
def test_a_killed_migration_leaves_a_pre_delta_lake_that_migrates_later(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    shutil.copytree(FIXTURES / "lake-v1", lake)
    before = legacy_rows(lake)
    env = {**os.environ, "KINDEX_CRASHPOINT": "commit:runs"}
    command = [sys.executable, "-m", "kindex_olap", "migrate", "--lake", str(lake)]
    assert subprocess.run(command, env=env, capture_output=True).returncode == -9
    assert legacy_rows(lake) == before  # still the old lake, readable by the old kindex
    kindex("migrate", "--lake", str(lake))
    con = connect(lake)
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(4,)]
    assert files_on_disk(lake) == files_in_logs(lake)
