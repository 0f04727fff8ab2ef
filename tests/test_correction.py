"""The lake's Benjamini-Hochberg correction kept as sorted p-values (query/correction.py)."""

from __future__ import annotations

import numpy as np

from kindex_olap.query.changepoints import benjamini_hochberg
from kindex_olap.query.correction import Correction, Family


def test_a_family_gives_each_test_its_benjamini_hochberg_q_value() -> None:
    rng = np.random.default_rng(7)
    # ties (rounded p-values, repeated ones) and p-values near 0 and 1, in sorted runs as the
    # stored files hold them
    p = np.round(rng.beta(0.3, 1.0, 5000), 4)
    p = np.concatenate([np.sort(p[:3000]), np.sort(p[3000:]), [0.0, 1.0, 1.0]])
    family = Family.of(p)
    assert np.array_equal(family.qvalues_of(p), benjamini_hochberg(p))
    assert len(family) == len(p)


def test_known_values_and_values_the_family_does_not_hold() -> None:
    family = Family.of(np.array([0.01, 0.04, 0.03, 0.005]))
    # Benjamini & Hochberg by hand: sorted 0.005 0.01 0.03 0.04, times 4 / rank, then the
    # running minimum from the top
    assert family.qvalues_of(np.array([0.005, 0.01, 0.03, 0.04])).tolist() == [
        0.02, 0.02, 0.04, 0.04,
    ]  # fmt: skip
    # a p-value the family does not hold: the q-value of the next larger one, or 1 past all
    assert family.qvalues_of(np.array([0.02, 0.5])).tolist() == [0.04, 1.0]
    assert Family.of(np.zeros(0)).qvalues_of(np.array([0.2])).tolist() == [1.0]


def test_a_correction_keeps_its_two_families_apart() -> None:
    correction = Correction.of(np.array([0.01, 0.02]), np.array([0.01]))
    assert correction.steps.qvalues_of(np.array([0.01])).tolist() == [0.02]
    assert correction.change_points.qvalues_of(np.array([0.01])).tolist() == [0.01]


def test_a_cutoff_separates_the_tests_a_q_level_flags_from_the_rest() -> None:
    """`regressions` reads only the steps whose p-value is at most the cutoff: a step it would
    leave out must never have a q-value at the level (one left out is a regression lost)."""
    rng = np.random.default_rng(11)
    p = np.concatenate([np.round(rng.beta(0.2, 1.0, 4000), 5), [0.0, 0.0, 1.0]])
    family = Family.of(p)
    q = family.qvalues_of(p)
    for level in (0.0, 0.001, 0.01, 0.05, 0.2, 1.0):
        cutoff = family.cutoff(level)
        if cutoff is None:
            assert not (q <= level).any()
            continue
        assert np.array_equal(q <= level, p <= cutoff), level
    assert Family.of(np.array([0.5, 0.9])).cutoff(0.01) is None
    assert Family.of(np.zeros(0)).cutoff(0.05) is None


def test_the_significance_bound_keeps_every_step_a_q_level_can_flag() -> None:
    """The least |z| the stored steps' read asks for (query/stored_steps.py): every step whose
    two-sided p-value is at most the cutoff has |log_change| >= z * se, the boundary's too."""
    from kindex_olap.query.steps import two_sided
    from kindex_olap.query.stored_steps import significance_bounds

    rng = np.random.default_rng(3)
    change, se = rng.normal(0, 0.05, 20000), rng.uniform(0.001, 0.05, 20000)
    p = two_sided(change, se)
    correction = Correction.of(p, np.array([0.001, 0.3]))
    for level in (0.001, 0.01, 0.05):
        z, cp_cutoff = significance_bounds(correction, level)
        flagged = correction.steps.qvalues_of(p) <= level
        assert flagged.any()
        assert (np.abs(change[flagged]) >= z * se[flagged]).all(), level
        # and it is a bound, not a pass for everything: few steps it keeps are not flagged
        kept = np.abs(change) >= z * se
        assert kept.sum() <= flagged.sum() + 1, level
        # the change points' family: 0.001 has q 0.002 (two tests), 0.3 has q 0.3
        assert cp_cutoff == (-1.0 if level < 0.002 else 0.001 * (1 + 1e-9)), level
    z, cp_cutoff = significance_bounds(Correction.of(np.array([0.9]), np.zeros(0)), 0.05)
    assert z == np.inf and cp_cutoff == -1.0
