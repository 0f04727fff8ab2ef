"""The lake's vocabulary for the shorthand: its kernels, families, GPUs, providers and axes."""

from __future__ import annotations

from typing import Any

import duckdb

from kindex_olap.query.shorthand import Gpu, Vocabulary


def load_vocabulary(con: duckdb.DuckDBPyConnection) -> Vocabulary:
    """The kernels, families, GPUs, providers and axes the lake holds."""
    kernels = _column(
        con,
        "SELECT DISTINCT kernel FROM (SELECT operation AS kernel FROM workloads "
        "UNION ALL SELECT kernel FROM runs) WHERE kernel IS NOT NULL ORDER BY kernel",
    )
    # a family: operations.family of the workload's OperationSpec, or the workload's family label
    families = con.execute(
        "SELECT family, list(DISTINCT operation ORDER BY operation) FROM ("
        "SELECT o.family, w.operation FROM operations o JOIN workloads w "
        "USING (operation_spec_digest) UNION ALL "
        "SELECT labels['family'], operation FROM workloads) "
        "WHERE family IS NOT NULL AND operation IS NOT NULL GROUP BY family ORDER BY family"
    ).fetchall()
    gpus = con.execute(
        "SELECT DISTINCT environment_digest, coalesce(name, environment_digest), "
        "coalesce(product, ''), form_factor, architecture FROM environments ORDER BY 1"
    ).fetchall()
    providers = _column(
        con,
        "SELECT DISTINCT p FROM (SELECT provider AS p FROM implementations "
        "UNION ALL SELECT provider FROM runs) WHERE p IS NOT NULL ORDER BY p",
    )
    axes = _column(con, "SELECT DISTINCT unnest(map_keys(axes)) AS a FROM workloads ORDER BY a")
    return Vocabulary(
        kernels=tuple(kernels),
        families={f: tuple(ks) for f, ks in families},
        gpus=tuple(Gpu(*row) for row in gpus),
        providers=tuple(providers),
        axes=tuple(axes),
    )


def _column(con: duckdb.DuckDBPyConnection, sql: str) -> list[Any]:
    return [row[0] for row in con.execute(sql).fetchall()]
