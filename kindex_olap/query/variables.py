"""The DuckDB variables an answer reads from Python, read once per answer.

define_views sets a connection's variables (each table's `<table>_files`, whether it reads
stored layers, ...) and an answer reads several of them from Python: which files to read, the
keys of what a process keeps per lake commit (query/kept.py), the vocabulary's. Each read is a
DuckDB statement of about 0.25 ms, and a warm `kindex check` made eight of them (2 of its 12 ms
at 1M runs). Inside `answering(con)` the first read of a name fetches its group (GROUPS) in one
statement and the rest are looked up; kindex setting variables meanwhile drops what was held.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import duckdb

# every variable an answer reads from Python, in groups read together (fixed names: they are
# pasted into one SELECT): the flags every answer reads (kindex_session: a kindex_olap.Lake's
# connection; kindex_significant: what its steps table holds, query/stored_steps.py), and the
# file lists (the vocabulary's, and the layers' that what a process keeps per lake commit is
# keyed by), whose statement costs 0.3 ms more and which only some answers read
GROUPS = (
    ("kindex_layers", "kindex_layers_note", "kindex_session", "kindex_significant"),
    (
        "runs_files",
        "workloads_files",
        "operations_files",
        "environments_files",
        "implementations_files",
        "layer_points_files",
        "layer_step_tests_files",
        "layer_steps_files",
    ),
)
READ = frozenset(name for group in GROUPS for name in group)
_HELD: ContextVar[tuple[duckdb.DuckDBPyConnection, dict[str, Any]] | None] = ContextVar(
    "kindex_variables", default=None
)


@contextmanager
def answering(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Hold `con`'s variables of READ for one answer, each group read at its first use."""
    token = _HELD.set((con, {}))
    try:
        yield
    finally:
        _HELD.reset(token)


def variable(con: duckdb.DuckDBPyConnection, name: str) -> Any:
    """The value of `con`'s variable `name` (None when unset)."""
    held = _HELD.get()
    if held is None or held[0] is not con or name not in READ:
        return con.execute("SELECT getvariable(?)", [name]).fetchall()[0][0]
    values = held[1]
    if name not in values:
        group = next(g for g in GROUPS if name in g)
        select = "SELECT " + ", ".join(f"getvariable('{n}')" for n in group)  # fixed names
        values.update(zip(group, con.execute(select).fetchall()[0], strict=True))
    return values[name]


def forget(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what is held of `con`'s variables (they are being set)."""
    held = _HELD.get()
    if held is not None and held[0] is con:
        held[1].clear()
