"""What part of the layers a lake commit changes: the environments it adds runs to (or rows
that describe runs), and in each of them the kernels of those runs.

Every per-environment layer is exact over whole kernels of one environment (a series, a cell
and a run's code never cross a kernel: kindex_olap.layers.groups), so an ingest that adds runs
of a few kernels to an environment recomputes those kernels alone and keeps the rows its lake
commit before stored for the others (KeptRows). A CI run of one kernel on one GPU then costs
that kernel's runs, not its GPU's (at 1M runs over 8 GPUs and 40 kernels, a GPU is 125k runs).
Two names of a kernel: the run's own label (the run code and the replicate layers group by it)
and its workload's operation, else its label (the pairs, the points and the steps). A run whose
operation a new workload or operation row changes was stored under its other name: its
environment is recomputed whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from kindex_olap.lake.tables import scan_sql
from kindex_olap.lake.transaction import Transaction

# The tables whose new rows change what the layers hold, and which runs they describe (SQL over
# `added`, the rows this lake commit adds): the runs themselves, the dimension rows the stored
# pairs read (names, shapes, providers: by a digest of the run, or of its workload), and
# provenance (a git commit changes a run's code).
DESCRIBED = {
    "runs": "run_id IN (SELECT run_id FROM added)",
    "environments": "environment_digest IN (SELECT environment_digest FROM added)",
    "protocols": "protocol_digest IN (SELECT protocol_digest FROM added)",
    "implementations": "implementation_digest IN (SELECT implementation_digest FROM added)",
    "workloads": "workload_digest IN (SELECT workload_digest FROM added)",
    "operations": "workload_digest IN (SELECT workload_digest FROM workloads WHERE "
    "operation_spec_digest IN (SELECT operation_spec_digest FROM added))",
    "run_provenance": "run_id IN (SELECT run_id FROM added)",
}
# the tables whose new rows can give a run stored before another operation (another kernel)
_RENAMING = ("workloads", "operations")
_ADDED = "kindex_added_files"  # the variable holding one table's added files
_NEW_RUNS = "kindex_new_run_files"  # and the runs' added files

# a run's two kernel names, as kindex_olap.layers.groups counts them
_KERNELS = """
SELECT DISTINCT r.environment_digest, r.kernel AS label,
       coalesce(w.operation, r.kernel) AS operation,
       r.run_id IN (SELECT run_id FROM ({new_runs})) AS new
FROM run_rows r
LEFT JOIN (SELECT workload_digest, any_value(operation) AS operation FROM workloads
           GROUP BY workload_digest) w USING (workload_digest)
WHERE {described}
"""


@dataclass
class Touched:
    """The environments a lake commit changes (None: every one), and for those of them where
    it changes some kernels only, those kernels by each name (`labels`, `operations`); an
    environment of neither dict is recomputed whole."""

    environments: list[str] | None
    labels: dict[str, list[str]] = field(default_factory=dict)
    operations: dict[str, list[str]] = field(default_factory=dict)

    def kernels(self, as_run_labels: bool) -> dict[str, list[str]]:
        """The kernels recomputed in each narrowed environment, by one of their names."""
        return self.labels if as_run_labels else self.operations


EVERY = Touched(None)


def touched(con: duckdb.DuckDBPyConnection, tx: Transaction) -> Touched:
    """What the lake commit `tx` changes, read through the views of the lake commit being made
    (`con`): every environment (None) when a run it describes has no environment; an
    environment narrowed to kernels unless one of its runs described lacks a kernel or changes
    its operation, or the kernels are every kernel the environment holds."""
    runs_added = [str(p) for p in tx.written("runs")]
    con.execute(f"SET VARIABLE {_NEW_RUNS} = ?", [runs_added]).fetchall()
    new_runs = (
        scan_sql("runs", f"getvariable('{_NEW_RUNS}')")
        if runs_added
        else "SELECT NULL::VARCHAR AS run_id WHERE false"
    )
    rows: set[tuple[Any, ...]] = set()
    whole: set[str | None] = set()
    for table, described in DESCRIBED.items():
        files = [str(p) for p in tx.written(table)]
        if not files:
            continue
        con.execute(f"SET VARIABLE {_ADDED} = ?", [files]).fetchall()
        added = scan_sql(table, f"getvariable('{_ADDED}')")
        sql = f"WITH added AS ({added}) " + _KERNELS.format(new_runs=new_runs, described=described)
        for environment, label, operation, new in con.execute(sql).fetchall():
            rows.add((environment, label, operation))
            if table in _RENAMING and not new:
                whole.add(environment)
    environments = {row[0] for row in rows}
    if None in environments:
        return EVERY
    found = Touched(sorted(str(e) for e in environments))
    for environment in found.environments or ():
        mine = [row for row in rows if row[0] == environment]
        if environment in whole or any(r[1] is None or r[2] is None for r in mine):
            continue
        labels = sorted({str(r[1]) for r in mine})
        if len(labels) < _kernel_count(con, environment):
            found.labels[environment] = labels
            found.operations[environment] = sorted({str(r[2]) for r in mine})
    return found


def _kernel_count(con: duckdb.DuckDBPyConnection, environment: str) -> int:
    """How many run labels the lake commit being made holds in `environment`."""
    sql = "SELECT count(DISTINCT kernel) FROM run_rows WHERE environment_digest = ?"
    return int(con.execute(sql, [environment]).fetchall()[0][0])
