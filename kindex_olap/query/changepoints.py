"""Change points in a short series: the split-and-merge E-Divisive of Apache Otava (Hunter).

Written for kindex from the published descriptions, not copied:
- D. S. Matteson and N. A. James, "A Nonparametric Approach for Multiple Change Point Analysis
  of Multivariate Data", JASA 109 (2014), arXiv:1306.4933: the divergence Q-hat between the
  pieces of a series, maximized over the split tau and the end kappa of the right piece, and
  the divisive search that splits the piece holding the best candidate;
- M. Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance
  Regressions", ICPE 2023 (doi 10.1145/3578244.3583719), now Apache Otava: a Student's t-test
  between the two sides of a candidate instead of permutation tests (deterministic, and it works
  with fewer than 10 points), and split-then-merge: candidates are accepted at a relaxed
  p-value (10x), then the weakest is removed and its neighbours re-tested until every change
  point left has p <= max_pvalue.
Differences from Otava: no sliding window (kindex's series are versions or runs of one cell, a
few dozen points); a minimum segment of `min_size` points on each side; a candidate is tested
on the two pieces Q-hat compared. The apache-otava package itself pulls in BigQuery and Slack
clients and pins numpy, hence this small implementation.

Pure numpy and math; no SQL engine, no CLI.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

MAX_PVALUE = 0.001  # Otava's default significance of a change point
MIN_SIZE = 2  # points on each side of a change point
MIN_POINTS = 5  # below this a series is `insufficient data` for change points


@dataclass(frozen=True)
class ChangePoint:
    """A change point before `index` (the first point of the new segment), with the t-test
    between its two neighbouring segments (means of the series' values, e.g. log latency)."""

    index: int
    pvalue: float
    mean_before: float
    mean_after: float


def change_points(
    values: Sequence[float] | NDArray[np.float64],
    max_pvalue: float = MAX_PVALUE,
    min_size: int = MIN_SIZE,
) -> list[ChangePoint]:
    """Change points of `values` (in order): split at a relaxed p-value, then merge."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2 * min_size:
        return []
    relaxed = max_pvalue * 10 if max_pvalue < 0.05 else min(max_pvalue * 2, 1.0)
    weak = _split(x, relaxed, min_size)
    return _merge(x, weak, max_pvalue)


def strongest_split_pvalue(
    values: Sequence[float] | NDArray[np.float64], min_size: int = MIN_SIZE
) -> float:
    """The t-test p-value of the series' best single split (1.0 when none is possible): the
    p-value a series without change points contributes to a multiple-comparison correction."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2 * min_size:
        return 1.0
    candidate = _best_candidate(x, 0, len(x), min_size)
    if candidate is None:
        return 1.0
    return t_test(x[: candidate[0]], x[candidate[0] : candidate[2]])


def _split(x: NDArray[np.float64], max_pvalue: float, min_size: int) -> list[int]:
    """Divisive search: repeatedly take the best candidate over all current segments and keep
    it while its t-test p-value is at most `max_pvalue`."""
    points: list[int] = []
    prefix = _prefix(x)
    while True:
        bounds = [0, *points, len(x)]
        best: tuple[float, int, int, int] | None = None
        for start, end in itertools.pairwise(bounds):
            candidate = _best_candidate(x, start, end, min_size, prefix)
            if candidate is not None and (best is None or candidate[1] > best[0]):
                best = (candidate[1], candidate[0], start, candidate[2])
        if best is None:
            return points
        _, index, start, kappa = best
        # the two pieces Q-hat compared (a level that comes back after a bump would hide the
        # bump from a test against the whole rest of the segment); merge re-tests whole segments
        statistic = _t_statistic(x[start:index], x[index:kappa])
        if statistic is None or statistic[0] < critical_t(statistic[1], max_pvalue):
            return points
        if t_test(x[start:index], x[index:kappa]) > max_pvalue:
            return points
        points = sorted([*points, index])


def _merge(x: NDArray[np.float64], points: list[int], max_pvalue: float) -> list[ChangePoint]:
    """Drop the change point with the largest p-value (its neighbours' segments then grow and
    are re-tested) until every one left has p <= max_pvalue."""
    points = list(points)
    while points:
        pvalues = _segment_pvalues(x, points)
        weakest = int(np.argmax(pvalues))
        if pvalues[weakest] <= max_pvalue:
            bounds = [0, *points, len(x)]
            return [
                ChangePoint(
                    index=p,
                    pvalue=pvalues[i],
                    mean_before=float(x[bounds[i] : p].mean()),
                    mean_after=float(x[p : bounds[i + 2]].mean()),
                )
                for i, p in enumerate(points)
            ]
        del points[weakest]
    return []


def _segment_pvalues(x: NDArray[np.float64], points: list[int]) -> list[float]:
    bounds = [0, *points, len(x)]
    return [t_test(x[bounds[i] : p], x[p : bounds[i + 2]]) for i, p in enumerate(points)]


def _prefix(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """prefix[a, b] = sum of |x_i - x_j| over i < a, j < b: every block sum is four lookups."""
    n = len(x)
    prefix = np.zeros((n + 1, n + 1))
    prefix[1:, 1:] = np.abs(x[:, None] - x[None, :]).cumsum(axis=0).cumsum(axis=1)
    return prefix


def _best_candidate(
    x: NDArray[np.float64],
    start: int,
    end: int,
    min_size: int,
    prefix: NDArray[np.float64] | None = None,
) -> tuple[int, float, int] | None:
    """(tau, Q-hat, kappa) maximizing Matteson & James's divergence between x[start:tau] and
    x[tau:kappa] over tau and kappa, both pieces at least `min_size` long; None if too short.
    `prefix` (_prefix of the whole series) is computed once per series by the caller."""
    if end - start < 2 * min_size:
        return None
    p = _prefix(x) if prefix is None else prefix
    s = start
    tau = np.arange(s + min_size, end - min_size + 1)[:, None]
    kappa = np.arange(s + 2 * min_size, end + 1)[None, :]
    valid = kappa - tau >= min_size
    kappa_safe = np.where(valid, kappa, tau + min_size)
    left, right = tau - s, kappa_safe - tau
    # block sums of the distance matrix from the prefix sums (it is symmetric)
    cross = p[tau, kappa_safe] - p[s, kappa_safe] - p[tau, tau] + p[s, tau]
    within_left = (p[tau, tau] - 2 * p[s, tau] + p[s, s]) / 2
    within_right = (p[kappa_safe, kappa_safe] - 2 * p[tau, kappa_safe] + p[tau, tau]) / 2
    total = left + right
    q = (
        2 / total * cross
        - 2 * right / (total * (left - 1)) * within_left
        - 2 * left / (total * (right - 1)) * within_right
    )
    q = np.where(valid, q, -np.inf)
    i, j = np.unravel_index(int(np.argmax(q)), q.shape)
    if not np.isfinite(q[i, j]):
        return None
    return int(tau[i, 0]), float(q[i, j]), int(kappa[0, j])


# -- Student's t-test ----------------------------------------------------------------------


def t_test(left: NDArray[np.float64], right: NDArray[np.float64]) -> float:
    """Two-sided p-value of Student's two-sample t-test (pooled variance), with each side's
    standard deviation taken as Otava does (numpy's default, ddof=0, into scipy's
    ttest_ind_from_stats): the test Otava's p <= 0.001 was tuned with."""
    statistic = _t_statistic(left, right)
    if statistic is None:
        return 1.0
    t, df = statistic
    return 0.0 if math.isinf(t) else student_t_sf2(t, df)


def _t_statistic(left: NDArray[np.float64], right: NDArray[np.float64]) -> tuple[float, int] | None:
    """(|t|, degrees of freedom), inf for two constant, different sides; None: no test.
    Plain Python on these few points: numpy's per-call cost was most of a lake-wide check."""
    a, b = left.tolist(), right.tolist()
    n1, n2 = len(a), len(b)
    df = n1 + n2 - 2
    if n1 == 0 or n2 == 0 or df <= 0:
        return None
    m1, m2 = math.fsum(a) / n1, math.fsum(b) / n2
    var1 = math.fsum((x - m1) ** 2 for x in a) / n1  # ddof=0, as Otava
    var2 = math.fsum((x - m2) ** 2 for x in b) / n2
    pooled = ((n1 - 1) * var1 + (n2 - 1) * var2) / df
    scale = math.sqrt(pooled * (1 / n1 + 1 / n2))
    diff = abs(m1 - m2)
    if scale == 0:
        return None if diff == 0 else (math.inf, df)
    return diff / scale, df


@lru_cache(maxsize=4096)
def critical_t(df: int, pvalue: float) -> float:
    """The |t| whose two-sided p-value is `pvalue` (bisection on student_t_sf2): a split whose
    statistic falls below it is rejected without computing its p-value."""
    low, high = 0.0, 1e6
    for _ in range(200):
        middle = (low + high) / 2
        if student_t_sf2(middle, df) > pvalue:
            low = middle
        else:
            high = middle
    return high


def student_t_sf2(t: float, df: float) -> float:
    """P(|T| >= t) for Student's t with `df` degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2)."""
    if t == 0:
        return 1.0
    return _betainc(df / 2, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction, Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast only below this point
        return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1 - x) / b
    return math.exp(log_front) * _beta_fraction(a, b, x) / a


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return result


def normal_sf2(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(|Z| >= z) for a standard normal Z, elementwise."""
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    return np.asarray(erfc(np.abs(z) / math.sqrt(2)), dtype=np.float64)


# -- multiple comparisons ------------------------------------------------------------------


def benjamini_hochberg(pvalues: Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


# -- many series at once ---------------------------------------------------------------------


def first_split_pvalues(matrix: NDArray[np.float64], min_size: int = MIN_SIZE) -> NDArray[Any]:
    """For each row of `matrix` (series of one length), the p-value of its best single split:
    strongest_split_pvalue row by row, in arrays. The divisive search stops at once for a series
    whose first split is not significant at the relaxed level, so only the others need
    change_points(); at a lake's thousands of series this is most of the work."""
    k, n = matrix.shape
    if n < 2 * min_size or k == 0:
        return np.ones(k)
    out = np.empty(k)
    for begin in range(0, k, 2048):  # bounded memory: 2048 x n x n distances at a time
        out[begin : begin + 2048] = _first_split_block(matrix[begin : begin + 2048], min_size)
    return out


def _first_split_block(z: NDArray[np.float64], min_size: int) -> NDArray[Any]:
    k, n = z.shape
    distances = np.abs(z[:, :, None] - z[:, None, :])
    prefix = np.zeros((k, n + 1, n + 1))
    prefix[:, 1:, 1:] = distances.cumsum(axis=1).cumsum(axis=2)
    tau = np.arange(min_size, n - min_size + 1)[:, None]
    kappa = np.arange(2 * min_size, n + 1)[None, :]
    valid = kappa - tau >= min_size
    kappa_safe = np.where(valid, kappa, tau + min_size)
    left, right = tau, kappa_safe - tau
    cross = prefix[:, tau, kappa_safe] - prefix[:, tau, tau]
    within_left = prefix[:, tau, tau] / 2
    within_right = (
        prefix[:, kappa_safe, kappa_safe]
        - prefix[:, tau, kappa_safe]
        - prefix[:, kappa_safe, tau]
        + prefix[:, tau, tau]
    ) / 2
    total = left + right
    q = (
        2 / total * cross
        - 2 * right / (total * (left - 1)) * within_left
        - 2 * left / (total * (right - 1)) * within_right
    )
    q = np.where(valid[None, :, :], q, -np.inf)
    flat = q.reshape(k, -1).argmax(axis=1)
    i, j = np.unravel_index(flat, valid.shape)
    t_idx = tau[i, 0]
    k_idx = kappa[0, j]
    return _t_test_rows(z, t_idx, k_idx)


def _t_test_rows(z: NDArray[np.float64], tau: NDArray[Any], kappa: NDArray[Any]) -> NDArray[Any]:
    """t_test(z[r, :tau[r]], z[r, tau[r]:kappa[r]]) for every row r (ddof=0 sides, pooled)."""
    rows = np.arange(len(z))
    cs = np.zeros((len(z), z.shape[1] + 1))
    cs2 = np.zeros_like(cs)
    cs[:, 1:] = z.cumsum(axis=1)
    cs2[:, 1:] = (z * z).cumsum(axis=1)
    n1, n2 = tau.astype(float), (kappa - tau).astype(float)
    s1, s2 = cs[rows, tau], cs[rows, kappa] - cs[rows, tau]
    q1, q2 = cs2[rows, tau], cs2[rows, kappa] - cs2[rows, tau]
    m1, m2 = s1 / n1, s2 / n2
    var1 = np.maximum(q1 / n1 - m1 * m1, 0.0)
    var2 = np.maximum(q2 / n2 - m2 * m2, 0.0)
    df = n1 + n2 - 2
    pooled = ((n1 - 1) * var1 + (n2 - 1) * var2) / df
    scale = np.sqrt(pooled * (1 / n1 + 1 / n2))
    diff = np.abs(m1 - m2)
    p = np.ones(len(z))
    # the same rounding floor as t_test's exact zero: a constant side is not a perfect split
    positive = scale > 1e-12 * np.maximum(np.abs(m1) + np.abs(m2), 1e-300)
    t = np.divide(diff, scale, out=np.zeros(len(z)), where=positive)
    p[positive] = student_t_sf2_array(t[positive], df[positive])
    p[~positive & (diff > 0)] = 0.0
    return p


def student_t_sf2_array(t: NDArray[Any], df: NDArray[Any]) -> NDArray[Any]:
    """student_t_sf2 elementwise, in arrays (the same continued fraction, vectorized)."""
    t = np.asarray(t, dtype=float)
    df = np.asarray(df, dtype=float)
    if len(t) == 0:
        return t
    x = df / (df + t * t)
    a, b = df / 2, np.full(len(df), 0.5)
    flip = x > (a + 1) / (a + b + 2)
    aa, bb, xx = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1 - x, x)
    lgamma = np.vectorize(math.lgamma, otypes=[float])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_front = lgamma(aa + bb) - lgamma(aa) - lgamma(bb) + aa * np.log(xx) + bb * np.log1p(-xx)
        value = np.exp(log_front) * _beta_fraction_array(aa, bb, xx) / aa
    out = np.where(flip, 1.0 - value, value)
    out = np.where(x >= 1, 1.0, np.where(x <= 0, 0.0, out))
    return np.asarray(np.where(t == 0, 1.0, out))


def _beta_fraction_array(a: NDArray[Any], b: NDArray[Any], x: NDArray[Any]) -> NDArray[Any]:
    tiny = 1e-300
    c = np.ones_like(x)
    d = 1.0 - (a + b) * x / (a + 1)
    d = 1 / np.where(np.abs(d) > tiny, d, tiny)
    result = d.copy()
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / np.where(np.abs(d) > tiny, d, tiny)
            c = 1 + numerator / c
            c = np.where(np.abs(c) > tiny, c, tiny)
            result *= d * c
        if np.all(np.abs(d * c - 1) < 1e-15):
            break
    return result
