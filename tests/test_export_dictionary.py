"""`kindex export`'s data dictionary comes from the views (issue 23): the exported columns are
the views' columns as DuckDB describes them, each described in the one table
(kindex_olap.doors.export.COLUMNS), none described that no view has; noise, evidence and the runs
behind each side are exported."""

from __future__ import annotations

import re
from pathlib import Path

import crafted
import duckdb
import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.doors.export import COLUMNS, LEFT_OUT, UNDESCRIBED, view_columns
from kindex_olap.query.engine import connect

VIEWS = ("speedups", "observed_values")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSD-on-B200 cell: liger (two runs) against torch (one run, timed once)."""
    root = tmp_path_factory.mktemp("export-dictionary")
    bundles = [
        crafted.run("liger", median=1e6, p20=0.98e6, p80=1.02e6),
        crafted.run(
            "liger", median=1.01e6, p20=0.99e6, p80=1.03e6, observed="2026-05-28T10:00:00Z"
        ),
        crafted.run("torch", median=2e6),
    ]
    return crafted.ingest_bundles(root / "in", bundles, root / "lake")


def _described(lake: Path) -> dict[str, list[tuple[str, str]]]:
    con = connect(lake)
    try:
        return {
            view: [(r[0], r[1]) for r in con.execute(f"DESCRIBE {view}").fetchall()]
            for view in VIEWS
        }
    finally:
        con.close()


def test_every_exported_column_is_described_and_no_description_is_stale(lake: Path) -> None:
    described = _described(lake)
    columns = {name for rows in described.values() for name, _ in rows}
    undescribed = sorted(columns - COLUMNS.keys() - LEFT_OUT.keys())
    assert undescribed == [], "add these columns to doors/export.py COLUMNS (or LEFT_OUT)"
    stale = sorted((COLUMNS.keys() | LEFT_OUT.keys()) - columns)
    assert stale == [], "no exported view has these columns any more"
    assert not COLUMNS.keys() & LEFT_OUT.keys()
    assert all(meaning.strip() for _, meaning in COLUMNS.values())


def test_the_export_writes_the_views_columns_with_their_types(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "x"
    result = CliRunner().invoke(app, ["export", "--out", str(out), "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert UNDESCRIBED[1] not in readme
    described = _described(lake)
    con = duckdb.connect()
    for name, view in (("speedups", "speedups"), ("runs", "observed_values")):
        section = readme.split(f"## {name}.parquet", 1)[1].split("\n## ", 1)[0]
        rows = re.findall(r"^\| (\w+) \| ([^|]+) \| ([^|]*) \| ([^|]+) \|$", section, re.M)[1:]
        written = con.execute(f"DESCRIBE SELECT * FROM '{out / name}.parquet'").fetchall()
        assert [(r[0], r[1]) for r in written] == [(n, t.strip()) for n, t, _, _ in rows]
        expected = [(n, t) for n, t in described[view] if n not in LEFT_OUT]
        # (workload axes, one axis_<name> column each, follow: these workloads have none)
        assert [(n, t.strip()) for n, t, _, _ in rows] == expected
    with connect(lake) as kindex:
        assert view_columns(kindex, "speedups")[0] == "pairing"


def test_noise_evidence_and_runs_are_exported(lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "x"
    CliRunner().invoke(app, ["export", "--out", str(out), "--lake", str(lake), "--format", "csv"])
    con = duckdb.connect()
    row = con.execute(
        "SELECT candidate, baseline, noise, noise_source, evidence, candidate_runs, "
        "baseline_runs, run_speedup_lo, speedup_lo, verdict "
        f"FROM read_csv('{out / 'speedups.csv'}') WHERE pairing = 'latest' AND candidate = 'liger'"
    ).fetchone()
    assert row is not None
    candidate, baseline, noise, source, evidence, c_runs, b_runs, run_lo, lo, verdict = row
    assert (candidate, baseline, c_runs, b_runs) == ("liger", "torch", 1, 1)
    assert noise > 0 and source and "single timing: baseline" in evidence
    assert lo == pytest.approx(run_lo / (1 + noise))  # the dictionary's definition holds
    assert verdict == "faster"
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert (
        "| speedup_lo | DOUBLE | ratio | Low end of the interval: run_speedup_lo / (1 + noise)"
        in (readme)
    )


def test_a_run_that_failed_without_a_value_is_exported(tmp_path: Path) -> None:
    """A run that failed to compile or run states no measurement, so it has no metric; the
    export's runs left such runs out (86 of the KernelIndex export's) though its README says
    "one row per run, whatever its metric and status", and `kindex query runs` lists them."""
    failed = crafted.run("torch", status="compile_error", observed="2026-06-01T00:00:00.000Z")
    del failed["run"]["spec"]["timing"]
    failed["run"]["spec"]["measurements"] = []
    lake = crafted.ingest_bundles(tmp_path / "in", [crafted.run("liger"), failed], tmp_path / "l")
    out = tmp_path / "x"
    result = CliRunner().invoke(app, ["export", "--out", str(out), "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    rows = duckdb.connect().execute(
        f"SELECT provider, status, metric, value, p20 FROM '{out / 'runs.parquet'}' ORDER BY 1"
    )
    assert rows.fetchall() == [
        ("liger", "passed", "latency", 1_000_000.0, 1_000_000.0),
        ("torch", "compile_error", None, None, None),
    ]
    listed = CliRunner().invoke(app, ["query", "runs", "--lake", str(lake), "-f", "csv"])
    assert len(listed.stdout.splitlines()) == 1 + 2
