"""The lake as Delta Lake tables: other engines read what kindex reads, lake commits and time
travel, vacuum, and the migration of a lake written by the pre-Delta kindex."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from realdata import KERNELINDEX_SLICES
from synthetic import write_jsonl

from kindex_olap.errors import LakeError
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.compact import compact, vacuum
from kindex_olap.lake.store import TABLES, Lake
from kindex_olap.query.engine import connect
from kindex_olap.schema import arrow_schema, column_types, rows_to_arrow

FIXTURES = Path(__file__).parent / "fixtures"
KERNELINDEX_EXPORT = KERNELINDEX_SLICES[1]  # the kernels-only export (its slice in tests/data)
# What a speedup is computed from: the comparability keys and the latency statistics.
RUN_COLUMNS = (
    "run_id, kernel, pass, provider, environment_digest, workload_digest, protocol_digest, "
    "implementation_digest, metric, statistic, unit, value, latency_median_ns, latency_p20_ns, "
    "latency_p80_ns, observed_at, source, year"
)
MEASUREMENT_COLUMNS = "run_id, metric, statistic, unit, value, origin, source, year"


def kindex(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "kindex_olap", *args], capture_output=True, text=True
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


# -- every engine reads what kindex reads -----------------------------------------------------


def kindex_rows(lake: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = connect(lake)
    try:
        return {
            "runs": con.execute(f"SELECT {RUN_COLUMNS} FROM runs ORDER BY run_id").fetchall(),
            "measurements": con.execute(
                f"SELECT {MEASUREMENT_COLUMNS} FROM measurements ORDER BY ALL"
            ).fetchall(),
        }
    finally:
        con.close()


def polars_rows(lake: Path) -> dict[str, list[tuple[Any, ...]]]:
    import polars as pl

    def read(table: str, columns: str) -> list[tuple[Any, ...]]:
        names = [c.strip() for c in columns.split(",")]
        frame = pl.scan_delta(str(lake / table)).select(names).collect()
        return sorted(frame.rows(), key=_order)

    return {
        "runs": read("runs", RUN_COLUMNS),
        "measurements": read("measurements", MEASUREMENT_COLUMNS),
    }


def query_builder_rows(lake: Path) -> dict[str, list[tuple[Any, ...]]]:
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    def read(table: str, columns: str) -> list[tuple[Any, ...]]:
        builder = QueryBuilder().register(table, DeltaTable(str(lake / table)))
        result = pa.table(builder.execute(f"SELECT {columns} FROM {table}").read_all())
        return sorted(zip(*(c.to_pylist() for c in result.columns), strict=True), key=_order)

    return {
        "runs": read("runs", RUN_COLUMNS),
        "measurements": read("measurements", MEASUREMENT_COLUMNS),
    }


def duckdb_file_list_rows(lake: Path) -> dict[str, list[tuple[Any, ...]]]:
    """DuckDB over the Delta log's file list, as any user would read it (hive partitioning)."""
    from deltalake import DeltaTable

    def read(table: str, columns: str, order: str) -> list[tuple[Any, ...]]:
        files = DeltaTable(str(lake / table)).file_uris()
        sql = f"SELECT {columns} FROM read_parquet(?, hive_partitioning = true) ORDER BY {order}"
        return duckdb.execute(sql, [files]).fetchall()

    return {
        "runs": read("runs", RUN_COLUMNS, "run_id"),
        "measurements": read("measurements", MEASUREMENT_COLUMNS, "ALL"),
    }


def _order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, v if v is not None else 0) for v in row)


def assert_every_engine_agrees(lake: Path) -> int:
    expected = kindex_rows(lake)
    expected["measurements"] = sorted(expected["measurements"], key=_order)
    assert expected["runs"] and expected["measurements"]
    for name, read in [
        ("polars", polars_rows),
        ("deltalake QueryBuilder", query_builder_rows),
        ("DuckDB over the Delta file list", duckdb_file_list_rows),
    ]:
        seen = read(lake)
        seen["measurements"] = sorted(seen["measurements"], key=_order)
        seen["runs"] = sorted(seen["runs"], key=_order)
        for table in ("runs", "measurements"):
            assert len(seen[table]) == len(expected[table]), (name, table)
            assert seen[table] == sorted(expected[table], key=_order), (name, table)
    return len(expected["runs"])


@pytest.mark.slow
def test_other_engines_read_what_kindex_reads(liger_history_lake: Path, tmp_path: Path) -> None:
    """After imports, a second overlapping ingest, compaction and vacuum."""
    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    lake = tmp_path / "lake"
    shutil.copytree(liger_history_lake, lake)
    import_kernelindex(str(KERNELINDEX_EXPORT), raw_dir=tmp_path / "ki", lake=lake)
    imported = assert_every_engine_agrees(lake)
    ingest([write_jsonl(1500, tmp_path / "a.jsonl", start=0)], lake)
    report = ingest([write_jsonl(1500, tmp_path / "b.jsonl", start=1000)], lake)
    assert report.duplicates == 500
    assert assert_every_engine_agrees(lake) == imported + 1499 + 999
    compact(lake)
    assert assert_every_engine_agrees(lake) == imported + 1499 + 999
    vacuum(lake, retain_hours=0)
    assert assert_every_engine_agrees(lake) == imported + 1499 + 999
    assert files_on_disk(lake) == files_in_logs(lake)


def files_on_disk(lake: Path) -> set[str]:
    return {str(p) for t in TABLES for p in (lake / t).rglob("*.parquet")}


def files_in_logs(lake: Path) -> set[str]:
    from deltalake import DeltaTable

    return {uri for t in TABLES for uri in DeltaTable(str(lake / t)).file_uris()}


def test_partition_folder_names_are_what_duckdb_writes_and_reads(tmp_path: Path) -> None:
    """kindex names partition folders, and reads values back from DuckDB's folders, exactly
    as DuckDB's hive partitioning spells them (sources are plain today; this keeps any value)."""
    from kindex_olap.lake.transaction import partition_folder, partition_values

    values = ["liger-kernel-bench", "lab/é 100%=x", "a b", None]
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT unnest(?) AS source, 1 AS n", [values])
    con.sql("SELECT * FROM t").write_parquet(str(tmp_path / "out"), partition_by=["source"])
    for path in (tmp_path / "out").rglob("*.parquet"):
        value = partition_values(path.relative_to(tmp_path / "out"))["source"]
        assert value in values
        assert path.parent.name == f"source={partition_folder(value)}"
        hive = "SELECT source FROM read_parquet(?, hive_partitioning = true)"
        assert con.execute(hive, [str(path)]).fetchall() == [(value,)]


def test_append_partitioned_writes_in_place_what_write_relation_writes(tmp_path: Path) -> None:
    """Ingest's runs and measurements go straight into their partition folders: one file per
    partition, in the folder `partition_folder` names, without the partition columns, sorted,
    and each call in a transaction returns only its own files."""
    from kindex_olap.lake.transaction import (
        Transaction,
        append_partitioned,
        partition_folder,
        partition_values,
        transaction,
    )

    values = ["liger-kernel-bench", "lab/é 100%=x", "a b", None]
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE m AS SELECT v AS source, 2025 AS year, 'r' || i::VARCHAR AS run_id, "
        "'latency' AS metric FROM unnest(?) AS t(v), range(3) AS r(i)",
        [values],
    )
    with transaction(Lake(tmp_path / "lake")) as tx:
        assert isinstance(tx, Transaction)
        first = append_partitioned(
            tx, "measurements", con.sql("SELECT * FROM m ORDER BY run_id DESC")
        )
        second = append_partitioned(tx, "measurements", con.sql("SELECT * FROM m LIMIT 1"))
        written = tx.written("measurements")
    assert (first, second) == (len(values), 1) and len(written) == len(values) + 1
    root = tmp_path / "lake" / "measurements"
    for path in written[: len(values)]:
        found = partition_values(path.relative_to(root))
        assert path.parent == root / f"source={partition_folder(found['source'])}" / "year=2025"
        assert path.name.startswith(f"part-{tx.id:08d}-{tx.token}-")
        rows = con.execute("SELECT * FROM read_parquet(?, hive_partitioning = false)", [str(path)])
        assert [d[0] for d in rows.description] == ["run_id", "metric"]
        assert rows.fetchall() == [(f"r{i}", "latency") for i in range(3)]
    assert {partition_values(p.relative_to(root))["source"] for p in written} == set(values)


# -- lake commits and time travel -------------------------------------------------------------


@pytest.fixture(scope="module")
def three_ingests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three ingests of 100, 50 and 20 runs, with a moment between the first and second."""
    root = tmp_path_factory.mktemp("time-travel")
    lake = root / "lake"
    ingest([write_jsonl(100, root / "a.jsonl", start=0)], lake)
    time.sleep(1.1)
    between = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    time.sleep(1.1)
    ingest([write_jsonl(50, root / "b.jsonl", start=100)], lake)
    ingest([write_jsonl(20, root / "c.jsonl", start=150)], lake)
    return {"root": root, "lake": lake, "between": between}


def count_runs(lake: Path, *as_of: str) -> int:
    done = kindex("sql", "--lake", str(lake), *as_of, "-f", "csv", "SELECT count(*) FROM runs")
    return int(done.stdout.splitlines()[1])


@pytest.mark.slow
def test_as_of_reads_an_earlier_lake_commit(three_ingests: dict[str, Any]) -> None:
    lake = three_ingests["lake"]
    # 1 in 1000 synthetic bundles is broken (number 999): none of these
    assert count_runs(lake, "--as-of", "1") == 100
    assert count_runs(lake, "--as-of", three_ingests["between"]) == 100
    assert count_runs(lake, "--as-of", f"{three_ingests['between']}Z") == 100
    assert count_runs(lake, "--as-of", "2") == 150
    assert count_runs(lake) == count_runs(lake, "--as-of", "3") == 170


@pytest.mark.slow
def test_as_of_on_query_shell_db_and_export(three_ingests: dict[str, Any]) -> None:
    lake, root = three_ingests["lake"], three_ingests["root"]
    first = Lake(lake).snapshot("1")
    newest = Lake(lake).snapshot()
    init = kindex("shell", "--lake", str(lake), "--sql-file", "--as-of", "1").stdout
    assert all(f in init for f in first.files("runs"))
    assert not all(f in init for f in newest.files("runs"))
    db = root / "one.duckdb"
    kindex("db", str(db), "--lake", str(lake), "--as-of", "1", "--force")
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(100,)]
    con.close()
    kindex("export", "--out", str(root / "export"), "--lake", str(lake), "--as-of", "1")
    assert "Lake commit 1;" in (root / "export" / "README.md").read_text()
    runs = duckdb.execute(
        "SELECT count(*) FROM read_parquet(?)", [str(root / "export" / "runs.parquet")]
    )
    assert runs.fetchall() == [(100,)]
    done = kindex("query", "--lake", str(lake), "--as-of", "1", "-f", "csv", "runs")
    assert len(done.stdout.splitlines()) == 1 + 100


@pytest.mark.slow
def test_as_of_a_commit_that_does_not_exist_says_so(three_ingests: dict[str, Any]) -> None:
    lake = str(three_ingests["lake"])
    done = kindex("sql", "--lake", lake, "--as-of", "7", "SELECT 1", check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --as-of 7: the lake has no commit 7")
    done = kindex("sql", "--lake", lake, "--as-of", "2001-01-01", "SELECT 1", check=False)
    assert (done.returncode, done.stderr.count("\n")) == (2, 1)
    assert "no commit at or before it" in done.stderr
    done = kindex("sql", "--lake", lake, "--as-of", "last week", "SELECT 1", check=False)
    assert done.returncode == 2 and "neither a lake commit number nor a timestamp" in done.stderr


@pytest.mark.slow
def test_log_lists_the_lake_commits(three_ingests: dict[str, Any]) -> None:
    done = kindex("log", "--lake", str(three_ingests["lake"]), "-f", "json")
    commits = json.loads(done.stdout)
    assert [c["commit"] for c in commits] == [1, 2, 3]
    assert [c["runs_added"] for c in commits] == [100, 50, 20]
    assert all(c["operation"] == "ingest" for c in commits)
    # each table's Delta version, runs committed last in each lake commit
    assert [c["versions"]["runs"] for c in commits] == [1, 2, 3]
    assert set(commits[0]["versions"]) == set(TABLES)
    table = kindex("log", "--lake", str(three_ingests["lake"])).stdout
    assert max(len(line) for line in table.splitlines()) <= 100


@pytest.mark.slow
def test_every_delta_commit_names_its_lake_commit(three_ingests: dict[str, Any]) -> None:
    from deltalake import DeltaTable

    for table in ("runs", "measurements", "ingested_files"):
        history = DeltaTable(str(three_ingests["lake"] / table)).history()
        numbers = sorted(int(h["kindex.commit"]) for h in history)
        assert numbers == [0, 1, 2, 3], table
        assert all(len(h.get("kindex.ingest_id", "x" * 12)) == 12 for h in history)


# -- the schemas, from sql/schema/tables.sql, in one place -----------------------------------


def test_column_types_read_from_the_sql_text_match_duckdb() -> None:
    con = duckdb.connect()
    from kindex_olap.sqlfiles import read_sql

    con.execute(read_sql("schema/tables.sql"))
    for table in TABLES:
        described = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {table}").fetchall()]
        parsed = column_types()[table]
        assert [name for name, _ in parsed] == [name for name, _ in described], table
        for (name, kind), (_, duck) in zip(parsed, described, strict=True):
            assert con.execute(f"SELECT NULL::{kind}").description is not None, name
            typed = con.execute(f"SELECT typeof(NULL::{kind})").fetchall()[0][0]
            assert typed == duck, (table, name)
        assert arrow_schema(table).names == [name for name, _ in parsed]


def test_a_misspelled_row_key_is_an_error_not_a_null() -> None:
    row = {"source_file": "a.json", "line": 1, "reason": "bad", "txt": "oops"}
    with pytest.raises(LakeError, match=r"unknown column\(s\) \['txt'\]"):
        rows_to_arrow("rejects", [row])
    good = rows_to_arrow("environments", [{"environment_digest": "d", "libraries": {"a": "1"}}])
    assert good.column("libraries").to_pylist() == [[("a", "1")]]


def test_a_query_reads_the_cached_file_lists_without_delta_rs(
    three_ingests: dict[str, Any], tmp_path: Path
) -> None:
    """The cold path: a writer caches each lake commit's file lists, so a query imports no
    delta-rs; without the cache (another tool's commit) it reads the Delta logs, same answer."""
    code = (
        "import sys; from kindex_olap.query.engine import connect\n"
        "n = connect(sys.argv[1]).execute('SELECT count(*) FROM runs').fetchall()[0][0]\n"
        "print(n, 'deltalake' in sys.modules)\n"
    )
    lake = three_ingests["lake"]
    cached = subprocess.run([sys.executable, "-c", code, str(lake)], capture_output=True, text=True)
    assert cached.stdout.split() == ["170", "False"], cached.stderr
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    shutil.rmtree(copy / "_kindex" / "files")
    logs = subprocess.run([sys.executable, "-c", code, str(copy)], capture_output=True, text=True)
    assert logs.stdout.split() == ["170", "True"], logs.stderr


def test_a_serving_runs_file_that_is_not_one_is_refused(tmp_path: Path, tmp_lake: Path) -> None:
    from kindex_olap.errors import IngestError

    duckdb.sql("SELECT 'x' AS run_digest, 1 AS bogus").write_parquet(
        str(tmp_path / "x.serving_runs.parquet")
    )
    with pytest.raises(IngestError, match=r"not a serving_runs file .*'bogus'"):
        ingest([tmp_path / "x.serving_runs.parquet"], tmp_lake)
    assert Lake(tmp_lake).snapshot().id == 0
