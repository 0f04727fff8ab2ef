"""Writing a layer partitioned by environment one partition at a time."""

from __future__ import annotations

from typing import Any

from kindex_olap.lake.transaction import Transaction, write_relation
from kindex_olap.layers.groups import Group


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
