"""The `kindex` command line: parse arguments, call one library function, format the result.

Commands raise; `kindex_olap.cli.edge` turns errors into one line and a documented exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kindex_olap.cli.edge import KindexGroup
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Ingest bundles into the lake, e.g. `kindex ingest data/raw --lake data/parquet`."""
    from kindex_olap.ingestion.pipeline import ingest as run_ingest

    with _progress(quiet) as progress:
        report = run_ingest(
            paths or [Path("data/raw")],
            lake,
            verify_digests=verify_digests,
            progress=progress,
            on_wait=lambda message: typer.echo(message, err=True),
            lock_timeout=lock_timeout,
        )
    for reject in report.rejects[:10]:
        where = f"{reject.source_file}:{reject.line}" if reject.line else reject.source_file
        typer.echo(f"rejected {where}: {reject.reason}", err=True)
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
        bool, typer.Option("--text", help="Also print what was kept of each (up to 1 MiB).")
    ] = False,
) -> None:
    """List documents kept aside by ingest, with file, line and reason: `kindex rejects`."""
    from kindex_olap.ingestion.pipeline import iter_rejects

    rows = list(iter_rejects(lake))
    for row in rows[:limit]:
        where = f"{row['source_file']}:{row['line']}" if row["line"] else row["source_file"]
        typer.echo(f"{where}\t{row['reason']}")
        if text and row["text"]:
            typer.echo("".join(f"    {line}\n" for line in row["text"].splitlines()), nl=False)
    typer.echo(f"{len(rows)} rejected document(s)", err=True)


@app.command()
def compact(
    lake: LakeOption = None,
    lock_timeout: Annotated[
        float, typer.Option(help="Seconds to wait for another writer.")
    ] = 600.0,
) -> None:
    """Merge each table's files into one sorted file per partition: `kindex compact`."""
    from kindex_olap.lake.compact import compact as run_compact

    report = run_compact(lake, lock_timeout=lock_timeout)
    typer.echo(report.summary(), err=True)


class _progress:
    """A rich progress bar on stderr for ingests of many files; silent for small ones."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet or not sys.stderr.isatty()
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Any:
        return None if self.quiet else self.update

    def update(self, done: int, total: int, documents: int) -> None:
        if self.bar is None:
            if total < 200:
                return
            from rich.progress import Progress

            self.bar = Progress(transient=True, console=_stderr_console())
            self.bar.start()
            self.task = self.bar.add_task("ingesting", total=total)
        self.bar.update(self.task, completed=done, description=f"{documents} documents")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


_register_subcommands()
