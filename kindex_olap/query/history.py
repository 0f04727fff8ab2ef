"""History: what changed between versions and dates, and which steps are regressions.

`history` lists each series (one comparable cell and implementation) in order: its versions
(runs pooled, their spread kept) or its runs, the speedup against the cell's baseline run
nearest in time, and the change from the previous point. `regressions`, `improvements` and
`changes` test every step of every series the query selects; `kindex check` tests the steps
into the newest version, with the correction over every series of the lake.

The rules (docs/history.md says why, with measured false-alarm and detection rates):
- a step is tested on two series: the implementation's latency and its speedup against the
  cell's baseline (the same cell's baseline run nearest in time, as sql/views/history.sql pairs);
- it counts only when the change exceeds `threshold` (5 %);
- a latency step that the baseline made too (same direction, the speedup within the
  threshold) is an `environment shift`: the machine moved, not the code;
- noise: the noise model's (sql/views/noise.sql, issue 17): a point of several runs brings their
  spread, a point of one run its share of its environment and latency class's floor (the 95th
  percentile of repeats' change); the step's noise (both points') is read as 1.96 standard
  errors (never one run's own p20/p80). The `rule` column names the floor's source
  (`replicates` of the environment and class, else the documented `default`); a side with no
  noise estimate at all makes the step `insufficient data`;
- series of MIN_POINTS or more points: change points by E-Divisive (query/changepoints.py);
- every test's p-value goes through one Benjamini-Hochberg correction over everything the
  query tests (for `kindex check`, the whole lake), flagged at q <= ALPHA.

SQL lives in sql/views/history.sql (runs with their nearest baseline) and sql/views/history_points.sql.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from kindex_olap.errors import QueryError
from kindex_olap.query import changepoints as cp
from kindex_olap.query import noise
from kindex_olap.sqlfiles import statements

HISTORY_VERBS = ("history", "regressions", "improvements", "changes")
STEP_VERBS = ("regressions", "improvements", "changes")
THRESHOLD = 0.05  # a change smaller than 5 % is never flagged
ALPHA = 0.001  # Otava's p <= 0.001, applied to Benjamini-Hochberg adjusted p-values
Z95 = 1.959963984540054

REGRESSION = "regression"
IMPROVEMENT = "improvement"
WITHIN_NOISE = "within noise"
ENVIRONMENT_SHIFT = "environment shift"
INSUFFICIENT = "insufficient data"

Columns = dict[str, NDArray[Any]]


@dataclass(frozen=True)
class HistoryOptions:
    """How `history` and the step verbs read the lake."""

    by: str = "version"  # or "run"
    all_branches: bool = False  # also runs first seen on branches that are not main
    threshold: float = THRESHOLD
    alpha: float = ALPHA


@dataclass
class Table:
    """Rows for the output edge: column names, rows and notes for stderr."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    notes: list[str] = field(default_factory=list)


# -- selecting runs and points -----------------------------------------------------------------


def select_runs(
    con: duckdb.DuckDBPyConnection,
    scope: tuple[Any, Any, Any],
    clauses: list[str],
    params: list[Any],
    options: HistoryOptions,
    whole_lake: bool = False,
    family: str = "true",
) -> None:
    """Fill the temporary table history_selected from history_runs_for. `clauses` (fixed SQL
    text with `?` parameters) select the query's runs; with whole_lake every run of the
    `family` (fixed SQL text) is kept and in_query marks the selected ones."""
    selected = " AND ".join(clauses) or "true"
    branch = "true" if options.all_branches else "on_main"
    if whole_lake:
        sql = (
            f"CREATE OR REPLACE TEMP TABLE history_selected AS SELECT *, ({selected}) AS in_query "
            f"FROM history_runs_for(NULL, NULL, NULL) WHERE {branch} AND {family}"
        )
        args = [*params]
    else:
        sql = (
            "CREATE OR REPLACE TEMP TABLE history_selected AS SELECT *, true AS in_query "
            f"FROM history_runs_for(?, ?, ?) WHERE {branch} AND {family} AND {selected}"
        )
        args = [*scope, *params]
    try:
        con.execute(sql, args).fetchall()
        # the noise model of the selected runs' environments (computed once per connection)
        environments = con.execute(
            "SELECT DISTINCT environment_digest FROM history_selected"
        ).fetchall()
        noise.materialize(con, [row[0] for row in environments])
        if not _has_macro(con, "history_points"):
            for statement in statements("views/history_points.sql"):
                con.execute(statement).fetchall()
    except duckdb.Error as e:
        raise QueryError(f"history query failed: {e}") from e


def _has_macro(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = ?", [name]
    ).fetchone()
    return bool(row and row[0])


def version_order(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The selected runs' version labels in PEP 440 order (0.5.10 after 0.5.9); labels that do
    not parse come after, by first appearance."""
    from packaging.version import InvalidVersion, Version

    rows = con.execute(
        "SELECT version, min(observed_at) FROM history_selected WHERE version IS NOT NULL "
        "GROUP BY version"
    ).fetchall()

    def key(row: tuple[str, datetime]) -> tuple[int, Any, datetime]:
        try:
            return (0, Version(row[0]), row[1])
        except InvalidVersion:
            return (1, None, row[1])

    parsed = sorted((r for r in rows if key(r)[0] == 0), key=key)
    other = sorted((r for r in rows if key(r)[0] == 1), key=lambda r: r[1])
    return [r[0] for r in [*parsed, *other]]


# what the rules and the answers read of history_points (fetching every column into numpy cost
# twice the query itself at 300k runs)
POINT_COLUMNS = (
    "series_key", "kernel", "pass", "gpu", "form_factor", "shape", "provider", "baseline",
    "is_baseline", "version", "run_id", "runs", "median_ns", "p20_ns", "p80_ns", "min_ns",
    "max_ns", "log_mean", "baseline_ns", "speedup", "speedup_log_mean", "noise",
    "speedup_noise", "floor_source", "first_observed", "last_observed", "commits", "in_query",
)  # fmt: skip


def fetch_points(con: duckdb.DuckDBPyConnection, order: list[str], by_run: bool) -> Columns:
    """The points of every selected series, in series and point order, as numpy columns
    (NULL numbers as NaN, NULL text as None)."""
    try:
        sql = f"SELECT {', '.join(POINT_COLUMNS)} FROM history_points(?, ?)"  # fixed names
        raw = con.execute(sql, [order, by_run]).fetchnumpy()
    except duckdb.Error as e:
        raise QueryError(f"history query failed: {e}") from e
    return {name: _filled(values) for name, values in raw.items()}


def _filled(values: Any) -> NDArray[Any]:
    if isinstance(values, np.ma.MaskedArray):
        masked: Any = values
        if values.dtype.kind == "f":
            return np.asarray(masked.filled(np.nan))
        if values.dtype.kind in "iu":
            return np.asarray(masked.astype(np.float64).filled(np.nan))
        out = np.asarray(values.data, dtype=object)
        out[np.ma.getmaskarray(values)] = None
        return out
    return np.asarray(values)


# -- the step rules -----------------------------------------------------------------------------


@dataclass
class Steps:
    """Every step (a point and the one before it in its series), for one series kind."""

    series: str  # "latency" or "speedup"
    to: NDArray[np.intp]  # index of the step's later point
    ratio: NDArray[np.float64]  # to / from (medians)
    log_change: NDArray[np.float64]
    se: NDArray[np.float64]  # standard error of log_change
    pvalue: NDArray[np.float64]
    rule_parts: tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]  # runs, noise, source
    judged: NDArray[np.bool_]  # False: one side is a single run in a class without replicates
    shift: NDArray[np.bool_]  # the baseline made the same step (latency only)
    changepoint: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    cp_pvalue: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    cp_note: dict[int, str] = field(default_factory=dict)

    def rule(self, j: int) -> str:
        """What decided step j (formatted only for the rows shown)."""
        runs_from, runs_to, half, source = (part[j] for part in self.rule_parts)
        text = (
            f"step ({int(runs_from)}->{int(runs_to)} runs; noise "
            f"+-{math.expm1(float(half)):.1%}, floor: {source})"
        )
        note = self.cp_note.get(j)
        return f"{note}; {text}" if note else text

    qvalue: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    verdict: list[str] = field(default_factory=list)


def step_pairs(points: Columns) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """(from, to) indices of consecutive points of one series."""
    key = points["series_key"]
    if len(key) < 2:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    same = key[1:] == key[:-1]
    to = np.nonzero(same)[0].astype(np.intp) + 1
    return to - 1, to


def latency_steps(points: Columns, threshold: float) -> Steps:
    """Latency steps: the implementation's own time, with the baseline's step beside it."""
    start, to = step_pairs(points)
    log_change = np.log(points["median_ns"][to] / points["median_ns"][start])
    se = _step_se(points["noise"], start, to)
    base_change = np.log(points["baseline_ns"][to] / points["baseline_ns"][start])
    speedup_change = log_change - base_change
    bound = math.log1p(threshold)
    shift = (
        ~points["is_baseline"][to].astype(bool)
        & np.isfinite(base_change)
        & (np.sign(base_change) == np.sign(log_change))
        & (np.abs(base_change) > bound)
        & (np.abs(speedup_change) <= bound)
    )
    judged = _judged(points["noise"], start, to)
    ratio = points["median_ns"][to] / points["median_ns"][start]
    rule = _rules(points, start, to, "noise")
    return Steps(
        "latency", to, ratio, log_change, se, _two_sided(log_change, se), rule, judged, shift
    )


def speedup_steps(points: Columns) -> Steps:
    """Speedup steps: baseline / implementation, each run against its nearest baseline run."""
    start, to = step_pairs(points)
    speedup = points["speedup"]
    has = np.isfinite(speedup[start]) & np.isfinite(speedup[to])
    start, to = start[has], to[has]
    log_change = np.log(speedup[to] / speedup[start])
    se = _step_se(points["speedup_noise"], start, to)
    judged = _judged(points["speedup_noise"], start, to)
    rule = _rules(points, start, to, "speedup_noise")
    no_shift = np.zeros(len(to), dtype=bool)
    return Steps(
        "speedup", to, speedup[to] / speedup[start], log_change, se,
        _two_sided(log_change, se), rule, judged, no_shift,
    )  # fmt: skip


def _step_se(noise: NDArray[Any], start: NDArray[np.intp], to: NDArray[np.intp]) -> NDArray[Any]:
    """The step's standard error on log scale: both points' noise (95 % half-widths, the noise
    model's kindex_pair_noise) read as 1.96 standard errors."""
    half = np.sqrt(noise[start].astype(float) ** 2 + noise[to].astype(float) ** 2)
    return np.asarray(half / Z95)


def _judged(noise: NDArray[Any], start: NDArray[np.intp], to: NDArray[np.intp]) -> NDArray[Any]:
    """False where a side has no noise estimate (its environment is not in the noise model)."""
    values = noise.astype(float)
    return np.asarray(np.isfinite(values[start]) & np.isfinite(values[to]))


def _rules(
    points: Columns, start: NDArray[np.intp], to: NDArray[np.intp], noise: str
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
    runs, half = points["runs"], points[noise].astype(float)
    return runs[start], runs[to], np.hypot(half[start], half[to]), points["floor_source"][to]


def _two_sided(change: NDArray[np.float64], se: NDArray[np.float64]) -> NDArray[np.float64]:
    z = np.divide(np.abs(change), se, out=np.full(len(change), np.inf), where=se > 0)
    z = np.where(change == 0, 0.0, z)
    return cp.normal_sf2(z)


def _noise_rule(runs_from: int, runs_to: int, sigma: float, pairs: int) -> str:
    sides = f"{runs_from}->{runs_to} runs"
    source = f"{pairs} replicate pairs" if pairs else "default, no replicates"
    return f"step ({sides}; run noise {sigma * 100:.1f} %, {source})"


def changepoint_tests(points: Columns, steps: Steps, values: str) -> list[float]:
    """E-Divisive on each series of MIN_POINTS or more points (log values): mark the steps at a
    change point with its p-value; return the p-values of series without one (for the
    correction, which must count every series tested). Series of one length are screened
    together (changepoints.first_split_pvalues); only those whose first split passes the
    relaxed level run the whole split and merge."""
    steps.changepoint = np.zeros(len(steps.to), dtype=bool)
    steps.cp_pvalue = np.ones(len(steps.to))
    by_to = {int(t): i for i, t in enumerate(steps.to)}
    key = points["series_key"]
    bounds = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    starts, lengths = bounds[:-1], np.diff(bounds)
    series_values = points[values].astype(float)
    quiet: list[float] = []
    relaxed = cp.MAX_PVALUE * 10
    for length in np.unique(lengths[lengths >= cp.MIN_POINTS]):
        begins = starts[lengths == length]
        matrix = series_values[begins[:, None] + np.arange(length)[None, :]]
        finite = np.isfinite(matrix).all(axis=1)
        begins, matrix = begins[finite], matrix[finite]
        first = cp.first_split_pvalues(matrix)
        quiet.extend(first[first > relaxed].tolist())
        chosen = first <= relaxed
        for begin, series, p in zip(begins[chosen], matrix[chosen], first[chosen], strict=True):
            found = cp.change_points(series)
            if not found:
                quiet.append(float(p))  # its strongest split's p-value
            for point in found:
                i = by_to.get(int(begin + point.index))
                if i is None:
                    continue
                steps.changepoint[i] = True
                steps.cp_pvalue[i] = point.pvalue
                note = f"change point (E-Divisive, p={point.pvalue:.2g}, {length} points)"
                steps.cp_note[i] = note
    return quiet


def judge(
    all_steps: list[Steps],
    quiet: list[float],
    threshold: float,
    alpha: float,
    family: NDArray[np.bool_] | None = None,
) -> None:
    """Two Benjamini-Hochberg corrections, each over everything the query tests: the step tests
    (latency and speedup) and the change points (one test per series of MIN_POINTS+ points:
    its change points' p-values, or its strongest split's). A step at a change point is
    flagged by either. With `family`, only the steps into the points it marks are tested (the
    others get q = 1)."""
    tested = [np.ones(len(s.to), dtype=bool) if family is None else family[s.to] for s in all_steps]
    step_q = _adjust([s.pvalue for s in all_steps], tested, [])
    cp_q = _adjust(
        [s.cp_pvalue for s in all_steps],
        [t & s.changepoint for s, t in zip(all_steps, tested, strict=True)],
        quiet,
    )
    bound = math.log1p(threshold)
    for steps, sq, cq in zip(all_steps, step_q, cp_q, strict=True):
        steps.qvalue = np.minimum(sq, cq)
        big = np.abs(steps.log_change) > bound
        significant = steps.qvalue <= alpha
        worse = steps.log_change > 0 if steps.series == "latency" else steps.log_change < 0
        steps.verdict = [
            _verdict(bool(b), bool(s), bool(w), bool(sh), bool(j))
            for b, s, w, sh, j in zip(
                big, significant, worse, steps.shift, steps.judged, strict=True
            )
        ]


def _adjust(
    pvalues: list[NDArray[np.float64]], tested: list[NDArray[np.bool_]], extra: list[float]
) -> list[NDArray[np.float64]]:
    """Benjamini-Hochberg over the tested entries of every array (and `extra` p-values that
    count as tests but flag nothing); untested entries get q = 1."""
    chosen = [p[t] for p, t in zip(pvalues, tested, strict=True)]
    adjusted = cp.benjamini_hochberg(np.concatenate([*chosen, np.asarray(extra, dtype=float)]))
    out, offset = [], 0
    for p, t in zip(pvalues, tested, strict=True):
        q = np.ones(len(p))
        q[t] = adjusted[offset : offset + int(t.sum())]
        offset += int(t.sum())
        out.append(q)
    return out


def _verdict(big: bool, significant: bool, worse: bool, shift: bool, judged: bool) -> str:
    if not big:
        return WITHIN_NOISE
    if shift:
        return ENVIRONMENT_SHIFT
    if not judged:
        return INSUFFICIENT
    if not significant:
        return WITHIN_NOISE
    return REGRESSION if worse else IMPROVEMENT


def analyse(
    points: Columns,
    options: HistoryOptions,
    family: NDArray[np.bool_] | None = None,
) -> list[Steps]:
    """Latency and speedup steps of every series, tested and judged together (`family`: only
    the steps into the points it marks are tested)."""
    latency = latency_steps(points, options.threshold)
    speedup = speedup_steps(points)
    quiet = changepoint_tests(points, latency, "log_mean")
    quiet += changepoint_tests(points, speedup, "speedup_log_mean")
    both = [latency, speedup]
    judge(both, quiet, options.threshold, options.alpha, family)
    return both


# -- answers --------------------------------------------------------------------------------


def _gpu(points: Columns, i: Any) -> str:
    form = points["form_factor"][i]
    return f"{points['gpu'][i]} {form}" if form else str(points["gpu"][i])


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
        "kernel", "pass", "gpu", "shape", "implementation", "version", "observed_at",
        "median_ms", "p20_ms", "p80_ms", "baseline", "baseline_ms", "speedup", "change",
        "speedup_change", "verdict", "speedup_verdict", "commit", "run_id",
    ],
}  # fmt: skip


def history_table(points: Columns, steps: list[Steps], by_run: bool) -> Table:
    """One row per point of every selected series, with the step into it."""
    latency, speedup = steps
    into = {
        s.series: {int(t): (float(r), v) for t, r, v in zip(s.to, s.ratio, s.verdict, strict=True)}
        for s in steps
    }
    rows = []
    for i in np.flatnonzero(points["in_query"]):
        change, verdict = into["latency"].get(int(i), (math.nan, None))
        s_change, s_verdict = into["speedup"].get(int(i), (math.nan, None))
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
                *head, points["first_observed"][i].item(), _ms(points["median_ns"][i]),
                _ms(points["p20_ns"][i]), _ms(points["p80_ns"][i]), *tail[:1],
                _ms(points["baseline_ns"][i]), *tail[1:], points["commits"][i] or None,
                points["run_id"][i],
            )  # fmt: skip
        else:
            row = (
                *head, int(points["runs"][i]), _ms(points["median_ns"][i]),
                _ms(points["p20_ns"][i]), _ms(points["p80_ns"][i]), _ms(points["min_ns"][i]),
                _ms(points["max_ns"][i]), *tail, points["commits"][i] or None,
                points["first_observed"][i].item(), points["last_observed"][i].item(),
            )  # fmt: skip
        rows.append(row)
    del latency, speedup
    return Table(HISTORY_COLUMNS[by_run], rows)


STEP_COLUMNS = [
    "kernel", "pass", "gpu", "shape", "implementation", "series", "from_version",
    "to_version", "from_value", "to_value", "ratio", "ratio_lo", "ratio_hi", "verdict",
    "rule", "q_value", "from_commits", "to_commits", "to_observed",
]  # fmt: skip
VERB_VERDICTS = {
    "regressions": (REGRESSION,),
    "improvements": (IMPROVEMENT,),
    "changes": (REGRESSION, IMPROVEMENT, ENVIRONMENT_SHIFT, INSUFFICIENT),
}


def steps_table(
    points: Columns, steps: list[Steps], verdicts: tuple[str, ...], keep: NDArray[np.bool_]
) -> Table:
    """One row per step whose verdict is in `verdicts` and whose later point `keep` marks."""
    rows = []
    for s in steps:
        value = points["median_ns"] / 1e6 if s.series == "latency" else points["speedup"]
        for j, t in enumerate(s.to):
            if s.verdict[j] not in verdicts or not keep[t]:
                continue
            f = t - 1
            half = Z95 * float(s.se[j])
            rows.append(
                (
                    points["kernel"][t], points["pass"][t], _gpu(points, t), points["shape"][t],
                    points["provider"][t], s.series, points["version"][f],
                    points["version"][t], _num(value[f]), _num(value[t]), _num(s.ratio[j]),
                    _num(s.ratio[j] * math.exp(-half)), _num(s.ratio[j] * math.exp(half)),
                    s.verdict[j], s.rule(j), float(s.qvalue[j]),
                    points["commits"][f] or None, points["commits"][t] or None,
                    points["last_observed"][t].item(),
                )
            )  # fmt: skip
    rows.sort(key=lambda r: tuple("" if v is None else str(v) for v in r[:7]))
    return Table(list(STEP_COLUMNS), rows)


def answer(
    con: duckdb.DuckDBPyConnection,
    verb: str,
    scope: tuple[Any, Any, Any],
    clauses: list[str],
    params: list[Any],
    options: HistoryOptions,
) -> Table:
    """`history` or a step verb over the runs that `scope` and `clauses` select."""
    if options.by not in ("version", "run"):
        raise QueryError(f"--by takes version or run, not {options.by!r}")
    clauses = list(clauses)
    if verb in STEP_VERBS:
        # the implementations measured against a baseline (a baseline's own steps show as
        # environment shifts of the others)
        clauses.append("NOT is_baseline")
    select_runs(con, scope, clauses, params, options)
    if verb == "history":
        records = leaderboard_records(con)
        if records is not None:
            return records
    by_run = options.by == "run"
    points = fetch_points(con, version_order(con), by_run)
    steps = analyse(points, options)
    if verb == "history":
        table = history_table(points, steps, by_run)
    else:
        table = steps_table(points, steps, VERB_VERDICTS[verb], points["in_query"])
    table.notes.extend(_notes(points, steps, options))
    return table


def leaderboard_records(con: duckdb.DuckDBPyConnection) -> Table | None:
    """The record staircase when every selected run is in a leaderboard cell (no reference
    implementation: baseline 'fastest'); None otherwise (mixed selections get the series)."""
    row = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE baseline_rule = 'fastest') FROM history_selected"
    ).fetchone()
    if not row or not row[0] or row[0] != row[1]:
        return None
    cursor = con.execute("SELECT * FROM history_records()")
    rows = cursor.fetchall()
    columns = [d[0] for d in cursor.description or []]
    note = (
        f"leaderboard cells (no reference implementation): {len(rows)} records, each run that "
        "beat its cell's best before it"
    )
    return Table(columns, rows, [note])


def _notes(points: Columns, steps: list[Steps], options: HistoryOptions) -> list[str]:
    series = len(np.unique(points["series_key"])) if len(points["series_key"]) else 0
    tested = sum(len(s.to) for s in steps)
    notes = [
        f"history: {series} series, {len(points['series_key'])} points, {tested} steps tested "
        f"(latency and speedup); flagged: change > {options.threshold:.0%} and "
        f"Benjamini-Hochberg q <= {options.alpha:g}; change points (E-Divisive) in series of "
        f"{cp.MIN_POINTS}+ points"
    ]
    if not options.all_branches:
        notes.append("main-branch runs only (--all-branches adds runs first seen elsewhere)")
    return notes


def check(
    con: duckdb.DuckDBPyConnection,
    clauses: list[str],
    params: list[Any],
    since: str | None,
    options: HistoryOptions,
) -> Table:
    """The regressions into the newest version (or after `since`: a version or an ISO date)
    among the runs the filters select; the correction covers the same steps of every series
    in the lake, whatever the filters, so `check jsd` and `check` agree about a step."""
    select_runs(
        con, (None, None, None), clauses, params, options, whole_lake=True, family="NOT is_baseline"
    )
    order = version_order(con)
    points = fetch_points(con, order, options.by == "run")
    new, what = _new_points(points, order, since)
    steps = analyse(points, options, family=new)
    table = steps_table(points, steps, (REGRESSION,), new & points["in_query"])
    tested = int(sum(new[s.to].sum() for s in steps))
    table.notes.append(
        f"check: {tested} steps into {what} tested (latency and speedup; the correction covers "
        f"every series of the lake); flagged: change > {options.threshold:.0%} and "
        f"Benjamini-Hochberg q <= {options.alpha:g}"
    )
    return table


def _new_points(
    points: Columns, order: list[str], since: str | None
) -> tuple[NDArray[np.bool_], str]:
    """The points a check tests, and how to say which they are."""
    versions = points["version"]
    if since is None:
        if not order:
            return np.zeros(len(versions), dtype=bool), "the newest version (none in the lake)"
        return versions == order[-1], f"the newest version, {order[-1]}"
    moment = _as_date(since)
    if moment is not None:
        last = points["last_observed"].astype("datetime64[us]")
        return last > np.datetime64(moment, "us"), f"runs after {since}"
    rank = _version_rank(since, order)
    ranks = np.array([_version_rank(v, order) if v else -1 for v in versions], dtype=float)
    return ranks > rank, f"versions after {since}"


def _as_date(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        from datetime import UTC

        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _version_rank(version: str, order: list[str]) -> float:
    """Where `version` falls among the lake's versions (PEP 440, else as listed)."""
    if version in order:
        return float(order.index(version))
    from packaging.version import InvalidVersion, Version

    try:
        wanted = Version(version)
    except InvalidVersion as e:
        raise QueryError(
            f"--since {version!r} is neither a version of the lake nor an ISO date",
            hint=f"versions: {', '.join(order[-8:]) or 'none'}; dates like 2025-03-01",
        ) from e
    below = -0.5
    for i, label in enumerate(order):
        try:
            if Version(label) < wanted:
                below = i + 0.5
        except InvalidVersion:
            continue
    return below
