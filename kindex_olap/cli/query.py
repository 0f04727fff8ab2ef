"""`kindex query` (the shorthand) and `kindex sql` (read-only SQL over the views).

Both print data on stdout in the chosen format and diagnostics on stderr; no rows is success.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from kindex_olap.cli.answer import answer, emit, emit_sql
from kindex_olap.cli.options import (
    AllBranchesOption,
    AllPairsOption,
    AsOfOption,
    ByOption,
    LakeOption,
    VersionOption,
)
from kindex_olap.cli.output import Format

FormatOption = Annotated[
    Format, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
]
WideOption = Annotated[
    bool, typer.Option("--wide", help="Table: every column, none folded into the title.")
]
ShowSqlOption = Annotated[
    bool, typer.Option("--show-sql", help="Print the SQL and its parameters on stderr.")
]


class Engine(StrEnum):
    duckdb = "duckdb"
    spark = "spark"


EngineOption = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="spark: the same answer computed by Spark (pip install 'kindex-olap[spark]'; "
        "docs/scale-out.md).",
        case_sensitive=False,
    ),
]


def query(
    words: Annotated[
        list[str],
        typer.Argument(
            metavar="TEXT",
            help="Shorthand, e.g. 'speedup jsd b200' (quoted, or as words: speedup jsd b200).",
        ),
    ],
    lake: LakeOption = None,
    fmt: FormatOption = Format.table,
    version: VersionOption = None,
    all_pairs: AllPairsOption = False,
    by: ByOption = "version",
    all_branches: AllBranchesOption = False,
    threshold: Annotated[
        float,
        typer.Option("--threshold", help="history verbs: smallest change flagged (0.05: 5 %)."),
    ] = 0.05,
    q_level: Annotated[
        float,
        typer.Option("--q", help="history verbs: Benjamini-Hochberg level of a flag (0.01)."),
    ] = 0.01,
    show_sql: ShowSqlOption = False,
    as_of: AsOfOption = None,
    wide: WideOption = False,
    engine: EngineOption = Engine.duckdb,
) -> None:
    """Answer a shorthand question: `kindex query "speedup jsd b200" --format markdown`.

    A verb (speedup, summary, latency, memory, runs, gpus, kernels), then filters in any
    order: kernel (jsd, kl_div/kldiv, ce, grpo, or a unique prefix; a family word such as
    rmsnorm selects all its operations, reported per operation, together with an alias of
    the same name; an exact kernel name, e.g. jsd, means that kernel only), GPU (b200, h100, h100-pcie, a100, 4090, sm_90), pass
    (forward/fwd, backward/bwd, full; KernelIndex runs state none: shown as unspecified),
    `A vs B` (candidate vs baseline), shape filters (vocab=128256, tokens>=4096, dtype=bf16);
    on, of, for, in, at, the, a and with are read as nothing (speedup jsd backward on b200).

    Default pairs: every implementation of a cell (liger_triton, liger_cutedsl, ... each in
    its own rows) vs the cell's reference implementation (torch, else huggingface, ...); in
    cells with no reference (leaderboards) vs the cell's fastest. A family name (liger) selects
    every member of the family.
    The baseline and its rule are named on stderr. speedup covers every metric in a time unit
    (latency; GPU MODE's score, in s), within one metric and statistic.
    `runs serving` lists the serving runs (MLPerf), kept apart from kernel runs.

    History (docs/history.md): `history jsd h100 fwd liger` lists each cell's versions (--by
    run: runs) with the speedup against the nearest baseline run and the change from the
    previous point; `regressions`, `improvements` and `changes` list the flagged steps. Every
    step of the lake is judged together, so a step has one verdict whatever the verb and
    filters (flagged: change > --threshold and Benjamini-Hochberg q <= --q).
    """
    from kindex_olap.query.compile import Options

    text = " ".join(words)
    options = Options(
        version=version,
        all_pairs=all_pairs,
        by=by,
        all_branches=all_branches,
        threshold=threshold,
        q_level=q_level,
    )
    if engine is Engine.spark:
        from kindex_olap.spark.run import run_query as run_on_spark

        emit(run_on_spark(text, lake, options, as_of=as_of), fmt, show_sql, wide)
    else:
        answer(text, lake, fmt, as_of, wide, show_sql, options)


def sql(
    statement: Annotated[str, typer.Argument(metavar="SQL", help="A SELECT over the views.")],
    lake: LakeOption = None,
    fmt: FormatOption = Format.table,
    as_of: AsOfOption = None,
    wide: WideOption = False,
) -> None:
    """Run read-only SQL over the views: `kindex sql "SELECT * FROM speedup_summary LIMIT 5"`.

    Views: runs, measurements, environments, protocols, workloads, implementations, operations,
    observations, latency, comparable_pairs, speedups, memory_ratios, speedup_summary,
    serving_runs.
    Only SELECT and EXPLAIN run; files outside the lake cannot be read.
    """
    emit_sql(statement, lake, fmt, as_of, wide)


def spark_sql(
    statement: Annotated[str, typer.Argument(metavar="SQL", help="A Spark SQL query.")],
    lake: LakeOption = None,
    fmt: FormatOption = Format.table,
    as_of: AsOfOption = None,
    wide: WideOption = False,
) -> None:
    """Run one read-only Spark SQL query over the lake's tables and views, on a local Spark:
    `kindex spark-sql "SELECT gpu, count(*) FROM speedups GROUP BY gpu"`.

    The views are sql/views' own, generated as Spark SQL (docs/scale-out.md); only queries
    run. Needs pyspark and Java 17 (pip install 'kindex-olap[spark]').
    """
    from kindex_olap.spark.run import run_spark_sql

    emit(run_spark_sql(statement, lake, as_of=as_of), fmt, False, wide)


def register(app: typer.Typer) -> None:
    """Add `query`, `sql` and `spark-sql` to the kindex app."""
    app.command("query")(query)
    app.command("sql")(sql)
    app.command("spark-sql")(spark_sql)
