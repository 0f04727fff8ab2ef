"""The lake's vocabulary for the shorthand: its kernels, families, GPUs, providers and axes.

Reading it takes five queries, 40-60 ms of a cold `kindex query`; it depends only on the data
files of the tables it reads, which a lake commit never changes (a new commit lists new files).
So it is kept in kindex's cache folder (~/.cache/kindex/vocabulary), named by a digest of those
file lists, and read from there by the next process that reads the same lake commit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import duckdb

from kindex_olap.cache import cache_folder, prune
from kindex_olap.query.kept import kept
from kindex_olap.query.shorthand import Gpu, Vocabulary
from kindex_olap.query.variables import variable

# the tables the vocabulary reads (their *_files variables: kindex_olap.lake.tables.set_files)
_READS = ("runs", "workloads", "operations", "environments", "implementations")
KEEP = 64  # vocabularies kept (one per lake commit read)


def load_vocabulary(con: duckdb.DuckDBPyConnection) -> Vocabulary:
    """The kernels, families, GPUs, providers and axes of the lake commit `con` reads, from the
    cache when a process read that lake commit before."""
    files = [variable(con, f"{table}_files") for table in _READS]
    if any(listed is None for listed in files):  # a connection without kindex's variables
        return read_vocabulary(con)
    digest = hashlib.sha256(json.dumps(files).encode()).hexdigest()[:32]
    # held by this process once read (the file's read and decode: 1-3 ms of every check)
    return kept("vocabulary", (digest,), lambda: _cached(con, digest))


def _cached(con: duckdb.DuckDBPyConnection, digest: str) -> Vocabulary:
    """The vocabulary the cache file of `digest` holds, else read from the lake and stored."""
    folder = cache_folder() / "vocabulary"
    path = folder / f"{digest}.json"
    try:
        return _decoded(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    vocabulary = read_vocabulary(con)
    from kindex_olap.atomic import write_atomic  # only on a miss: not on every cold start

    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(dataclasses.asdict(vocabulary)).encode(), durable=False)
        prune(folder, "*.json", KEEP)
    except OSError:
        pass  # no cache: the next process reads the lake again
    return vocabulary


def _decoded(stored: dict[str, Any]) -> Vocabulary:
    return Vocabulary(
        kernels=tuple(stored["kernels"]),
        families={family: tuple(kernels) for family, kernels in stored["families"].items()},
        gpus=tuple(Gpu(**gpu) for gpu in stored["gpus"]),
        providers=tuple(stored["providers"]),
        axes=tuple(stored["axes"]),
    )


def read_vocabulary(con: duckdb.DuckDBPyConnection) -> Vocabulary:
    """The kernels, families, GPUs, providers and axes the lake holds, read from its tables."""
    kernels = _column(
        con,
        "SELECT DISTINCT kernel FROM (SELECT operation AS kernel FROM workloads "
        "UNION ALL SELECT kernel FROM run_rows) WHERE kernel IS NOT NULL ORDER BY kernel",
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
        "UNION ALL SELECT provider FROM run_rows) WHERE p IS NOT NULL ORDER BY p",
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
