"""The steps layer: every step of every history series as the step verbs show it, stored per
lake commit (layer_steps, sql/schema/tables.sql).

Written from the tests kindex_olap.layers.step_tests computes (one pass over the environments
an ingest changed), so a stored step and its stored p-value agree. What a row shows and what
its verdict reads depend on its series and its environment's floors only; the verdict itself
depends on the rules asked and, through the q-value, on the whole lake, and is computed at read
time (query/stored_steps.py). `regressions KERNEL` then reads the steps that moved by more than
the threshold instead of reading and testing its series' points (0.6 s at 1M runs).
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np

from kindex_olap.arrow_numpy import array
from kindex_olap.lake.transaction import Transaction, write_relation
from kindex_olap.layers.partitions import Narrowed, write_narrowed
from kindex_olap.query.history_report import step_columns
from kindex_olap.query.steps import Columns, Tests
from kindex_olap.schema import column_types

TABLE = "layer_steps"
# the table's columns named otherwise in a step verb's row
_RENAMED = {"implementation": "provider", "to_version": "version"}


def write_steps(
    con: duckdb.DuckDBPyConnection,
    tx: Transaction,
    points: Columns,
    tests: Tests,
    partitions: set[str | None] | None,
    replace: bool,
    narrowed: Narrowed | None = None,
) -> int:
    """Write every step of `tests` (of `points`, fetched with their text, point_key and
    point_index) into `tx`: as the `partitions` (environments) given, else as the whole table
    (`replace`) or a part of it (a group of a full build); a group of a narrowed environment as
    kindex_olap.layers.partitions.write_narrowed says. The clause columns a step verb filters
    by (dtype, axes) and the later point's runs (what `kindex check` looks for) come from
    history_source, the points they were read from."""
    import pyarrow as pa

    parts: list[dict[str, Any]] = []
    for s in tests.steps:
        js = np.arange(len(s.to), dtype=np.intp)
        value = points["median_ns"] / 1e6 if s.series == "latency" else points["speedup"]
        shown = step_columns(points, s, js, value, ids=False)
        base = s.base_change if s.base_change is not None else np.full(len(js), np.nan)
        parts.append(
            {
                **{_RENAMED.get(k, k): v for k, v in shown.items()},
                "series_key": points["series_key"][s.to].astype(np.uint64),
                "point_key": points["point_key"][s.to],
                "from_code": points["code_key"][s.start],
                "to_code": points["code_key"][s.to],
                "point_index": points["point_index"][s.to].astype(np.int64),
                "is_baseline": points["is_baseline"][s.to].astype(bool),
                "log_change": s.log_change,
                "se": s.se,
                "base_change": base,
                "judged": s.judged,
                "comparable": s.comparable,
                "changepoint": s.changepoint,
                "cp_pvalue": s.cp_pvalue,
            }
        )
    steps = pa.table(
        {
            # NaN as NULL: a layer's rows compare equal to a rebuild's (NaN != NaN), and
            # fetch_numpy gives NaN back
            name: array(np.concatenate([np.asarray(p[name]) for p in parts]))
            for name in parts[0]
        }
    )
    # each column in the table's type (an empty list of steps has no Arrow type)
    selected = ", ".join(
        f"CAST({_SOURCES.get(n, 's.' + n)} AS {t}) AS {n}" for n, t in column_types()[TABLE]
    )
    con.register("fresh_layer_steps", steps)
    try:
        fresh = (
            f"SELECT {selected} FROM fresh_layer_steps s "
            "JOIN history_source p USING (series_key, point_key) "
            f"LEFT JOIN ({_INGESTED}) i USING (series_key, point_key)"
        )  # names and types from tables.sql
        if narrowed is None:
            write_relation(tx, TABLE, con.sql(fresh), replace=replace, partitions=partitions)
        else:
            write_narrowed(con, tx, TABLE, (fresh, {}), narrowed)
    finally:
        con.unregister("fresh_layer_steps")
    return int(steps.num_rows)


# query/history_report.py step_ids in SQL: hashing in Python was 5 of 14 s of this layer's
# update when 1k bundles were added to 100k runs (load 13)
STEP_ID = (
    "left(sha256(concat_ws(chr(31), "
    + ", ".join(
        f"coalesce(s.{c}, '')"
        for c in ("kernel", "pass", "gpu", "shape", "provider", "series", "from_code", "to_code")
    )
    + ")), 12)"
)
# when each later point's newest run was ingested
_INGESTED = (
    "SELECT h.series_key, h.point_key, max(r.ingested_at) AS to_ingested FROM ("
    "SELECT series_key, point_key, unnest(run_ids) AS run_id FROM history_source "
    "SEMI JOIN fresh_layer_steps USING (series_key, point_key)) h "
    "JOIN run_rows r USING (run_id) GROUP BY h.series_key, h.point_key"
)
# the columns not computed in Python: the later point's, the series key's order, the step's id
_SOURCES = {
    "to_ingested": "i.to_ingested",
    "environment_digest": "p.environment_digest",
    "dtype": "p.dtype",
    "axes": "p.axes",
    "run_ids": "p.run_ids",
    # an unsigned 64-bit hash in a signed column, in the same order
    "series_order": "s.series_key::HUGEINT - 9223372036854775808",
    "step": STEP_ID,
}
