"""`kindex log`, `kindex vacuum` and `kindex migrate`: the lake's history and upkeep.
Library code lives in kindex_olap.lake (store, compact, migrate)."""

from __future__ import annotations

from typing import Annotated

import typer

from kindex_olap.cli.options import LakeOption
from kindex_olap.cli.output import Format
from kindex_olap.cli.query import FormatOption

LockTimeoutOption = Annotated[float, typer.Option(help="Seconds to wait for another writer.")]


def log(lake: LakeOption = None, fmt: FormatOption = Format.table) -> None:
    """List the lake commits (ingests, compactions) with times, counts and table versions.

    `--as-of N` on query, sql, shell, db and export reads the lake as of lake commit N.
    """
    import sys

    from kindex_olap.cli.output import write
    from kindex_olap.lake.store import Lake, resolve_lake

    root, _ = resolve_lake(lake)
    store = Lake(root)
    store.check_format()
    # every table's version only where a line may be long (a terminal table stays narrow)
    wide = fmt in (Format.csv, Format.json)
    columns = ["commit", "time_utc", "operation", "runs_added", "rejected", "runs_version"]
    rows: list[tuple[object, ...]] = []
    for commit in store.log():
        row: tuple[object, ...] = (
            commit.number,
            commit.time.strftime("%Y-%m-%d %H:%M:%S"),
            commit.operation,
            commit.summary.get("runs_added"),
            commit.summary.get("rejected"),
            commit.versions["runs"],
        )
        rows.append((*row, commit.versions) if wide else row)
    write([*columns, "versions"] if wide else columns, rows, fmt, sys.stdout)
    typer.echo(f"{len(rows)} lake commit(s)", err=True)


def vacuum(
    lake: LakeOption = None,
    retain: Annotated[
        int,
        typer.Option(
            "--retain",
            metavar="HOURS",
            help="Keep files that lake commits of the last HOURS hours read (Delta's default).",
        ),
    ] = 168,
    lock_timeout: LockTimeoutOption = 600.0,
) -> None:
    """Delete data files no recent lake commit reads: `kindex vacuum --retain 24`.

    Older lake commits can then no longer be read with --as-of.
    """
    from kindex_olap.errors import ConfigError
    from kindex_olap.lake.compact import vacuum as run_vacuum

    if retain < 0:
        raise ConfigError(f"--retain {retain}: hours cannot be negative")
    report = run_vacuum(lake, retain_hours=retain, lock_timeout=lock_timeout)
    typer.echo(report.summary(), err=True)


def migrate(lake: LakeOption = None, lock_timeout: LockTimeoutOption = 600.0) -> None:
    """Bring a lake written by an older kindex up to date: `kindex migrate --lake data/parquet`.

    Converts kindex's pre-Delta format into Delta tables, and builds the layers (the stored
    noise model and verdicts) of a lake written before them or by older rules (until then it is
    read live, by today's rules, and each answer says so). Answers are the same before and
    after; they come faster after.

    A change of meaning: `gpu` (every view's, and the `runs` view's, new) names the GPU model,
    the product and its form factor (NVIDIA H100 PCIe and NVIDIA H100 80GB HBM3 apart), where
    it named the product. Layers stored before it lack layer_step_tests, so they are read live
    (with the new labels) until this command builds them again (docs/schema.md)."""
    from kindex_olap.cli.progress import ProgressBar
    from kindex_olap.lake.migrate import migrate as run_migrate
    from kindex_olap.lake.store import LEGACY_FORMAT, Lake, resolve_lake
    from kindex_olap.layers.build import build_missing

    root, _ = resolve_lake(lake)
    store = Lake(root)
    if store.format_version() == LEGACY_FORMAT:
        typer.echo(run_migrate(root, lock_timeout=lock_timeout).summary(), err=True)
    with ProgressBar(quiet=False) as bar:  # a minute at 1M runs: a bar on a terminal says why
        bar.phase("computing verdict layers")
        built = build_missing(store, lock_timeout)
    if built is None:
        typer.echo(
            f"{root}: the layers are up to date (lake commit {store.snapshot().id})", err=True
        )
    else:
        # the rows per table made a 230-character line (wrapped at 80 columns)
        rows = sum(built.rows.values())
        typer.echo(
            f"{root}: layers built in {built.seconds:.2f} s ({rows:,} rows in "
            f"{len(built.rows)} tables), lake commit {store.snapshot().id}",
            err=True,
        )


def register(app: typer.Typer) -> None:
    """Add `log`, `vacuum` and `migrate` to the kindex app."""
    app.command("log")(log)
    app.command("vacuum")(vacuum)
    app.command("migrate")(migrate)
