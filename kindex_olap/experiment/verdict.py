"""Import an experiment into the lake and read the verdict on what it measured: the steps
between its variants' points (the rows `kindex changes` and `kindex check` would show for them,
judged with the whole lake as every step is)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kindex_olap.experiment.collect import BUNDLES, Collected, collect
from kindex_olap.query.gate import CheckResult
from kindex_olap.query.steps import FLAGGED


@dataclass
class Imported:
    """An import's findings: what was collected, what ingest did, and the verdict rows."""

    collected: Collected
    ingest_summary: str
    rejected: int
    columns: list[str]
    steps: list[tuple[Any, ...]]

    def flagged(self) -> list[tuple[Any, ...]]:
        """The steps flagged as a regression or an improvement."""
        verdict = self.columns.index("verdict")
        return [row for row in self.steps if row[verdict] in FLAGGED]


def import_experiment(folder: Path, lake: str | os.PathLike[str] | None = None) -> Imported:
    """Collect the experiment's runs, ingest them (one lake commit), and keep the steps from
    one of its variants to another among the steps into that commit's runs."""
    from kindex_olap.ingestion.pipeline import ingest

    collected = collect(folder)
    report = ingest([folder / BUNDLES], lake)
    result = experiment_steps(collected.plan, lake)
    return Imported(collected, report.summary(), report.rejected, result[0], result[1])


def experiment_steps(
    plan: dict[str, Any], lake: str | os.PathLike[str] | None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The steps between the plan's variants among those `kindex check` tests now."""
    from kindex_olap.query.run import run_check

    checked: CheckResult = run_check("", lake)
    versions = {v["version"] for v in plan["variants"].values()}
    at = checked.columns.index("from_version"), checked.columns.index("to_version")
    rows = [r for r in checked.steps if r[at[0]] in versions and r[at[1]] in versions]
    return checked.columns, rows
