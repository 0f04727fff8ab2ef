"""Running shorthand queries: parse, route by verb (history verbs to query/history.py, the
others through their compiled SQL), run, and say which baseline answered; `kindex check` too."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from kindex_olap.errors import QueryError, from_duckdb
from kindex_olap.query import noise
from kindex_olap.query.compile import (
    Compiled,
    Options,
    Where,
    compile_query,
    compile_stored,
    scope_arguments,
    where_of,
)
from kindex_olap.query.engine import connect, reads_layers, snapshot_of, stale_layers
from kindex_olap.query.explain import (
    emptied_by_filter,
    explain_empty,
    explain_no_steps,
    left_out_of_pairs,
)
from kindex_olap.query.shorthand import Query, Vocabulary, parse
from kindex_olap.query.variables import answering
from kindex_olap.query.verbs import HISTORY_VERBS, NOISE_VERBS, PAIR_VERBS
from kindex_olap.query.vocabulary import load_vocabulary

if TYPE_CHECKING:
    from kindex_olap.query.gate import Accepted, CheckResult
    from kindex_olap.query.history import HistoryOptions
    from kindex_olap.query.history_report import Table
    from kindex_olap.query.steps import Rules


@dataclass
class QueryResult:
    """What a query returned: column names, rows, the SQL it ran, and notes for stderr."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    sql: str
    params: tuple[Any, ...]
    diagnostics: list[str] = field(default_factory=list)
    # the shorthand's verb ('runs serving' for serving runs); None for `kindex sql`
    verb: str | None = None
    # said with any answer, empty or not: how it was computed when that costs the reader time
    caveats: list[str] = field(default_factory=list)


def run_query(
    text: str,
    lake: str | os.PathLike[str] | None = None,
    options: Options = Options(),
    con: duckdb.DuckDBPyConnection | None = None,
    as_of: str | None = None,
    vocab: Vocabulary | None = None,
) -> QueryResult:
    """Parse, compile and run shorthand `text` (over the lake commit `as_of` names, if given);
    explain an empty result in diagnostics. `con` and `vocab`: an open connection and its
    lake's vocabulary (a warm session, kindex_olap.query.session)."""
    own = con is None
    con = con or connect(lake, as_of=as_of, lean=True)
    try:
        with answering(con):
            vocab = vocab or load_vocabulary(con)
            query = parse(text, vocab)
            if query.verb in HISTORY_VERBS:
                result = _history(con, query, options)
            else:
                result = execute(con, compile_on(con, query, options))
                result.verb = "runs serving" if query.serving else query.verb
                result.diagnostics.extend(_notes(query, result, vocab))
                if not result.rows:
                    result.diagnostics.extend(explain_empty(con, query, options))
                else:
                    result.diagnostics.extend(left_out_of_pairs(con, query, options))
            result.caveats.extend(stale_layers(con))
            return result
    finally:
        if own:
            con.close()


def _history_options(options: Options, rules: Rules | None = None) -> HistoryOptions:
    from kindex_olap.query.history import HistoryOptions
    from kindex_olap.query.steps import Rules

    rules = rules or Rules(threshold=options.threshold, q_level=options.q_level)
    return HistoryOptions(by=options.by, all_branches=options.all_branches, rules=rules)


def _history(con: duckdb.DuckDBPyConnection, query: Query, options: Options) -> QueryResult:
    from kindex_olap.query.history import answer

    where = history_where(query, options)
    asked = _history_options(options)
    table = answer(con, query.verb, where.clauses, where.params, asked)
    result = history_result(table, where, query.verb)
    if not result.rows:  # the explanation first: a table shows it alone
        why = explain_no_steps(con, query, options, table.selected, asked.rules)
        result.diagnostics[:0] = why
    return result


def history_where(query: Query, options: Options) -> Where:
    """A history verb's clauses (either engine): its series are each implementation's against
    its cell's baseline, so `A vs B` is refused."""
    if query.baseline:
        raise QueryError(
            f"`{query.verb}` pairs each run with its cell's baseline; name one implementation "
            "(e.g. liger), not `A vs B`"
        )
    return where_of(query, options, scope=True)


def history_result(table: Table, where: Where, verb: str) -> QueryResult:
    """A history verb's answer (either engine)."""
    return QueryResult(
        table.columns, table.rows, "(history: sql/views/history.sql, sql/views/history_points.sql)",
        tuple(where.params), table.notes, verb=verb,
    )  # fmt: skip


def check_question(
    con: duckdb.DuckDBPyConnection, filters: str, options: Options, rules: Rules | None
) -> tuple[Where, HistoryOptions, Query]:
    """`kindex check`'s filters as clauses, its rules, and the question they make (either
    engine). A check of the whole lake (no filters, what CI runs) has no word to resolve: the
    vocabulary is not loaded (its file lists and cached file, 1.5-2 ms of a 16 ms warm check at
    1M runs)."""
    vocab = load_vocabulary(con) if filters.split() else Vocabulary(kernels=())
    query = parse(f"regressions {filters}", vocab)
    if query.baseline:
        raise QueryError("`kindex check` pairs each run with its cell's baseline: no `A vs B`")
    return where_of(query, options, scope=True), _history_options(options, rules), query


def run_check(
    filters: str,
    lake: str | os.PathLike[str] | None = None,
    since: str | None = None,
    options: Options = Options(),
    rules: Rules | None = None,
    accept: tuple[Accepted, ...] = (),
    con: duckdb.DuckDBPyConnection | None = None,
) -> CheckResult:
    """`kindex check [filters]`: the steps into what is new (query/gate.py), each judged with
    the whole lake. `con`: an open connection over the lake's newest commit (benchmarks)."""
    from kindex_olap.query.gate import check

    snapshot = snapshot_of(lake)
    own = con is None
    # the lake commit the check reports, read even if an ingest commits meanwhile
    con = con or connect(lake, as_of=str(snapshot.id) if snapshot.id else None, lean=True)
    try:
        with answering(con):
            where, history, question = check_question(con, filters, options, rules)
            result = check(con, snapshot, where.clauses, where.params, since, history, accept)
            if not result.tested_steps and filters.split():  # a filter that matches no run?
                emptied = emptied_by_filter(con, question)
                result.notes.extend([] if emptied is None else [emptied])
            result.notes.extend(unknown_threshold_kernels(con, rules))
            result.notes.extend(stale_layers(con))
            return result
    finally:
        if own:
            con.close()


def unknown_threshold_kernels(con: duckdb.DuckDBPyConnection, rules: Rules | None) -> list[str]:
    """A gate file's per-kernel thresholds that name no kernel of the lake: a typo (`jds`)
    set nothing, silently."""
    named = [kernel for kernel, _ in rules.thresholds] if rules else []
    held = set(load_vocabulary(con).kernels) if named else set()
    unknown = [kernel for kernel in named if kernel not in held]
    if not unknown:
        return []
    return [
        f"[thresholds] names {len(unknown)} kernel(s) the lake does not hold, whose threshold "
        f"sets nothing: {', '.join(repr(k) for k in unknown[:5])}"
    ]


def compile_on(con: duckdb.DuckDBPyConnection, query: Query, options: Options) -> Compiled:
    """`query`'s SQL on `con`: read from the lake commit's stored answer where it holds one
    (compile_stored), else over the views, the noise model of the asked environments computed
    first where the views compute it (a lake commit without layers)."""
    stored = compile_stored(query, options) if reads_layers(con) else None
    if stored is not None:
        return stored
    if query.verb in NOISE_VERBS:
        noise.materialize(con, scope_arguments(query)[1])
    return compile_query(query, options)


def execute(con: duckdb.DuckDBPyConnection, compiled: Compiled) -> QueryResult:
    try:
        cursor = con.execute(compiled.sql, list(compiled.params))
        rows = cursor.fetchall()
        columns = [d[0] for d in cursor.description or []]
    except duckdb.Error as e:
        raise from_duckdb(e, "query failed") from e
    return QueryResult(columns, rows, compiled.sql, compiled.params)


def _notes(query: Query, result: QueryResult, vocab: Vocabulary) -> list[str]:
    """Say which baseline was used, and by which rule, when the user did not name one."""
    if query.verb not in PAIR_VERBS or query.baseline or not result.rows:
        return []
    index = result.columns.index("baseline")
    rule = result.columns.index("baseline_rule")
    reference = sorted({row[index] for row in result.rows if "reference" in (row[rule] or "")})
    fastest = any("fastest" in (row[rule] or "") for row in result.rows)
    notes = []
    if reference:
        notes.append(
            # a person reads this: it names the rule, not the file that holds it
            f"baseline: {', '.join(reference)} (each cell's reference implementation: torch, "
            "else huggingface, else the next reference kindex knows)"
        )
    if fastest:
        smallest = "smallest" if query.verb == "memory" else "fastest"
        notes.append(
            f"baseline: each cell's {smallest} implementation (no reference implementation "
            "in these cells)"
        )
    notes.append("name a baseline with `A vs B`")
    return notes
