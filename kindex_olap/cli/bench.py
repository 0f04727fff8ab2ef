"""`kindex bench ...`: replicated, interleaved A/B runs on this machine, straight into the lake.

The library is kindex_olap.experiment; this module parses arguments and prints. docs/bench.md
says what is installed where, what is captured, and how to run on a machine without kindex.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kindex_olap.cli.group import KindexGroup
from kindex_olap.cli.options import LakeOption
from kindex_olap.cli.output import Format

bench_app = typer.Typer(
    help="Replicated, interleaved A/B benchmark runs (Liger versions or your own commands), "
    "imported into the lake with labels, and the verdict on what they measured. Each run gets "
    "its own folder under --dir (CSVs, stdout, stderr, env.json: host, Python, torch, triton, "
    "CUDA, every GPU's name, driver and clocks from nvidia-smi); state.json there makes the "
    "experiment resumable across calls. See docs/bench.md.",
    no_args_is_help=True,
    cls=KindexGroup,
)

DirOption = Annotated[
    Path, typer.Option("--dir", help="The experiment folder (plan, state, each run's output).")
]
RoundsOption = Annotated[
    int | None, typer.Option("--rounds", help="Rounds (replicates per variant); default 3.")
]
RepeatOption = Annotated[
    int | None,
    typer.Option(
        "--repeat",
        help="Runs of each job per variant and round; the import keeps the fastest of them per "
        "row as the round's replicate. Default: 1.",
    ),
]
PinOption = Annotated[
    bool | None,
    typer.Option(
        "--pin-cpu/--no-pin-cpu",
        help="Pin each run to the CPU that runs a Python probe fastest just before it, and keep "
        "the probe before and after it in state.json (host-bound timings). Default: off (run), "
        "on (liger).",
    ),
]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="Time limit of one run, s.")]
BudgetOption = Annotated[
    float | None,
    typer.Option("--budget", help="Start no run after this many seconds (resume later)."),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print the plan (and what is done) and exit.")
]
NoImportOption = Annotated[
    bool, typer.Option("--no-import", help="Only run; import later with `kindex bench import`.")
]
FormatOption = Annotated[
    Format, typer.Option("--format", "-f", help="Verdict table format.", case_sensitive=False)
]


@bench_app.callback()
def _group() -> None:
    """Replicated, interleaved A/B benchmark runs, imported into the lake."""


@bench_app.command("run")
def run(
    variant: Annotated[
        list[str] | None,
        typer.Option(
            "--variant",
            help="NAME='command ...' (two or more); NAME becomes the runs' version label. "
            "{out} {round} {variant} {python} in the command are filled in; the command "
            "writes Liger-format CSVs into $KINDEX_BENCH_OUT (its working folder).",
        ),
    ] = None,
    rounds: RoundsOption = None,
    repeat: RepeatOption = None,
    pin_cpu: PinOption = None,
    timeout: TimeoutOption = 600.0,
    folder: DirOption = Path("kindex-bench"),
    budget: BudgetOption = None,
    dry_run: DryRunOption = False,
    no_import: NoImportOption = False,
    lake: LakeOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Run each variant's command per round, interleaved (A B, then B A), then import and judge.

    Example: kindex bench run --variant main='python bench.py' --variant pr='python bench.py
    --fused' --rounds 3 --dir bench-pr42
    """
    from kindex_olap.experiment.plan import generic_plan, settle_plan

    plan = None
    if variant:
        plan = generic_plan(folder, variant, rounds or 3, timeout, 1 if repeat is None else repeat,
                            bool(pin_cpu))  # fmt: skip
    settle_plan(folder, plan)
    _run_and_judge(folder, budget, dry_run, no_import, lake, fmt)


@bench_app.command("import")
def import_(
    folder: Annotated[
        Path,
        typer.Argument(
            help="An experiment folder (from a runner elsewhere).", exists=True, metavar="DIR"
        ),
    ],
    lake: LakeOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Import an experiment folder's runs into the lake and print the verdict.

    Example: kindex bench import h200-run/ --lake data/parquet
    """
    _import_and_judge(folder, lake, fmt)


def _run_and_judge(
    folder: Path,
    budget: float | None,
    dry_run: bool,
    no_import: bool,
    lake: Path | None,
    fmt: Format,
) -> None:
    from kindex_olap.experiment.standalone import (
        PLAN_FILE,
        STATE_FILE,
        describe,
        execute,
        pending,
        read_json,
    )

    plan = read_json(folder / PLAN_FILE)
    if dry_run:
        typer.echo("\n".join(describe(plan, read_json(folder / STATE_FILE))))
        return
    state = execute(folder, budget, sys.stderr)
    left = len(pending(plan, state))
    if left:
        typer.echo(f"{left} run(s) left: run the same command again to continue", err=True)
    elif not no_import:
        _import_and_judge(folder, lake, fmt)


def _import_and_judge(folder: Path, lake: Path | None, fmt: Format) -> None:
    from kindex_olap.cli.output import write
    from kindex_olap.experiment.verdict import import_experiment

    imported = import_experiment(folder, lake)
    typer.echo(imported.collected.summary(), err=True)
    for line in imported.collected.runs_other[:10]:
        typer.echo(f"  {line}", err=True)
    typer.echo(f"ingest: {imported.ingest_summary}", err=True)
    if imported.steps or fmt is not Format.table:
        write(imported.columns, imported.steps, fmt, sys.stdout, verb="changes")
    flagged = imported.flagged()
    typer.echo(
        f"{len(flagged)} of {len(imported.steps)} step(s) between the variants flagged "
        "(regression or improvement)",
        err=True,
    )
    if imported.rejected:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `bench` to the kindex app."""
    app.add_typer(bench_app, name="bench")


@bench_app.command("liger")
def liger(
    versions: Annotated[
        str, typer.Option("--versions", help="Liger-Kernel releases, e.g. 0.8.1,0.8.2.")
    ],
    kernels: Annotated[
        str, typer.Option("--kernels", help="Benchmark scripts to run, e.g. jsd,rms_norm.")
    ],
    rounds: RoundsOption = None,
    repeat: RepeatOption = None,
    pin_cpu: PinOption = None,
    timeout: TimeoutOption = 600.0,
    folder: DirOption = Path("kindex-bench"),
    sdist: Annotated[
        Path | None,
        typer.Option(
            "--sdist",
            help="The newest version's sdist (default: the package index).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    wheels: Annotated[
        Path | None,
        typer.Option(
            "--wheels",
            help="A folder of liger_kernel wheels (default: pip download).",
            exists=True,
            file_okay=False,
        ),
    ] = None,
    emit_runner: Annotated[
        bool,
        typer.Option(
            "--emit-runner",
            help="Only prepare --dir and write its stdlib runner "
            "(kindex_bench_runner.py): carry the folder to the GPU machine.",
        ),
    ] = False,
    budget: BudgetOption = None,
    dry_run: DryRunOption = False,
    no_import: NoImportOption = False,
    lake: LakeOption = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Run Liger's benchmark scripts under each version, interleaved by round, and judge.

    Each version's wheel is unpacked into --dir/site-VERSION (your environment is untouched);
    the scripts come from the newest version's sdist. Each run is pinned to the fastest CPU at
    its start (Liger's small-size timings follow the host's speed; state.json keeps the CPU's
    probe before and after the run). Example: kindex bench liger --versions
    0.8.1,0.8.2 --kernels jsd,rms_norm --rounds 3 --dir h200-liger --emit-runner
    """
    from kindex_olap.experiment.liger import REPEAT, liger_plan, parse_versions
    from kindex_olap.experiment.liger import emit_runner as write_runner
    from kindex_olap.experiment.plan import settle_plan

    names = [k.strip() for k in kernels.split(",") if k.strip()]
    pin = True if pin_cpu is None else pin_cpu
    plan = liger_plan(folder, parse_versions(versions), names, rounds or 3, timeout, sdist, wheels,
                      REPEAT if repeat is None else repeat, pin)  # fmt: skip
    settle_plan(folder, plan)
    if emit_runner:
        runner = write_runner(folder)
        typer.echo(f"wrote {runner}: run `python {runner.name}` in that folder on the GPU "
                   f"machine, then `kindex bench import {folder}` here", err=True)  # fmt: skip
        return
    _run_and_judge(folder, budget, dry_run, no_import, lake, fmt)
