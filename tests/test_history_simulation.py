"""History's rules on simulated series, with a stated noise model (issue 13's acceptance).

Noise model: each point is one run whose median is lognormal around the true level with
sigma = 5 % (run-to-run noise); its p20/p80 are +-1 % around its median (within-run spread, which
the rules do not trust). The noise model is learned the way sql/views/noise.sql learns it: the 95th
percentile of |log change| of 500 simulated replicate pairs is the class floor, and each single
run's noise is noise.single_run_noise(floor). A series counts as flagged if any rule fires
(a step or a change point, regression or improvement) after one Benjamini-Hochberg correction
over the whole batch at the default level (q <= 0.01), as one analysis of a lake of those
series would.
Rates measured here are quoted in docs/history.md.
"""

from __future__ import annotations

import math

import numpy as np

from kindex_olap.query import noise
from kindex_olap.query import steps as h

SIGMA = 0.05
SERIES = 1000


def _floor(rng: np.random.Generator) -> float:
    pairs = rng.normal(0, SIGMA, (500, 2))
    return math.expm1(float(np.quantile(np.abs(pairs[:, 1] - pairs[:, 0]), 0.95)))


def _points(levels: list[np.ndarray], rng: np.random.Generator, floor: float) -> h.Columns:
    """history_points' columns for series of single-run points at the given true levels (ns)."""
    keys, medians = [], []
    for i, level in enumerate(levels):
        keys += [f"s{i:05d}"] * len(level)
        medians.append(level * rng.lognormal(0, SIGMA, len(level)))
    median = np.concatenate(medians)
    n = len(median)
    nan = np.full(n, np.nan)
    return {
        "series_key": np.array(keys, dtype=object),
        "kernel": np.full(n, "simulated", dtype=object),
        "invocation_baseline_ns": nan,
        "baseline_digest": np.full(n, None, dtype=object),
        "baseline_digests": np.zeros(n),
        "median_ns": median,
        "p20_ns": median * 0.99,
        "p80_ns": median * 1.01,
        "log_mean": np.log(median),
        "runs": np.ones(n),
        "noise": np.full(n, noise.single_run_noise(floor)),
        "floor_source": np.full(n, "replicates", dtype=object),
        "baseline_floor_source": np.full(n, "replicates", dtype=object),
        "is_baseline": np.zeros(n, dtype=bool),
        "baseline_ns": nan,
        "speedup": nan,
        "speedup_log_mean": nan,
        "speedup_noise": nan,
    }


def _flagged_series(points: h.Columns) -> set[str]:
    steps = h.analyse(points, h.Rules())
    flagged = set()
    for s in steps:
        for j, t in enumerate(s.to):
            if s.verdict[j] in (h.REGRESSION, h.IMPROVEMENT):
                flagged.add(points["series_key"][t])
    return flagged


def flat_rate(seed: int = 13) -> float:
    rng = np.random.default_rng(seed)
    levels = [np.full(int(rng.integers(5, 16)), 1e6) for _ in range(SERIES)]
    return len(_flagged_series(_points(levels, rng, _floor(rng)))) / SERIES


def step_rate(seed: int = 14, at: int = 6, step: float = 1.2) -> float:
    rng = np.random.default_rng(seed)
    level = np.r_[np.full(at, 1e6), np.full(12 - at, 1e6 * step)]
    levels = [level for _ in range(SERIES)]
    return len(_flagged_series(_points(levels, rng, _floor(rng)))) / SERIES


def test_flat_series_rarely_flagged() -> None:
    assert flat_rate() <= 0.02


def test_a_20_percent_step_in_12_points_is_found() -> None:
    assert step_rate() >= 0.90


def test_slower_and_faster_steps_are_found_both_ways() -> None:
    assert step_rate(seed=15, step=1 / 1.2) >= 0.90
