"""Leaderboards: cells with no reference implementation compare every implementation against
the cell's fastest, say so (`baseline_rule`, stderr), and honour a named `A vs B`."""

from __future__ import annotations

from pathlib import Path

import crafted as c
import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.query.engine import connect
from kindex_olap.query.run import run_query


@pytest.fixture
def board_lake(tmp_path: Path) -> Path:
    bundles = [
        c.run("alpha", median=3e6),
        c.run("beta", median=1e6),
        c.run("gamma", median=2e6),
        # an older, faster gamma run: only the newest run of each implementation counts
        c.run("gamma", median=0.5e6, observed="2026-01-01T00:00:00.000Z"),
    ]
    return c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")


def test_fastest_implementation_is_the_default_baseline(board_lake: Path) -> None:
    result = run_query("speedup jsd", board_lake)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert {(r["candidate"], r["baseline"], r["baseline_rule"]) for r in rows} == {
        ("alpha", "beta", "fastest"),
        ("gamma", "beta", "fastest"),
    }
    speedups = {r["candidate"]: r["speedup"] for r in rows}
    assert speedups == pytest.approx({"alpha": 1 / 3, "gamma": 1 / 2})
    assert any("each cell's fastest implementation" in d for d in result.diagnostics)


def test_named_baseline_wins_over_the_fastest(board_lake: Path) -> None:
    result = run_query("speedup jsd beta vs gamma", board_lake)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert [(r["candidate"], r["baseline"]) for r in rows] == [("beta", "gamma")]
    assert rows[0]["speedup"] == pytest.approx(2.0)
    assert rows[0]["baseline_rule"] == "fastest" or rows[0]["baseline_rule"] is None
    assert not any(d.startswith("baseline:") for d in result.diagnostics)


def test_baseline_rule_reaches_stderr(board_lake: Path) -> None:
    out = CliRunner().invoke(app, ["query", "summary jsd", "--lake", str(board_lake)])
    assert out.exit_code == 0
    assert (
        "baseline: each cell's fastest implementation (no reference implementation in these "
        "cells)" in out.stderr
    )


def test_reference_beats_fastest_and_every_implementation_is_a_candidate(tmp_path: Path) -> None:
    bundles = [
        c.run("liger", median=2e6),
        c.run("torch", median=4e6),
        c.run("triton_x", median=1e6),  # fastest, but torch is the reference
    ]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    result = run_query("speedup jsd", lake)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert [(r["candidate"], r["baseline"], r["baseline_rule"]) for r in rows] == [
        ("liger", "torch", "reference"),
        ("triton_x", "torch", "reference"),
    ]
    with connect(lake) as con:
        rules = con.execute(
            "SELECT DISTINCT baseline, baseline_rule FROM comparable_pairs "
            "WHERE pairing = 'latest' ORDER BY ALL"
        ).fetchall()
    assert rules == [("liger", None), ("torch", "reference"), ("triton_x", None)]


def test_serving_needs_the_runs_verb(board_lake: Path) -> None:
    out = CliRunner().invoke(app, ["query", "speedup serving", "--lake", str(board_lake)])
    assert out.exit_code == 5
    assert "runs serving" in out.stderr
    out = CliRunner().invoke(app, ["query", "runs serving", "--lake", str(board_lake)])
    assert out.exit_code == 0
    assert "no serving runs" in out.stderr


def test_history_of_a_leaderboard_is_its_record_staircase(tmp_path: Path) -> None:
    bundles = [
        c.run("alpha", median=3e6, observed="2026-01-01T00:00:00.000Z"),
        c.run("beta", median=4e6, observed="2026-01-02T00:00:00.000Z"),  # no record
        c.run("gamma", median=2e6, observed="2026-01-03T00:00:00.000Z"),
        c.run("alpha", median=2.5e6, observed="2026-01-04T00:00:00.000Z"),  # no record
        c.run("beta", median=1e6, observed="2026-01-05T00:00:00.000Z"),
    ]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    result = run_query("history jsd", lake)
    rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert [(r["implementation"], r["value_ms"]) for r in rows] == [
        ("alpha", 3.0),
        ("gamma", 2.0),
        ("beta", 1.0),
    ]
    assert [r["improvement"] for r in rows] == [None, pytest.approx(1.5), pytest.approx(2.0)]
    assert any("leaderboard cells" in d for d in result.diagnostics)
