"""Computing a lake commit's layers inside the transaction that writes its runs.

Each layer is a view of sql/views/noise.sql computed over the lake commit being made
(Transaction.pending) and written as a Delta table of that same lake commit, so a reader of
lake commit N reads the layers of exactly N's runs (`--as-of` too). The per-environment layers
(run code, replicate pairs, replicate spread, pairs, points, steps) depend only on the runs of
one environment, and a kernel's rows on that kernel's runs: an ingest recomputes the environments
it added runs to and keeps the others' files, and where it added runs of some kernels of an
environment, those kernels (kindex_olap.layers.cells, .partitions). The noise
model's floors pool replicate pairs over every environment, so they are recomputed whole, from
the stored pairs of the untouched environments and the fresh pairs of the touched ones: a few
hundred rows. A lake without layers (written before them) gets them whole on its next write.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import duckdb

from kindex_olap import schema
from kindex_olap.lake.empty import write_empty_tables
from kindex_olap.lake.store import LAYERS, Lake
from kindex_olap.lake.transaction import Transaction, transaction, write_relation
from kindex_olap.layers.cells import DESCRIBED, EVERY
from kindex_olap.layers.cells import touched as touched_cells
from kindex_olap.layers.connection import layer_connection
from kindex_olap.layers.groups import Group, groups
from kindex_olap.layers.partitions import (
    BY_RUN,
    narrowed_of,
    with_kept_rows,
    write_environments,
    write_narrowed,
)
from kindex_olap.layers.points import TABLE as POINTS
from kindex_olap.layers.points import write_points
from kindex_olap.layers.step_tests import write_step_tests
from kindex_olap.layers.summary import read_written_layers, write_whole
from kindex_olap.query.engine import define_views

# (layer table, the table macro that computes it for a group of runs (kindex_olap.layers.groups:
# $environments, $kernels), the view that reads it, whether its kernels are the runs' own
# labels), in order: each macro reads the views of the ones before, pointed at the lake
# commit's rows
PER_ENVIRONMENT = (
    ("layer_run_code", "run_code_for($environments, kernel_filter := $kernels)", "run_code", True),
    (
        "layer_replicate_pairs",
        "replicate_pairs_for($environments, kernel_filter := $kernels)",
        "replicate_pairs",
        True,
    ),
    (
        "layer_replicate_spread",
        "replicate_spread_for($environments, kernel_filter := $kernels)",
        "replicate_spread",
        True,
    ),
    ("layer_pairs", "pair_rows_for($kernels, $environments, NULL, NULL)", None, False),
)
NOISE_MODEL = "layer_noise_model"
# The runs an update computes at once (kindex_olap.layers.groups), under lake.spill.MEMORY_LIMIT:
# a full build of 1M runs over 8 GPUs computed whole peaked at 6.4 GB RSS (55 s), a GPU at a time
# at 0.88 GB (85 s), the same rows; 5M runs (625k a GPU) ran out of memory a GPU at a time.
GROUP_RUNS = 150_000
# The runs whose steps are tested at once: a group's points and steps are numpy arrays (their
# text as Python strings), outside DuckDB's limit. 150k set the peak of `kindex ingest` of 1M
# bundles (935 MiB of the parent, sampled); 50k took it to 765 MiB, and adding 1k runs of one
# GPU to those 1M from 9.2 to 9.6-9.8 s (800 -> 672 MiB; docs/performance.md).
STEP_TEST_RUNS = 50_000


@dataclass
class LayerReport:
    """What a lake commit's layer update did."""

    environments: int | None  # environments recomputed (None: every one, a full build)
    rows: dict[str, int]
    seconds: float


def needs_update(tx: Transaction) -> bool:
    """Whether the lake commit `tx` changes what the layers hold: it adds runs, or rows that
    describe runs (cells.DESCRIBED), or the lake has no layers yet."""
    return not tx.base.has_layers or any(tx.written(table) for table in DESCRIBED)


def update(tx: Transaction, full: bool = False) -> LayerReport:
    """Write the layers of the lake commit `tx` is about to make into `tx` (before its commit):
    the environments it added runs to (in each, the kernels it added runs of, where those are
    some of them: kindex_olap.layers.cells), or every one when `full` or the lake has none
    yet."""
    started = time.perf_counter()
    con = layer_connection(tx)
    try:
        define_views(con, tx.pending(), live=True, lean=True)  # the macros and what they read
        cells = EVERY if full or not tx.base.has_layers else touched_cells(con, tx)
        touched = cells.environments
        if touched is not None and not cells.operations and _every_environment(con, touched):
            cells, touched = EVERY, None  # one full build costs less than every partition
        everything = touched is None
        if everything:  # today's columns for the layers' empty files (read where none is written)
            write_empty_tables(tx.lake.meta / "empty", again=LAYERS)
        rows: dict[str, int] = {}
        if touched is not None:
            con.execute(
                "CREATE TEMP TABLE touched AS SELECT unnest(?::VARCHAR[]) AS environment_digest",
                [touched],
            ).fetchall()
        by_label = groups(con, touched, GROUP_RUNS, True, cells.kernels(as_run_labels=True))
        by_operation = groups(con, touched, GROUP_RUNS, False, cells.kernels(as_run_labels=False))
        for table, source, view, labels in PER_ENVIRONMENT:
            fresh = f"fresh_{table}"  # names from the constants above
            if table == "layer_replicate_pairs":  # the series both replicate layers read
                series = "replicate_series_for($environments, kernel_filter := $kernels)"
                _fill(con, "fresh_replicate_series", series, by_label)
                _read_instead(con, "replicate_series_for", "fresh_replicate_series", "kernel")
            parts = by_label if labels else by_operation
            # the pairs are read by no later layer: written, never held
            kept = None if view is None else fresh
            written = _Written(tx, table, everything, cells.kernels(labels))
            rows[table] = _fill(con, kept, source, parts, written)
            if table == "layer_run_code":  # no kernel: its readers join it to their runs
                _read_instead(con, "run_code_for", fresh, None)
            if view is not None:
                _read_after(con, view, table, everything)
            if table == "layer_replicate_spread":  # the series' lists: no layer reads them now
                con.execute("DROP TABLE temp.fresh_replicate_series").fetchall()
        con.execute(
            f"CREATE TEMP TABLE fresh_{NOISE_MODEL} AS SELECT * FROM noise_model_for(NULL)"
        ).fetchall()
        rows[NOISE_MODEL] = _count(con, f"fresh_{NOISE_MODEL}")
        # the speedups and the summary change where the pairs or the floors did
        floors = None if touched is None else _floors_moved(con)
        moved = None if touched is None or floors is None else sorted(set(touched) | floors)
        write_relation(tx, NOISE_MODEL, con.table(f"fresh_{NOISE_MODEL}"), replace=True)
        rows[POINTS], reordered = write_points(con, tx, cells)
        # last: they read the layers written above, by today's rules (what this lake commit
        # records; until now its pending snapshot read the base's layers as the base recorded)
        tx.layer_rules = schema.LAYER_RULES
        read_written_layers(con, tx)
        tested = None if reordered else moved
        # a step's test reads its environment's floors: a narrowed environment's kernels are
        # tested again alone unless they moved
        narrowed = {
            e: kernels
            for e, kernels in cells.operations.items()
            if tested is not None and floors is not None and e not in floors
        }
        seen: set[str] = set()
        for number, group in enumerate(groups(con, tested, STEP_TEST_RUNS, False, narrowed)):
            # a whole table's first group replaces it, the others add to it
            tests = write_step_tests(
                con,
                tx,
                group,
                whole=tested is None,
                first=number == 0,
                narrowed=narrowed_of(group, narrowed, seen),
            )
            for name, written_rows in tests.items():
                rows[name] = rows.get(name, 0) + written_rows
        rows.update(write_whole(con, tx, moved, narrowed))
    finally:
        con.close()
    count = None if touched is None else len(touched)
    return LayerReport(count, rows, time.perf_counter() - started)


@dataclass
class _Written:
    """Where _fill writes a layer's rows: into `tx`'s `table`, as every environment's
    (`everything`) or as the groups' environments' partitions; in those of `narrowed`
    (environment: the kernels recomputed), with the rows the lake commit before stored for the
    environment's other kernels."""

    tx: Transaction
    table: str
    everything: bool
    narrowed: dict[str, list[str]]


def _read_instead(
    con: duckdb.DuckDBPyConnection, macro: str, table: str, kernel: str | None
) -> None:
    """Make the table macro `macro(environment_filter, kernel_filter)` read this update's
    temporary `table` (the touched environments' rows it computed), filtered by its `kernel`
    column where it has one: the replicate pairs and the spread read the same series, which
    read the run code, and each computed them again (0.2-0.3 s an environment at 100k runs).
    A TEMP macro, found before the catalog's."""
    kernels = f"AND (kernel_filter IS NULL OR list_contains(kernel_filter, {kernel}))"
    con.execute(
        f"CREATE OR REPLACE TEMP MACRO {macro}(environment_filter, kernel_filter := NULL) AS "
        f"TABLE SELECT * FROM temp.{table} WHERE (environment_filter IS NULL "
        f"OR list_contains(environment_filter, environment_digest)) {kernels if kernel else ''}"
    ).fetchall()  # names from this module's constants


def _fill(
    con: duckdb.DuckDBPyConnection,
    fresh: str | None,
    source: str,
    parts: list[Group],
    written: _Written | None = None,
) -> int:
    """The temporary table `fresh` (None: none) of the rows of `source` (a table macro call over
    $environments and $kernels) for every group of runs, one group at a time; with `written`,
    each group's rows are also written into its environments' partitions as they are computed:
    written from the whole table at the end, the 5M-run lake's 24.5M pairs were sorted past the
    memory limit (212 s). A group's kernels are a range of the kernel order, so where a layer's
    order starts with the kernel (the pairs, the points) a partition's files keep it. A group
    of a narrowed environment is written as kindex_olap.layers.partitions.write_narrowed says,
    or, in a layer keyed by run (BY_RUN), into the partition with its first group's rows and
    the rows stored for the environment's other kernels, which `fresh` gets too. Returns the
    rows computed."""
    rows = 0
    seen: set[str] = set()
    for number, group in enumerate(parts):
        params = {"environments": group.environments, "kernels": group.kernels}
        start = f"CREATE TEMP TABLE {fresh} AS" if number == 0 else f"INSERT INTO {fresh}"
        if written is None:
            con.execute(f"{start} SELECT * FROM {source}", params).fetchall()  # fixed names
            continue
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE kindex_group AS SELECT * FROM {source}", params
        ).fetchall()  # fixed names
        rows += _count(con, "kindex_group")
        narrowed = narrowed_of(group, written.narrowed, seen)
        held = "kindex_group"
        if fresh is not None and narrowed is not None and narrowed.first:
            sql, kept_params = with_kept_rows(
                con, written.tx, written.table, held, narrowed.environment, narrowed.kernels
            )  # the rows of the environment's other kernels too, for the layers after it (and
            # the partition's file, where the layer has no kernel column)
            con.execute(f"CREATE TEMP TABLE kindex_kept AS {sql}", kept_params).fetchall()
            held = "kindex_kept"
        if narrowed is not None and written.table in BY_RUN:  # no kernel column: held whole
            partitions: set[str | None] = {narrowed.environment}
            write_relation(written.tx, written.table, con.table(held), partitions=partitions)
        elif narrowed is not None:
            write_narrowed(
                con, written.tx, written.table, ("SELECT * FROM kindex_group", {}), narrowed
            )
        else:
            write_environments(
                written.tx,
                written.table,
                con.table(held),
                group.environments,
                written.everything and number == 0,
            )
        if fresh is not None:
            by_name = "" if number == 0 else " BY NAME"  # the kept rows' columns by name
            con.execute(f"{start}{by_name} SELECT * FROM {held}").fetchall()  # fixed names
        con.execute("DROP TABLE IF EXISTS kindex_kept").fetchall()
        con.execute("DROP TABLE kindex_group").fetchall()
    return rows


def _floors_moved(con: duckdb.DuckDBPyConnection) -> set[str] | None:
    """The environments whose floors the fresh noise model changed (a pooled floor moves with
    every environment's pairs); None: every one (one without a digest)."""
    rows = con.execute(
        f"SELECT DISTINCT environment_digest FROM ("
        f"(SELECT * FROM temp.fresh_{NOISE_MODEL} EXCEPT SELECT * FROM {NOISE_MODEL}) "
        f"UNION ALL (SELECT * FROM {NOISE_MODEL} EXCEPT SELECT * FROM temp.fresh_{NOISE_MODEL}))"
    ).fetchall()  # names from this module's constants
    moved = {row[0] for row in rows}
    if None in moved:
        return None
    return {str(digest) for digest in moved}


def _every_environment(con: duckdb.DuckDBPyConnection, touched: list[str]) -> bool:
    """Whether `touched` names every environment of the lake commit being made."""
    sql = "SELECT count(DISTINCT environment_digest) FROM run_rows WHERE environment_digest IS NOT NULL"
    return len(set(touched)) >= int(con.execute(sql).fetchall()[0][0])


def _read_after(con: duckdb.DuckDBPyConnection, view: str, table: str, everything: bool) -> None:
    """Point `view` at the lake commit's rows of `table`: the fresh ones of the touched
    environments and the stored ones of the others (the layers after it and the noise model
    read it instead of computing it over the whole lake)."""
    stored = (
        ""
        if everything
        else f"SELECT * FROM {table} WHERE environment_digest NOT IN "
        "(SELECT environment_digest FROM temp.touched) UNION ALL "
    )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {view} AS {stored}SELECT * FROM temp.fresh_{table}"
    ).fetchall()


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])


def build_missing(lake: Lake, lock_timeout: float = 600.0) -> LayerReport | None:
    """Give a lake written before the layers, or whose layers other rules computed
    (schema.LAYER_RULES), today's layers, as a lake commit of their own (`kindex migrate`);
    None when its newest lake commit has them already."""
    with transaction(lake, "layers", timeout=lock_timeout) as tx:
        if tx.base.has_layers or tx.base.id == 0:
            return None
        report = update(tx, full=True)
        tx.commit({"operation": "layers", "rows": report.rows})
        return report
