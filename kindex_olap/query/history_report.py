"""History's answers as tables: one row per point (`history`) or per step (the step verbs and
`kindex check`), with notes for stderr. Reads the points and judged steps; decides nothing."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from kindex_olap.labels import gpu_label
from kindex_olap.natural import natural_key
from kindex_olap.query import changepoints as cp
from kindex_olap.query.correction import Scope
from kindex_olap.query.steps import Columns, Rules, Steps


@dataclass
class Table:
    """Rows for the output edge: column names, rows and notes for stderr."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    notes: list[str] = field(default_factory=list)


def _gpu(points: Columns, i: Any) -> str:
    return gpu_label(points["gpu"][i], points["form_factor"][i])


def _ms(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value) / 1e6


def _num(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)


HISTORY_COLUMNS = {
    False: [
        "kernel", "pass", "gpu", "shape", "implementation", "version", "runs", "median_ms",
        "p20_ms", "p80_ms", "min_ms", "max_ms", "baseline", "speedup", "change",
        "speedup_change", "verdict", "speedup_verdict", "commits", "first_observed",
        "last_observed",
    ],
    True: [
        "kernel", "pass", "gpu", "shape", "implementation", "version", "observed_at", "runs",
        "median_ms", "p20_ms", "p80_ms", "baseline", "baseline_ms", "speedup", "change",
        "speedup_change", "verdict", "speedup_verdict", "commit", "run_id",
    ],
}  # fmt: skip


def history_table(points: Columns, steps: list[Steps], by_run: bool) -> Table:
    """One row per selected point, with the steps into it."""
    into = {s.series: _step_into(s, len(points["series_key"])) for s in steps}
    rows = []
    for i in np.flatnonzero(points["in_query"]):
        change, verdict = _into(steps, into, "latency", int(i))
        s_change, s_verdict = _into(steps, into, "speedup", int(i))
        head = (
            points["kernel"][i], points["pass"][i], _gpu(points, i), points["shape"][i],
            points["provider"][i], points["version"][i],
        )  # fmt: skip
        tail = (
            points["baseline"][i], _num(points["speedup"][i]), _num(change), _num(s_change),
            verdict, s_verdict,
        )  # fmt: skip
        row: tuple[Any, ...]
        if by_run:
            row = (
                *head, points["first_observed"][i].item(), int(points["runs"][i]),
                _ms(points["median_ns"][i]), _ms(points["p20_ns"][i]), _ms(points["p80_ns"][i]),
                *tail[:1], _ms(points["baseline_ns"][i]), *tail[1:],
                points["commits"][i] or None, points["run_id"][i],
            )  # fmt: skip
        else:
            row = (
                *head, int(points["runs"][i]), _ms(points["median_ns"][i]),
                _ms(points["p20_ns"][i]), _ms(points["p80_ns"][i]), _ms(points["min_ns"][i]),
                _ms(points["max_ns"][i]), *tail, points["commits"][i] or None,
                points["first_observed"][i].item(), points["last_observed"][i].item(),
            )  # fmt: skip
        rows.append(row)
    rows.sort(key=lambda row: row_order(row[:5]))  # stable: each series' points stay in order
    return Table(HISTORY_COLUMNS[by_run], rows)


def _step_into(s: Steps, points: int) -> NDArray[np.intp]:
    """Each point's step of `s` into it (-1: none)."""
    out = np.full(points, -1, dtype=np.intp)
    out[s.to] = np.arange(len(s.to))
    return out


def _into(
    steps: list[Steps], into: dict[str, NDArray[np.intp]], series: str, point: int
) -> tuple[float, str | None]:
    """The ratio and verdict of the `series` step into `point` (NaN and None: none)."""
    j = int(into[series][point])
    if j < 0:
        return math.nan, None
    s = next(s for s in steps if s.series == series)
    return float(s.ratio[j]), s.verdict[j]


STEP_COLUMNS = [
    "kernel", "pass", "gpu", "shape", "implementation", "series", "from_version",
    "to_version", "from_value", "to_value", "ratio", "ratio_lo", "ratio_hi", "verdict",
    "rule", "q_value", "from_commits", "to_commits", "to_observed", "step",
]  # fmt: skip


def step_id(points: Columns, series: str, start: int, to: int) -> str:
    """A step's name, stable across lake commits while its two points keep their code: what an
    accept list names (12 hex digits of a SHA-256)."""
    parts = (
        points["kernel"][to], points["pass"][to], _gpu(points, to), points["shape"][to],
        points["provider"][to], series, points["code_key"][start], points["code_key"][to],
    )  # fmt: skip
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rule_text(points: Columns, s: Steps, j: int) -> str:
    """What decided step j (formatted only for the rows shown)."""
    start, to = int(s.start[j]), int(s.to[j])
    if not s.comparable[j]:
        before, after = points["baseline_digest"][start], points["baseline_digest"][to]
        return (
            f"baseline {points['baseline'][to]} changed implementation "
            f"({str(before)[:15]} -> {str(after)[:15]})"
        )
    runs = f"{int(points['runs'][start])}->{int(points['runs'][to])} runs"
    noise = f"noise +-{math.expm1(float(s.half_width[j])):.1%}"
    text = f"step ({runs}; {noise}, floor: {points['floor_source'][to]})"
    note = s.cp_note.get(j)
    return f"{note}; {text}" if note else text


def _wanted(verdict: str, wanted: tuple[str, ...]) -> bool:
    return any(verdict.startswith(w) for w in wanted)


def steps_table(
    points: Columns,
    steps: list[Steps],
    verdicts: tuple[str, ...],
    keep: NDArray[np.bool_],
    rules: Rules,
) -> Table:
    """One row per step whose verdict starts with one of `verdicts` and whose later point `keep`
    marks; a step the noise cannot judge only when it moved by more than the threshold."""
    rows = []
    for s in steps:
        value = points["median_ns"] / 1e6 if s.series == "latency" else points["speedup"]
        bound = np.log1p(rules.per_point(points["kernel"]))
        for j in np.flatnonzero(keep[s.to]).tolist():  # the steps into points shown
            t, verdict = s.to[j], s.verdict[j]
            if not _wanted(verdict, verdicts):
                continue
            if verdict.startswith("insufficient") and abs(s.log_change[j]) <= bound[t]:
                continue
            rows.append(step_row(points, s, j, value))
    rows.sort(key=row_order)
    return Table(list(STEP_COLUMNS), rows)


def row_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Step rows (and history rows) by kernel, pass, GPU, shape and implementation in natural
    order (forward before backward, vocab4096 before vocab131072), then series; a stable sort
    keeps each series' steps in its points' order (its versions in order)."""
    return tuple(natural_key("" if v is None else str(v)) for v in row[:6])


def step_row(points: Columns, s: Steps, j: int, value: NDArray[Any]) -> tuple[Any, ...]:
    """One step as a row of STEP_COLUMNS."""
    f, t = int(s.start[j]), int(s.to[j])
    half = float(s.half_width[j])
    return (
        points["kernel"][t], points["pass"][t], _gpu(points, t), points["shape"][t],
        points["provider"][t], s.series, points["version"][f], points["version"][t],
        _num(value[f]), _num(value[t]), _num(s.ratio[j]),
        _num(s.ratio[j] * math.exp(-half)), _num(s.ratio[j] * math.exp(half)),
        s.verdict[j], rule_text(points, s, j), float(s.qvalue[j]),
        points["commits"][f] or None, points["commits"][t] or None,
        points["last_observed"][t].item(), step_id(points, s.series, f, t),
    )  # fmt: skip


def notes(scope: Scope, rules: Rules, all_branches: bool) -> list[str]:
    """What was tested and how, for stderr."""
    out = [
        f"history: {scope.series} series of the lake, {scope.points} points, {scope.tests} "
        f"steps tested together (latency and speedup); flagged: change > {rules.threshold:.0%} "
        f"and Benjamini-Hochberg q <= {rules.q_level:g}; change points (E-Divisive) in series "
        f"of {cp.MIN_POINTS}+ points"
    ]
    if not all_branches:
        out.append("main-branch runs only (--all-branches adds runs first seen elsewhere)")
    return out
