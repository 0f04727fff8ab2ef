"""The lake's table schemas, built in one place from sql/schema/tables.sql: column names and DuckDB types
(read from the SQL text, so a cold query needs no database to learn them), Arrow schemas, and
rows checked strictly against them.

Shared by ingest, the lake and the importers (who write files shaped like a table); it imports
no lake code. pyarrow is imported only where an Arrow schema is asked for.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from kindex_olap.errors import LakeError

if TYPE_CHECKING:
    import pyarrow as pa

# The version of the rules the layers are computed by (the noise model, the pairing, the step
# tests): raise it with any change of what a layer holds for the same runs. A lake commit
# records the version its layers were computed by (its summary's "layer_rules"; 1 where none
# is recorded); one recorded by other rules is read with live views and the next lake commit
# rebuilds its layers whole (`kindex migrate` does so at once). 2: a point of several runs is
# never judged noisier than its class floor's share allows (sql/views/noise.sql). 3: the step
# tests name their kernel (an ingest recomputes the kernels it touched: layers/cells.py). 4: a
# run's p20/p80 spread holds its central value (sql/views/views.sql kindex_spread_low). 5: a
# run without a described workload takes its shape from its externalId (kindex_run_shape). 6: a
# latency's p20/p80 are read in the unit of its value (a run without timing: ms, not ns). 7: the
# pairing and history read every time in ns (runs of one cell in ms and in ns pair). 8: the
# summary summarizes each implementation apart (a leaderboard user's submissions were pooled),
# and a step names its implementation (layer_steps.implementation_name). 9: a run's provider is
# its own label before its implementation's, and the pairs keep two providers of one digest
# apart (KernelIndex's curation gives torch and megatron, liger and liger_tiled one digest).
LAYER_RULES = 9

# The layers (sql/schema/tables.sql, kindex_olap.layers): derived from the tables above by the
# same lake commit; a lake written before them records none, and is read with live views.
LAYERS = (
    "layer_run_code",
    "layer_replicate_pairs",
    "layer_replicate_spread",
    "layer_noise_model",
    "layer_pairs",
    "layer_points",
    "layer_summary",
    "layer_speedups",
    "layer_step_tests",
    "layer_steps",
)
TABLES = (
    "runs",
    "measurements",
    "environments",
    "protocols",
    "workloads",
    "implementations",
    "operations",
    "rejects",
    "ingested_files",
    "serving_runs",
    "run_provenance",
    *LAYERS,
)


def check_table(table: str) -> None:
    if table not in TABLES:
        raise LakeError(f"unknown lake table {table!r}", hint=f"tables: {', '.join(TABLES)}")


_TABLE = re.compile(r"^CREATE TABLE (\w+) \($")
_COLUMN = re.compile(r"^\s+(\w+)\s+(.+?)(?:\s+NOT NULL)?,?\s*(?:--.*)?$")


@cache
def column_types() -> dict[str, list[tuple[str, str]]]:
    """(column, DuckDB type) of every table, in the order of sql/schema/tables.sql (read as text: a
    cold query does not pay for a DuckDB database to learn them; a test compares with DuckDB)."""
    from kindex_olap.sqlfiles import read_sql

    out: dict[str, list[tuple[str, str]]] = {}
    table = None
    for line in read_sql("schema/tables.sql").splitlines():
        if start := _TABLE.match(line):
            table = start.group(1)
            out[table] = []
        elif line.startswith(")"):
            table = None
        elif table is not None and out[table] and _open(out[table][-1][1]):
            name, kind = out[table][-1]  # a type continued on the next line
            rest = line.split("--")[0].strip().rstrip(",")
            out[table][-1] = (name, f"{kind} {rest}")
        elif table is not None and (column := _COLUMN.match(line)):
            kind = column.group(2)
            if _open(kind):  # keep the comma inside an unclosed type
                kind = line.split("--")[0].strip().split(None, 1)[1]
            out[table].append((column.group(1), kind))
    return out


def _open(kind: str) -> bool:
    return kind.count("(") > kind.count(")")


def columns(table: str) -> list[str]:
    check_table(table)
    return [name for name, _ in column_types()[table]]


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of `table` as DuckDB writes it (the one schema of each table)."""
    check_table(table)
    return arrow_schemas()[table]


@cache
def arrow_schemas() -> dict[str, pa.Schema]:
    import duckdb

    from kindex_olap.sqlfiles import read_sql

    con = duckdb.connect()
    try:
        con.execute(read_sql("schema/tables.sql")).fetchall()
        return {t: con.sql(f"SELECT * FROM {t}").to_arrow_table().schema for t in TABLES}
    finally:
        con.close()


def check_columns(table: str, rows: list[dict[str, Any]]) -> None:
    """Refuse a row with a key `table` lacks (a reader by column name would leave it out)."""
    names = [name for name, _ in column_types()[table]]
    known = set(names)
    for number, row in enumerate(rows):
        unknown = set(row) - known
        if unknown:
            raise LakeError(
                f"row {number} for table {table} has unknown column(s) {sorted(unknown)}",
                hint=f"columns: {', '.join(names)}",
            )


def rows_to_arrow(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    """`rows` as an Arrow table of `table`'s schema; a key the schema lacks is an error (Arrow
    would silently drop it, leaving the column NULL). Map values may be dicts."""
    import pyarrow as pa

    schema = arrow_schema(table)
    check_columns(table, rows)
    maps = [f.name for f in schema if pa.types.is_map(f.type)]
    if maps:  # map columns take (key, value) pairs
        rows = [
            {k: (list(v.items()) if k in maps and isinstance(v, dict) else v) for k, v in r.items()}
            for r in rows
        ]
    return pa.Table.from_pylist(rows, schema=schema)
