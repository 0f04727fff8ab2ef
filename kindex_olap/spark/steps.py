"""History's numpy tests on Spark's executors: each series' change points and step p-values,
computed by the DuckDB engine's own functions (query/steps.py, query/changepoints.py) under
`applyInArrow`, one series at a time.

A series' tests read only its own points (and the noise they carry), so they run where the
points are. What depends on the whole lake, the Benjamini-Hochberg correction over every test,
runs on the driver (spark/history.py): one float per test, sorted once.

applyInArrow rather than applyInPandas: the functions take numpy columns, which Arrow gives
directly (NULL numbers as NaN, NULL text as None, as DuckDB's fetchnumpy gives them to the
DuckDB engine); pandas would convert integers with NULLs and timestamps on the way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from kindex_olap.query.steps import Columns, Rules, change_points_of, tested, tests_of

# what the tests read of each point (query/history.py ANALYSIS_COLUMNS' numbers)
INPUT_COLUMNS = (
    "series_key", "point_index", "kernel", "is_baseline", "runs", "median_ns", "min_ns",
    "max_ns", "log_mean", "baseline_ns", "invocation_baseline_ns", "baseline_digest",
    "baseline_digests", "speedup", "speedup_log_mean", "noise", "speedup_noise",
)  # fmt: skip
# per point: its series' change points, as the lake stores them (layer_points; the DuckDB
# engine's stored path reads these columns), then the p-values of the tests the correction
# counts (layer_step_tests): the step into the point, and the change point it starts
CHANGE_POINT_COLUMNS = (
    "cp_latency_pvalue", "cp_speedup_pvalue", "quiet_latency_pvalue", "quiet_speedup_pvalue",
)  # fmt: skip
STEP_COLUMNS = ("latency_step_pvalue", "speedup_step_pvalue")
CP_STEP_COLUMNS = ("latency_cp_step_pvalue", "speedup_cp_step_pvalue")
SCHEMA = ", ".join(
    ["series_key BIGINT", "point_index INT"]
    + [f"{c} DOUBLE" for c in CHANGE_POINT_COLUMNS + STEP_COLUMNS + CP_STEP_COLUMNS]
)


def columns_of(table: pa.Table) -> Columns:
    """Arrow columns as numpy columns, as query/history.py fetch_numpy makes DuckDB's: NULL
    numbers as NaN (integers with NULLs as floats), NULL text as None, decimals as doubles."""
    out: Columns = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_decimal(column.type):
            column = column.cast(pa.float64())
        out[name] = np.asarray(column.to_numpy(zero_copy_only=False))
    return out


def series_tests(table: pa.Table) -> pa.Table:
    """One series' points (INPUT_COLUMNS, any order) -> per point (SCHEMA): the change points
    of its latency and speedup (E-Divisive) and the p-values its tests add to each family."""
    points = columns_of(table.sort_by("point_index"))
    count = len(points["series_key"])
    for kind, values in (("latency", "log_mean"), ("speedup", "speedup_log_mean")):
        found, quiet = change_points_of(points, values)
        points[f"cp_{kind}_pvalue"], points[f"quiet_{kind}_pvalue"] = found, quiet
    # the p-values do not depend on the rules' thresholds (those decide verdicts, on the driver)
    tests = tests_of(points, Rules(), stored=True)
    out: dict[str, NDArray[Any]] = {
        "series_key": points["series_key"].astype(np.int64),
        "point_index": points["point_index"].astype(np.int32),
        **{c: points[c].astype(np.float64) for c in CHANGE_POINT_COLUMNS},
    }
    for steps in tests.steps:
        checked = tested(steps)
        at_point = checked & steps.changepoint
        out[f"{steps.series}_step_pvalue"] = _at(count, steps.to[checked], steps.pvalue[checked])
        out[f"{steps.series}_cp_step_pvalue"] = _at(
            count, steps.to[at_point], steps.cp_pvalue[at_point]
        )
    return pa.table({name: pa.array(values) for name, values in out.items()})


def _at(count: int, where: NDArray[np.intp], values: NDArray[np.float64]) -> NDArray[np.float64]:
    out = np.full(count, np.nan)
    out[where] = values
    return out


def families(tests: pa.Table) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The correction's two families (query/steps.py families) from every point's tests:
    the steps' p-values, and the change points' (at a step, or a quiet series' strongest
    split)."""
    cols = columns_of(tests)

    def finite(names: tuple[str, ...]) -> NDArray[np.float64]:
        values = np.concatenate([cols[n].astype(np.float64) for n in names])
        return np.asarray(values[np.isfinite(values)], dtype=np.float64)

    return finite(STEP_COLUMNS), finite(CP_STEP_COLUMNS + CHANGE_POINT_COLUMNS[2:])
