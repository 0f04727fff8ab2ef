"""`kindex check`: the CI gate. It tests what is new and fails on a regression.

What is new: by default the runs the newest lake commit that added runs brought (an ingest of
a pull request's runs tests exactly those); `--since` widens it to the runs added after a lake
commit, observed after a date, or of versions after a version. Every step whose later point
holds a new run is tested; its verdict and q-value come from the one analysis of the whole lake
(query/history.py), so `check` agrees with `history`, `changes` and every filter about a step.

A team's gate file (TOML, kept in its repository) sets the threshold, per-kernel thresholds,
the q level and the accepted steps:

    threshold = 0.05
    q = 0.01
    [thresholds]
    jsd = 0.10
    [[accept]]
    step = "3f9a0c2d11e4"
    reason = "known: #1234, fixed in 0.9"
"""

from __future__ import annotations

import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from kindex_olap.errors import ConfigError
from kindex_olap.lake.store import Snapshot
from kindex_olap.query.history import (
    Analysis,
    HistoryOptions,
    analyse_lake,
    check_by,
    select_points,
    stored_tests,
)
from kindex_olap.query.history_report import STEP_COLUMNS, sorted_rows, step_rows
from kindex_olap.query.new_runs import NewRuns, new_runs
from kindex_olap.query.steps import (
    IMPROVEMENT,
    REGRESSION,
    THRESHOLD_RANGE,
    Rules,
    is_insufficient,
    is_threshold,
)

# the JSON document `kindex check --format json` writes (docs/history.md describes it)
JSON_SCHEMA = "kindex.check/v1"


@dataclass(frozen=True)
class Accepted:
    """A step a team accepts (a known regression): it is reported, it does not fail the gate."""

    step: str
    reason: str


@dataclass(frozen=True)
class GateFile:
    """The gate file's settings (None: not set there)."""

    threshold: float | None = None
    q_level: float | None = None
    thresholds: tuple[tuple[str, float], ...] = ()
    accept: tuple[Accepted, ...] = ()


def read_gate_file(path: Path) -> GateFile:
    """Parse a gate file; every error names the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the gate file ({e.strerror})") from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not a TOML gate file ({e})") from e
    unknown = sorted(set(data) - {"threshold", "q", "thresholds", "accept"})
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting {unknown[0]!r}",
            hint="a gate file sets threshold, q, [thresholds] and [[accept]]",
        )
    thresholds = data.get("thresholds", {})
    if not isinstance(thresholds, dict):
        raise ConfigError(f"{path}: [thresholds] must be a table of kernel = fraction")
    if not isinstance(data.get("accept", []), list):  # `accept = 5` was a TypeError
        raise ConfigError(f'{path}: accept must be [[accept]] tables, each with step = "..."')
    q_level = _fraction(path, "q", data.get("q"))
    if q_level is not None and q_level > 1:
        raise ConfigError(f"{path}: q is a false-discovery rate, at most 1, not {q_level!r}")
    return GateFile(
        threshold=_fraction(path, "threshold", data.get("threshold")),
        q_level=q_level,
        thresholds=tuple(
            (str(k), _fraction(path, f"thresholds.{k}", v) or 0.0) for k, v in thresholds.items()
        ),
        accept=tuple(_accepted(path, i, entry) for i, entry in enumerate(data.get("accept", []))),
    )


def _fraction(path: Path, name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not is_threshold(value):
        raise ConfigError(f"{path}: {name} must be {THRESHOLD_RANGE}, not {value!r}")
    return float(value)


def _accepted(path: Path, index: int, entry: Any) -> Accepted:
    if not isinstance(entry, dict) or not isinstance(entry.get("step"), str):
        raise ConfigError(f'{path}: accept[{index}] needs step = "<12 hex digits>"')
    return Accepted(entry["step"], str(entry.get("reason", "")))


@dataclass
class CheckResult:
    """What the gate tested and found."""

    columns: list[str]
    regressions: list[tuple[Any, ...]]
    accepted: list[tuple[Any, ...]]
    improvements: int
    insufficient: int
    tested_steps: int
    tested_series: int
    what: str
    lake_commit: int
    rules: Rules
    notes: list[str] = field(default_factory=list)
    # every step tested as a row, made when asked for: a whole-lake check at 1M runs tests
    # 333k steps, and making their rows cost 17 s of 53 (the gate reports the regressions)
    rows_of: Callable[[], list[tuple[Any, ...]]] = field(default=list, repr=False)

    @cached_property
    def steps(self) -> list[tuple[Any, ...]]:
        """Every step tested, with its verdict, in row_order."""
        return self.rows_of()

    def summary(self) -> str:
        """One line for stderr and the pull-request comment."""
        if not self.tested_steps:
            return f"nothing to test: no step into {self.what}"
        found = f"{len(self.regressions)} regression(s)" if self.regressions else "no regression"
        return f"{found} in {self.tested_steps} steps of {self.tested_series} series ({self.what})"

    def as_json(self) -> dict[str, Any]:
        """The documented, stable JSON document (JSON_SCHEMA)."""

        def rows(rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
            return [
                {
                    k: (v.isoformat() if isinstance(v, datetime) else v)
                    for k, v in zip(self.columns, row, strict=True)
                }
                for row in rows
            ]

        return {
            "schema": JSON_SCHEMA,
            "lake_commit": self.lake_commit,
            "tested": self.what,
            "tested_steps": self.tested_steps,
            "tested_series": self.tested_series,
            "threshold": self.rules.threshold,
            "thresholds": dict(self.rules.thresholds),
            "q_level": self.rules.q_level,
            "passed": not self.regressions,
            "regressions": rows(self.regressions),
            "accepted": rows(self.accepted),
            "improvements": self.improvements,
            "insufficient": self.insufficient,
        }


def check(
    con: duckdb.DuckDBPyConnection,
    snapshot: Snapshot,
    clauses: list[str],
    params: list[Any],
    since: str | None,
    options: HistoryOptions,
    accept: tuple[Accepted, ...] = (),
) -> CheckResult:
    """Test every step into a point that holds a new run, among the series the filters
    select; judge it with the whole lake."""
    check_by(options)
    new = new_runs(con, snapshot, since)
    if stored_tests(con, options):  # the steps into the new points, read stored
        return stored_gate_result(con, new, clauses, params, options.rules, snapshot.id, accept)
    some = select_points(con, clauses, params, options, new.run_ids)
    lake = analyse_lake(con, options, some)
    return gate_result(lake, new.what, snapshot.id, options.rules, accept)


def stored_gate_result(
    con: duckdb.DuckDBPyConnection,
    new: NewRuns,
    clauses: list[str],
    params: list[Any],
    rules: Rules,
    lake_commit: int,
    accept: tuple[Accepted, ...],
) -> CheckResult:
    """The gate's verdict on the lake commit's stored steps (query/stored_steps.py) into a
    point that holds a new run."""
    from kindex_olap.query.stored_steps import new_steps

    found = new_steps(con, clauses, params, new, rules)
    verdicts = np.asarray(found.verdict, dtype=object)

    def rows(only: str | None = None) -> list[tuple[Any, ...]]:
        """The steps as rows (of one verdict), in row_order."""
        picked = np.flatnonzero(verdicts == only) if only else np.arange(len(verdicts))
        return found.rows(picked)

    series = len(np.unique(found.columns["series_order"]))
    return _result(verdicts, series, rows, new.what, lake_commit, rules, accept)


def gate_result(
    lake: Analysis, what: str, lake_commit: int, rules: Rules, accept: tuple[Accepted, ...]
) -> CheckResult:
    """The gate's verdict on an analysis whose is_new marks the points holding a new run (the
    Spark engine's too)."""
    points = lake.points
    # the implementations measured against a baseline: a baseline's own steps are judged with
    # the rest (they make environment shifts) but do not fail a gate
    wanted = (
        points["is_new"].astype(bool)
        & points["in_query"].astype(bool)
        & ~points["is_baseline"].astype(bool)
    )
    chosen = [np.flatnonzero(wanted[s.to] & s.comparable) for s in lake.steps]
    verdicts = [
        np.asarray(s.verdict, dtype=object)[c] for s, c in zip(lake.steps, chosen, strict=True)
    ]
    series = {
        k
        for s, c in zip(lake.steps, chosen, strict=True)
        for k in points["series_key"][s.to[c]].tolist()
    }

    def rows(only: str | None = None) -> list[tuple[Any, ...]]:
        """The chosen steps as rows (of one verdict), in row_order."""
        out = []
        for s, c, v in zip(lake.steps, chosen, verdicts, strict=True):
            value = points["median_ns"] / 1e6 if s.series == "latency" else points["speedup"]
            picked = c if only is None else c[v == only]
            out += step_rows(points, s, np.asarray(picked, dtype=np.intp), value)
        return sorted_rows(out)

    every = np.concatenate([*verdicts, np.zeros(0, dtype=object)])
    return _result(every, len(series), rows, what, lake_commit, rules, accept)


def _result(
    verdicts: np.ndarray,
    series: int,
    rows: Callable[..., list[tuple[Any, ...]]],
    what: str,
    lake_commit: int,
    rules: Rules,
    accept: tuple[Accepted, ...],
) -> CheckResult:
    """The gate's result on the `verdicts` of every step tested (of `series` series); `rows`
    makes the steps' rows (of one verdict)."""
    accepted_steps = {a.step for a in accept}
    step = STEP_COLUMNS.index("step")
    regressions = rows(REGRESSION)
    return CheckResult(
        columns=list(STEP_COLUMNS),
        regressions=[r for r in regressions if r[step] not in accepted_steps],
        accepted=[r for r in regressions if r[step] in accepted_steps],
        improvements=int((verdicts == IMPROVEMENT).sum()),
        insufficient=sum(
            count for v, count in Counter(verdicts.tolist()).items() if is_insufficient(str(v))
        ),
        tested_steps=len(verdicts),
        tested_series=series,
        what=what, lake_commit=lake_commit, rules=rules, rows_of=rows,
    )  # fmt: skip


def rules_for(
    threshold: float | None, q_level: float | None, gate: GateFile | None = None
) -> Rules:
    """The rules: the command line's value where given, else the gate file's, else the
    default."""
    gate = gate or GateFile()
    return Rules(
        threshold=_first(threshold, gate.threshold, Rules.threshold),
        q_level=_first(q_level, gate.q_level, Rules.q_level),
        thresholds=gate.thresholds,
    )


def _first(*values: float | None) -> float:
    """The first value given (0 too: Rules refuses it, where `or` took the default)."""
    return next(value for value in values if value is not None)
