"""`kindex shell`, `kindex db` and `kindex export`: the lake in the DuckDB shell, in a .duckdb
file, and as analyst-ready Parquet. Library code lives in kindex_olap.doors.shell and .export.
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer

from kindex_olap.cli.options import AsOfOption, LakeOption


class FileFormat(enum.StrEnum):
    """--format of `kindex export` (mirrors export.ExportFormat, which loads DuckDB)."""

    parquet = "parquet"
    csv = "csv"


def shell(
    cli_args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[-- DUCKDB_ARGS...]",
            help="Passed on to duckdb after `--`, e.g. -- -csv -c 'SELECT 1'.",
            show_default=False,
        ),
    ] = None,
    lake: LakeOption = None,
    sql_file: Annotated[
        bool,
        typer.Option("--sql-file", help="Print the init SQL (views) for any DuckDB client."),
    ] = False,
    as_of: AsOfOption = None,
) -> None:
    """Open the DuckDB shell with every kindex view defined: `kindex shell --lake data/parquet`.

    Needs the `duckdb` CLI (pip install duckdb-cli). Any other DuckDB client can read the views
    that `kindex shell --sql-file > kindex.sql` writes (`.read kindex.sql`).
    """
    from kindex_olap.doors.shell import banner, find_cli, run_shell
    from kindex_olap.query.engine import render_init_sql, snapshot_of

    snapshot = snapshot_of(lake, as_of)
    if sql_file:
        sys.stdout.write(render_init_sql(snapshot))
        return
    find_cli()  # say how to get the CLI before greeting
    typer.echo(banner(snapshot), err=True)
    code = run_shell(snapshot, cli_args or [])
    raise typer.Exit(code)


def db(
    path: Annotated[Path, typer.Argument(help="The .duckdb file to write.", dir_okay=False)],
    lake: LakeOption = None,
    materialize: Annotated[
        bool, typer.Option("--materialize", help="Store the tables, not views over the lake.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    as_of: AsOfOption = None,
) -> None:
    """Write a DuckDB database with the views: `kindex db kindex.duckdb && duckdb kindex.duckdb`.

    The views name the lake's files by absolute path, so the file opens from any folder on this
    machine; --materialize copies the tables in for a self-contained hand-off. Readable by
    duckdb-cli 1.5 and newer and by the duckdb Python package.
    """
    from kindex_olap.doors.shell import write_database

    report = write_database(path, lake, materialize=materialize, force=force, as_of=as_of)
    typer.echo(report.summary(), err=True)


def export(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder to write into.", file_okay=False)
    ],
    query: Annotated[
        str | None,
        typer.Argument(help="Shorthand selecting what to export, e.g. 'speedup jsd b200'."),
    ] = None,
    lake: LakeOption = None,
    fmt: Annotated[
        FileFormat, typer.Option("--format", "-f", help="File format.", case_sensitive=False)
    ] = FileFormat.parquet,
    as_of: AsOfOption = None,
    overwrite: Annotated[
        bool, typer.Option(help="Write into a folder that holds files, replacing the export's.")
    ] = False,
) -> None:
    """Export speedups and runs with a data dictionary: `kindex export --out exports "speedup jsd"`.

    Writes speedups.parquet, runs.parquet (zstd, sorted by kernel then GPU) and README.md
    describing every column; with a query, only the rows it selects (as `kindex query`).
    """
    from kindex_olap.doors.export import ExportFormat
    from kindex_olap.doors.export import export as run_export

    report = run_export(
        out, query, lake, fmt=ExportFormat(fmt.value), as_of=as_of, overwrite=overwrite
    )
    typer.echo(report.summary(), err=True)


def register(app: typer.Typer) -> None:
    """Add `shell`, `db` and `export` to the kindex app."""
    app.command("shell")(shell)
    app.command("db")(db)
    app.command("export")(export)
