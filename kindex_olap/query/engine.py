"""DuckDB connections with kindex's views defined over a lake commit (the newest, or --as-of).

Views read their Parquet files through DuckDB variables (`<table>_files`) set from the lake
commit's Delta file lists (lake.store: a cache keyed by runs' newest log entry, else delta-rs),
so no path is ever pasted into SQL in a live connection. For a persisted database or the DuckDB
CLI, `init_sql()` renders the same views with quoted literal paths instead.

This module must not import typer, rich, polars or pyarrow (tests/test_import_hygiene).
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from kindex_olap import duck, schema
from kindex_olap.errors import QueryError, from_duckdb
from kindex_olap.lake.store import LAYERS, TABLES, Lake, Snapshot, resolve_lake
from kindex_olap.lake.tables import file_variable, scan_sql, set_files, stored_view
from kindex_olap.query import catalog
from kindex_olap.query.variables import forget, variable
from kindex_olap.schema import column_types
from kindex_olap.sqlfiles import read_sql, statements

VIEWS_FILE = "views/views.sql"
# run after VIEWS_FILE when the lake commit recorded its layers (kindex_olap.layers)
LAYER_VIEWS_FILE = "views/layers.sql"
_VARIABLE = re.compile(r"getvariable\('([a-z_]+)_files'\)")


def quote_literal(value: str) -> str:
    """A SQL string literal for `value`: the one place kindex quotes a value into SQL text."""
    if "\x00" in value:
        raise QueryError("a NUL character cannot appear in a SQL literal")
    return "'" + value.replace("'", "''") + "'"


def quote_identifier(name: str) -> str:
    """A quoted SQL identifier for `name`: the one place kindex quotes a name into SQL text."""
    if "\x00" in name:
        raise QueryError("a NUL character cannot appear in a SQL identifier")
    return '"' + name.replace('"', '""') + '"'


def _list_literal(values: list[str]) -> str:
    return "[" + ", ".join(quote_literal(v) for v in values) + "]"


def snapshot_of(lake: str | os.PathLike[str] | None, as_of: str | None = None) -> Snapshot:
    """The lake commit to read (the newest, or the one --as-of names) of the lake chosen by
    --lake / $KINDEX_LAKE / ./data/parquet."""
    root, _ = resolve_lake(lake)
    return Lake(root).snapshot(as_of)


def _table_view(table: str, snapshot: Snapshot) -> str:
    if table in LAYERS and not snapshot.has_layers:
        # a lake commit written before the layers: no files (its empty files may not exist
        # either), and the views compute the layers' rows live instead
        columns = ", ".join(
            f"CAST(NULL AS {kind}) AS {name}" for name, kind in column_types()[table]
        )
        return f"CREATE OR REPLACE VIEW {table} AS\nSELECT {columns} LIMIT 0"
    variable = f"getvariable('{file_variable(table)}')"
    return f"CREATE OR REPLACE VIEW {stored_view(table)} AS\n{scan_sql(table, variable)}"


def table_views(snapshot: Snapshot) -> str:
    """The views of the lake's tables over their `<table>_files` variables."""
    return "".join(f"{_table_view(table, snapshot)};\n\n" for table in TABLES)


def define_views(
    con: duckdb.DuckDBPyConnection, snapshot: Snapshot, live: bool = False, lean: bool = False
) -> None:
    """Set the *_files variables from `snapshot`, and give `con` the tables' views and every
    view of sql/views/views.sql; where the lake commit recorded its layers (and not `live`), the
    noise model's views read them (sql/views/layers.sql) instead of computing them. The objects
    come from kindex's catalog file (query/catalog.py), else are created in memory."""
    files = {table: snapshot.files(table) for table in TABLES}
    set_files(con, files)
    tables = [_table_view(table, snapshot) for table in TABLES]

    def every() -> list[str]:
        return tables + view_statements(snapshot, live, lean)

    # what decides the statements: the tables' views, the SQL files, which of them apply
    layers = snapshot.has_layers and not live
    sources = [*tables, read_sql(VIEWS_FILE), read_sql(LAYER_VIEWS_FILE), f"{layers} {lean}"]
    if not catalog.attach(con, sources, every, lambda made: set_files(made, files)):
        for statement in every():
            con.execute(statement).fetchall()
    con.execute("SET VARIABLE kindex_layers = ?", [snapshot.has_layers and not live]).fetchall()
    con.execute("SET VARIABLE kindex_layers_note = ?", [None if live else layers_note(snapshot)])
    forget(con)


def read_layers(con: duckdb.DuckDBPyConnection, snapshot: Snapshot) -> None:
    """Point a connection whose views were defined live over `snapshot`'s lake commit at the
    layers `snapshot` holds: the layer tables' views over their files, then each layer's view
    or macro in place of the live one (sql/views/layers.sql), as temporary objects (found
    before the catalog's). What define_views does for a reader, for the lake commit being
    written (kindex_olap.layers.summary)."""
    set_files(con, {table: snapshot.files(table) for table in LAYERS})
    for table in LAYERS:
        con.execute(temporary(_table_view(table, snapshot))).fetchall()
    for statement in statements(LAYER_VIEWS_FILE):
        con.execute(temporary(statement)).fetchall()
    con.execute("SET VARIABLE kindex_layers = true").fetchall()
    forget(con)


def temporary(statement: str) -> str:
    """A `CREATE OR REPLACE VIEW|MACRO` statement of kindex's SQL as a TEMP one: a connection's
    own objects, which its queries (and the catalog's macros) find before the catalog's."""
    for kind in ("VIEW ", "MACRO "):
        if statement.startswith(f"CREATE OR REPLACE {kind}"):
            return f"CREATE OR REPLACE TEMP {kind}" + statement.removeprefix(
                f"CREATE OR REPLACE {kind}"
            )
    raise ValueError(f"not a CREATE OR REPLACE VIEW or MACRO statement: {statement[:60]!r}")


def view_statements(snapshot: Snapshot, live: bool = False, lean: bool = False) -> list[str]:
    """The statements that define the views over `snapshot` (its layers' views included).

    lean: only what the verbs' table macros read. Creating a view binds its whole query (each
    Parquet file's footer, every macro below it): over half of a cold `kindex query` when every
    view of views.sql was created for one question (issue 21). The macros are kept, and the
    views they read; the views a person queries (speedups, latency, ...) are left out.
    """
    views = statements(VIEWS_FILE)
    if snapshot.has_layers and not live:  # each layer's view or macro in place of the live one
        layers = {_defined(statement): statement for statement in statements(LAYER_VIEWS_FILE)}
        views = [layers.get(_defined(statement), statement) for statement in views]
    if lean:
        read = _views_macros_read()
        views = [
            statement
            for statement in views
            if not statement.startswith(_CREATE_VIEW) or _defined(statement) in read
        ]
    return views


_CREATE_VIEW = "CREATE OR REPLACE VIEW "
_DEFINED = re.compile(r"CREATE OR REPLACE (?:VIEW|MACRO) (\w+)")
_STRING = re.compile(r"'[^']*'")
_WORD = re.compile(r"\b[a-z_]+\b")


def _defined(statement: str) -> str | None:
    match = _DEFINED.match(statement)
    return match.group(1) if match else None


@cache
def _views_macros_read() -> frozenset[str]:
    """The views of views.sql that a table macro reads, directly or through another view."""
    bodies = {_defined(s): _STRING.sub("", s.split(" AS", 1)[-1]) for s in statements(VIEWS_FILE)}
    views = {_defined(s) for s in statements(VIEWS_FILE) if s.startswith(_CREATE_VIEW)}
    read = {w for name, body in bodies.items() if name not in views for w in _WORD.findall(body)}
    read &= views
    while more := {w for v in read for w in _WORD.findall(bodies[v])} & views - read:
        read |= more
    return frozenset(r for r in read if r is not None)


def layers_note(snapshot: Snapshot) -> str | None:
    """Why a lake commit is answered from its runs instead of its stored layers (the same
    answers, slower), and how to store them; None when it has them or holds nothing."""
    if not snapshot.id or snapshot.has_layers:
        return None
    if any(table in snapshot.versions for table in LAYERS):
        why = (
            f"stored its verdicts by older rules ({snapshot.layer_rules}, not {schema.LAYER_RULES})"
        )
    else:
        why = "stored no verdicts (an older kindex wrote it)"
    return (
        f"note: lake commit {snapshot.id} {why}: answered from the runs, slower; "
        f"`kindex migrate --lake {snapshot.lake}` stores them"
    )


def stale_layers(con: duckdb.DuckDBPyConnection) -> list[str]:
    """layers_note of the lake commit `con` reads (set by define_views), as a diagnostic."""
    note = variable(con, "kindex_layers_note")
    return [str(note)] if note else []


def reads_layers(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con`'s views read stored layers (define_views)."""
    return bool(variable(con, "kindex_layers"))


def lock_down(con: duckdb.DuckDBPyConnection, lake_root: Path) -> None:
    """Forbid file access outside the lake and any later change of that setting.

    Run after the views exist: they keep reading the lake's files, while read_csv('/etc/...'),
    ATTACH, INSTALL and LOAD fail. COPY into the lake itself is still possible at this level;
    `kindex sql` also refuses every statement that is not a query (see query.run_sql).
    """
    con.execute("SET allowed_directories = ?", [[str(lake_root) + os.sep]]).fetchall()
    con.execute("SET enable_external_access = false").fetchall()
    con.execute("SET autoinstall_known_extensions = false").fetchall()
    con.execute("SET autoload_known_extensions = false").fetchall()
    con.execute("SET lock_configuration = true").fetchall()


def connect(
    lake: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = True,
    as_of: str | None = None,
    temp_directory: str | None = None,
    live: bool = False,
    lean: bool = False,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with all views over a lake commit (the newest, or the one
    `as_of` names: a lake commit number or a timestamp), spilling to `temp_directory` if given.

    read_only=True also locks the connection down: no file access outside the lake, no
    extensions, no configuration changes. live=True computes the noise model's views from the
    runs even where the lake commit stored them (the layers' tests compare the two). lean=True
    defines only what the verbs read (view_statements): `kindex query` and `kindex check`.
    """
    snapshot = snapshot_of(lake, as_of)
    config: dict[str, Any] = {"temp_directory": temp_directory} if temp_directory else {}
    con = duck.connect(config=config)
    try:
        # Lake files never change once written (a new commit writes new files), so their
        # Parquet footers can be cached: every view reference re-binds read_parquet, and at
        # 1M runs the footers cost about half of a warm filtered speedup (docs/performance.md).
        con.execute("SET parquet_metadata_cache = true").fetchall()
        define_views(con, snapshot, live, lean)
        if read_only:
            lock_down(con, snapshot.lake)
    except duckdb.Error as e:
        con.close()
        raise from_duckdb(e, "cannot open the lake's views") from e
    return con


def init_sql(
    lake: str | os.PathLike[str] | None = None,
    literal_paths: bool = True,
    as_of: str | None = None,
) -> str:
    """The view definitions as one SQL script for the DuckDB CLI or a persisted .duckdb file.

    literal_paths=True writes each table's file list as a quoted literal into the views (they
    survive reopening the file); False keeps getvariable() and prepends SET VARIABLE statements.
    """
    return render_init_sql(snapshot_of(lake, as_of), literal_paths)


def render_init_sql(snapshot: Snapshot, literal_paths: bool = True) -> str:
    """init_sql() for a given lake commit."""
    body = table_views(snapshot) + read_sql(VIEWS_FILE)
    if snapshot.has_layers:
        body += "\n" + read_sql(LAYER_VIEWS_FILE)
    if literal_paths:
        return _VARIABLE.sub(lambda m: _list_literal(snapshot.files(m.group(1))), body)
    sets = [
        f"SET VARIABLE {file_variable(t)} = {_list_literal(snapshot.files(t))};" for t in TABLES
    ]
    return "\n".join(sets) + "\n\n" + body
