"""`kindex check`: a CI gate that fails when the newest runs regressed.

Exit codes: 0 no regression, 1 at least one regression (the table or Markdown lists them), and
the usual error codes of kindex_olap.cli.edge.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kindex_olap.cli.options import LakeOption
from kindex_olap.cli.output import Format

REGRESSED = 1


def check(
    filters: Annotated[
        list[str] | None,
        typer.Argument(help="Shorthand filters, as after a verb of `kindex query` (jsd b200).."),
    ] = None,
    lake: LakeOption = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Test steps into versions after this one, or runs after this ISO date "
            "(default: the steps into the newest version).",
        ),
    ] = None,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format", "-f", help="markdown for a pull-request comment.", case_sensitive=False
        ),
    ] = Format.table,
    all_branches: Annotated[
        bool, typer.Option("--all-branches", help="Also runs first seen off the main branch.")
    ] = False,
    threshold: Annotated[
        float, typer.Option("--threshold", help="Smallest change flagged (0.05: 5 %).")
    ] = 0.05,
) -> None:
    """Fail (exit 1) when a step into the newest version is a regression: `kindex check`.

    Each implementation's latency and speedup against its cell's baseline are compared with
    the version before; the multiple-comparison correction covers every series of the lake
    whatever the filters, so `check jsd` and `check` agree about the same step
    (docs/history.md).
    """
    from kindex_olap.cli.output import write
    from kindex_olap.query.compile import Options, run_check

    options = Options(all_branches=all_branches, threshold=threshold)
    result = run_check(" ".join(filters or []), lake, since, options)
    if result.rows:
        write(result.columns, result.rows, fmt, sys.stdout)
    for note in result.diagnostics:
        typer.echo(note, err=True)
    if result.rows:
        typer.echo(f"{len(result.rows)} regression(s)", err=True)
        raise typer.Exit(REGRESSED)
    typer.echo("no regression", err=True)


def register(app: typer.Typer) -> None:
    """Add `check` to the kindex app."""
    app.command("check")(check)
