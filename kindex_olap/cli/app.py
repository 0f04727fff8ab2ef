"""The `kindex` command line: parse arguments, call one library function, format the result.

Commands raise; `kindex_olap.cli.edge` turns errors into one line and a documented exit code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kindex_olap.cli.group import KindexGroup
from kindex_olap.cli.options import LakeOption

app = typer.Typer(
    name="kindex",
    help="Analytical queries over GPU-kernel benchmark results (KernelIndex bundles).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=KindexGroup,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"kindex {version('kindex-olap')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print kindex's version and exit."
        ),
    ] = False,
) -> None:
    """Analytical queries over GPU-kernel benchmark results (KernelIndex bundles)."""


def _register_subcommands() -> None:
    from kindex_olap.cli import check as cli_check
    from kindex_olap.cli import doors as cli_doors
    from kindex_olap.cli import lake as cli_lake
    from kindex_olap.cli import query as cli_query
    from kindex_olap.cli import see as cli_see
    from kindex_olap.cli.imports import import_app

    app.add_typer(import_app, name="import")
    cli_query.register(app)
    cli_doors.register(app)
    cli_check.register(app)
    cli_lake.register(app)
    cli_see.register(app)
    __import__("kindex_olap.cli.bench").cli.bench.register(app)


@app.command()
def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Bundle files or folders (default: data/raw).", show_default=False),
    ] = None,
    lake: LakeOption = None,
    verify_digests: Annotated[
        bool, typer.Option(help="Recompute protocol and environment digests and reject mismatches.")
    ] = False,
    lock_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for another writer.")
    ] = 600.0,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar (there is none when piped).")
    ] = False,
    follow_symlinks: Annotated[
        bool, typer.Option(help="Read symbolic links that lead out of an input folder.")
    ] = False,
) -> None:
    """Ingest bundles into the lake, e.g. `kindex ingest data/raw --lake data/parquet`."""
    from kindex_olap.cli.output import printable
    from kindex_olap.cli.progress import ProgressBar
    from kindex_olap.ingestion.pipeline import ingest as run_ingest

    with ProgressBar(quiet) as bar:
        report = run_ingest(
            paths or [Path("data/raw")],
            lake,
            verify_digests=verify_digests,
            progress=bar.ingest if bar.enabled else None,
            on_wait=lambda message: typer.echo(message, err=True),
            lock_timeout=lock_timeout,
            follow_symlinks=follow_symlinks,
        )
    for warning in report.warnings[:10]:
        typer.echo(f"warning: {printable(warning)}", err=True)
    if len(report.warnings) > 10:
        typer.echo(f"... and {len(report.warnings) - 10} more warnings", err=True)
    for reject in report.rejects[:10]:
        where = f"{reject.source_file}:{reject.line}" if reject.line else reject.source_file
        typer.echo(f"rejected {printable(where)}: {printable(reject.reason)}", err=True)
    if report.rejected > 10:
        typer.echo(f"... and {report.rejected - 10} more: see `kindex rejects`", err=True)
    typer.echo(report.summary(), err=True)
    if report.rejected:
        raise typer.Exit(1)


@app.command()
def rejects(
    lake: LakeOption = None,
    limit: Annotated[int, typer.Option(help="Show at most this many.")] = 50,
    text: Annotated[
        bool, typer.Option("--text", help="Also print what was kept of each (up to 64 KiB).")
    ] = False,
) -> None:
    """List documents kept aside by ingest, with file, line and reason: `kindex rejects`."""
    from kindex_olap.cli.output import printable
    from kindex_olap.ingestion.rejects import iter_rejects

    rows = list(iter_rejects(lake))
    for row in rows[:limit]:
        where = f"{row['source_file']}:{row['line']}" if row["line"] else row["source_file"]
        typer.echo(f"{printable(where)}\t{printable(row['reason'])}")
        if text and row["text"]:
            lines = row["text"].splitlines()
            typer.echo("".join(f"    {printable(line)}\n" for line in lines), nl=False)
    typer.echo(f"{len(rows)} rejected document(s)", err=True)


@app.command()
def compact(
    lake: LakeOption = None,
    lock_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for another writer.")
    ] = 600.0,
) -> None:
    """Merge the files of each partition that holds several into one sorted file: `kindex compact`."""
    from kindex_olap.lake.compact import compact as run_compact

    report = run_compact(lake, lock_timeout=lock_timeout)
    typer.echo(report.summary(), err=True)


_register_subcommands()
