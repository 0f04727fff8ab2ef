"""`kindex plot` and `kindex report`: query answers as charts, and the lake as one HTML file.

Plotting libraries load inside these commands only: `kindex query` starts as fast as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kindex_olap.cli.options import (
    AllBranchesOption,
    AllPairsOption,
    ByOption,
    LakeOption,
    VersionOption,
)


def plot(
    text: Annotated[str, typer.Argument(metavar="QUERY", help="e.g. 'speedup jsd b200'.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The chart: .png, .svg or .html.", dir_okay=False)
    ],
    lake: LakeOption = None,
    version: VersionOption = None,
    all_pairs: AllPairsOption = False,
    by: ByOption = "version",
    all_branches: AllBranchesOption = False,
) -> None:
    """Chart the rows of `kindex query QUERY`: `kindex plot "speedup jsd b200" --out jsd.png`.

    speedup: speedup against the varying workload axis, a line per pass (and pair), the band
    of the interval (p20/p80 widened by run-to-run noise), a panel per GPU; latency, memory:
    value per implementation against shape; summary: a kernel x GPU heatmap of geometric-mean
    speedups per pass, one per pair and metric; history: latency and speedup against version
    (or run date), flagged steps marked.
    PNG and SVG render offline; HTML inlines its JavaScript (opens with no network).
    """
    from kindex_olap.doors.plot import query_chart
    from kindex_olap.doors.render import write_chart
    from kindex_olap.query.compile import Options

    options = Options(version=version, all_pairs=all_pairs, by=by, all_branches=all_branches)
    chart = query_chart(text, lake, options)
    write_chart(chart.spec, out)
    for note in chart.notes:
        typer.echo(note, err=True)
    typer.echo(f"wrote {out}", err=True)


def report(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The HTML file to write.", dir_okay=False)
    ],
    text: Annotated[
        str | None,
        typer.Argument(metavar="[QUERY]", help="Filters, e.g. 'jsd b200' (default: everything)."),
    ] = None,
    lake: LakeOption = None,
) -> None:
    """Write one self-contained HTML report: `kindex report --out report.html [QUERY]`.

    What the lake holds, the summary heatmap, then per kernel and GPU its speedup and latency
    charts and a sortable table of the rows. Opens from disk with no network.
    """
    from kindex_olap.doors.report import write_report

    summary = write_report(out, text, lake)
    typer.echo(summary, err=True)


def register(app: typer.Typer) -> None:
    """Add `plot` and `report` to the kindex app."""
    app.command("plot")(plot)
    app.command("report")(report)
