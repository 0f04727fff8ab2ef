"""The CI acceptance test of `kindex bench` (issue 27): 20 seeded repetitions of the fake
experiment (tests/fake_bench.py: lognormal noise sigma 5 % per run, fake_planted's liger 20 %
slower in variant B, fake_twin unchanged), 3 rounds each, through the generic runner, the state
file, the import and the verdict.

One lake holds the 20 repetitions (each its own experiment folder and its own kernels, tagged
_s<seed>), ingested in one lake commit and judged in one analysis: one ingest and one check
instead of twenty (about 4 s each here). Every repetition's steps stay in their own series (the
kernel differs); what the repetitions share is the Benjamini-Hochberg family and the noise
model, and the family holds the same share of true changes as a single repetition's (half of
its steps), so the bar it sets is the same.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kindex_olap.experiment.collect import BUNDLES, collect
from kindex_olap.experiment.plan import generic_plan, settle_plan
from kindex_olap.experiment.standalone import execute
from kindex_olap.experiment.verdict import experiment_steps
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.query.steps import FLAGGED

FAKE = Path(__file__).with_name("fake_bench.py")
SEEDS = range(20)


def _experiment(root: Path, seed: int) -> Path:
    folder = root / f"rep{seed:02d}"
    cmd = f"{sys.executable} {FAKE} --seed {seed} --tag _s{seed}"
    plan = generic_plan(folder, [f"A={cmd}", f"B={cmd} --slowdown 1.2"], 3, 60.0)
    settle_plan(folder, plan)
    state = execute(folder)
    assert [r["status"] for r in state["runs"].values()] == ["passed"] * 6
    return folder


@pytest.mark.slow
def test_planted_slowdown_flagged_and_twin_not_over_20_repetitions(tmp_path: Path) -> None:
    folders = [_experiment(tmp_path, seed) for seed in SEEDS]
    plans = [collect(folder).plan for folder in folders]
    lake = tmp_path / "lake"
    report = ingest([folder / BUNDLES for folder in folders], lake)
    assert report.runs_added == 20 * 6 * 8 and report.rejected == 0
    columns, steps = experiment_steps(plans[0], lake)  # every plan's variants are A and B
    kernel, verdict = columns.index("kernel"), columns.index("verdict")
    planted = {row[kernel] for row in steps if row[verdict] == "regression"}
    twins = {row[kernel] for row in steps if row[verdict] in FLAGGED}
    planted_hits = sum(f"fake_planted_s{s}" in planted for s in SEEDS)
    twin_hits = sum(f"fake_twin_s{s}" in twins for s in SEEDS)
    # each repetition: 2 sizes x (latency, speedup) steps per kernel, liger only (torch is the
    # baseline: judged, not listed)
    assert len(steps) == 20 * 2 * 2 * 2
    print(f"planted flagged {planted_hits} of 20, twin {twin_hits} of 20")
    # 18: a point of three runs is judged by at least its class floor's share for three runs
    # (sql/views/noise.sql kindex_side_noise), not by their spread alone where that is
    # narrower; two repetitions' 20 % steps then fall short of q <= 0.01 (19 before; 3 rounds
    # at 5 % noise are about the least that separates 20 %: docs/bench.md)
    assert planted_hits >= 18, (planted_hits, twin_hits)
    assert twin_hits <= 1, (planted_hits, twin_hits)
