"""Printing an answer: its rows on stdout in the chosen format, its notes on stderr.

Shared by `kindex query` and `kindex sql` (kindex_olap.cli.query) and the query fast path
(kindex_olap.cli.fast), and free of Typer: the fast path answers a plain query without importing
it (typer and click are 50 ms of a cold query's start).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kindex_olap.cli.output import Format

if TYPE_CHECKING:
    from kindex_olap.query.compile import Options


def answer(
    text: str,
    lake: Path | None = None,
    fmt: Format = Format.table,
    as_of: str | None = None,
    wide: bool = False,
    show_sql: bool = False,
    options: Options | None = None,
) -> None:
    """`kindex query TEXT` on DuckDB, printed (the fast path's whole command)."""
    from kindex_olap.query.compile import Options
    from kindex_olap.query.run import run_query

    emit(run_query(text, lake, options or Options(), as_of=as_of), fmt, show_sql, wide)


def emit(result: object, fmt: Format, show_sql: bool, wide: bool) -> None:
    """Print a query's result: its SQL (show_sql) and notes on stderr, its rows on stdout."""
    from kindex_olap.cli.output import write
    from kindex_olap.query.run import QueryResult

    assert isinstance(result, QueryResult)
    if show_sql:
        _note(result.sql)
        _note(f"-- parameters: {list(result.params)!r}")
    if not result.rows and fmt is Format.table and result.diagnostics:
        # an empty answer is its explanation: no header, no columns left out, no count
        diagnose([*result.diagnostics[:1], *result.caveats])
        return
    notes = write(result.columns, result.rows, fmt, sys.stdout, verb=result.verb, wide=wide)
    diagnose([*notes, *result.diagnostics, *result.caveats, f"{len(result.rows)} row(s)"])


def emit_sql(statement: str, lake: Path | None, fmt: Format, as_of: str | None, wide: bool) -> None:
    """`kindex sql`: print one read-only statement's answer as DuckDB streams it, a batch at a
    time (any size in bounded memory), then its notes and row count on stderr."""
    from kindex_olap.cli.output import write_batches
    from kindex_olap.query.readonly import open_sql

    with open_sql(statement, lake, as_of=as_of) as answer:
        notes, rows = write_batches(
            answer.columns, answer.batches(), fmt, sys.stdout, answer.count, wide=wide
        )
    diagnose([*notes, f"{rows} row(s)"])


def diagnose(lines: list[str]) -> None:
    """Diagnostics on stderr, each wrapped to the terminal's width (where stderr is one)."""
    import textwrap

    from kindex_olap.cli.table import terminal_width

    # stderr piped aside while stdout is on a terminal: the person still reads that width
    width = terminal_width(sys.stderr) or terminal_width(sys.stdout)
    for line in lines:
        wrapped = textwrap.wrap(line, width, break_on_hyphens=False) if width else [line]
        for part in wrapped or [""]:
            _note(part)


def _note(line: str) -> None:
    # as typer.echo(line, err=True) writes it: the line, a newline, flushed
    sys.stderr.write(f"{line}\n")
    sys.stderr.flush()
