"""One lake, four sources: Liger's history and both KernelIndex exports, queried together.

No comparable pair may cross a source, a statistic, a metric, an environment, a protocol, a pass
or a workload: checked on every pair the views produce, against the runs table itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from realdata import KERNELINDEX_SLICES, export_rows, export_runs_by_source

from kindex_olap.query import engine
from kindex_olap.query.run import run_query

pytestmark = pytest.mark.slow


@pytest.fixture
def lake(real_lake: Path) -> Path:
    """Liger's history and both exports in one lake (conftest's session-wide real_lake)."""
    return real_lake


def test_the_lake_holds_all_four_sources(lake: Path) -> None:
    con = engine.connect(lake)
    sources = dict(con.execute("SELECT source, count(*) FROM runs GROUP BY ALL").fetchall())
    assert sources["liger-kernel-bench"] == 7898
    # the second export holds the same kernel runs as the first
    expected = export_runs_by_source(KERNELINDEX_SLICES[0])
    assert set(expected) == {"gpumode-kernelbot", "flashinfer-bench", "sol-execbench"}
    assert sources["gpumode-kernelbot"] == expected["gpumode-kernelbot"]
    assert sources["flashinfer-bench"] == expected["flashinfer-bench"]
    assert sources["sol-execbench"] == expected["sol-execbench"]


def test_no_pair_crosses_what_comparability_keeps_apart(lake: Path) -> None:
    con = engine.connect(lake)
    crossing = con.execute(
        """
        SELECT count(*) FILTER (WHERE b.source IS DISTINCT FROM c.source) AS sources,
               count(*) FILTER (WHERE b.statistic IS DISTINCT FROM c.statistic) AS statistics,
               count(*) FILTER (WHERE b.metric IS DISTINCT FROM c.metric) AS metrics,
               count(*) FILTER (WHERE b.environment_digest <> c.environment_digest) AS environments,
               count(*) FILTER (WHERE b.protocol_digest <> c.protocol_digest) AS protocols,
               count(*) FILTER (WHERE b.workload_digest <> c.workload_digest) AS workloads,
               count(*) FILTER (WHERE b.pass IS DISTINCT FROM c.pass) AS passes,
               count(*) AS pairs
        FROM comparable_pairs p
        JOIN runs b ON b.run_id = p.baseline_run_id
        JOIN runs c ON c.run_id = p.candidate_run_id
        """
    ).fetchall()[0]
    *crossings, pairs = crossing
    assert pairs > 10_000, "expected comparable pairs from several sources"
    assert crossings == [0] * 7


def test_mean_is_never_paired_with_median(lake: Path) -> None:
    con = engine.connect(lake)
    statistics = con.execute(
        "SELECT DISTINCT r.source, p.statistic FROM comparable_pairs p "
        "JOIN runs r ON r.run_id = p.baseline_run_id ORDER BY ALL"
    ).fetchall()
    by_source: dict[str, set[str]] = {}
    for source, statistic in statistics:
        by_source.setdefault(source, set()).add(statistic)
    assert by_source["liger-kernel-bench"] == {"median"}
    assert "median" not in by_source.get("flashinfer-bench", set())


def test_kernelindex_runs_without_a_pass_pair(lake: Path) -> None:
    con = engine.connect(lake)
    pairs = dict(
        con.execute(
            "SELECT r.source, count(*) FROM comparable_pairs p "
            "JOIN runs r ON r.run_id = p.baseline_run_id "
            "WHERE p.pass IS NULL AND p.pairing = 'latest' GROUP BY ALL"
        ).fetchall()
    )
    assert pairs.get("gpumode-kernelbot", 0) > 0
    assert pairs.get("sol-execbench", 0) > 0


def test_leaderboard_baseline_is_the_cells_fastest(lake: Path) -> None:
    con = engine.connect(lake)
    # a 'fastest' baseline's newest run is never slower than any candidate of its cell
    wrong = con.execute(
        "SELECT count(*) FILTER (WHERE candidate_value < baseline_value), "
        "count(DISTINCT baseline_run_id) FROM comparable_pairs "
        "WHERE pairing = 'latest' AND baseline_rule = 'fastest'"
    ).fetchone()
    assert wrong is not None and wrong[0] == 0 and wrong[1] > 100


def test_speedup_on_a_score_leaderboard(lake: Path) -> None:
    result = run_query("speedup causal_conv1d b200", lake)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert rows, result.diagnostics
    assert {(r["metric"], r["statistic"], r["baseline_rule"], r["pass"]) for r in rows} == {
        ("score", "geomean", "fastest", "unspecified")
    }
    assert len({r["baseline_name"] for r in rows}) == 1
    assert all(r["speedup"] <= 1 for r in rows)  # nobody beats the fastest
    assert any("each cell's fastest implementation" in d for d in result.diagnostics)


def test_liger_keeps_its_reference_baseline(lake: Path) -> None:
    result = run_query("speedup jsd b200", lake)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert rows
    assert {(r["candidate"], r["baseline_rule"]) for r in rows} == {("liger", "reference")}


def test_runs_serving_lists_the_mlperf_runs(lake: Path) -> None:
    result = run_query("runs serving", lake)
    assert len(result.rows) == export_rows(KERNELINDEX_SLICES[0])["serving_runs"]
    assert "run_digest" in result.columns and "kernel" not in result.columns


def test_family_word_selects_every_operation(lake: Path) -> None:
    result = run_query("kernels rmsnorm", lake)
    kernels = {row[0] for row in result.rows}
    assert "rms_norm" in kernels  # the Liger alias
    assert len(kernels) >= 10  # and the family's KernelIndex operations, one row each
    assert all("rms" in k for k in kernels)


def test_exact_kernel_name_is_not_widened_to_its_family(lake: Path) -> None:
    kernels = {row[0] for row in run_query("kernels jsd", lake).rows}
    assert kernels == {"jsd"}
