"""History's answers as tables: one row per point (`history`) or per step (the step verbs and
`kindex check`), with notes for stderr. Reads the points and judged steps; decides nothing."""

from __future__ import annotations

import hashlib
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
    # a step verb's empty answer: the steps into what it selected (query/explain.py says why)
    selected: Selected | None = None


@dataclass
class Selected:
    """The steps into the points a step verb selected, shown or not."""

    steps: int
    measured: int  # of implementations measured against a baseline: those a step verb lists
    baselines: list[str]  # the implementations of the others (their cells' baselines)


def selected_steps(points: Columns, steps: list[Steps]) -> Selected:
    """What `steps` (of `points`) hold into the points the query selected (`in_query`)."""
    chosen = points["in_query"].astype(bool)
    baseline = points["is_baseline"].astype(bool)
    total = measured = 0
    names: set[str] = set()
    for s in steps:
        into = chosen[s.to]
        total += int(into.sum())
        measured += int((into & ~baseline[s.to]).sum())
        names.update(str(v) for v in points["provider"][s.to][into & baseline[s.to]] if v)
    return Selected(total, measured, sorted(names))


HISTORY_COLUMNS = {
    False: [
        "kernel", "pass", "gpu", "shape", "implementation", "version", "runs", "median_ms",
        "p20_ms", "p80_ms", "min_ms", "max_ms", "baseline", "speedup", "change",
        "speedup_change", "verdict", "speedup_verdict", "commits", "first_observed",
        "last_observed", "implementation_name",
    ],
    True: [
        "kernel", "pass", "gpu", "shape", "implementation", "version", "observed_at", "runs",
        "median_ms", "p20_ms", "p80_ms", "baseline", "baseline_ms", "speedup", "change",
        "speedup_change", "verdict", "speedup_verdict", "commit", "run_id",
        "implementation_name",
    ],
}  # fmt: skip


def history_table(points: Columns, steps: list[Steps], by_run: bool) -> Table:
    """One row per selected point, with the steps into it; built from columns, as step rows
    are (a kernel's history at 1M runs is 25k points)."""
    shown = np.flatnonzero(points["in_query"])
    n = len(points["series_key"])
    change, verdict = _steps_into(steps, "latency", shown, n)
    s_change, s_verdict = _steps_into(steps, "speedup", shown, n)
    column: dict[str, list[Any]] = {
        "kernel": points["kernel"][shown].tolist(),
        "pass": points["pass"][shown].tolist(),
        "gpu": _gpus(points, shown),
        "shape": points["shape"][shown].tolist(),
        "implementation": points["provider"][shown].tolist(),
        # the implementation's own name: a provider's two in one cell (a user's submissions,
        # FlashInfer's cuDNN and cuBLASLt GEMMs) are two series, told apart by it
        "implementation_name": points["implementation"][shown].tolist(),
        "version": points["version"][shown].tolist(),
        "observed_at": points["first_observed"][shown].tolist(),
        "first_observed": points["first_observed"][shown].tolist(),
        "last_observed": points["last_observed"][shown].tolist(),
        "runs": [int(count) for count in points["runs"][shown].tolist()],
        "baseline": points["baseline"][shown].tolist(),
        "speedup": nums(points["speedup"][shown]),
        "change": nums(change),
        "speedup_change": nums(s_change),
        "verdict": verdict,
        "speedup_verdict": s_verdict,
        "commits": [c or None for c in points["commits"][shown].tolist()],
        "commit": [c or None for c in points["commits"][shown].tolist()],
    }
    for name in ("median", "p20", "p80", "min", "max", "baseline"):
        if f"{name}_ns" in points:
            column[f"{name}_ms"] = nums(points[f"{name}_ns"][shown] / 1e6)
    if by_run:
        column["run_id"] = points["run_id"][shown].tolist()
    names = HISTORY_COLUMNS[by_run]
    rows = list(zip(*(column[name] for name in names), strict=True))
    # stable: each series' points stay in order
    return Table(names, sorted_rows(rows, width=5))


def _steps_into(
    steps: list[Steps], series: str, shown: NDArray[np.intp], points: int
) -> tuple[NDArray[np.float64], list[str | None]]:
    """The ratio and verdict of the `series` step into each point of `shown` (of `points`;
    NaN and None: none)."""
    s = next(s for s in steps if s.series == series)
    step = np.full(points, -1, dtype=np.intp)
    step[s.to] = np.arange(len(s.to))
    j = step[shown]
    ratio = np.full(len(j), np.nan)
    ratio[j >= 0] = s.ratio[j[j >= 0]]
    return ratio, [s.verdict[k] if k >= 0 else None for k in j.tolist()]


STEP_COLUMNS = [
    "kernel", "pass", "gpu", "shape", "implementation", "series", "from_version",
    "to_version", "from_value", "to_value", "ratio", "ratio_lo", "ratio_hi", "verdict",
    "rule", "q_value", "from_commits", "to_commits", "to_observed", "step",
    "implementation_name",
]  # fmt: skip


def step_ids(
    points: Columns, series: str, start: NDArray[np.intp], to: NDArray[np.intp]
) -> list[str]:
    """Each step's name (start[i] to to[i]), stable across lake commits while its two points
    keep their code: what an accept list names (12 hex digits of a SHA-256; the same in SQL:
    kindex_olap.layers.steps STEP_ID)."""
    parts = zip(
        points["kernel"][to].tolist(), points["pass"][to].tolist(), _gpus(points, to),
        points["shape"][to].tolist(), points["provider"][to].tolist(),
        points["code_key"][start].tolist(), points["code_key"][to].tolist(), strict=True,
    )  # fmt: skip
    return [
        hashlib.sha256(
            "\x1f".join("" if p is None else str(p) for p in (*row[:5], series, *row[5:])).encode()
        ).hexdigest()[:12]
        for row in parts
    ]


def _gpus(points: Columns, rows: NDArray[np.intp]) -> list[str]:
    """The GPU label of each of `rows`, built once per distinct (gpu, form factor)."""
    gpus, form_factors = points["gpu"][rows].tolist(), points["form_factor"][rows].tolist()
    pairs = list(zip(gpus, form_factors, strict=True))
    labels = {pair: gpu_label(*pair) for pair in set(pairs)}
    return [labels[pair] for pair in pairs]


def rule_texts(points: Columns, s: Steps, js: NDArray[np.intp]) -> list[str]:
    """What decided each step of `js` (formatted only for the rows shown)."""
    start, to = s.start[js], s.to[js]
    baseline, digest = points["baseline"], points["baseline_digest"]
    texts = []
    for j, comparable, f, t, runs_from, runs_to, noise, floor in zip(
        js.tolist(), s.comparable[js].tolist(), start.tolist(), to.tolist(),
        points["runs"][start].tolist(), points["runs"][to].tolist(),
        np.expm1(s.half_width[js]).tolist(), points["floor_source"][to].tolist(), strict=True,
    ):  # fmt: skip
        if not comparable:
            texts.append(
                f"baseline {baseline[t]} changed implementation "
                f"({str(digest[f])[:15]} -> {str(digest[t])[:15]})"
            )
            continue
        text = f"step ({int(runs_from)}->{int(runs_to)} runs; noise +-{noise:.1%}, floor: {floor})"
        note = s.cp_note.get(j)
        texts.append(f"{note}; {text}" if note else text)
    return texts


def _verdicts_in(verdicts: list[str], wanted: tuple[str, ...]) -> NDArray[np.bool_]:
    """Which verdicts start with one of `wanted` (a few distinct verdicts, tested once each)."""
    hit = {v for v in set(verdicts) if v.startswith(wanted)}
    return np.fromiter(map(hit.__contains__, verdicts), bool, len(verdicts))


def steps_table(
    points: Columns,
    steps: list[Steps],
    verdicts: tuple[str, ...],
    keep: NDArray[np.bool_],
    rules: Rules,
) -> Table:
    """One row per step whose verdict starts with one of `verdicts` and whose later point `keep`
    marks; a step the noise cannot judge only when it moved by more than the threshold.
    Columns are built as arrays and zipped into rows: per-row indexing of numpy arrays made
    this 1.9 s of a 7.3 s `regressions kernel05` at 1M runs (7,366 rows, load 9)."""
    rows: list[tuple[Any, ...]] = []
    bound = np.log1p(rules.per_point(points["kernel"]))
    for s in steps:
        js = np.flatnonzero(
            keep[s.to] & shown_verdicts(s.verdict, s.log_change, bound[s.to], verdicts)
        )
        value = points["median_ns"] / 1e6 if s.series == "latency" else points["speedup"]
        rows.extend(step_rows(points, s, js, value))
    return Table(list(STEP_COLUMNS), sorted_rows(rows))


def shown_verdicts(
    verdicts: list[str], log_change: NDArray[Any], bound: NDArray[Any], wanted: tuple[str, ...]
) -> NDArray[np.bool_]:
    """Which steps a step verb shows: its verdicts (`wanted`), a step the noise cannot judge
    only when it moved by more than the threshold (`bound`, log scale)."""
    insufficient = _verdicts_in(verdicts, ("insufficient",)) & (np.abs(log_change) <= bound)
    return np.asarray(_verdicts_in(verdicts, wanted) & ~insufficient)


def sorted_rows(rows: list[tuple[Any, ...]], width: int = 6) -> list[tuple[Any, ...]]:
    """`rows` in row_order of their first `width` values (stable), each distinct key computed
    once: rows share their kernel, pass, GPU, shape and implementation with many others."""
    keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        head = row[:width]
        found = keys.get(head)
        if found is None:
            found = keys[head] = row_order(head)
        return found

    return sorted(rows, key=key)


def row_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Step rows (and history rows) by kernel, pass, GPU, shape and implementation in natural
    order (forward before backward, vocab4096 before vocab131072), then series; a stable sort
    keeps each series' steps in its points' order (its versions in order)."""
    return tuple(natural_key("" if v is None else str(v)) for v in row[:6])


def step_rows(
    points: Columns, s: Steps, js: NDArray[np.intp], value: NDArray[Any]
) -> list[tuple[Any, ...]]:
    """The steps `js` of `s` as rows of STEP_COLUMNS."""
    column: dict[str, list[Any]] = {
        name: nums(values) if values.dtype.kind == "f" else values.tolist()
        for name, values in step_columns(points, s, js, value).items()
    }
    column["verdict"] = [s.verdict[j] for j in js.tolist()]
    column["q_value"] = s.qvalue[js].astype(float).tolist()
    return list(zip(*(column[name] for name in STEP_COLUMNS), strict=True))


def step_columns(
    points: Columns, s: Steps, js: NDArray[np.intp], value: NDArray[Any], ids: bool = True
) -> dict[str, NDArray[Any]]:
    """The columns of STEP_COLUMNS of the steps `js` of `s` that the rules do not decide (all
    but verdict and q_value): what layer_steps stores of every step, as numpy (text as
    objects, None for NULL; numbers NaN where not finite), which the layer writes as they are
    (as Python lists they cost its update at 1M runs 0.4 s more). ids: with the step ids
    (step_ids; the layer's writer hashes them in SQL)."""
    f, t = s.start[js], s.to[js]
    ratio, half = s.ratio[js], s.half_width[js]
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = ratio * np.exp(-half), ratio * np.exp(half)
    columns: dict[str, NDArray[Any]] = {
        "kernel": points["kernel"][t],
        "pass": points["pass"][t],
        "gpu": np.array(_gpus(points, t), dtype=object),
        "shape": points["shape"][t],
        "implementation": points["provider"][t],
        "series": np.full(len(js), s.series, dtype=object),
        "from_version": points["version"][f],
        "to_version": points["version"][t],
        "from_value": _finite(value[f]),
        "to_value": _finite(value[t]),
        "ratio": _finite(ratio),
        "ratio_lo": _finite(lo),
        "ratio_hi": _finite(hi),
        "rule": np.array(rule_texts(points, s, js), dtype=object),
        "from_commits": _blank_as_none(points["commits"][f]),
        "to_commits": _blank_as_none(points["commits"][t]),
        "to_observed": points["last_observed"][t],
        "implementation_name": points["implementation"][t],
    }
    if ids:
        columns["step"] = np.array(step_ids(points, s.series, f, t), dtype=object)
    return columns


def _finite(values: NDArray[Any]) -> NDArray[np.float64]:
    floats = np.asarray(values, dtype=float)
    return np.where(np.isfinite(floats), floats, np.nan)


def _blank_as_none(values: NDArray[Any]) -> NDArray[np.object_]:
    """Text with "" (and None) as None."""
    out = np.asarray(values, dtype=object).copy()
    out[~out.astype(bool)] = None
    return out


def nums(values: NDArray[Any]) -> list[float | None]:
    """Floats, None where not finite (found by numpy: a test per value in Python was half the
    cost of making a step's five floats Python objects)."""
    floats = np.asarray(values, dtype=float)
    out: list[float | None] = floats.tolist()
    for i in np.flatnonzero(~np.isfinite(floats)).tolist():
        out[i] = None
    return out


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
