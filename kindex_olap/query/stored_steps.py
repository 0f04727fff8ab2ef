"""The step verbs and `kindex check` read from the lake commit's stored steps (layer_steps).

A stored step holds what its row shows and what its verdict reads (kindex_olap.layers.steps);
its q-value comes from the lake commit's correction (query/stored.py stored_correction, kept
per lake commit) and its verdict from the rules asked, by query/steps.py's own judge_steps, so
a stored answer is the whole lake's live analysis row for row (tests/test_layers.py). A step
verb shows only steps that moved by more than the threshold, so it reads only those: a few
hundred rows where reading and testing the series' points read 25k at 1M runs.
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from kindex_olap.query.correction import Correction
from kindex_olap.query.history_report import (
    STEP_COLUMNS,
    Table,
    notes,
    nums,
    sorted_rows,
    verdicts_in,
)
from kindex_olap.query.steps import (
    Columns,
    Rules,
    Steps,
    environment_shift,
    judge_steps,
)
from kindex_olap.query.stored import fetch_numpy, stored_correction

# a step row's columns as layer_steps names them, in STEP_COLUMNS order (verdict and q_value
# are computed)
_STORED = {"implementation": "provider", "to_version": "version"}
_SHOWN = [_STORED.get(c, c) for c in STEP_COLUMNS if c not in ("verdict", "q_value")]
# what the verdict reads
_RULED = ("log_change", "se", "base_change", "is_baseline", "judged", "comparable")
_READ = ", ".join(dict.fromkeys([*_SHOWN, *_RULED, "changepoint", "cp_pvalue", "series_order"]))


def step_answer(
    con: duckdb.DuckDBPyConnection,
    steps: tuple[str, ...],
    clauses: list[str],
    params: list[Any],
    rules: Rules,
) -> Table:
    """The stored steps whose verdict starts with one of `steps` (a step verb's) among those
    into a point `clauses` select, of an implementation measured against a baseline. A step
    the noise cannot judge shows only when it moved by more than the threshold, as every other
    verdict a step verb shows: the steps read are those."""
    correction, scope = stored_correction(con)
    smallest = min([rules.threshold, *(value for _, value in rules.thresholds)])
    selected = " AND ".join(clauses) or "true"
    columns = fetch_numpy(
        con,
        f"SELECT {_READ} FROM layer_steps WHERE ({selected}) AND NOT is_baseline "
        "AND abs(log_change) > ? ORDER BY series_order, point_index",
        [*params, math.log1p(smallest)],
    )  # fixed names and clauses; the values are parameters
    verdict, qvalue = _judged(columns, correction, rules)
    bound = np.log1p(rules.per_point(columns["kernel"]))
    insufficient = verdicts_in(verdict, ("insufficient",)) & (
        np.abs(columns["log_change"]) <= bound
    )
    shown = np.flatnonzero(verdicts_in(verdict, steps) & ~insufficient)
    table = Table(list(STEP_COLUMNS), sorted_rows(_rows(columns, shown, verdict, qvalue)))
    table.notes.extend(notes(scope, rules, all_branches=False))
    return table


def new_steps(
    con: duckdb.DuckDBPyConnection,
    clauses: list[str],
    params: list[Any],
    run_ids: list[str],
    environments: list[str | None],
    rules: Rules,
) -> tuple[Columns, list[str], NDArray[np.float64]]:
    """`kindex check`'s steps: every comparable step into a point `clauses` select that holds
    one of `run_ids` (of `environments`), of an implementation measured against a baseline,
    with its verdict and q-value."""
    correction, _ = stored_correction(con)
    selected = " AND ".join(clauses) or "true"
    known = [e for e in environments if e is not None]
    columns = fetch_numpy(
        con,
        f"WITH chosen AS (SELECT * FROM layer_steps WHERE ({selected}) AND NOT is_baseline "
        "  AND comparable AND (? OR list_contains(?::VARCHAR[], environment_digest))), "
        "new AS (SELECT DISTINCT series_order, point_index FROM ("
        "  SELECT series_order, point_index, unnest(run_ids) AS run_id FROM chosen) "
        "  SEMI JOIN (SELECT unnest(?::VARCHAR[]) AS run_id) USING (run_id)) "
        f"SELECT {_READ} FROM chosen SEMI JOIN new USING (series_order, point_index) "
        "ORDER BY series_order, point_index",
        [*params, None in environments, known, run_ids],
    )  # fixed names and clauses; the values are parameters
    verdict, qvalue = _judged(columns, correction, rules)
    return columns, verdict, qvalue


def step_rows_of(
    columns: Columns, shown: NDArray[np.intp], verdict: list[str], qvalue: NDArray[np.float64]
) -> list[tuple[Any, ...]]:
    """The steps `shown` of `columns` (new_steps) as rows of STEP_COLUMNS, in row order."""
    return sorted_rows(_rows(columns, shown, verdict, qvalue))


def _judged(
    columns: Columns, correction: Correction, rules: Rules
) -> tuple[list[str], NDArray[np.float64]]:
    """Each stored step's verdict and q-value under `rules`, judged by kind as the live
    analysis judges them (query/steps.py)."""
    verdict: list[Any] = [None] * len(columns["series"])
    qvalue = np.ones(len(columns["series"]))
    for kind in ("latency", "speedup"):
        at = np.flatnonzero(columns["series"] == kind)
        log_change = columns["log_change"][at].astype(float)
        bound = np.log1p(rules.per_point(columns["kernel"][at]))
        shift = environment_shift(
            log_change, columns["base_change"][at].astype(float), columns["is_baseline"][at], bound
        )
        steps = Steps(
            kind, at, at, np.exp(log_change), log_change, columns["se"][at].astype(float),
            columns["judged"][at].astype(bool), shift, columns["comparable"][at].astype(bool),
        )  # fmt: skip
        steps.changepoint = columns["changepoint"][at].astype(bool)
        steps.cp_pvalue = columns["cp_pvalue"][at].astype(float)
        judge_steps(steps, columns["kernel"][at], correction, rules)
        for i, v in zip(at.tolist(), steps.verdict, strict=True):
            verdict[i] = v
        qvalue[at] = steps.qvalue
    return verdict, qvalue


def _rows(
    columns: Columns, shown: NDArray[np.intp], verdict: list[str], qvalue: NDArray[np.float64]
) -> list[tuple[Any, ...]]:
    out: dict[str, list[Any]] = {}
    for name in STEP_COLUMNS:
        if name == "verdict":
            out[name] = [verdict[i] for i in shown.tolist()]
        elif name == "q_value":
            out[name] = qvalue[shown].astype(float).tolist()
        else:
            values = columns[_STORED.get(name, name)][shown]
            out[name] = nums(values) if values.dtype.kind == "f" else values.tolist()
    return list(zip(*(out[name] for name in STEP_COLUMNS), strict=True))
