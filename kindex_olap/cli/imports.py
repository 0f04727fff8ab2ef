"""`kindex import ...` commands: turn external benchmark sources into bundles, then ingest.

Heavy modules (the importer, the lake) load inside the commands so `kindex --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kindex_olap.cli.group import KindexGroup

import_app = typer.Typer(
    help="Import external benchmark results as KernelIndex bundles (then ingest them).",
    no_args_is_help=True,
    cls=KindexGroup,  # also the edge when the sub-app is invoked on its own (tests do)
)

DEFAULT_RAW = Path("data/raw/liger")
NoIngestOption = Annotated[
    bool, typer.Option("--no-ingest", help="Only write bundles; do not ingest.")
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar (there is none when piped).")
]
TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        help="Seconds that every download of this import may take in all (URLs only).",
        min=1,
    ),
]
ImportLakeOption = Annotated[
    Path | None,
    typer.Option(
        "--lake", help="Lake to ingest into (default: $KINDEX_LAKE, else ./data/parquet)."
    ),
]


@import_app.callback()
def _group() -> None:
    """Import external benchmark results as KernelIndex bundles (then ingest them)."""


@import_app.command("liger")
def liger(
    csv_path_or_url: Annotated[
        str | None,
        typer.Argument(
            metavar="CSV_PATH_OR_URL",
            help="Liger's all_benchmark_data*.csv (file, folder or http(s) URL); "
            "default: the CSVs in the newest liger-kernel sdist on the package index.",
        ),
    ] = None,
    release: Annotated[
        str | None, typer.Option("--release", help="Take this liger-kernel release's CSVs.")
    ] = None,
    all_releases: Annotated[
        bool, typer.Option("--all-releases", help="Import the union of every release's CSVs.")
    ] = False,
    raw: Annotated[Path, typer.Option("--raw", help="Folder for the bundles.")] = DEFAULT_RAW,
    no_ingest: NoIngestOption = False,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write each skipped row with its reason here.")
    ] = None,
    lake: ImportLakeOption = None,
    quiet: QuietOption = False,
    timeout: TimeoutOption = 300.0,
) -> None:
    """Convert Liger-Kernel benchmark rows into KernelIndex bundles and ingest them."""
    from kindex_olap.cli.progress import ProgressBar
    from kindex_olap.importers.download import deadline
    from kindex_olap.importers.liger.convert import import_liger

    with deadline(timeout), ProgressBar(quiet) as bar:
        result = import_liger(
            csv_path_or_url,
            release=release,
            all_releases=all_releases,
            raw_dir=raw,
            report_path=report,
            on_phase=bar.phase if bar.enabled else None,
        )
        if not no_ingest:
            from kindex_olap.ingestion.pipeline import ingest

            bar.phase("ingesting")
            ingested = ingest([raw], lake, progress=bar.ingest if bar.enabled else None)
    typer.echo(result.summary(), err=True)
    if report is not None:
        typer.echo(f"skipped rows listed in {report}", err=True)
    if not no_ingest:
        typer.echo(f"ingest: {ingested.summary()}", err=True)
    if not no_ingest and ingested.rejected:
        raise typer.Exit(1)


@import_app.command("kernelindex")
def kernelindex(
    export: Annotated[
        str,
        typer.Argument(
            metavar="EXPORT",
            help="A KernelIndex catalog export: .jsonl, .jsonl.zst or .jsonl.gz, path or URL.",
        ),
    ],
    raw: Annotated[
        Path | None,
        typer.Option("--raw", help="Folder for the bundles (default: data/raw/kernelindex/NAME)."),
    ] = None,
    no_ingest: NoIngestOption = False,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Write every verification finding here (JSON Lines)."),
    ] = None,
    lake: ImportLakeOption = None,
    quiet: QuietOption = False,
    timeout: TimeoutOption = 300.0,
) -> None:
    """Import a KernelIndex catalog export: bundles, dimensions and serving runs, verified.

    Example: kindex import kernelindex catalog-2026-08-16-0022af0b.jsonl.zst --report findings.jsonl
    """
    from kindex_olap.cli.progress import ProgressBar
    from kindex_olap.importers.download import deadline
    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    with deadline(timeout), ProgressBar(quiet) as bar:
        result = import_kernelindex(
            export,
            raw_dir=raw,
            ingest=not no_ingest,
            lake=lake,
            report_path=report,
            on_phase=bar.phase if bar.enabled else None,
            progress=bar.ingest if bar.enabled else None,
        )
    typer.echo(result.summary(), err=True)
    if report is not None:
        typer.echo(f"findings listed in {report}", err=True)
