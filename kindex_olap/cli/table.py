"""The terminal table of `--format table`: the verb's answer columns, one line per row, fitted.

Columns constant over all rows move into a title line; the verb's default columns come from
`kindex_olap.doors.columns` (every column with `--wide`). When a width is known (the terminal's,
or COLUMNS), long text is shortened in the middle, never so far that two different values read
the same, and columns are left out from the end until each line fits; with no width (a file, a
pipe) nothing is shortened. Verdicts are coloured on a colour terminal; the word stays, so the
colour is never the only cue.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from kindex_olap.doors.columns import (
    COMBINED,
    HEADERS,
    RATIOS,
    SELF_EVIDENT,
    TITLE_PHRASES,
    VERDICT_STYLES,
    interval_columns,
    verb_columns,
)

ELLIPSIS = "…"
GAP = "  "
MIN_WIDTH = 6  # a shortened text column keeps at least this many characters
SOFT_WIDTH = 14  # text is shortened below this only when leaving out numbers is not enough
_ANSI = {"green": "\x1b[32m", "red": "\x1b[31m", "dim": "\x1b[2m", "bold": "\x1b[1m"}
_RESET = "\x1b[0m"


@dataclass
class Column:
    name: str
    values: list[str]
    numeric: bool
    header: str = ""
    width: int = 0
    floor: int = 0  # the narrowest width that keeps distinct values distinct

    def __post_init__(self) -> None:
        self.header = self.header or HEADERS.get(self.name, self.name)
        self.width = max([len(self.header), *(len(v) for v in self.values)])


@dataclass
class Table:
    """What to print: title lines, the table's lines, and the columns not shown."""

    lines: list[str] = field(default_factory=list)
    shown: list[Column] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    dropped_to_fit: list[str] = field(default_factory=list)

    def notes(self, width: int | None) -> list[str]:
        """One stderr line naming what was left out, if anything."""
        if not self.left_out and not self.dropped_to_fit:
            return []
        parts = []
        if self.left_out:
            parts.append(", ".join(self.left_out))
        if self.dropped_to_fit:
            parts.append(f"to fit {width} columns: {', '.join(self.dropped_to_fit)}")
        note = f"columns left out: {'; '.join(parts)} (--wide shows every column)"
        if width is None:
            return [note]
        import textwrap

        return textwrap.wrap(note, width, break_on_hyphens=False)


def terminal_width(out: TextIO) -> int | None:
    """COLUMNS, else the width of the terminal `out` writes to, else None (do not shorten)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(out.fileno()).columns if out.isatty() else None
    except (AttributeError, OSError, ValueError):
        return None


def wants_color(out: TextIO) -> bool:
    """Colour on a terminal, unless NO_COLOR is set (no-color.org) or TERM is dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def render(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    verb: str | None = None,
    *,
    width: int | None = None,
    color: bool = False,
    wide: bool = False,
) -> Table:
    """The table of `rows` for `verb`, fitted to `width` (None: as wide as it is)."""
    shown = display_columns(list(columns), rows)
    table = Table()
    spec = verb_columns(verb)
    title: list[Column] = []
    if not wide and spec is not None:
        order = {name: i for i, name in enumerate(spec.show)}
        table.left_out = [c.name for c in shown if c.name not in order]
        shown = sorted((c for c in shown if c.name in order), key=lambda c: order[c.name])
    if not wide and (len(rows) > 1 or (spec is not None and rows)):
        # only text folds: numbers are measurements of each row, and stay in the table
        keep = set(spec.answer) if spec else set()
        title = [
            c for c in shown if c.name not in keep and not c.numeric and len(set(c.values)) == 1
        ]
        shown = [c for c in shown if c not in title]
    table.lines = title_lines(title, {c.name for c in shown}, width)
    if width is not None:
        table.dropped_to_fit = fit(shown, width, keep=set(spec.answer) if spec else set())
        if table.dropped_to_fit:
            dropped = set(table.dropped_to_fit)
            shown = [c for c in shown if c.name not in dropped]
    table.shown = shown
    table.lines.extend(body(shown, len(rows), color))
    return table


# -- cells ------------------------------------------------------------------------------------


def display_columns(columns: list[str], rows: Sequence[Sequence[Any]]) -> list[Column]:
    """One Column per result column, an `X_lo`/`X_hi` pair merged into one interval column."""
    index = {name: i for i, name in enumerate(columns)}
    intervals = interval_columns(columns)
    merged = {lo: display for display, (lo, _) in intervals.items()}
    highs = {hi for _, hi in intervals.values()}
    combined = {a: b for a, b in COMBINED.values() if a in index and b in index}
    out = []
    for name in columns:
        if name in highs or name in combined.values():
            continue
        if name in combined:
            first, second = index[name], index[combined[name]]
            values = [" ".join(filter(None, (row[first], row[second]))) for row in rows]
            out.append(Column(name, values, numeric=False))
            continue
        if name in merged:
            lo, hi = index[name], index[intervals[merged[name]][1]]
            values = [interval(row[lo], row[hi]) for row in rows]
            out.append(Column(merged[name], values, numeric=True))
            continue
        raw = [row[index[name]] for row in rows]
        out.append(Column(name, [text(name, v) for v in raw], numeric=is_numeric(raw)))
    return out


def is_numeric(values: list[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in present
    )


def number(value: float) -> str:
    """Two decimals in the usual range (3.66, 0.39), three significant digits outside it."""
    return f"{value:.2f}" if 0.01 <= abs(value) < 1000 else f"{value:.3g}"


def interval(lo: Any, hi: Any) -> str:
    if lo is None or hi is None:
        return ""
    return f"[{number(lo)}, {number(hi)}]"


def text(name: str, value: Any) -> str:
    """A cell: ratios as `3.66×`, shares as percentages, floats to 4 significant digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        if name in RATIOS:
            return f"{number(value)}×"
        if name.startswith("share_"):
            return f"{value:.0%}"
        # whole numbers past 4 digits, never an exponent people must decode (1.303e+04)
        return f"{value:.0f}" if 1e4 <= abs(value) < 1e15 else f"{value:.4g}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def shorten(value: str, width: int) -> str:
    """`value` in at most `width` characters, cut in the middle: `tokens…-fp32`."""
    if len(value) <= width:
        return value
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2
    tail = width - 1 - head
    return value[:head] + ELLIPSIS + (value[-tail:] if tail else "")


# -- title ------------------------------------------------------------------------------------


def title_lines(constant: list[Column], varying: set[str], width: int | None) -> list[str]:
    """The constant columns as ` · `-separated phrases, wrapped to `width`; a phrase is used
    when none of its columns varies (is shown in the table)."""
    if not constant:
        return []
    values = {c.name: c.values[0] for c in constant}
    position = {c.name: i for i, c in enumerate(constant)}
    items: list[tuple[int, str]] = []
    used: set[str] = set()
    for names, template in TITLE_PHRASES:
        present = [n for n in names if n in values]
        if present and not used.intersection(present) and not varying.intersection(names):
            items.append((min(map(position.__getitem__, present)), _phrase(template, values)))
            used.update(present)
    for name in set(values) - used:
        if values[name]:
            item = values[name] if name in SELF_EVIDENT else f"{name} {values[name]}"
            items.append((position[name], item))
    return _wrap([item for _, item in sorted(items) if item], width)


def _phrase(template: str, values: dict[str, str]) -> str:
    words = []
    for token in template.split(" "):
        filled = token
        for name in _fields(token):
            filled = filled.replace("{" + name + "}", values.get(name, ""))
        if filled.strip("()"):
            words.append(filled)
    return " ".join(words)


def _fields(token: str) -> list[str]:
    return [part.split("}")[0] for part in token.split("{")[1:]]


def _wrap(items: list[str], width: int | None) -> list[str]:
    lines: list[str] = []
    for item in items:
        if width is not None:
            item = shorten(item, width)
        if lines and (width is None or len(lines[-1]) + 3 + len(item) <= width):
            lines[-1] += " · " + item
        else:
            lines.append(item)
    return lines


# -- fitting ----------------------------------------------------------------------------------


def fit(columns: list[Column], width: int, keep: set[str]) -> list[str]:
    """Make a line fit `width`; returns the names of the columns left out. In order, until it
    fits: shorten text to a readable width; leave out text whose absence keeps every row's
    visible key distinct (an environment named like its GPU), then extra numbers, from the
    end; shorten text down to where two values would read the same; leave out text."""
    shrinkable = [c for c in columns if not c.numeric and c.name not in keep]
    for column in shrinkable:
        column.floor = distinct_floor(column.values)
    dropped: list[str] = []
    _shrink(shrinkable, columns, width, soft=True)
    for column in reversed(shrinkable):
        if total([c for c in columns if c.name not in dropped]) <= width:
            break
        if not _separates(column, columns, dropped):
            dropped.append(column.name)
    _drop(columns, dropped, width, [c for c in columns if c.numeric and c.name not in keep])
    _shrink(shrinkable, [c for c in columns if c.name not in dropped], width, soft=False)
    _drop(columns, dropped, width, [c for c in columns if c.name not in keep])
    _grow([c for c in columns if c.name not in dropped], width)
    return dropped


def _grow(columns: list[Column], width: int) -> None:
    """Give room that leaving columns out freed back to the most shortened columns."""
    spare = width - total(columns)
    while spare > 0:
        short = max(columns, key=lambda c: _natural(c) - c.width, default=None)
        if short is None or short.width >= _natural(short):
            return
        short.width += 1
        spare -= 1


def _natural(column: Column) -> int:
    return max([len(column.header), *(len(v) for v in column.values)])


def _separates(column: Column, columns: list[Column], dropped: list[str]) -> bool:
    """Whether leaving `column` out would make two rows that now read differently look alike."""
    rest = [c for c in columns if c.name not in dropped and not c.numeric]
    nrows = len(column.values)

    def keys(shown: list[Column]) -> int:
        return len({tuple(shorten(c.values[i], c.width) for c in shown) for i in range(nrows)})

    return keys([c for c in rest if c is not column]) < keys(rest)


def _shrink(shrinkable: list[Column], columns: list[Column], width: int, soft: bool) -> None:
    """Narrow the widest shrinkable column by one until the line fits or none can narrow."""
    excess = total(columns) - width
    while excess > 0:
        widest = max(shrinkable, key=lambda c: c.width - _least(c, soft), default=None)
        if widest is None or widest.width <= _least(widest, soft):
            return
        widest.width -= 1
        excess -= 1


def _least(column: Column, soft: bool) -> int:
    return max(column.floor, min(_natural(column), SOFT_WIDTH)) if soft else column.floor


def _drop(columns: list[Column], dropped: list[str], width: int, order: list[Column]) -> None:
    for column in reversed(order):
        if total([c for c in columns if c.name not in dropped]) <= width:
            return
        if column.name not in dropped:
            dropped.append(column.name)


def distinct_floor(values: list[str]) -> int:
    """The narrowest width at which middle-shortening keeps every distinct value distinct
    (checked at every width down from the full one, so no width above it merges two)."""
    distinct = set(values)
    full = max((len(v) for v in distinct), default=0)
    floor = full
    for width in range(full - 1, MIN_WIDTH - 1, -1):
        if len({shorten(v, width) for v in distinct}) < len(distinct):
            break
        floor = width
    return min(floor, full)


def total(columns: list[Column]) -> int:
    return sum(c.width for c in columns) + len(GAP) * max(len(columns) - 1, 0)


# -- lines ------------------------------------------------------------------------------------


def body(columns: list[Column], nrows: int, color: bool) -> list[str]:
    if not columns:
        return []
    header = GAP.join(_pad(shorten(c.header, c.width), c) for c in columns).rstrip()
    lines = [_style(header, "bold", color), GAP.join("─" * c.width for c in columns)]
    for i in range(nrows):
        cells = []
        for c in columns:
            cell = _pad(shorten(c.values[i], c.width), c)
            style = VERDICT_STYLES.get(c.values[i]) if c.name == "verdict" else None
            cells.append(_style(cell, style, color))
        lines.append(GAP.join(cells).rstrip())
    return lines


def _pad(value: str, column: Column) -> str:
    return value.rjust(column.width) if column.numeric else value.ljust(column.width)


def _style(value: str, style: str | None, color: bool) -> str:
    if not color or style is None:
        return value
    return _ANSI[style] + value + _RESET
