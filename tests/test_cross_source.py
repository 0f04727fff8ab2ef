"""One lake, four sources: Liger's history and both KernelIndex exports, queried together.

No comparable pair may cross a source, a statistic, a metric, an environment, a protocol, a pass
or a workload: checked on every pair the views produce, against the runs table itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kindex_olap import engine
from kindex_olap.etl import ingest
from kindex_olap.importers.kernelindex import import_kernelindex
from kindex_olap.importers.liger import import_liger

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
EXPORTS = sorted((SHARED / "kernelindex").glob("catalog-*.jsonl.zst"))


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cross")
    lake = root / "lake"
    import_liger(str(SHARED / "liger" / "all_benchmark_data_history.csv"), raw_dir=root / "liger")
    assert ingest([root / "liger"], lake).rejected == 0
    for export in EXPORTS:
        import_kernelindex(str(export), raw_dir=root / export.name, lake=lake)
    return lake


def test_the_lake_holds_all_four_sources(lake: Path) -> None:
    con = engine.connect(lake)
    sources = dict(con.execute("SELECT source, count(*) FROM runs GROUP BY ALL").fetchall())
    assert sources["liger-kernel-bench"] == 7898
    assert sources["gpumode-kernelbot"] == 5215
    assert sources["flashinfer-bench"] == 1937
    assert sources["sol-execbench"] == 705


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
