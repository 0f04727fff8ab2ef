"""E-Divisive change points (query/changepoints.py) against brute force and known values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kindex_olap.query.changepoints import (
    _best_candidate,
    benjamini_hochberg,
    change_points,
    strongest_split_pvalue,
    student_t_sf2,
    t_test,
)


def _qhat(x: np.ndarray, y: np.ndarray) -> float:
    """Matteson & James's Q-hat written out as pair sums (the definition, slowly)."""
    n, m = len(x), len(y)
    cross = sum(abs(a - b) for a in x for b in y)
    within_x = sum(abs(a - b) for a, b in itertools.combinations(x, 2))
    within_y = sum(abs(a - b) for a, b in itertools.combinations(y, 2))
    return (
        2 / (n + m) * cross
        - 2 * m / ((n + m) * (n - 1)) * within_x
        - 2 * n / ((n + m) * (m - 1)) * within_y
    )


@pytest.mark.parametrize("seed", range(5))
def test_best_candidate_maximizes_qhat_by_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(0, 1, 5), rng.normal(2, 1, 4)])
    best = max(
        (_qhat(x[:tau], x[tau:kappa]), tau) for tau in range(2, 8) for kappa in range(tau + 2, 10)
    )
    tau, q, _ = _best_candidate(x, 0, len(x), 2)  # type: ignore[misc]
    assert q == pytest.approx(best[0])
    assert tau == best[1]


def test_student_t_tail_matches_tables() -> None:
    # two-sided 5 % and 1 % critical values of Student's t
    assert student_t_sf2(2.228, 10) == pytest.approx(0.05, abs=2e-4)
    assert student_t_sf2(3.169, 10) == pytest.approx(0.01, abs=1e-4)
    assert student_t_sf2(1.96, 1e6) == pytest.approx(0.05, abs=2e-4)
    assert student_t_sf2(0.0, 3) == 1.0


def test_t_test_identical_and_constant_sides() -> None:
    same = np.array([1.0, 1.0])
    assert t_test(same, same) == 1.0
    assert t_test(same, np.array([2.0, 2.0])) == 0.0


def test_a_clear_step_is_found_where_it_is() -> None:
    rng = np.random.default_rng(1)
    x = np.log(np.concatenate([np.full(6, 10.0), np.full(6, 12.0)]) * rng.lognormal(0, 0.02, 12))
    found = change_points(x)
    assert [c.index for c in found] == [6]
    assert found[0].pvalue <= 0.001
    assert found[0].mean_after > found[0].mean_before


def test_two_steps_are_both_kept() -> None:
    rng = np.random.default_rng(2)
    level = np.concatenate([np.full(6, 0.0), np.full(6, 0.5), np.full(6, 0.0)])
    found = change_points(level + rng.normal(0, 0.02, 18))
    assert [c.index for c in found] == [6, 12]


def test_flat_noise_rarely_has_a_change_point() -> None:
    # one series at a time, before any correction over many series: about 2 % (the
    # Benjamini-Hochberg correction of history takes a batch of them to 0, test_history_simulation)
    rng = np.random.default_rng(3)
    flagged = sum(bool(change_points(rng.normal(0, 0.05, 12))) for _ in range(1000))
    assert flagged <= 30


def test_short_series_have_none() -> None:
    assert change_points([1.0, 5.0, 5.0]) == []
    assert strongest_split_pvalue([1.0, 2.0, 3.0]) == 1.0


def test_benjamini_hochberg_known_values() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4/1, x4/2, x4/3, x4/4 -> 0.02, 0.02, 0.04, 0.04
    assert benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert len(benjamini_hochberg([])) == 0


def test_many_series_at_once_match_one_at_a_time() -> None:
    from kindex_olap.query.changepoints import first_split_pvalues, student_t_sf2_array

    rng = np.random.default_rng(4)
    t = np.abs(rng.normal(0, 3, 2000))
    df = rng.integers(2, 40, 2000).astype(float)
    scalar = [student_t_sf2(float(a), float(b)) for a, b in zip(t, df, strict=True)]
    assert student_t_sf2_array(t, df) == pytest.approx(scalar, rel=1e-10, abs=1e-15)
    steps = np.c_[np.zeros((50, 5)), np.full((50, 4), 0.3)]
    series = np.r_[rng.normal(0, 0.05, (300, 9)), steps + rng.normal(0, 0.05, (50, 9))]
    one_by_one = [strongest_split_pvalue(row) for row in series]
    assert first_split_pvalues(series) == pytest.approx(one_by_one, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_a_segment_from_the_whole_series_prefix_matches_the_slice(seed: int) -> None:
    from kindex_olap.query.changepoints import _prefix

    x = np.random.default_rng(seed).normal(0, 1, 14)
    whole = _best_candidate(x, 3, 12, 2, _prefix(x))
    alone = _best_candidate(x[3:12], 0, 9, 2)
    assert whole is not None and alone is not None
    assert (whole[0] - 3, whole[2] - 3) == (alone[0], alone[2])
    assert whole[1] == pytest.approx(alone[1])
