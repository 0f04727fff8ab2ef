"""`kindex import kernelindex` on the two real catalog exports: their slices in tests/data
(everywhere) and the full files in ../shared/data (`shared_data`: skipped without them).

Expected counts are computed here independently of the importer, with DuckDB's JSON reader over
the decompressed export, and digests are recomputed from the export's manifests. The full
exports' documented counts (../shared/data/kernelindex/README.md) are checked on the full files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import zstandard
from realdata import KERNELINDEX_FULL, KERNELINDEX_SLICES

from kindex_olap.importers.kernelindex.convert import import_kernelindex
from kindex_olap.importers.kernelindex.report import KernelIndexImport
from kindex_olap.lake.store import Lake
from kindex_olap.model.canonical import document_digest

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Exports:
    """The two exports, in import order: with serving runs (0022af0b), kernels only (94af2ae7)."""

    with_serving: Path
    kernels_only: Path
    full: bool  # the full files, whose documented counts are checked too


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(Exports(*KERNELINDEX_SLICES, full=False), id="slice"),
        pytest.param(
            Exports(*KERNELINDEX_FULL, full=True),
            id="full",
            marks=pytest.mark.shared_data("the full KernelIndex exports"),
        ),
    ],
)
def exports(request: pytest.FixtureRequest) -> Exports:
    export: Exports = request.param
    return export


@pytest.fixture(scope="module")
def imported(exports: Exports, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both exports imported, in order, into one lake."""
    tmp = tmp_path_factory.mktemp("kernelindex")
    lake = tmp / "lake"
    first = import_kernelindex(
        str(exports.with_serving), raw_dir=tmp / "raw1", lake=lake, report_path=tmp / "first.jsonl"
    )
    second = import_kernelindex(
        str(exports.kernels_only), raw_dir=tmp / "raw2", lake=lake, report_path=tmp / "second.jsonl"
    )
    return {"tmp": tmp, "lake": lake, "first": first, "second": second, "exports": exports}


@pytest.fixture(scope="module")
def export_db(
    exports: Exports, tmp_path_factory: pytest.TempPathFactory
) -> duckdb.DuckDBPyConnection:
    """The 0022af0b export as DuckDB tables, read without the importer."""
    lines = tmp_path_factory.mktemp("export") / "export.jsonl"
    with open(exports.with_serving, "rb") as src, open(lines, "wb") as out:
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


def one(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """The single value of a query."""
    row = con.execute(sql).fetchone()
    assert row is not None
    return row[0]


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
    assert sum(expected_sources.values()) == one(export_db, "SELECT count(*) FROM kernel_runs")
    assert len(expected_sources) == 3 and len(expected_gpus) > 3  # every source, several GPUs
    if imported["exports"].full:
        assert sum(expected_sources.values()) == 7857
    report: KernelIndexImport = imported["first"]
    assert dict(report.runs_by_source) == expected_sources
    assert dict(report.runs_by_gpu) == expected_gpus
    lake = lake_con(imported["lake"])
    assert counts(lake, "SELECT source, count(*) FROM runs GROUP BY 1") == expected_sources
    by_gpu = "SELECT e.product, count(*) FROM runs r JOIN environments e USING (environment_digest) GROUP BY 1"
    assert counts(lake, by_gpu) == expected_gpus


def test_second_export_adds_no_kernel_runs(imported: dict[str, Any], export_db: Any) -> None:
    first, second = imported["first"].ingest, imported["second"].ingest
    runs = one(export_db, "SELECT count(*) FROM kernel_runs")
    assert (first.runs_added, first.rejected) == (runs, 0)
    assert (second.runs_added, second.duplicates, second.rejected) == (0, runs, 0)
    if imported["exports"].full:
        assert runs == 7857
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
    serving = one(export_db, "SELECT count(*) FROM export WHERE \"table\" = 'serving_runs'")
    assert imported["first"].digests_checked == 3 * len(claimed) + serving
    if imported["exports"].full:
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
    assert len(expected) == 43  # the slice keeps every such run
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


def test_serving_runs_stay_out_of_kernel_runs(imported: dict[str, Any], export_db: Any) -> None:
    lake = lake_con(imported["lake"])
    serving = one(export_db, "SELECT count(*) FROM export WHERE \"table\" = 'serving_runs'")
    assert serving > 0 and (serving == 722 or not imported["exports"].full)
    assert lake.execute(
        "SELECT count(*), count(DISTINCT run_digest) FROM serving_runs"
    ).fetchall() == [(serving, serving)]
    assert lake.execute(
        "SELECT count(*) FROM runs WHERE source = 'mlperf-inference'"
    ).fetchall() == [(0,)]
    assert lake.execute(
        "SELECT bool_and(digest_verified), min(len(measurements)) FROM serving_runs"
    ).fetchall() == [(True, 1)]


def test_primary_statistics_are_what_the_sources_report(
    imported: dict[str, Any], export_db: Any
) -> None:
    lake = lake_con(imported["lake"])
    rows = lake.execute(
        "SELECT source, metric, statistic, count(*) FROM runs GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    sol = one(export_db, "SELECT count(*) FROM kernel_runs WHERE source = 'sol-execbench'")
    assert ("sol-execbench", "latency", "mean", sol) in rows
    assert sol == 705 or not imported["exports"].full
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
        str(imported["exports"].kernels_only),
        raw_dir=imported["tmp"] / "raw2",
        lake=imported["lake"],
    )
    assert (again.files_written, again.files_unchanged) == (0, 6)
    assert again.ingest is not None
    assert (again.ingest.files_read, again.ingest.runs_added) == (0, 0)


def test_an_export_lands_in_one_snapshot(imported: dict[str, Any]) -> None:
    """Kernel runs and serving runs of one import are committed together (a killed import
    leaves neither), in the ingest's snapshot; the second export adds no run of either kind
    (its snapshot records the files it read)."""
    first, second = imported["first"], imported["second"]
    assert first.ingest.snapshot == 1 and first.serving_added == first.serving_runs > 0
    assert first.serving_added == 722 or not imported["exports"].full
    lake = Lake(imported["lake"])
    one, two = lake.snapshot(as_of="1"), lake.snapshot(as_of="2")
    assert one.files("runs") and one.files("serving_runs")
    assert second.ingest.snapshot == lake.snapshot().id == 2 and second.serving_added == 0
    for table in ("runs", "serving_runs"):
        assert two.files(table) == one.files(table)


def test_a_shape_label_of_several_workloads_reads_apart(imported: dict[str, Any]) -> None:
    """The export labels a workload by its first tensor's shape: amd-fp8-mm holds four workloads
    of "[1024, 7168]" on the MI300X (n 512 to 4608), whose speedups and records read as one case
    measured four times. Each reads with the axis that tells it apart, and a leaderboard's
    records of one workload stay together."""
    if not imported["exports"].full:
        pytest.skip("the slice holds one workload a shape label (the full exports hold more)")
    from kindex_olap.cli.table import render
    from kindex_olap.doors.apart import told_apart
    from kindex_olap.doors.columns import verb_columns
    from kindex_olap.query.run import run_query

    lake = imported["lake"]
    labels = {f"[1024, 7168] (n={n})" for n in (512, 576, 1536, 4608)}
    result = run_query("speedup amd-fp8-mm mi300x", lake)
    at = result.columns.index("shape")
    shown = told_apart(result.columns, result.rows, verb_columns("speedup"))
    assert {row[at] for row in shown if row[at].startswith("[1024, 7168]")} == labels
    records = run_query("history amd-fp8-mm mi300x", lake)
    at = records.columns.index("shape")
    shown = told_apart(records.columns, records.rows, verb_columns("history"))
    order = [row[at] for row in shown if row[at].startswith("[1024, 7168]")]
    assert set(order) == labels
    assert len([s for i, s in enumerate(order) if i == 0 or order[i - 1] != s]) == 4
    # two submissions of one user under one name, in the whole lake's answer at 100 columns
    result = run_query("speedup", lake)
    lines = render(result.columns, result.rows, result.verb, width=100).lines
    at = next(i for i, x in enumerate(lines) if x.startswith("001_fp8_attention_output_proj"))
    head = next(x for x in lines[at:] if "speedup" in x and "verdict" in x)
    assert head.startswith("cand observed"), lines[at : at + 8]
