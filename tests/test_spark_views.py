"""Spark and DuckDB give the same rows for the views of sql/views/views.sql (noise.sql and
history.sql included) that no verb test compares already (COMPARED_BY_THE_VERBS), generated
from that one source (kindex_olap/spark): the guard against a change to sql/ that Spark cannot
follow. Both engines compute from the base tables (DuckDB
live, not from the stored layers). Rows are compared as multisets, floats to 11 significant
digits; hash keys are left out (Spark's xxhash64 is not DuckDB's hash, by design)."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

# DuckDB's hash and Spark's xxhash64 differ by design: keys, never shown
HASH_KEYS = {"cell_key", "series_key"}


def normal(value: Any) -> Any:
    """A value as both engines' Python rows can be compared: floats to 11 significant digits,
    structs as sorted tuples, maps as sorted pairs, lists as tuples."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (float, Decimal)):
        number = float(value)
        return "nan" if math.isnan(number) else float(f"{number:.11g}")
    if hasattr(value, "asDict"):  # a Spark Row (a struct)
        value = value.asDict()
    if isinstance(value, dict):
        return tuple(sorted((str(k), normal(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(normal(v) for v in value)
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    return value


def duckdb_rows(lake: Path, sql: str) -> tuple[list[str], Counter[tuple[Any, ...]]]:
    from kindex_olap.query.engine import connect

    con = connect(lake, live=True)
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        return columns, Counter(tuple(normal(v) for v in row) for row in cursor.fetchall())
    finally:
        con.close()


def spark_rows(spark: Any, sql: str) -> tuple[list[str], Counter[tuple[Any, ...]]]:
    frame = spark.sql(sql)
    rows = frame.collect()
    return frame.columns, Counter(tuple(normal(v) for v in row) for row in rows)


# Views whose every row a verb test compares already, through the same generated SQL: each
# comparison here is a whole-lake Spark plan (20-140 s on 2 loaded cores), the CI's budget.
# speedup_summary is sql/queries/summary.sql over every newest pair (the summary verb);
# observations and latency feed the latency verb; replicate_pairs, replicate_spread,
# noise_model feed the noise verb, and noise_floors, history_runs the history verbs
# (test_spark_history.py: every point's noise, q-values, verdicts); comparable_pairs and run_noise
# feed speedups (compared below: every pair's ratio, interval and noise)
COMPARED_BY_THE_VERBS = (
    "speedup_summary", "observations", "latency", "replicate_pairs", "replicate_spread",
    "noise_model", "noise_floors", "history_runs", "comparable_pairs", "run_noise",
)  # fmt: skip


def _views() -> list[str]:
    from kindex_olap.spark.generate import kindex_definitions

    return [n for n, _ in kindex_definitions().views if n not in COMPARED_BY_THE_VERBS]


@pytest.mark.parametrize("view", _views())
def test_every_view_gives_duckdbs_rows(spark: Any, spark_registered: Path, view: str) -> None:
    columns = [name for name, _ in spark.sql(f"SELECT * FROM {view} LIMIT 0").dtypes]
    kept = ", ".join(f"`{c}`" for c in columns if c not in HASH_KEYS)
    sql = f"SELECT {kept} FROM {view}"
    duck_columns, duck = duckdb_rows(spark_registered, sql.replace("`", '"'))
    spark_columns, found = spark_rows(spark, sql)
    assert spark_columns == duck_columns
    assert sum(duck.values()) > 0, f"{view} is empty on the fixture lake: it tests nothing"
    assert found == duck, f"{view}: {sum((found - duck).values())} rows differ"


def test_a_drift_planted_in_a_copy_of_noise_sql_is_caught(
    spark: Any, spark_registered: Path
) -> None:
    """The comparison above fails when the Spark side is generated from SQL that differs from
    DuckDB's: here a copy of views.sql whose noise floor is the 90th percentile, not the 95th."""
    from kindex_olap.spark.generate import definitions, to_spark
    from kindex_olap.sqlfiles import read_sql

    source = read_sql("views/views.sql")
    planted = source.replace("kindex_noise_quantile() AS 0.95", "kindex_noise_quantile() AS 0.90")
    assert planted != source
    found = definitions(planted)
    select = dict(found.views)["noise_model"]
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW planted_noise_model AS {to_spark(select, found.macros)}"
    )
    _, duck = duckdb_rows(spark_registered, "SELECT * FROM noise_model")
    _, drifted = spark_rows(spark, "SELECT * FROM planted_noise_model")
    assert sum(drifted.values()) == sum(duck.values())
    assert drifted != duck
