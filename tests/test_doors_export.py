"""`kindex export` (kindex_olap.doors.export) on Liger's real history: Parquet and CSV files whose
columns match their README dictionary and kindex query, read without kindex, sorted for pruning."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_doors_shell import QUERY, assert_same_speedups, by_key, invoke, query_rows

from kindex_olap.doors.export import ExportFormat
from kindex_olap.query.engine import connect

pytestmark = pytest.mark.slow


@pytest.fixture
def lake(liger_history_lake: Path) -> Path:
    """Liger's whole benchmark history (conftest), under the name these tests use."""
    return liger_history_lake


# Runs in a fresh interpreter: reads the export with polars and pyarrow, and kindex never loads.
READER = textwrap.dedent(
    """
    import json, re, sys
    from pathlib import Path
    import polars as pl
    import pyarrow.parquet as pq

    folder = Path(sys.argv[1])
    readme = (folder / "README.md").read_text()
    out = {"readme": {}}
    for name in ("speedups", "runs"):
        section = readme.split(f"## {name}.parquet", 1)[1].split("\\n## ", 1)[0]
        rows = re.findall(r"^\\| ([a-zA-Z_0-9]+) \\| (.+?) \\|", section, re.M)
        out["readme"][name] = rows[1:]  # after the header row
        frame = pl.read_parquet(folder / f"{name}.parquet")
        table = pq.read_table(folder / f"{name}.parquet")
        meta = pq.ParquetFile(folder / f"{name}.parquet").metadata
        kernel = table.schema.names.index("kernel")
        out[name] = {
            "polars": frame.columns,
            "pyarrow": table.schema.names,
            "rows": frame.to_dicts() if name == "speedups" else frame.height,
            "codecs": sorted({meta.row_group(i).column(c).compression
                              for i in range(meta.num_row_groups)
                              for c in range(meta.num_columns)}),
            "kernel_ranges": [[meta.row_group(i).column(kernel).statistics.min,
                               meta.row_group(i).column(kernel).statistics.max]
                              for i in range(meta.num_row_groups)],
        }
    assert not any(m.startswith("kindex") for m in sys.modules), "kindex must not load"
    print(json.dumps(out, default=str))
    """
)


def read_export(folder: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", READER, str(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_exported_parquet_matches_its_dictionary_and_kindex_query(
    lake: Path, tmp_path: Path
) -> None:
    invoke("export", "--out", str(tmp_path / "x"), QUERY, "--lake", str(lake))
    read = read_export(tmp_path / "x")
    for name in ("speedups", "runs"):
        dictionary = [column for column, _ in read["readme"][name]]
        assert read[name]["polars"] == read[name]["pyarrow"] == dictionary
        assert read[name]["codecs"] == ["ZSTD"]
    plain = {"gpu", "kernel", "pass", "shape", "candidate_name", "baseline_name", "axis_tokens"}
    assert plain <= set(read["speedups"]["polars"])
    expected = query_rows(lake)
    assert_same_speedups(read["speedups"]["rows"], expected)
    ms = {k: r["candidate_ms"] for k, r in by_key(expected).items()}
    for key, row in by_key(read["speedups"]["rows"]).items():
        assert row["candidate_ns"] / 1e6 == pytest.approx(ms[key])
    assert read["runs"]["rows"] == len(query_rows(lake, "runs jsd b200"))


def test_full_export_is_sorted_for_row_group_pruning(lake: Path, tmp_path: Path) -> None:
    invoke("export", "--out", str(tmp_path / "all"), "--lake", str(lake))
    read = read_export(tmp_path / "all")
    with connect(lake) as con:
        total = con.execute("SELECT count(*) FROM speedups").fetchone()
    assert len(read["speedups"]["rows"]) == (total or [0])[0]
    ranges = read["speedups"]["kernel_ranges"]
    assert len(ranges) > 1
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    # every column documented with a type and a meaning
    readme = (tmp_path / "all" / "README.md").read_text()
    assert "## Comparability rule" in readme and "protocol digest" in readme
    assert not re.search(r"^\| \w+ \| [^|]+ \| [^|]* \|\s*\|$", readme, re.M)


def test_csv_export_has_the_dictionary_columns(lake: Path, tmp_path: Path) -> None:
    invoke(
        "export", "-o", str(tmp_path / "c"), "summary b200", "--format", "csv", "--lake", str(lake)
    )
    header = (tmp_path / "c" / "speedups.csv").read_text().splitlines()[0].split(",")
    readme = (tmp_path / "c" / "README.md").read_text()
    section = readme.split("## speedups.csv", 1)[1].split("\n## ", 1)[0]
    assert header == re.findall(r"^\| ([A-Za-z_0-9]+) \|", section, re.M)[1:]
    assert {f.value for f in ExportFormat} == {"parquet", "csv"}


def test_an_export_computes_under_its_memory_limit_and_leaves_only_its_files(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The export's DuckDB holds at most MEMORY_LIMIT and spills the rest into a folder of the
    export's own, removed at the end (without a limit, an export of 1M runs peaked at 3.7 GB):
    a limit far below what the export needs stops it, said as DuckDB's out-of-memory error."""
    from kindex_olap.doors import export as exporting
    from kindex_olap.errors import QueryError

    done = exporting.export(tmp_path / "whole", None, lake)
    assert sorted(p.name for p in (tmp_path / "whole").iterdir()) == [
        "README.md",
        "runs.parquet",
        "speedups.parquet",
    ]
    with connect(lake) as con:
        counted = con.execute("SELECT count(*) FROM speedups").fetchone()
    assert done.files[0].rows == (counted or [0])[0]
    monkeypatch.setattr(exporting, "MEMORY_LIMIT", "1MB")
    with pytest.raises(QueryError, match="Out of Memory"):
        exporting.export(tmp_path / "starved", None, lake)
    assert not (tmp_path / "starved" / exporting.SPILL_FOLDER).exists()
