"""Lake compaction and vacuum (kindex_olap.lake.compact): compacted files stay readable by an
older lake commit until vacuum removes them, when told."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic import write_jsonl
from test_delta_lake import count_runs, files_in_logs, files_on_disk, kindex

from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.compact import compact, vacuum
from kindex_olap.lake.store import TABLES


@pytest.mark.slow
def test_vacuum_keeps_recent_files_and_removes_old_ones_when_told(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for start in (0, 100):
        ingest([write_jsonl(100, tmp_path / f"{start}.jsonl", start=start)], lake)
    compact(lake)
    replaced = files_on_disk(lake) - files_in_logs(lake)
    assert replaced  # the files compaction replaced are still on disk
    assert vacuum(lake).removed == dict.fromkeys(TABLES, 0)  # 7 days by default
    assert count_runs(lake, "--as-of", "1") == 100
    done = kindex("vacuum", "--lake", str(lake), "--retain", "0")
    assert "removed" in done.stderr
    assert files_on_disk(lake) == files_in_logs(lake)
    assert count_runs(lake) == 200
    old = kindex("sql", "--lake", str(lake), "--as-of", "1", "SELECT 1", check=False)
    assert old.returncode == 3 and "can no longer be read" in old.stderr
