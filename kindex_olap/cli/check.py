"""`kindex check`: a CI gate that fails when what is new regressed.

Exit codes: 0 no regression among the steps tested; 1 at least one regression (the table,
Markdown or JSON lists them); 7 nothing was tested (no step into what is new); and the usual
error codes of kindex_olap.cli.edge.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kindex_olap.cli.answer import diagnose
from kindex_olap.cli.options import AllBranchesOption, ByOption, LakeOption
from kindex_olap.cli.output import Format
from kindex_olap.cli.query import Engine, EngineOption, WideOption

if TYPE_CHECKING:
    from kindex_olap.query.gate import CheckResult

REGRESSED = 1
NOTHING_TESTED = 7


def check(
    filters: Annotated[
        list[str] | None,
        typer.Argument(help="Shorthand filters, as after a verb of `kindex query` (jsd b200)."),
    ] = None,
    lake: LakeOption = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="LAKE_COMMIT|DATE|VERSION",
            help="Test the runs added after a lake commit (a number, see `kindex log`), "
            "observed after an ISO date, or of versions after a version (default: the runs "
            "of the newest lake commit that added runs).",
        ),
    ] = None,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format",
            "-f",
            help="markdown: a pull-request comment; json: the kindex.check/v1 document.",
            case_sensitive=False,
        ),
    ] = Format.table,
    all_branches: AllBranchesOption = False,
    by: ByOption = "version",
    threshold: Annotated[
        float | None,
        typer.Option("--threshold", help="Smallest change flagged (default 0.05: 5 %)."),
    ] = None,
    q_level: Annotated[
        float | None,
        typer.Option("--q", help="Benjamini-Hochberg level for a flag (default 0.01)."),
    ] = None,
    gate: Annotated[
        Path | None,
        typer.Option(
            "--gate",
            help="A gate file (TOML): threshold, q, [thresholds] per kernel, [[accept]] steps.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    engine: EngineOption = Engine.duckdb,
    wide: WideOption = False,
) -> None:
    """Fail (exit 1) when a step into what is new is a regression: `kindex check`.

    Each implementation's latency and speedup against its cell's baseline are compared with
    the point before; every step of the lake is judged together (one Benjamini-Hochberg
    correction), so `check` agrees with `history` and `changes` about a step whatever the
    filters. Exit 7 when nothing was tested (docs/history.md).
    """
    from kindex_olap.query.compile import Options
    from kindex_olap.query.gate import read_gate_file, rules_for
    from kindex_olap.query.run import run_check

    gate_file = read_gate_file(gate) if gate else None
    rules = rules_for(threshold, q_level, gate_file)
    options = Options(all_branches=all_branches, by=by)
    accept = gate_file.accept if gate_file else ()
    if engine is Engine.spark:
        from kindex_olap.spark.run import run_check as run_on_spark

        result = run_on_spark(" ".join(filters or []), lake, since, options, rules, accept)
    else:
        result = run_check(" ".join(filters or []), lake, since, options, rules, accept)
    _report(result, fmt, wide)
    if not result.tested_steps:
        raise typer.Exit(NOTHING_TESTED)
    if result.regressions:
        raise typer.Exit(REGRESSED)


def _report(result: CheckResult, fmt: Format, wide: bool = False) -> None:
    from kindex_olap.cli.output import write

    if fmt is Format.json:
        json.dump(result.as_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif fmt is Format.markdown:
        sys.stdout.write(markdown_comment(result))
    elif result.regressions:  # what the table left out, said as `kindex query` says it
        said = write(
            result.columns, result.regressions, fmt, sys.stdout, verb="regressions", wide=wide
        )
        diagnose(said)
    if result.accepted and fmt is not Format.json:
        typer.echo(f"accepted (gate file): {len(result.accepted)} regression(s)", err=True)
    if result.insufficient:
        typer.echo(f"{result.insufficient} step(s) not judged: insufficient replicates", err=True)
    diagnose(result.notes)
    typer.echo(result.summary(), err=True)


def markdown_comment(result: CheckResult) -> str:
    """A pull-request comment: always written, whatever was found."""
    from io import StringIO

    from kindex_olap.cli.output import write

    rules = result.rules
    lines = [
        f"### kindex check: {result.summary()}",
        "",
        f"Flagged: change > {rules.threshold:.0%} and Benjamini-Hochberg q <= {rules.q_level:g} "
        "over every step of the lake.",
    ]
    if result.insufficient:
        lines.append(
            f"{result.insufficient} step(s) could not be judged (`insufficient replicates`): "
            "run the benchmark again to settle them."
        )
    buffer = StringIO()
    for title, rows in (("Regressions", result.regressions), ("Accepted", result.accepted)):
        if rows:
            buffer.write(f"\n#### {title}\n\n")
            headers, cells = _readable(result.columns, rows)
            write(headers, cells, Format.markdown, buffer)
    if result.regressions or result.accepted:
        buffer.write("\nEvery column, for machines: `--format json`.\n")
    return "\n".join(lines) + "\n" + buffer.getvalue()


def _readable(columns: list[str], rows: list[tuple[Any, ...]]) -> tuple[list[str], list[list[str]]]:
    """A comment's table as the terminal's reads: the step verbs' columns (and the commits or
    time that tell two steps inside one version apart, and the step's id) that hold a value,
    with their units and intervals ("113.09 ms", "[1.05, 1.10]"). It held every column of the
    JSON document: bare numbers (0.1261 for 0.13 ms), ratio_lo and ratio_hi apart, empty
    columns."""
    from kindex_olap.cli.table import display_columns
    from kindex_olap.doors.columns import verb_columns

    spec = verb_columns("regressions")
    # and the step's id, which a gate file's [[accept]] names
    order = [*spec.show, *spec.tiebreak, "step"] if spec else list(columns)
    shown = {column.name: column for column in display_columns(columns, rows)}
    chosen = [shown[n] for n in dict.fromkeys(order) if n in shown and any(shown[n].values)]
    cells = [[column.values[i] for column in chosen] for i in range(len(rows))]
    return [column.header for column in chosen], cells


def register(app: typer.Typer) -> None:
    """Add `check` to the kindex app."""
    app.command("check")(check)
