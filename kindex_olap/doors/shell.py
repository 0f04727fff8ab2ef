"""The analyst's doors into the lake: the DuckDB shell and a persisted DuckDB database file.

`run_shell` starts the real DuckDB command-line shell (the `duckdb-cli` package) with every view
defined through an init script; `write_database` writes a `.duckdb` file whose views name the
lake's files as quoted literals (DuckDB variables do not survive reopening a file), or, with
`materialize=True`, hold the tables themselves.

Version agreement: the duckdb 2.x Python package writes storage version 69 by default, which
duckdb-cli 1.5.x refuses ("can only read versions between 64 and 68"). Files are therefore
written with `CLI_STORAGE_VERSION`, the oldest CLI release pyproject.toml accepts.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from kindex_olap.atomic import atomic_path
from kindex_olap.errors import ConfigError, from_duckdb
from kindex_olap.lake.store import TABLES, Snapshot
from kindex_olap.lake.tables import scan_sql, stored_view
from kindex_olap.query.engine import (
    VIEWS_FILE,
    quote_identifier,
    render_init_sql,
    snapshot_of,
)
from kindex_olap.sqlfiles import read_sql, statements

# Keep in step with the duckdb-cli lower bound in pyproject.toml: the CLI reads this and newer.
CLI_STORAGE_VERSION = "v1.5.0"
CLI_INSTALL_HINT = (
    "install it into kindex's environment with `pip install 'duckdb-cli>=1.5'` "
    "(or see https://duckdb.org/docs/installation); `kindex shell --sql-file > kindex.sql` "
    "writes the view definitions for any DuckDB client (`.read kindex.sql`)"
)
_VIEW_NAME = re.compile(r"^CREATE OR REPLACE VIEW (\w+)", re.MULTILINE)


def view_names() -> list[str]:
    """The views: one per lake table, then those of sql/views/views.sql, in definition order
    (`runs` is the runs table with its GPU model; run_rows, the table as stored, is left out:
    kindex's views read it)."""
    views = _VIEW_NAME.findall(read_sql(VIEWS_FILE))
    return [*TABLES, *(view for view in views if view not in TABLES)]


def banner(snapshot: Snapshot) -> str:
    """A short greeting for the shell: the lake, its commit and the views defined over it."""
    return (
        f"kindex: lake {snapshot.lake} (lake commit {snapshot.id})\n"
        f"views: {', '.join(view_names())}\n"
        "try: SELECT * FROM speedup_summary LIMIT 10;"
    )


def find_cli() -> Path:
    """The `duckdb` executable: beside the running Python first (a venv's bin/), then PATH."""
    beside = Path(sys.executable).parent / "duckdb"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("duckdb")
    if found:
        return Path(found)
    raise ConfigError("the DuckDB command-line shell (duckdb) was not found", hint=CLI_INSTALL_HINT)


def run_shell(snapshot: Snapshot, cli_args: Sequence[str] = ()) -> int:
    """Run the DuckDB shell with kindex's views over a lake commit; return its exit status.

    The shell runs as a child rather than replacing this process, so that the temporary init
    file is removed afterwards. Ctrl-C belongs to the shell (it cancels a query there).

        run_shell(snapshot_of("data/parquet"), ["-csv", "-c", "SELECT count(*) FROM runs"])
    """
    cli = find_cli()
    script = render_init_sql(snapshot)
    with _temporary_text(script, suffix=".sql") as init_file, _sigint_ignored():
        return subprocess.run([str(cli), "-init", str(init_file), *cli_args]).returncode


@contextlib.contextmanager
def _temporary_text(text: str, suffix: str) -> Iterator[Path]:
    handle, name = tempfile.mkstemp(prefix="kindex-", suffix=suffix)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        yield Path(name)
    finally:
        os.unlink(name)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# -- database files ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DatabaseReport:
    """What `write_database` wrote."""

    path: Path
    lake: Path
    snapshot: int
    materialized: bool
    views: list[str]
    size: int

    def summary(self) -> str:
        kind = "tables and views" if self.materialized else "views over the lake"
        return (
            f"wrote {self.path} ({self.size / 1e6:.1f} MB): {kind} of {self.lake} "
            f"lake commit {self.snapshot}, storage {CLI_STORAGE_VERSION}; open it with "
            f"`duckdb {self.path}`"
        )


def write_database(
    path: str | os.PathLike[str],
    lake: str | os.PathLike[str] | None = None,
    *,
    materialize: bool = False,
    force: bool = False,
    as_of: str | None = None,
) -> DatabaseReport:
    """Write a DuckDB database file with kindex's views, readable by duckdb-cli >= 1.5.

    Without `materialize` the views read the lake's Parquet files by absolute path (the file is
    small and shows the lake commit it was written from, the newest or `as_of`); with it the
    file holds the tables.

        write_database("kindex.duckdb", "data/parquet")
    """
    target = _target(path, force)
    snapshot = snapshot_of(lake, as_of)
    with atomic_path(target) as tmp:
        try:
            _build(tmp, snapshot, materialize)
        finally:
            Path(f"{tmp}.wal").unlink(missing_ok=True)
    return DatabaseReport(
        target, snapshot.lake, snapshot.id, materialize, view_names(), target.stat().st_size
    )


def _target(path: str | os.PathLike[str], force: bool) -> Path:
    target = Path(path).expanduser().resolve()
    if target.is_dir():
        raise ConfigError(f"{target} is a folder", hint="name a file, e.g. kindex.duckdb")
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists", hint="pass --force to replace it")
    if not target.parent.is_dir():
        raise ConfigError(f"folder {target.parent} does not exist", hint="create it first")
    return target


def _build(tmp: Path, snapshot: Snapshot, materialize: bool) -> None:
    config: dict[str, str | bool | int | float | list[str]] = {
        "storage_compatibility_version": CLI_STORAGE_VERSION
    }
    con = duckdb.connect(str(tmp), config=config)
    try:
        if materialize:
            _materialize(con, snapshot)
        else:
            con.execute(render_init_sql(snapshot))
        con.execute("CHECKPOINT")
    except duckdb.Error as e:
        raise from_duckdb(e, "cannot write the database file") from e
    finally:
        con.close()


def _materialize(con: duckdb.DuckDBPyConnection, snapshot: Snapshot) -> None:
    """Copy every lake table in, then define the views that derive from them."""
    for table in TABLES:
        files = snapshot.files(table)
        if not snapshot.tables.get(table) and not Path(files[0]).is_file():
            continue  # a table newer than this lake, which has never held it
        sql = f"CREATE TABLE {quote_identifier(stored_view(table))} AS {scan_sql(table, '?')}"
        con.execute(sql, [files])
    for statement in statements(VIEWS_FILE):
        con.execute(statement)
