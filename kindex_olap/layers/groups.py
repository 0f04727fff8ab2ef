"""The groups of runs a layer update computes one at a time, so that its memory is that of a
group and not of the lake.

DuckDB's aggregates of lists and medians (a series' timeline, a point's runs) and its ordered
aggregates hold their input in memory whole, and spill nothing: computed over every run at once,
a full build of 1M runs over 8 GPUs peaked at 6.4 GB RSS, and 5M runs would need about five
times that. Every per-environment layer is exact over a part of the lake that holds whole
environments, or whole kernels of one environment: a series, a cell and a run's code never
cross either. So an update computes the environments of a few runs together, and splits an
environment of many runs by kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import duckdb


@dataclass(frozen=True)
class Group:
    """Runs computed at once: of `environments` (None: every one), and of those `kernels` only
    (None: every kernel of them)."""

    environments: list[str] | None
    kernels: list[str] | None = None


EVERYTHING = Group(None)
T = TypeVar("T")

# A run's kernel as the history and the pairing name it: its workload's operation, else its
# own kernel label (sql/views/views.sql observations_wide_for). The run code and the replicate
# series group by the run's own label: as_run_labels.
_OPERATION = """
SELECT r.environment_digest, coalesce(w.operation, r.kernel) AS kernel, count(*) AS runs
FROM run_rows r
LEFT JOIN (SELECT workload_digest, any_value(operation) AS operation FROM workloads
           GROUP BY workload_digest) w USING (workload_digest)
WHERE ?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], r.environment_digest)
GROUP BY ALL
"""
_LABEL = """
SELECT environment_digest, kernel, count(*) AS runs FROM run_rows
WHERE ?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], environment_digest)
GROUP BY ALL
"""


def groups(
    con: duckdb.DuckDBPyConnection,
    environments: list[str] | None,
    most: int,
    as_run_labels: bool = False,
    narrowed: dict[str, list[str]] | None = None,
) -> list[Group]:
    """The runs of the `environments` (None: every one) of the lake commit `con` reads, in
    groups of at most `most` runs where the kernels allow: environments of fewer runs together
    (digest order), an environment of more split by kernel (a kernel of more alone). Kernels
    by their operation, or by the runs' own labels with `as_run_labels`. [EVERYTHING] where a
    run has no environment; an environment of more runs with a run of no kernel is one group
    (no filter names NULL). An environment of `narrowed` (environment: kernels) gives groups of
    those kernels only, each group of that environment alone (kindex_olap.layers.cells)."""
    narrowed = narrowed or {}
    sql = _LABEL if as_run_labels else _OPERATION
    rows = con.execute(
        f"SELECT * FROM ({sql}) ORDER BY environment_digest NULLS FIRST, kernel NULLS FIRST",
        [environments, environments],
    ).fetchall()
    if environments is None and (not rows or rows[0][0] is None):
        return [EVERYTHING]
    kernels: dict[str, list[tuple[str | None, int]]] = {}
    for digest, kernel, runs in rows:
        kernels.setdefault(str(digest), []).append((kernel, int(runs)))
    small: list[tuple[str, int]] = []
    found: list[Group] = []
    for digest in sorted(kernels) if environments is None else sorted(set(environments)):
        counts = kernels.get(digest, [])
        if digest in narrowed:
            chosen = set(narrowed[digest])
            counts = [(k, n) for k, n in counts if k in chosen]
            found += [Group([digest], [str(k) for k in part]) for part in packed(counts, most)]
            continue
        runs = sum(count for _, count in counts)
        if runs > most and all(kernel is not None for kernel, _ in counts):
            found += [Group([digest], [str(k) for k in part]) for part in packed(counts, most)]
        else:
            small.append((digest, runs))
    found += [Group(part) for part in packed(small, most)]
    return found or [Group([])]


def packed(counts: list[tuple[T, int]], most: int) -> list[list[T]]:
    """The items of `counts` (item, runs) in lists of at most `most` runs, in order (an item
    of more alone)."""
    parts: list[list[T]] = []
    part: list[T] = []
    runs = 0
    for item, count in counts:
        if part and runs + count > most:
            parts.append(part)
            part, runs = [], 0
        part.append(item)
        runs += count
    return [*parts, part] if part else parts
