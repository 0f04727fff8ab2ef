"""Formatting query results: a terminal table, CSV, JSON or Markdown, written to a text stream.

Data goes to the stream given (stdout); diagnostics are the caller's business (stderr).
"""

from __future__ import annotations

import csv
import datetime as dt
import enum
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

from kindex_olap.doors.records import plain, records, spelled


class Format(enum.StrEnum):
    """Output formats of `kindex query` and `kindex sql`."""

    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


def cell(value: Any) -> str:
    """A short human spelling for tables: floats to 4 significant digits, NULL as empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dict | list | tuple):
        return printable(spelled(value))
    return printable(str(value))


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with every control character spelled as an escape (`\\x1b`, `\\n`): a terminal
    escape in a name (ingest refuses them; SQL can make them) must never reach the terminal."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


# The most rows a terminal table shows: about 1 s of rendering; no one reads more on a terminal,
# and the real lake's 655k speedups as one table took 130 s and 7.3 GB.
TABLE_ROWS = 10_000


def write(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: Format,
    out: TextIO,
    *,
    verb: str | None = None,
    wide: bool = False,
) -> list[str]:
    """Write `rows` to `out` in format `fmt`; returns notes for stderr (columns left out of
    a table). Only `table` looks at `verb` and `wide`: the other formats keep every column."""
    if fmt is Format.table:
        return _table(columns, rows[:TABLE_ROWS], out, verb, wide) + _cut(len(rows))
    {
        Format.csv: _csv,
        Format.json: _json,
        Format.markdown: _markdown,
    }[fmt](columns, rows, out)
    return []


def write_batches(
    columns: Sequence[str],
    batches: Iterable[Sequence[Sequence[Any]]],
    fmt: Format,
    out: TextIO,
    count: Callable[[], int],
    *,
    wide: bool = False,
) -> tuple[list[str], int]:
    """Write rows that arrive in batches (`kindex sql`'s answer as DuckDB streams it), each
    batch as `write` spells it, in memory bounded by a batch; returns the notes for stderr and
    the number of rows. A table shows its first TABLE_ROWS rows; `count` says how many there are
    when it shows fewer."""
    total = 0
    if fmt is Format.table:
        shown: list[Sequence[Any]] = []
        for batch in batches:
            total += len(batch)
            shown.extend(batch[: TABLE_ROWS - len(shown)])
            if total > TABLE_ROWS:
                total = count()
                break
        return _table(columns, shown, out, None, wide) + _cut(total), total
    if fmt is Format.json:
        out.write("[")
    for batch in batches:
        if fmt is Format.csv:
            _csv(columns, batch, out, header=total == 0)
        elif fmt is Format.json:
            _json_items(columns, batch, out, first=total == 0)
        else:
            _markdown(columns, batch, out, header=total == 0)
        total += len(batch)
    if total == 0 and fmt is not Format.json:  # the header alone, as `write` gives no rows
        write(columns, [], fmt, out)
    if fmt is Format.json:
        out.write("\n]\n" if total else "]\n")
    return [], total


def _cut(rows: int) -> list[str]:
    if rows <= TABLE_ROWS:
        return []
    return [
        f"{rows:,} rows: the table shows the first {TABLE_ROWS:,}; --format csv, json or "
        "markdown writes every row"
    ]


def _csv(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO, header: bool = True
) -> None:
    """Column by column: a value a time through _csv_value was 2 us, 43 s of the 655k rows of
    the real lake's `speedups` (csv writes None as an empty field)."""
    writer = csv.writer(out, lineterminator="\n")
    if header:
        writer.writerow(columns)
    if rows:
        columns_out = (_csv_column(list(values)) for values in zip(*rows, strict=True))
        writer.writerows(zip(*columns_out, strict=True))


def _csv_column(values: list[Any]) -> list[Any]:
    """One column's CSV fields, as _csv_value spells each value."""
    kinds = {type(v) for v in values} - {type(None)}
    if kinds <= {int, bool}:
        return values
    if kinds == {float}:
        return [v if v is not None and math.isfinite(v) else None for v in values]
    if kinds == {str}:
        if _CONTROL.search("".join(v for v in values if v is not None)) is None:
            return values
        return [None if v is None else printable(v) for v in values]
    return [None if v is None else _csv_value(v) for v in values]


def _csv_value(value: Any) -> Any:
    plain_value = plain(value)
    if isinstance(plain_value, dict | list):
        return json.dumps(plain_value, sort_keys=True)
    if isinstance(plain_value, str):
        return printable(plain_value)
    return plain_value


def _json(columns: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO) -> None:
    out.write(json.dumps(records(columns, rows), indent=2, ensure_ascii=False) + "\n")


def _json_items(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO, first: bool
) -> None:
    """Records of the array _json writes, spelled as it spells them (between `[` and `]`):
    json.dumps puts a newline only between tokens, so indenting each line nests a record."""
    for record in records(columns, rows):
        out.write("\n  " if first else ",\n  ")
        out.write(json.dumps(record, indent=2, ensure_ascii=False).replace("\n", "\n  "))
        first = False


def _markdown(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO, header: bool = True
) -> None:
    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |\n"

    if header:
        out.write(line([printable(c) for c in columns]))
        out.write("|" + "|".join("---" for _ in columns) + "|\n")
    for row in rows:
        out.write(line([cell(v) for v in row]))


def _table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    out: TextIO,
    verb: str | None,
    wide: bool,
) -> list[str]:
    from kindex_olap.cli.table import render, terminal_width, wants_color

    width = terminal_width(out)
    columns = [printable(c) for c in columns]
    rows = [[printable(v) if isinstance(v, str) else v for v in row] for row in rows]
    table = render(columns, rows, verb, width=width, color=wants_color(out), wide=wide)
    out.write("".join(line + "\n" for line in table.lines))
    return table.notes(width)
