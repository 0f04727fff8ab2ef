"""`kindex import kernelindex` on the two real catalog exports (read from ../shared, never copied).

Expected counts are computed here independently of the importer, with DuckDB's JSON reader over
the decompressed export, and digests are recomputed from the export's manifests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
import zstandard

from kindex_olap.importers.kernelindex.convert import import_kernelindex
from kindex_olap.importers.kernelindex.report import KernelIndexImport
from kindex_olap.lake.store import Lake
from kindex_olap.model.canonical import document_digest

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

EXPORTS = Path(__file__).resolve().parents[2] / "shared/data/kernelindex"
WITH_SERVING = EXPORTS / "catalog-2026-08-16-0022af0b.jsonl.zst"
KERNELS_ONLY = EXPORTS / "catalog-2026-08-16-94af2ae7.jsonl.zst"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both exports imported, in order, into one lake."""
    tmp = tmp_path_factory.mktemp("kernelindex")
    lake = tmp / "lake"
    first = import_kernelindex(
        str(WITH_SERVING), raw_dir=tmp / "raw1", lake=lake, report_path=tmp / "first.jsonl"
    )
    second = import_kernelindex(
        str(KERNELS_ONLY), raw_dir=tmp / "raw2", lake=lake, report_path=tmp / "second.jsonl"
    )
    return {"tmp": tmp, "lake": lake, "first": first, "second": second}


@pytest.fixture(scope="module")
def export_db(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    """The 0022af0b export as DuckDB tables, read without the importer."""
    lines = tmp_path_factory.mktemp("export") / "export.jsonl"
    with open(WITH_SERVING, "rb") as src, open(lines, "wb") as out:
        zstandard.ZstdDecompressor().copy_stream(src, out)
    con = duckdb.connect()
    con.execute("SET VARIABLE lines = ?", [str(lines)])
    con.execute(
        "CREATE TABLE export AS SELECT * FROM read_json(getvariable('lines'), "
        "format = 'newline_delimited', columns = {'table': 'VARCHAR', 'row': 'JSON'})"
    )
    con.execute(
        "CREATE TABLE kernel_runs AS SELECT r.row AS row, s.row ->> 'slug' AS source, "
        "r.row ->> 'hardwareModel' AS gpu, r.row ->> 'runDigest' AS run_digest "
        "FROM export r JOIN export s ON s.table = 'sources' "
        "AND s.row ->> 'id' = r.row ->> 'sourceId' WHERE r.table = 'benchmark_runs'"
    )
    return con


def lake_con(lake: Path) -> duckdb.DuckDBPyConnection:
    """A connection with views of the lake's committed tables (runs, environments, ...)."""
    snapshot = Lake(lake).snapshot()
    con = duckdb.connect()
    for table in ("runs", "environments", "protocols", "workloads", "serving_runs"):
        con.execute("SET VARIABLE files = ?", [snapshot.files(table)])
        con.execute(
            f"CREATE TABLE {table} AS SELECT * FROM read_parquet(getvariable('files'))"
        )  # table names from the fixed tuple above
    return con


def counts(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, int]:
    return {key: n for key, n in con.execute(sql).fetchall()}


def test_runs_per_source_and_gpu_match_the_export(imported: dict[str, Any], export_db: Any) -> None:
    expected_sources = counts(export_db, "SELECT source, count(*) FROM kernel_runs GROUP BY 1")
    expected_gpus = counts(export_db, "SELECT gpu, count(*) FROM kernel_runs GROUP BY 1")
    assert sum(expected_sources.values()) == 7857
    report: KernelIndexImport = imported["first"]
    assert dict(report.runs_by_source) == expected_sources
    assert dict(report.runs_by_gpu) == expected_gpus
    lake = lake_con(imported["lake"])
    assert counts(lake, "SELECT source, count(*) FROM runs GROUP BY 1") == expected_sources
    by_gpu = "SELECT e.product, count(*) FROM runs r JOIN environments e USING (environment_digest) GROUP BY 1"
    assert counts(lake, by_gpu) == expected_gpus


def test_second_export_adds_no_kernel_runs(imported: dict[str, Any]) -> None:
    first, second = imported["first"].ingest, imported["second"].ingest
    assert (first.runs_added, first.rejected) == (7857, 0)
    assert (second.runs_added, second.duplicates, second.rejected) == (0, 7857, 0)
    assert second.dimensions_added == 0
    assert imported["second"].serving_runs == 0


def test_every_imported_run_digest_verifies(imported: dict[str, Any], export_db: Any) -> None:
    manifests = [
        json.loads(m)
        for (m,) in export_db.execute("SELECT row ->> 'manifest' FROM kernel_runs").fetchall()
    ]
    claimed = {d for (d,) in export_db.execute("SELECT run_digest FROM kernel_runs").fetchall()}
    assert {document_digest(b["run"]) for b in manifests} == claimed
    for bundle in manifests:
        spec = bundle["run"]["spec"]
        assert document_digest(bundle["protocol"]) == spec["protocolDigest"]
        assert document_digest(bundle["environment"]) == spec["environmentDigest"]
    lake = lake_con(imported["lake"])
    assert {r for (r,) in lake.execute("SELECT run_id FROM runs").fetchall()} == claimed
    assert "digest_mismatch" not in imported["first"].findings
    assert imported["first"].digests_checked == 3 * 7857 + 722


def test_broken_links_are_reported(imported: dict[str, Any], export_db: Any) -> None:
    expected = {
        row_id
        for (row_id,) in export_db.execute(
            "SELECT r.row ->> 'id' FROM kernel_runs r "
            "JOIN export w ON w.table = 'workloads' AND w.row ->> 'id' = r.row ->> 'workloadId' "
            "JOIN export i ON i.table = 'implementations' "
            "AND i.row ->> 'id' = r.row ->> 'implementationId' "
            "WHERE w.row ->> 'operationId' <> i.row ->> 'operationId'"
        ).fetchall()
    }
    assert len(expected) == 43
    assert imported["first"].findings["operation_mismatch"] == 43
    listed = [
        json.loads(line) for line in (imported["tmp"] / "first.jsonl").read_text().splitlines()
    ]
    mismatches = [f for f in listed if f["kind"] == "operation_mismatch"]
    assert {f["id"] for f in mismatches} == expected
    assert {f["source"] for f in mismatches} == {"flashinfer-bench"}
    lake = lake_con(imported["lake"])
    flagged = (
        "SELECT count(*) FROM runs WHERE labels['kernelindex_link_problem'] = 'operation_mismatch'"
    )
    assert lake.execute(flagged).fetchall() == [(43,)]


def test_serving_runs_stay_out_of_kernel_runs(imported: dict[str, Any]) -> None:
    lake = lake_con(imported["lake"])
    assert lake.execute(
        "SELECT count(*), count(DISTINCT run_digest) FROM serving_runs"
    ).fetchall() == [(722, 722)]
    assert lake.execute(
        "SELECT count(*) FROM runs WHERE source = 'mlperf-inference'"
    ).fetchall() == [(0,)]
    assert lake.execute(
        "SELECT bool_and(digest_verified), min(len(measurements)) FROM serving_runs"
    ).fetchall() == [(True, 1)]


def test_primary_statistics_are_what_the_sources_report(imported: dict[str, Any]) -> None:
    lake = lake_con(imported["lake"])
    rows = lake.execute(
        "SELECT source, metric, statistic, count(*) FROM runs GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert ("sol-execbench", "latency", "mean", 705) in rows
    assert {(m, s) for _, m, s, _ in rows} <= {
        ("latency", "mean"),
        ("score", "geomean"),
        ("score", "unspecified"),
        (None, None),
    }
    filled = "SELECT count(*) FROM runs WHERE statistic = 'mean' AND latency_mean_ns IS NULL"
    assert lake.execute(filled).fetchall() == [(0,)]


def test_workload_facets_name_the_operation(imported: dict[str, Any]) -> None:
    lake = lake_con(imported["lake"])
    rows = lake.execute(
        "SELECT DISTINCT operation, labels['family'], labels['source'] FROM workloads "
        "WHERE operation = 'causal_conv1d'"
    ).fetchall()
    assert rows == [("causal_conv1d", "conv", "gpumode-kernelbot")]
    passes = "SELECT count(*) FROM runs WHERE source = 'gpumode-kernelbot' AND pass IS NOT NULL"
    assert lake.execute(passes).fetchall() == [(0,)]


def test_reimport_leaves_raw_files_and_lake_unchanged(imported: dict[str, Any]) -> None:
    again = import_kernelindex(
        str(KERNELS_ONLY), raw_dir=imported["tmp"] / "raw2", lake=imported["lake"]
    )
    assert (again.files_written, again.files_unchanged) == (0, 6)
    assert again.ingest is not None
    assert (again.ingest.files_read, again.ingest.runs_added) == (0, 0)


def test_an_export_lands_in_one_snapshot(imported: dict[str, Any]) -> None:
    """Kernel runs and serving runs of one import are committed together (a killed import
    leaves neither), in the ingest's snapshot; the second export adds no run of either kind
    (its snapshot records the files it read)."""
    first, second = imported["first"], imported["second"]
    assert first.ingest.snapshot == 1 and first.serving_added == 722
    lake = Lake(imported["lake"])
    one, two = lake.snapshot(as_of="1"), lake.snapshot(as_of="2")
    assert one.files("runs") and one.files("serving_runs")
    assert second.ingest.snapshot == lake.snapshot().id == 2 and second.serving_added == 0
    for table in ("runs", "serving_runs"):
        assert two.files(table) == one.files(table)
