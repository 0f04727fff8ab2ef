"""`kindex sql` writes an answer of any size as DuckDB streams it: the same text as the whole
answer written at once, in bounded memory; a table shows its first rows and says how many the
answer has."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import crafted as c
import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.cli.output import TABLE_ROWS, Format, write, write_batches
from kindex_olap.query import readonly
from kindex_olap.query.readonly import open_sql, run_sql

# every kind of value a view or a user's SQL can give, and text each format must escape
ODD_VALUES = """
SELECT 'a|b' AS pipe, 'x' || chr(10) || 'y' AS newline, 'é' || chr(27) AS escape,
       'nan'::DOUBLE AS nan, 1e308 * 10 AS inf, NULL AS nothing, [1, 2] AS list,
       {'k': [{'a': 2}]} AS struct, map([1], ['x']) AS map, INTERVAL 1 DAY AS span,
       12345678901234567890::HUGEINT AS huge, 1.5::DECIMAL(10, 2) AS dec,
       TIMESTAMP '2026-01-02 03:04:05' AS at, 'a'::BLOB AS bytes, i % 2 = 0 AS flag
FROM range(5) t(i)
"""


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return c.ingest_bundles(
        tmp_path / "in", [c.run("liger"), c.run("torch", median=2e6)], tmp_path / "lake"
    )


def _streamed(sql: str, lake: Path, fmt: Format, size: int) -> tuple[str, int]:
    out = io.StringIO()
    with open_sql(sql, lake) as answer:
        _, rows = write_batches(answer.columns, answer.batches(size), fmt, out, answer.count)
    return out.getvalue(), rows


def _whole(sql: str, lake: Path, fmt: Format) -> tuple[str, int]:
    out = io.StringIO()
    result = run_sql(sql, lake)
    write(result.columns, result.rows, fmt, out)
    return out.getvalue(), len(result.rows)


@pytest.mark.parametrize("fmt", [Format.csv, Format.json, Format.markdown])
def test_batches_spell_the_real_lake_as_the_whole_answer(
    liger_history_lake: Path, fmt: Format
) -> None:
    sql = "SELECT * FROM speedups ORDER BY ALL"
    streamed, rows = _streamed(sql, liger_history_lake, fmt, size=997)
    whole, expected_rows = _whole(sql, liger_history_lake, fmt)
    assert rows == expected_rows > 3 * 997
    assert streamed == whole


@pytest.mark.parametrize("fmt", list(Format))
@pytest.mark.parametrize("size", [1, 2, 10_000])
def test_batches_spell_odd_values_and_empty_answers_alike(
    lake: Path, fmt: Format, size: int
) -> None:
    for sql in (ODD_VALUES, "SELECT 1 AS a WHERE false"):
        assert _streamed(sql, lake, fmt, size) == _whole(sql, lake, fmt)


def test_a_table_shows_its_first_rows_and_says_how_many_there_are(lake: Path) -> None:
    rows = TABLE_ROWS + 50
    sql = f"SELECT i, i * 2 AS twice FROM range({rows}) t(i) ORDER BY i"
    result = CliRunner().invoke(app, ["sql", sql, "--lake", str(lake)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1].split() == [str(TABLE_ROWS - 1), str(2 * (TABLE_ROWS - 1))]
    assert len([line for line in lines if line.strip() and line.split()[0].isdigit()]) == (
        TABLE_ROWS
    )
    assert f"{rows:,} rows: the table shows the first {TABLE_ROWS:,}" in result.stderr
    assert result.stderr.splitlines()[-1] == f"{rows} row(s)"
    # every row in the other formats
    csv_out = CliRunner().invoke(app, ["sql", sql, "--lake", str(lake), "-f", "csv"])
    assert len(csv_out.stdout.splitlines()) == rows + 1
    assert "the table shows" not in csv_out.stderr


@pytest.mark.parametrize(
    "end", [";", " ; -- the end", "-- the end;", " /* ; */ ;", ";\n/* the end */\n"]
)
def test_a_table_counts_a_statement_however_it_ends(lake: Path, end: str) -> None:
    """DuckDB keeps a statement's closing `;` and the comments after it in its text: counted
    as a subquery, `SELECT ...;` was a parse error."""
    rows = TABLE_ROWS + 3
    sql = f"SELECT i FROM range({rows}) t(i){end}"
    result = CliRunner().invoke(app, ["sql", sql, "--lake", str(lake)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-1] == f"{rows} row(s)"


def test_a_statement_that_cannot_be_a_subquery_is_counted_by_its_rows(
    lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readonly, "_body", lambda query: "SELECT syntax error (")
    with open_sql(f"SELECT i FROM range({TABLE_ROWS + 7}) t(i)", lake) as answer:
        assert len(next(answer.batches())) == 10_000
        assert answer.count() == TABLE_ROWS + 7


def test_pivot_is_refused_by_its_name(lake: Path) -> None:
    sql = "PIVOT (SELECT 1 AS k) ON k USING count(*)"
    result = CliRunner().invoke(app, ["sql", sql, "--lake", str(lake)])
    assert result.exit_code == 5
    assert "read-only: PIVOT statements are refused" in result.stderr


def test_a_shorthand_table_is_cut_alike() -> None:
    out = io.StringIO()
    notes = write(["i"], [(i,) for i in range(TABLE_ROWS + 1)], Format.table, out)
    lines = out.getvalue().splitlines()
    assert lines[2:] == [f"{i:>4}" for i in range(TABLE_ROWS)]  # under the header and its rule
    assert notes == [
        f"{TABLE_ROWS + 1:,} rows: the table shows the first {TABLE_ROWS:,}; --format csv, "
        "json or markdown writes every row"
    ]


def test_an_error_mid_answer_is_one_line_and_exit_5(lake: Path) -> None:
    sql = "SELECT i, CASE WHEN i = 25000 THEN error('boom at 25000') END FROM range(50000) t(i)"
    result = CliRunner().invoke(app, ["sql", sql, "--lake", str(lake), "-f", "csv"])
    assert result.exit_code == 5
    assert "boom at 25000" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_million_rows_as_csv_in_bounded_memory(lake: Path) -> None:
    """Fetched whole, these rows took 533 MB (peak RSS of the process); streamed, 111 MB."""
    sql = "SELECT i, i * 1.5 AS x, 'row ' || i AS label FROM range(1000000) t(i)"
    # measured in a process of its own: its one child is kindex (this worker has others)
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    kindex = [sys.executable, "-m", "kindex_olap", "sql", sql, "--lake", str(lake), "-f", "csv"]
    done = subprocess.run(
        [sys.executable, "-c", measure, *kindex], capture_output=True, text=True, check=True
    )
    code, peak_kib = (int(word) for word in done.stdout.split())
    assert code == 0, done.stderr
    assert peak_kib < 250 * 1024, f"peak RSS {peak_kib // 1024} MB"
