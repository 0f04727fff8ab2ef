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


def test_compaction_rewrites_the_partitions_of_several_files_alone(tmp_path: Path) -> None:
    """A partition that holds what one write makes of it (one file, two for a SPLIT table) keeps
    its files; one of several files becomes one; the rows are the same; compacting a compacted
    lake makes no lake commit. (Each table was rewritten whole, every partition of it, on a
    connection without a memory limit: 2.1 GB for a lake of 1M runs.)"""
    import json

    from test_crash_safety import lake_state

    from kindex_olap.lake.store import Lake
    from kindex_olap.lake.tables import SPLIT, partition_values

    lake = tmp_path / "lake"
    ingest([write_jsonl(300, tmp_path / "first.jsonl")], lake)
    # the next ingest's runs are of one year: that year's runs partition gets a second file
    lines = write_jsonl(300, tmp_path / "more.jsonl", start=300).read_text().splitlines()
    later = [line for line in lines if json.loads(line)["run"]["spec"]["observedAt"] < "2025"]
    (tmp_path / "later.jsonl").write_text("\n".join(later) + "\n")
    ingest([tmp_path / "later.jsonl"], lake)

    def by_partition(snapshot_tables: dict[str, list[str]]) -> dict[tuple[str, str], set[str]]:
        held: dict[tuple[str, str], set[str]] = {}
        for table, files in snapshot_tables.items():
            for path in files:
                values = partition_values(Path(path).relative_to(lake / table))
                held.setdefault((table, str(sorted(values.items()))), set()).add(path)
        return held

    before, state = Lake(lake).snapshot(), lake_state(lake)
    report = compact(lake)
    after = Lake(lake).snapshot()
    assert lake_state(lake) == state
    old, new = by_partition(before.tables), by_partition(after.tables)
    several = {key for key, files in old.items() if len(files) > (2 if key[0] in SPLIT else 1)}
    assert ("runs", str([("source", "liger-kernel-bench"), ("year", "2024")])) in several
    for key, files in old.items():
        if key in several:
            assert len(new[key]) <= (2 if key[0] in SPLIT else 1), key
            assert not new[key] & files, key
        else:
            assert new[key] == files, key  # not rewritten
    assert report.files_after == {t: len(after.tables.get(t, [])) for t in TABLES}
    assert compact(lake).snapshot == after.id  # nothing left to compact
