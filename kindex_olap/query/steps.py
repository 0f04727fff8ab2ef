"""History's rules: every step of every series tested once, one verdict per step.

A step is a point and the one before it in its series (query/history.py builds the points:
the code a series measured, runs of one code pooled). Each step is tested twice, on the
implementation's latency and on its speedup against the cell's baseline, and judged by:

- the threshold: a change smaller than it (per kernel where the gate says so) is never flagged;
- the noise model (sql/views/noise.sql): a point of several runs of one code brings their spread, a
  point of one run its share of its environment and latency class's floor; the step's noise
  (both points') read as 1.96 standard errors of the log change gives a p-value;
- change points (query/changepoints.py, E-Divisive) in series of MIN_POINTS or more points;
- one Benjamini-Hochberg correction over every step of the lake (and one over its change
  points), so that every verb and filter gives a step the same q-value and verdict; flagged at
  q <= the level (--q, default Q_LEVEL);
- an environment shift: a latency step that the baseline's runs of the same invocations made
  too (same direction, the speedup within the threshold) is the machine moving, not the code;
- a step that is not flagged and whose noise (both points', as a 95 % half-width: its floor)
  is wider than the threshold cannot show a change of the threshold's size, and says so
  (`insufficient replicates (floor X %)`) instead of `within noise`;
- a speedup step across a change of the baseline's implementation is `not comparable`.

Nothing here reads the lake: the rules take numpy columns (the points) and return verdicts, as
Apache Otava keeps its analysis apart from its series and its report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from kindex_olap.errors import ConfigError
from kindex_olap.query import changepoints as cp
from kindex_olap.query.correction import Correction

THRESHOLD = 0.05  # a change smaller than 5 % is never flagged
# Benjamini-Hochberg level: a false discovery rate of 1 % over every step of the lake
Q_LEVEL = 0.01
THRESHOLD_RANGE = "a fraction, 0 or more (0.05: 5 %)"  # what is_threshold admits, in words


def is_threshold(value: float) -> bool:
    """Whether `value` is a threshold: 0 (every change is large enough: `changes`) or more,
    finite (inf flagged nothing, nan judged no step, -1 divided by zero). The option and a
    gate file's setting share it: the file once refused the option's 0."""
    return 0 <= value < math.inf


Z95 = 1.959963984540054

REGRESSION = "regression"
IMPROVEMENT = "improvement"
WITHIN_NOISE = "within noise"
ENVIRONMENT_SHIFT = "environment shift"
INSUFFICIENT_DATA = "insufficient data"
INSUFFICIENT_REPLICATES = "insufficient replicates"
NOT_COMPARABLE = "not comparable"
FLAGGED = (REGRESSION, IMPROVEMENT)

Columns = dict[str, NDArray[Any]]


@dataclass(frozen=True)
class Rules:
    """What a step must clear to be flagged: the change (per kernel, `thresholds`; else
    `threshold`) and the Benjamini-Hochberg level."""

    threshold: float = THRESHOLD
    q_level: float = Q_LEVEL
    thresholds: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        # --threshold inf flagged nothing, nan judged no step, -1 divided by zero, --q 5
        # flagged every step: each silently
        named = ((f"[thresholds] {kernel}", value) for kernel, value in self.thresholds)
        for name, value in (("--threshold", self.threshold), *named):
            if not is_threshold(value):
                raise ConfigError(f"{name} must be {THRESHOLD_RANGE}, not {value!r}")
        if not 0 < self.q_level <= 1:
            raise ConfigError(
                f"--q is a false-discovery rate: more than 0 and at most 1, not {self.q_level!r}"
            )

    def per_point(self, kernels: NDArray[Any]) -> NDArray[np.float64]:
        """Each point's threshold, by its kernel."""
        out = np.full(len(kernels), self.threshold)
        for kernel, value in self.thresholds:
            out[kernels == kernel] = value
        return out


@dataclass
class Steps:
    """Every step of one series kind ("latency" or "speedup"): index arrays into the points."""

    series: str
    start: NDArray[np.intp]  # the step's earlier point
    to: NDArray[np.intp]  # its later point
    ratio: NDArray[np.float64]  # to / from (medians)
    log_change: NDArray[np.float64]
    se: NDArray[np.float64]  # standard error of log_change
    judged: NDArray[np.bool_]  # False: a side has no noise estimate
    shift: NDArray[np.bool_]  # the baseline's same-invocation runs made the same step
    comparable: NDArray[np.bool_]  # False: the baseline's implementation changed (speedup)
    pvalue: NDArray[np.float64] = field(init=False)
    changepoint: NDArray[np.bool_] = field(init=False)
    cp_pvalue: NDArray[np.float64] = field(init=False)
    cp_note: dict[int, str] = field(default_factory=dict)
    qvalue: NDArray[np.float64] = field(init=False)
    # the step's noise as a 95 % half-width on log scale (an array computed once: read per
    # step, a property recomputing it made the step verbs quadratic, 92 s at 1M runs)
    half_width: NDArray[np.float64] = field(init=False)
    verdict: list[str] = field(default_factory=list)
    # latency: the log change the baseline's runs of the same invocations made (the shift rule)
    base_change: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        self.half_width = np.asarray(Z95 * self.se)
        self.pvalue = two_sided(self.log_change, self.se)
        self.changepoint = np.zeros(len(self.to), dtype=bool)
        self.cp_pvalue = np.ones(len(self.to))
        self.qvalue = np.ones(len(self.to))


def step_pairs(points: Columns) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """(from, to) indices of consecutive points of one series."""
    key = points["series_key"]
    if len(key) < 2:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    to = np.nonzero(key[1:] == key[:-1])[0].astype(np.intp) + 1
    return to - 1, to


def latency_steps(points: Columns, rules: Rules) -> Steps:
    """The implementation's own time, step by step, with the environment-shift rule: the
    baseline's runs of the same invocations (invocation_baseline_ns) moved the same way."""
    start, to = step_pairs(points)
    log_change = _log_ratio(points["median_ns"], start, to)
    base_change = _log_ratio(points["invocation_baseline_ns"], start, to)
    bound = np.log1p(rules.per_point(points["kernel"])[to])
    shift = environment_shift(log_change, base_change, points["is_baseline"][to], bound)
    return Steps(
        "latency", start, to, np.exp(log_change), log_change,
        _step_se(points["noise"], start, to), _judged(points["noise"], start, to), shift,
        np.ones(len(to), dtype=bool), base_change=base_change,
    )  # fmt: skip


def environment_shift(
    log_change: NDArray[Any], base_change: NDArray[Any], is_baseline: NDArray[Any], bound: Any
) -> NDArray[np.bool_]:
    """Latency steps that the baseline's runs of the same invocations made too (their log
    change `base_change`): same direction, both beyond the threshold (`bound`, log scale), the
    step within the threshold of the baseline's. A baseline's own steps are never one."""
    return np.asarray(
        ~is_baseline.astype(bool)
        & np.isfinite(base_change)
        & (np.sign(base_change) == np.sign(log_change))
        & (np.abs(base_change) > bound)
        & (np.abs(log_change - base_change) <= bound)
    )


def speedup_steps(points: Columns) -> Steps:
    """baseline / implementation, each run against the cell's baseline run nearest in time; a
    step whose two points were divided by different baseline implementations (or a point by
    several) compares nothing and is kept apart."""
    start, to = step_pairs(points)
    speedup = points["speedup"].astype(float)
    has = np.isfinite(speedup[start]) & np.isfinite(speedup[to])
    start, to = start[has], to[has]
    digests, counts = points["baseline_digest"], points["baseline_digests"]
    comparable = (digests[start] == digests[to]) & (counts[start] <= 1) & (counts[to] <= 1)
    log_change = _log_ratio(speedup, start, to)
    return Steps(
        "speedup", start, to, np.exp(log_change), log_change,
        _step_se(points["speedup_noise"], start, to),
        _judged(points["speedup_noise"], start, to), np.zeros(len(to), dtype=bool),
        np.asarray(comparable, dtype=bool),
    )  # fmt: skip


def _log_ratio(values: NDArray[Any], start: NDArray[np.intp], to: NDArray[np.intp]) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(values[to].astype(float) / values[start].astype(float))


def _step_se(noise: NDArray[Any], start: NDArray[np.intp], to: NDArray[np.intp]) -> NDArray[Any]:
    """The step's standard error on log scale: both points' noise (95 % half-widths, the noise
    model's kindex_pair_noise) read as 1.96 standard errors."""
    values = noise.astype(float)
    return np.asarray(np.hypot(values[start], values[to]) / Z95)


def _judged(noise: NDArray[Any], start: NDArray[np.intp], to: NDArray[np.intp]) -> NDArray[Any]:
    """False where a side has no noise estimate (its environment is not in the noise model)."""
    values = noise.astype(float)
    return np.asarray(np.isfinite(values[start]) & np.isfinite(values[to]))


def two_sided(change: NDArray[np.float64], se: NDArray[np.float64]) -> NDArray[np.float64]:
    """Two-sided normal p-values of change / se (NaN where either is not a number)."""
    valid = np.isfinite(change) & np.isfinite(se)
    z = np.divide(np.abs(change), se, out=np.full(len(change), np.inf), where=valid & (se > 0))
    z = np.where(change == 0, 0.0, z)
    return np.where(valid, cp.normal_sf2(np.where(valid, z, 0.0)), np.nan)


def change_points_of(points: Columns, values: str) -> tuple[NDArray[Any], NDArray[Any]]:
    """E-Divisive on each series of MIN_POINTS or more points (its `values`, log scale, in point
    order). Per point: the p-value of the change point that starts there (NaN: none); on the
    first point of a series tested without finding one, its strongest split's p-value (the
    correction must count every series tested; NaN elsewhere). Depends only on each series'
    own points: the lake stores it per lake commit (layer_points, kindex_olap.layers.points).
    Series of one length are screened together (changepoints.first_split_pvalues); only those
    whose first split passes the relaxed level run the whole split and merge."""
    key = points["series_key"]
    found = np.full(len(key), np.nan)
    quiet = np.full(len(key), np.nan)
    if not len(key):
        return found, quiet
    bounds = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    starts, lengths = bounds[:-1], np.diff(bounds)
    series_values = points[values].astype(float)
    relaxed = cp.MAX_PVALUE * 10
    for length in np.unique(lengths[lengths >= cp.MIN_POINTS]):
        begins = starts[lengths == length]
        matrix = series_values[begins[:, None] + np.arange(length)[None, :]]
        finite = np.isfinite(matrix).all(axis=1)
        begins, matrix = begins[finite], matrix[finite]
        first = cp.first_split_pvalues(matrix)
        quiet[begins[first > relaxed]] = first[first > relaxed]
        chosen = first <= relaxed
        for begin, series, p in zip(begins[chosen], matrix[chosen], first[chosen], strict=True):
            points_found = cp.change_points(series)
            if not points_found:
                quiet[begin] = p  # its strongest split's p-value
            for point in points_found:
                found[begin + point.index] = point.pvalue
    return found, quiet


def changepoint_tests(points: Columns, steps: Steps, found: NDArray[Any]) -> None:
    """Mark the steps into a point where a change point starts (change_points_of: `found`)
    with its p-value."""
    key = points["series_key"]
    bounds = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
    length = np.repeat(np.diff(bounds), np.diff(bounds))  # each point's series length
    by_to = np.full(len(key), -1, dtype=np.intp)  # each point's step into it (-1: none)
    by_to[steps.to] = np.arange(len(steps.to))
    for point in np.flatnonzero(np.isfinite(found)).tolist():
        i = int(by_to[point])
        if i < 0:
            continue
        steps.changepoint[i] = True
        steps.cp_pvalue[i] = found[point]
        steps.cp_note[i] = (
            f"change point (E-Divisive, p={found[point]:.2g}, {length[point]} points)"
        )


def tested(steps: Steps) -> NDArray[np.bool_]:
    """The steps the correction counts: comparable, with a p-value."""
    return np.asarray(steps.comparable & np.isfinite(steps.pvalue))


def families(tests: Tests) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The p-values of both families of `tests` (query/correction.py): every tested step's; and
    the change points' (each tested step at a change point, and each series tested without one:
    its strongest split, which counts as a test and flags nothing)."""
    step_p = [s.pvalue[tested(s)] for s in tests.steps]
    cp_p = [s.cp_pvalue[tested(s) & s.changepoint] for s in tests.steps]
    quiet = [values[np.isfinite(values)] for values in tests.quiet.values()]
    empty = np.zeros(0)
    return np.concatenate([*step_p, empty]), np.concatenate([*cp_p, *quiet, empty])


def judge(points: Columns, tests: Tests, correction: Correction, rules: Rules) -> None:
    """Each step's q-value from the correction of its families (the whole lake's: a step at a
    change point is flagged by either), then its verdict."""
    for steps in tests.steps:
        judge_steps(steps, points["kernel"][steps.to], correction, rules)


def judge_steps(steps: Steps, kernels: NDArray[Any], correction: Correction, rules: Rules) -> None:
    """The q-value and verdict of each of `steps` (of one kind; `kernels`: each one's kernel),
    from the correction of the lake's families (also of steps read stored: the step verbs'
    layer_steps, query/stored_steps.py)."""
    checked = tested(steps)
    at_point = checked & steps.changepoint
    step_q = np.ones(len(steps.to))
    step_q[checked] = correction.steps.qvalues_of(steps.pvalue[checked])
    cp_q = np.ones(len(steps.to))
    cp_q[at_point] = correction.change_points.qvalues_of(steps.cp_pvalue[at_point])
    steps.qvalue = np.minimum(step_q, cp_q)
    bound = np.log1p(rules.per_point(kernels))
    steps.verdict = _verdicts(steps, bound, rules.q_level)


def _verdicts(steps: Steps, bound: NDArray[Any], q_level: float) -> list[str]:
    big = np.abs(steps.log_change) > bound
    significant = steps.qvalue <= q_level
    worse = steps.log_change > 0 if steps.series == "latency" else steps.log_change < 0
    # the step's noise (95 % of same-code repeats move less) no wider than the threshold: a
    # change of the threshold's size could show; wider, no verdict but "insufficient"
    visible = steps.half_width <= bound
    # one verdict per step, the first rule that applies (np.select: a Python loop over every
    # step of the lake cost 0.2 s at 100k runs)
    chosen = np.select(
        [~steps.comparable, big & steps.shift, ~steps.judged, big & significant & worse,
         big & significant, ~visible],
        [NOT_COMPARABLE, ENVIRONMENT_SHIFT, INSUFFICIENT_DATA, REGRESSION, IMPROVEMENT,
         INSUFFICIENT_REPLICATES],
        WITHIN_NOISE,
    ).astype(object)  # fmt: skip
    short = np.flatnonzero(chosen == INSUFFICIENT_REPLICATES)
    floors = np.expm1(steps.half_width[short]) * 100
    chosen[short] = [f"{INSUFFICIENT_REPLICATES} (floor {f:.0f} %)" for f in floors.tolist()]
    return list(chosen.tolist())


@dataclass
class Tests:
    """Every step of some series tested (latency and speedup), not yet corrected; quiet: per
    series kind, each point's p-value of its series' strongest split where the series was
    tested for change points without finding one (NaN elsewhere)."""

    steps: list[Steps]
    quiet: dict[str, NDArray[np.float64]]


def tests_of(points: Columns, rules: Rules, stored: bool = False) -> Tests:
    """Latency and speedup steps of every series given, each tested on its own. stored: the
    points carry their series' change points (cp_* and quiet_* columns, in version order:
    layer_points) instead of testing them here."""
    latency = latency_steps(points, rules)
    speedup = speedup_steps(points)
    quiet = {}
    for steps, values in ((latency, "log_mean"), (speedup, "speedup_log_mean")):
        if stored:
            found = points[f"cp_{steps.series}_pvalue"].astype(float)
            untested = points[f"quiet_{steps.series}_pvalue"].astype(float)
        else:
            found, untested = change_points_of(points, values)
        changepoint_tests(points, steps, found)
        quiet[steps.series] = untested
    return Tests([latency, speedup], quiet)


def analyse(points: Columns, rules: Rules, stored: bool = False) -> list[Steps]:
    """Every step of the series given, tested and judged together (the series are the whole
    lake: their own correction)."""
    tests = tests_of(points, rules, stored)
    judge(points, tests, Correction.of(*families(tests)), rules)
    return tests.steps


def is_insufficient(verdict: str) -> bool:
    """`insufficient replicates (floor ...)` or `insufficient data`."""
    return verdict.startswith("insufficient")
