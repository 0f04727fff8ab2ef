"""`kindex sql` runs queries only: no writes, COPY, ATTACH, INSTALL, LOAD or outside reads."""

from __future__ import annotations

from pathlib import Path

import crafted as c
import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.errors import QueryError
from kindex_olap.query.readonly import run_sql


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return c.ingest_bundles(
        tmp_path / "in", [c.run("liger"), c.run("torch", median=2e6)], tmp_path / "lake"
    )


def test_select_over_views(lake: Path) -> None:
    result = run_sql(
        "SELECT candidate, baseline, speedup FROM speedups WHERE pairing = 'latest' ORDER BY 1",
        lake,
    )
    assert result.rows == [("liger", "torch", 2.0), ("torch", "liger", 0.5)]


def test_reading_the_lake_files_directly_is_allowed(lake: Path) -> None:
    result = run_sql(f"SELECT count(*) FROM read_parquet('{lake}/runs/**/*.parquet')", lake)
    assert result.rows == [(2,)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t AS SELECT 1",
        "INSERT INTO runs SELECT * FROM runs",
        "DROP VIEW runs",
        "COPY (SELECT 1) TO 'out.csv'",
        "COPY runs TO '{lake}/runs/evil.parquet'",
        "EXPLAIN ANALYZE COPY (SELECT 1) TO '{lake}/x.csv'",
        "ATTACH '{tmp}/other.duckdb' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "PRAGMA enable_profiling",
        "SELECT 1; COPY (SELECT 1) TO '{lake}/x.csv'",
    ],
)
def test_statements_that_are_not_queries_are_refused(lake: Path, tmp_path: Path, sql: str) -> None:
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(QueryError, match="read-only"):
        run_sql(sql.format(lake=lake, tmp=tmp_path), lake)
    assert sorted(p for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('{tmp}/in/crafted_0000.txt')",
        "SELECT * FROM read_parquet('{tmp}/../*/lake/runs/**/*.parquet')",
    ],
)
def test_files_outside_the_lake_cannot_be_read(lake: Path, tmp_path: Path, sql: str) -> None:
    with pytest.raises(QueryError, match=r"(?i)permission|disabled|cannot access"):
        run_sql(sql.format(tmp=tmp_path), lake)


def test_cli_refuses_a_write_with_exit_5(lake: Path) -> None:
    result = CliRunner().invoke(app, ["sql", "DELETE FROM runs", "--lake", str(lake)])
    assert result.exit_code == 5
    assert result.stdout == ""
    assert "read-only: DELETE statements are refused" in result.stderr


def test_cli_sql_csv(lake: Path) -> None:
    sql = "SELECT candidate, baseline, speedup FROM speedups WHERE pairing = 'latest' ORDER BY 1"
    result = CliRunner().invoke(app, ["sql", sql, "--lake", str(lake), "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "candidate,baseline,speedup\nliger,torch,2.0\ntorch,liger,0.5\n"
