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
