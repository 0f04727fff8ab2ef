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
import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from kindex_olap.doors.apart import SIDE_NAMES as SIDES
from kindex_olap.doors.apart import for_reading
from kindex_olap.doors.columns import (
    COMBINED,
    HEAD_CUT,
    NAMES,
    RATIOS,
    SELF_EVIDENT,
    SERIES_UNITS,
    THIN_WORDS,
    TITLE_PHRASES,
    VERDICT_STYLES,
    header,
    interval_columns,
    interval_text,
    number,
    verb_columns,
)
from kindex_olap.doors.records import spelled
from kindex_olap.labels import gpu_label
from kindex_olap.query.verbs import VerbColumns

ELLIPSIS = "…"
GAP = "  "
MIN_WIDTH = 6  # a shortened text column keeps at least this many characters
DAY = len("2024-12-05")  # a date column is cut from the end, never below the day
SHORT_WORD = 10  # text no wider than this is never shortened
NAME_FLOOR = 24  # a name is never shortened below this; the column is left out whole instead
HEAD_FLOOR = len("environment shift")  # a verdict or evidence keeps its first words
SOFT_WIDTH = 14  # text is shortened below this only when leaving out numbers is not enough
# the names of what a row compares, and where: where they differ by row, a row cannot be read
# without them, so other text is shortened to its floor before they are left out
PAIR = ("candidate", "baseline", "gpu", "kernel")
# where leaving columns out to fit loses what tells rows apart (a whole-lake summary at 80
# columns), rows are grouped by these, in this order, each group under its own title line
GROUP_BY = ("kernel", "gpu", "environment", "pass")
# a side's name with the implementation it is (kindex_olap.doors.apart): "user-7 (submission 5)"
TAGGED = frozenset(SIDES)
_TAGGED = re.compile(r"(?P<name>.+?)(?P<tag> \([^()]+\))")
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
    date: bool = False  # cut from the end (the time goes first, the day stays)
    head: bool = False  # cut from the end with an ellipsis (the start says the most)
    common: tuple[int, int] = (0, 0)  # lengths of the prefix and suffix every value shares
    longest: int = 0  # the longest value's length
    # each value's `-`-separated parts that differ between values, the rest elided
    # (`T4096…label_stride1…p08889236`); used below `compact_below` characters, the width
    # under which one cut can no longer keep the values apart
    compact: dict[str, str] = field(default_factory=dict)
    compact_below: int = 0
    # a side's value -> (its name, " (the implementation)") where kindex_olap.doors.apart named
    # one: found once, not at each of the fitter's million cuts of a large answer
    tagged: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        self.header = self.header or header(self.name)
        self.longest = max((len(v) for v in self.values), default=0)
        self.width = max(len(self.header), self.longest)
        distinct = sorted(set(self.values))
        if self.name in TAGGED:
            found = (_TAGGED.fullmatch(v) for v in distinct)
            self.tagged = {m[0]: (m["name"], m["tag"]) for m in found if m is not None}
        if len(distinct) > 1:
            self.common = (_common_prefix(distinct), _common_prefix([v[::-1] for v in distinct]))
            if not self.numeric:
                self.compact = _compact(distinct)

    def cut(self, value: str, width: int) -> str:
        """`value` in `width` characters: a date loses its time, other text loses characters
        of what every value shares (`tokens1024-…-fp32`), else its middle."""
        if len(value) <= width:
            return value
        if self.date:
            return value[:DAY]
        if self.head:
            short = next((s for s in _spellings(value) if len(s) <= width), value)
            return short if len(short) <= width else short[: width - 1] + ELLIPSIS
        if self.tagged and value in self.tagged:
            cut = _cut_tagged(*self.tagged[value], self.compact.get(value, ""), width)
            if cut:
                return cut
        if width < self.compact_below and value in self.compact:
            return shorten(self.compact[value], width)
        # one place for the cut on every row: where the longest value's cut fits
        return shorten_inside(value, width, *self.common, need=self.longest - width + 1)


@functools.lru_cache(maxsize=1 << 16)
def _cut_tagged(name: str, whole: str, compact: str, width: int) -> str:
    """A side's `name` and the implementation it is (`whole`: kindex_olap.doors.apart) in
    `width` characters: the implementation whole where the name keeps SHORT_WORD characters
    beside it, else its last word (the number of "submission 553187": the title line names the
    baseline's in full); "" where neither leaves the name room. Cached: the fitter cuts each
    value at every width it tries, in every group of a large answer."""
    tag = whole if width - len(whole) >= SHORT_WORD else f" ({whole[2:-1].split()[-1]})"
    room = width - len(tag)
    if room < SHORT_WORD:
        return ""
    if len(name) > room and compact.endswith(whole):
        name = compact[: -len(whole)]  # the parts that differ: `…10239468`
    # a name's end tells a user's number apart: cut from its start
    return (name if len(name) <= room else ELLIPSIS + name[-room + 1 :]) + tag


_INSUFFICIENT = re.compile(r"insufficient replicates \(floor (?P<floor>[^)]*)\)")
# what a verdict shortened to fit means, said once on stderr
SPELLED = "insufficient N %: insufficient replicates, the step's noise floor (N %) wider than a change it could show"


def _spellings(value: str) -> list[str]:
    """Shorter spellings of a verdict, longest first, each keeping what it says
    (`insufficient replicates (floor 12 %)` -> `insufficient (floor 12 %)` ->
    `insufficient 12 %`: the floor is what tells two such steps apart)."""
    found = _INSUFFICIENT.fullmatch(value)
    if found is None:
        return []
    floor = found["floor"]
    return [f"insufficient (floor {floor})", f"insufficient {floor}"]


def _compact(distinct: list[str]) -> dict[str, str]:
    """Each value as the `-`-separated parts that differ between the values, an ellipsis for
    each run of parts they all share; empty unless every value has the same 3 or more parts
    and the spelling is shorter."""
    split = [v.split("-") for v in distinct]
    if len(split[0]) < 3 or any(len(parts) != len(split[0]) for parts in split):
        return {}
    differ = [len({parts[i] for parts in split}) > 1 for i in range(len(split[0]))]
    if all(differ):
        return {}
    compact = {}
    for value, parts in zip(distinct, split, strict=True):
        out = ""
        for part, kept in zip(parts, differ, strict=True):
            if kept:
                out += ("-" if out and not out.endswith(ELLIPSIS) else "") + part
            elif not out.endswith(ELLIPSIS):
                out += ELLIPSIS
        compact[value] = out
    return compact


def _common_prefix(values: list[str]) -> int:
    first, last = min(values), max(values)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return n


@dataclass
class Table:
    """What to print: title lines, the table's lines, and the columns not shown."""

    lines: list[str] = field(default_factory=list)
    shown: list[Column] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    dropped_to_fit: list[str] = field(default_factory=list)
    # a name that says what a row compares (candidate, baseline), left out to fit although it
    # differs by row: its values, said on stderr
    differing: dict[str, list[str]] = field(default_factory=dict)
    spelled: bool = False  # a verdict printed in a shorter spelling (SPELLED says what it means)
    titled: list[str] = field(default_factory=list)  # columns said once in a title line

    def notes(self, width: int | None) -> list[str]:
        """The stderr lines naming what was left out, and what a shortened verdict means."""
        notes = [SPELLED] if self.spelled else []
        if not self.left_out and not self.dropped_to_fit:
            return _wrapped(notes, width)
        parts = []
        if self.left_out:
            parts.append(", ".join(self.left_out))
        if self.dropped_to_fit:
            parts.append(f"to fit {width} columns: {', '.join(self.dropped_to_fit)}")
        more = "--format csv shows every column" if not self.left_out else "--wide adds them"
        notes.insert(0, f"columns left out: {'; '.join(parts)} ({more})")
        notes += [
            f"{name} differs by row ({', '.join(values)}); --format csv shows each row's"
            for name, values in self.differing.items()
        ]
        return _wrapped(notes, width)


def _wrapped(notes: list[str], width: int | None) -> list[str]:
    if width is None:
        return notes
    import textwrap

    return [line for n in notes for line in textwrap.wrap(n, width, break_on_hyphens=False)]


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
    """The table of `rows` for `verb`, fitted to `width` (None: as wide as it is). `wide`
    adds the verb's other columns after its default ones and leaves none of those out.

    Where fitting leaves out a column that tells rows apart (a kernel, a GPU) or lets two
    rows read alike, the rows are split by the first of `GROUP_BY` that varies among them,
    and each part is fitted as a table of its own under its own title line (what its rows
    share), again split by the next where it still loses one (a whole-lake summary)."""
    spec = verb_columns(verb)
    columns, rows = for_reading(columns, rows, spec)
    parts = _parts(columns, rows, list(range(len(rows))), spec, width, wide, 0)
    if width is not None and len(parts) > 1:
        _same_extras(parts, spec, width)
    return _joined(parts, color)


def _joined(parts: list[tuple[Table, list[int]]], color: bool) -> Table:
    """One table of the groups' tables, a blank line between them; what they left out named
    once (a column some group shows, evidence where a side was timed once, is not "left
    out" but may be "left out to fit" where another group had no room for it)."""
    table = Table()
    for part, group in parts:
        if table.lines:
            table.lines.append("")  # a group's title starts a paragraph of its own
        table.lines.extend(part.lines)
        table.lines.extend(body(part.shown, range(len(group)), color))
        table.shown.extend(part.shown)
        table.titled += [n for n in part.titled if n not in table.titled]
        table.left_out += [n for n in part.left_out if n not in table.left_out]
        table.dropped_to_fit += [n for n in part.dropped_to_fit if n not in table.dropped_to_fit]
        for name, values in part.differing.items():
            table.differing[name] = sorted({*table.differing.get(name, []), *values})
    # in a row or a title; or named once as left out to fit, where a group wanted it
    said = {c.name for c in table.shown} | set(table.titled) | set(table.dropped_to_fit)
    table.left_out = [n for n in table.left_out if n not in said]
    table.spelled = any(
        c.head and c.cut(v, c.width) != v and _spellings(v) for c in table.shown for v in c.values
    )
    table.differing = {name: _some(values) for name, values in table.differing.items()}
    return table


def _same_extras(
    parts: list[tuple[Table, list[int]]], spec: VerbColumns | None, width: int
) -> None:
    """Leave out of every group the columns that are neither an answer nor a row key (a
    summary's min and max) where some group left them out to fit: the groups read alike,
    and the stderr line that names them is true of every group."""
    # a spare column (a step's rule) shows in each group that has room for it whole
    kept = set(spec.answer) | set(spec.keys) | set(spec.spare) if spec else set()
    extras = {n for part, _ in parts for n in part.dropped_to_fit if n not in kept}
    for part, _ in parts:
        left = [c for c in part.shown if c.name not in extras]
        # but not where they are what tells two of its rows apart (two runs of one case)
        if len(left) < len(part.shown) and _lines(left) == _lines(part.shown):
            part.dropped_to_fit += [c.name for c in part.shown if c not in left]
            part.shown = left
            _grow(part.shown, width)


def _parts(
    columns: list[str],
    rows: Sequence[Sequence[Any]],
    group: list[int],
    spec: VerbColumns | None,
    width: int | None,
    wide: bool,
    level: int,
) -> list[tuple[Table, list[int]]]:
    """The rows numbered `group` as one table (its title lines and columns, not its body),
    else, where that table loses what tells its rows apart and `GROUP_BY[level:]` holds a
    column that varies among them, as one table per value of that column."""
    table, lost = _layout(columns, [rows[i] for i in group], spec, width, wide)
    index = {name: i for i, name in enumerate(columns)}
    order = _split_order(spec)
    for at, name in enumerate(order[level:], start=level):
        # past GROUP_BY, a row key splits only where this table left it out (a shape too
        # long to fit beside the names), so two runs of one case never split into one each
        if name not in index or (name not in GROUP_BY and name not in table.dropped_to_fit):
            continue
        split: dict[Any, list[int]] = {}
        for i in group:
            split.setdefault(rows[i][index[name]], []).append(i)
        if lost and len(split) > 1:
            return [
                part
                for sub in split.values()
                for part in _parts(columns, rows, sub, spec, width, wide, at + 1)
            ]
    return [(table, group)]


def _split_order(spec: VerbColumns | None) -> tuple[str, ...]:
    """`GROUP_BY`, then the verb's other row keys."""
    keys = spec.keys if spec else ()
    return (*GROUP_BY, *(k for k in keys if k not in GROUP_BY))


def _layout(
    columns: list[str],
    rows: Sequence[Sequence[Any]],
    spec: VerbColumns | None,
    width: int | None,
    wide: bool,
) -> tuple[Table, bool]:
    """The title lines and fitted columns of `rows`, and whether fitting lost a row key that
    varies or made two rows print the same."""
    shown, extra, table = _chosen(display_columns(columns, rows), spec, wide)
    keep = set(spec.answer) if spec else set()
    title: list[Column] = []
    if spec is not None and rows:
        # only a verb's text folds (numbers are measurements of each row, and stay in the
        # table); `kindex sql` shows the columns its query asked for: a `null` column of
        # DESCRIBE folded into a title line read "null YES"
        title = [
            c for c in shown if c.name not in keep and not c.numeric and len(set(c.values)) == 1
        ]
        shown = [c for c in shown if c not in title]
    table.lines = title_lines(title, {c.name for c in shown}, width)
    table.titled = [c.name for c in title]
    lost = False
    if width is not None:
        # a tiebreak column is a key where it was chosen to tell rows apart, not where --wide
        # merely adds it (a speedup's times, which vary by pass, split a wide table by pass)
        keys = set(spec.keys) | (set(spec.tiebreak) - extra) if spec else set()
        first = extra | set(spec.spare if spec else ())  # left out first, from the end
        table.dropped_to_fit = fit(shown, width, keep=keep, keys=keys, extra=first)
        lost = _reads_alike(shown, table.dropped_to_fit, keys)
        table.differing = {
            c.name: sorted(set(c.values))
            for c in shown
            if c.name in table.dropped_to_fit and c.name in PAIR and len(set(c.values)) > 1
        }
        shown = [c for c in shown if c.name not in table.dropped_to_fit]
    table.shown = shown
    return table, lost


def _reads_alike(columns: list[Column], dropped: list[str], keys: set[str]) -> bool:
    """Whether leaving out `dropped` lost a row key that varies, or made two rows print the
    same."""
    if any(c.name in dropped and c.name in keys and len(set(c.values)) > 1 for c in columns):
        return True
    nrows = len(columns[0].values) if columns else 0
    return _lines([c for c in columns if c.name not in dropped]) < nrows


def _lines(printed: list[Column]) -> int:
    """How many different lines the columns `printed` print."""
    nrows = len(printed[0].values) if printed else 0
    return len({tuple(c.cut(c.values[i], c.width) for c in printed) for i in range(nrows)})


def _some(values: list[str], most: int = 6) -> list[str]:
    """The first `most` values, and how many more there are."""
    if len(values) <= most:
        return values
    return [*values[:most], f"{len(values) - most} more"]


def _chosen(
    shown: list[Column], spec: VerbColumns | None, wide: bool
) -> tuple[list[Column], set[str], Table]:
    """The verb's default columns in its order (then, with `wide`, the rest); the names of
    the added ones; a Table naming those left out."""
    table = Table()
    if spec is None:
        return shown, set(), table
    order = {name: i for i, name in enumerate(spec.show)}
    thin = {
        name
        for name in spec.thin
        if not any(w in v for c in shown if c.name == name for v in c.values for w in THIN_WORDS)
    }
    default = sorted(
        (c for c in shown if c.name in order and c.name not in thin), key=lambda c: order[c.name]
    )
    default = _with_tiebreak(default, shown, spec)
    rest = [c for c in shown if c not in default]
    if not wide:
        table.left_out = [c.name for c in rest]
        return default, set(), table
    return default + rest, {c.name for c in rest}, table


def _with_tiebreak(default: list[Column], shown: list[Column], spec: VerbColumns) -> list[Column]:
    """`default` with the verb's tiebreak columns that hold a value after its last key column,
    when the keys it shows leave two rows alike (`latency`: two runs of one case and version
    differ only in when they ran), or a row's `spec.same` columns are equal (a step inside one
    version label)."""
    keys = [c for c in default if c.name in spec.keys]
    breaking = [c for c in shown if c.name in spec.tiebreak and c not in default and any(c.values)]
    if not keys or not breaking:
        return default
    same = [c for c in shown if c.name in spec.same]
    inside = len(same) == len(spec.same) > 0 and any(
        len(set(row)) == 1 and row[0] for row in zip(*(c.values for c in same), strict=True)
    )
    alike = len(set(zip(*(c.values for c in keys), strict=True))) < len(keys[0].values)
    if not (inside or alike):
        return default
    if not inside:  # of two rows alike, what differs: the candidate's time, not the baseline's
        breaking = [c for c in breaking if len(set(c.values)) > 1] or breaking
    at = max(default.index(c) for c in keys) + 1
    return default[:at] + breaking + default[at:]


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
            values = [gpu_label(row[first], row[second]) for row in rows]
            out.append(Column(name, values, numeric=False))
            continue
        if name in merged:
            lo, hi = index[name], index[intervals[merged[name]][1]]
            values = [interval(row[lo], row[hi]) for row in rows]
            out.append(Column(merged[name], values, numeric=True))
            continue
        raw = [row[index[name]] for row in rows]
        if name in ("from_value", "to_value") and "series" in index:
            units = [SERIES_UNITS.get(str(row[index["series"]]), "") for row in rows]
            values = [_with_unit(v, u) for v, u in zip(raw, units, strict=True)]
            out.append(Column(name, values, numeric=True))
            continue
        dates = bool(raw) and all(isinstance(v, dt.datetime | None) for v in raw)
        values = _times(raw) if dates else [text(name, v) for v in raw]
        out.append(
            Column(
                name,
                values,
                numeric=is_numeric(raw),
                date=dates and any(raw),
                head=name in HEAD_CUT,
            )
        )
    return out


# a time to the minute, else to the second, else the millisecond: the first that keeps the
# column's distinct times distinct (two steps 0.6 s apart read "2026-06-06 21:33" twice)
_TIME_FORMATS = ("%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f")


def _times(raw: list[Any]) -> list[str]:
    distinct = len(set(raw))
    for form in _TIME_FORMATS:
        values = ["" if v is None else v.strftime(form) for v in raw]
        if len(set(values)) == distinct:
            break
    return [v[:-3] if form.endswith("%f") and v else v for v in values]


def _with_unit(value: Any, unit: str) -> str:
    if value is None:
        return ""
    return f"{number(value)}×" if unit == "×" else f"{number(value)} {unit}".rstrip()


def is_numeric(values: list[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in present
    )


def interval(lo: Any, hi: Any) -> str:
    return interval_text(lo, hi)


def text(name: str, value: Any) -> str:
    """A cell: ratios as `3.66×`, shares as percentages, floats to 4 significant digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        if name == "q_value" and value < 1e-300:
            return "<1e-300"  # below what a float prints; 0 would claim certainty
        if name in RATIOS:
            return f"{number(value)}×"
        if name.startswith("share_"):
            return f"{value:.0%}"
        # whole numbers past 4 digits, never an exponent people must decode (1.303e+04)
        return f"{value:.0f}" if 1e4 <= abs(value) < 1e15 else f"{value:.4g}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dict | list | tuple):
        return spelled(value)
    return str(value)


def shorten(value: str, width: int) -> str:
    """`value` in at most `width` characters, cut in the middle: `tokens…-fp32`."""
    if len(value) <= width:
        return value
    if width <= 1:
        return ELLIPSIS[:width]
    head = width // 2
    # never inside a number: the first one is kept whole where the rest still has room
    # (`tokens1024…-fp32`, not `tokens10…256-fp32`: the count is what differs), else left out
    end = head
    while 0 < end < len(value) and value[end].isdigit() and value[end - 1].isdigit():
        end += 1
    if end > head:
        if width - 1 - end >= 1:
            head = end
        else:
            while head > 0 and value[head - 1].isdigit():
                head -= 1
    tail = width - 1 - head
    rest = value[len(value) - tail :] if tail else ""
    before = len(value) - tail - 1
    while rest and rest[0].isdigit() and before >= 0 and value[before].isdigit():
        rest, before = rest[1:], before + 1  # nor a number's last digits
    return value[:head] + ELLIPSIS + rest


def shorten_inside(
    value: str, width: int, prefix: int, suffix: int, need: int | None = None
) -> str:
    """`value` in `width` characters, the cut placed inside the first `prefix` or the last
    `suffix` characters (a part every value of its column shares) where one is long enough
    (for `need` characters: the column's longest cut), else in the middle."""
    if len(value) <= width:
        return value
    remove = len(value) - width + 1  # the ellipsis takes one
    for start, length in ((len(value) - suffix, suffix), (0, prefix)):
        # keep a character of the shared part on each side of the cut where it can
        if length - 2 >= max(remove, need or 0):
            at = start + 1 + (length - 2 - remove) // 2
            return value[:at] + ELLIPSIS + value[at + remove :]
    return shorten(value, width)


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


def fit(
    columns: list[Column],
    width: int,
    keep: set[str],
    keys: set[str] | None = None,
    extra: set[str] | None = None,
) -> list[str]:
    """Make a line fit `width`; returns the names of the columns left out. In order, until it
    fits: leave out the `extra` columns (--wide's), from the end; shorten text to a readable
    width; leave out numbers that are not the answer, from the end, then text whose absence
    keeps every row's visible key distinct (an environment named like its GPU), but not the
    names of what a row compares where they differ by row (`PAIR`); shorten text down to
    where two values would read the same; leave out the rest but the row `keys` and those
    names, then those names where other keys still tell rows apart, then the keys. Names are
    never shortened, and answer columns never left out."""
    keys, extra = keys or set(), extra or set()
    shrinkable = [c for c in columns if not c.numeric]
    for column in shrinkable:
        column.floor = distinct_floor(column.values, column)
        if column.compact and column.floor > MIN_WIDTH:
            # below the floor one cut would merge values: spell only the parts that differ
            column.compact_below = column.floor
            column.floor = min(column.floor, distinct_floor(column.values, column))
        # a short word (a pass, a unit, a status) is never cut, nor is a header
        column.floor = max(column.floor, min(_natural(column), SHORT_WORD), len(column.header))
        if column.name in NAMES:
            column.floor = max(column.floor, min(_natural(column), NAME_FLOOR))
        if column.head:  # a verdict's first words say it; the row keys tell rows apart
            least = HEAD_FLOOR if "verdict" in column.name else len("single timing…")
            spelled = [len(_spellings(v)[-1]) for v in set(column.values) if _spellings(v)]
            least = max([least, *spelled])  # `insufficient 514 %` whole
            column.floor = max(len(column.header), min(_natural(column), least))
    dropped: list[str] = []
    _drop(columns, dropped, width, [c for c in columns if c.name in extra])
    _shrink(_left(shrinkable, dropped), _left(columns, dropped), width, soft=True)
    # numbers that are not the answer go before names that say what a row compares (a
    # candidate, a baseline), even where other keys already tell the rows apart
    _drop(columns, dropped, width, [c for c in columns if c.numeric and c.name not in keep])
    meaning = {c.name for c in columns if c.name in PAIR and len(set(c.values)) > 1}
    for column in reversed([c for c in columns if not c.numeric and c.name not in keep]):
        if total(_left(columns, dropped)) <= width:
            break
        if column.name in meaning:
            continue
        if column.name not in dropped and not _separates(column, columns, dropped, keys):
            dropped.append(column.name)
    _shrink(_left(shrinkable, dropped), _left(columns, dropped), width, soft=False)
    _drop(columns, dropped, width, [c for c in columns if c.name not in keep | keys | meaning])
    for column in reversed([c for c in columns if c.name in meaning]):  # before a shape
        if total(_left(columns, dropped)) <= width:
            break
        if column.name not in dropped and not _separates(column, columns, dropped, keys):
            dropped.append(column.name)
    _drop(columns, dropped, width, [c for c in columns if c.name not in keep])
    _readmit(columns, dropped, width, keys | meaning)
    _grow(_left(columns, dropped), width)
    return dropped


def _readmit(columns: list[Column], dropped: list[str], width: int, wanted: set[str]) -> None:
    """Put back, at their floor, the row keys that leaving others out made room for: the
    most telling first (most distinct values), so a history at 80 columns keeps its versions
    when its shapes cannot fit."""
    back = [c for c in columns if c.name in dropped and c.name in wanted]
    # the room an evidence needs to say which side was timed once stays its own
    evidence = [c for c in _left(columns, dropped) if c.head and "verdict" not in c.name]
    for column in evidence:
        column.width = max(column.width, distinct_floor(column.values, column))
    for column in sorted(back, key=lambda c: -len(set(c.values))):
        column.width = column.floor if not column.numeric else column.width
        if total([*_left(columns, dropped), column]) <= width:
            dropped.remove(column.name)
    for column in evidence:  # and gives back what the line cannot hold
        while total(_left(columns, dropped)) > width and column.width > column.floor:
            column.width -= 1


def _left(columns: list[Column], dropped: list[str]) -> list[Column]:
    return [c for c in columns if c.name not in dropped]


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
    return max(len(column.header), column.longest)


def _separates(column: Column, columns: list[Column], dropped: list[str], keys: set[str]) -> bool:
    """Whether leaving `column` out would make two rows that now read differently look alike
    (judged on the row `keys` when the verb names them)."""
    rest = [
        c
        for c in columns
        if c.name not in dropped and not c.numeric and (not keys or c.name in keys)
    ]
    if keys and column.name not in keys:
        return False
    nrows = len(column.values)

    def distinct_rows(shown: list[Column]) -> int:
        return len({tuple(c.cut(c.values[i], c.width) for c in shown) for i in range(nrows)})

    return distinct_rows([c for c in rest if c is not column]) < distinct_rows(rest)


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


def distinct_floor(values: list[str], column: Column | None = None) -> int:
    """The narrowest width at which shortening (the column's, else in the middle) keeps every
    distinct value distinct (checked at every width down from the full one, so no width above
    it merges two)."""
    distinct = set(values)
    full = max((len(v) for v in distinct), default=0)
    floor = full
    cut = column.cut if column is not None else shorten
    for width in range(full - 1, MIN_WIDTH - 1, -1):
        if len({cut(v, width) for v in distinct}) < len(distinct):
            break
        floor = width
    if column is not None and column.date:
        floor = max(floor, DAY)
    return min(floor, full)


def total(columns: list[Column]) -> int:
    return sum(c.width for c in columns) + len(GAP) * max(len(columns) - 1, 0)


# -- lines ------------------------------------------------------------------------------------


def body(columns: list[Column], rows: Sequence[int], color: bool) -> list[str]:
    """The header, its rule and the lines of the rows numbered `rows`."""
    if not columns:
        return []
    header = GAP.join(_pad(shorten(c.header, c.width), c) for c in columns).rstrip()
    lines = [_style(header, "bold", color), GAP.join("─" * c.width for c in columns)]
    for i in rows:
        cells = []
        for c in columns:
            cell = _pad(c.cut(c.values[i], c.width), c)
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
