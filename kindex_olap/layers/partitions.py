"""Writing a layer partitioned by environment one partition at a time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from kindex_olap.lake.tables import partition_folder, scan_sql
from kindex_olap.lake.transaction import Transaction, write_partition, write_relation
from kindex_olap.layers.groups import Group, packed
from kindex_olap.schema import check_table


def environments_of(parts: list[Group]) -> list[str] | None:
    """The environments the groups of runs `parts` hold, in their order; None where one holds
    every environment (a run without one: no partition names it)."""
    if any(group.environments is None for group in parts):
        return None
    return list(dict.fromkeys(e for group in parts for e in group.environments or ()))


def write_environments(
    tx: Transaction,
    table: str,
    relation: Any,
    environments: list[str] | None,
    everything: bool,
) -> None:
    """Write `relation`'s rows of `table` (partitioned by environment) into `tx` as the
    partitions of the `environments`, one at a time, each a filtered, sorted write; with
    `everything` they become the whole table. None: the whole table in one write. A whole
    table's partitions in one write copied its rows twice more into DuckDB (numbering them by
    partition): past the layers' memory limit those copies spilled, and writing the 24.5M
    pairs of 5M runs took 335 s. The layers are computed in groups of environments, so a
    partition's rows lie together and its filter skips the others'."""
    if not environments:
        partitions: set[str | None] | None = None if everything else set(environments or ())
        write_relation(tx, table, relation, replace=everything, partitions=partitions)
        return
    for number, digest in enumerate(environments):
        partition: set[str | None] = {digest}
        write_relation(
            tx, table, relation, replace=everything and number == 0, partitions=partition
        )


def other_kernels(kernels: str) -> str:
    """SQL: whether a layer row's kernel is none of the list the SQL expression `kernels` gives
    (a row of no kernel is none of them)."""
    return f"(kernel IS NULL OR NOT list_contains({kernels}, kernel))"


# The layers keyed by run (no kernel column): a row is a kernel's where its run's label is.
BY_RUN = ("layer_run_code", "layer_replicate_spread")


def with_kept_rows(
    con: duckdb.DuckDBPyConnection,
    tx: Transaction,
    table: str,
    fresh: str,
    environment: str,
    kernels: list[str],
) -> tuple[str, dict[str, Any]]:
    """The rows of the temporary table `fresh` (a layer `table`'s rows, recomputed for some
    `kernels` of one `environment`) in that environment, with the rows the lake commit before
    stored there for its other kernels (kindex_olap.layers.cells): the partition's rows as a
    computation of the whole environment gives them, which the partition's write replaces. As
    SQL and its parameters."""
    check_table(table)
    variable = f"kindex_kept_{table}"  # names from the fixed table list
    con.execute(f"SET VARIABLE {variable} = ?", [tx.base.files(table)]).fetchall()
    if table in BY_RUN:
        other = (
            "run_id NOT IN (SELECT run_id FROM run_rows WHERE environment_digest = $environment "
            "AND list_contains($kernels, kernel))"
        )
    else:
        other = other_kernels("$kernels")
    return (
        f"SELECT * FROM {fresh} WHERE environment_digest = $environment "
        f"UNION ALL BY NAME SELECT * FROM ({scan_sql(table, f'getvariable({variable!r})')}) "
        f"WHERE environment_digest = $environment AND {other}",
        {"environment": environment, "kernels": kernels},
    )


# The rows of a file a narrowed update writes (write_narrowed): a partition's rows of the kernels
# recomputed, and of the other kernels of the files it replaces, are written in files of a range
# of kernels each, so that a later ingest of one kernel rewrites the file of its range, not its
# environment's rows (at 1M runs over 8 GPUs, an environment's pairs are 260k rows: 1.75 s to
# write sorted), nor the rows of every kernel an ingest before it recomputed with it.
RANGE_FILE_ROWS = 40_000


def write_narrowed(
    con: duckdb.DuckDBPyConnection,
    tx: Transaction,
    table: str,
    fresh: tuple[str, dict[str, Any]],
    narrowed: Narrowed,
) -> None:
    """Write the rows of `fresh` (SQL and its parameters: rows of `table`, which has a kernel
    column, that a group of a narrowed environment recomputed) as files of the environment's
    partition in `tx`; with the environment's first group, the stored files of the partition
    that hold a row of its kernels give way to them and to files of their other kernels' rows.
    Both in ranges of RANGE_FILE_ROWS rows; the partition's files that hold none of the kernels
    stay as they are. (The layers keyed by run, BY_RUN, are written whole with with_kept_rows.)"""
    environment, kernels = narrowed.environment, narrowed.kernels
    partition: dict[str, str | None] = {"environment_digest": environment}
    sql, params = fresh
    # held once: the steps' rows are a join over history_source, which each file's write (and
    # each of SPLIT's pieces) evaluated again
    con.execute(f"CREATE OR REPLACE TEMP TABLE kindex_swap_fresh AS {sql}", params).fetchall()
    counts = con.execute("SELECT kernel, count(*) FROM kindex_swap_fresh GROUP BY ALL").fetchall()
    ranges = {kernel: int(count) for kernel, count in counts}
    written = _in_ranges(con, tx, table, "kindex_swap_fresh", ranges, partition, split=True)
    con.execute("DROP TABLE kindex_swap_fresh").fetchall()
    affected: list[str] = []
    if narrowed.first:
        folder = f"/environment_digest={partition_folder(environment)}/"
        stored = [f for f in tx.base.tables.get(table, []) if folder in f]
        variable = f"kindex_swap_{table}"  # names from the fixed table list
        con.execute(f"SET VARIABLE {variable} = ?", [stored]).fetchall()
        counts = (
            con.execute(
                f"SELECT filename, kernel, count(*) FROM read_parquet(getvariable('{variable}'), "
                "filename = true, hive_partitioning = false) GROUP BY ALL",
            ).fetchall()
            if stored
            else []
        )
        recomputed = set(kernels)
        affected = sorted({str(f) for f, kernel, _ in counts if kernel in recomputed})
        kept: dict[str | None, int] = {}
        for name, kernel, count in counts:
            if name in affected and kernel not in recomputed:
                kept[kernel] = kept.get(kernel, 0) + int(count)
        con.execute(f"SET VARIABLE {variable} = ?", [affected]).fetchall()
        scan = f"({scan_sql(table, f'getvariable({variable!r})')})"
        written += _in_ranges(con, tx, table, scan, kept, partition, split=False)
    tx.swap(table, affected, written)


def _in_ranges(
    con: duckdb.DuckDBPyConnection,
    tx: Transaction,
    table: str,
    source: str,
    rows: dict[str | None, int],
    partition: dict[str, str | None],
    split: bool,
) -> list[Path]:
    """The rows of `source` (a table name or a parenthesized SELECT of `table`'s rows of one
    `partition`) as files of kernel ranges of at most RANGE_FILE_ROWS rows (a kernel of more
    alone), by `rows` (kernel: its rows, NULL first), not yet recorded (write_partition)."""
    written: list[Path] = []
    ordered = sorted(rows.items(), key=lambda item: (item[0] is not None, item[0] or ""))
    for part in packed(ordered, RANGE_FILE_ROWS):
        relation = con.sql(
            f"SELECT * FROM {source} WHERE list_contains($kernels, kernel) "
            "OR ($null AND kernel IS NULL)",
            params={"kernels": [k for k in part if k is not None], "null": None in part},
        )
        written += write_partition(tx, table, relation, partition, split=split)
    return written


@dataclass(frozen=True)
class Narrowed:
    """A group of runs of a narrowed environment (kindex_olap.layers.cells): the `environment`,
    every kernel recomputed there (`kernels`: the group's are some of them), and whether the
    group is the environment's `first` (whose write replaces the stored rows of `kernels`)."""

    environment: str
    kernels: list[str]
    first: bool


def narrowed_of(group: Group, narrowed: dict[str, list[str]], seen: set[str]) -> Narrowed | None:
    """`group` as a group of a narrowed environment (of `narrowed`: environment: kernels), or
    None; `seen` holds the environments met before (updated)."""
    if not group.environments or len(group.environments) != 1:
        return None
    environment = group.environments[0]
    if environment not in narrowed:
        return None
    first = environment not in seen
    seen.add(environment)
    return Narrowed(environment, narrowed[environment], first)
