"""Compile shorthand queries to parameterized SQL over the views, run them, explain empty results.

User text never reaches SQL text: every value is a bound `?` parameter, and every identifier
comes from the fixed tables below (`VERB_SQL`, `_FILTER_COLUMNS`, `OPERATORS`).

Each verb reads a table macro of sql/views/views.sql (the views are the same macros called without
filters) and passes the kernel, environment and pass filters to it as bound lists: they then
apply to the runs scan, before the latest-run ranking and the pair self-join, instead of after.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from kindex_olap.errors import QueryError, from_duckdb
from kindex_olap.query import noise
from kindex_olap.query.engine import connect, snapshot_of
from kindex_olap.query.shorthand import (
    OPERATORS,
    Gpu,
    Query,
    ShapeFilter,
    Vocabulary,
    in_family,
    is_family_name,
    parse,
)
from kindex_olap.sqlfiles import read_sql

if TYPE_CHECKING:
    from kindex_olap.query.gate import Accepted, CheckResult
    from kindex_olap.query.history import HistoryOptions
    from kindex_olap.query.steps import Rules

HISTORY_VERBS = ("history", "regressions", "improvements", "changes")  # query/history.py
PAIR_VERBS = ("speedup", "summary", "memory")
# verbs whose SQL reads the noise model (computed once per connection before they run; memory
# pairs through the same comparable_pairs_for)
NOISE_VERBS = ("speedup", "summary", "memory", "noise")


@dataclass(frozen=True)
class VerbSql:
    """The fixed SQL skeleton of one verb: its view (read through the view's table macro
    `<view>_for(kernels, environments, passes)`), select list, grouping and order."""

    view: str
    select: str
    order: str
    group: str = ""
    # a query file of sql/ that wraps the verb's rows ({cases}): summary's bootstrap
    template: str = ""


# A run that states no pass (KernelIndex catalog exports) shows this word instead of NULL.
NO_PASS = "unspecified"
_PASS = f"coalesce(pass, '{NO_PASS}') AS pass"

_SPEEDUP = VerbSql(
    view="speedups",
    select=f"""kernel, {_PASS}, gpu, form_factor, environment, shape,
    metric, statistic, candidate, baseline, candidate_name, baseline_name, baseline_rule,
    speedup, speedup_lo, speedup_hi, verdict, evidence,
    candidate_ns / 1e6 AS candidate_ms, baseline_ns / 1e6 AS baseline_ms,
    candidate_version, baseline_version,
    candidate_observed_at, baseline_observed_at,
    run_speedup_lo, run_speedup_hi, noise, noise_source,
    candidate_runs, baseline_runs, candidate_samples, baseline_samples""",
    order="kernel, pass, gpu, environment, shape, candidate, baseline, candidate_observed_at",
)
_MEMORY = VerbSql(
    view="memory_ratios",
    select=f"""kernel, {_PASS}, gpu, form_factor, environment, shape,
    candidate, baseline, candidate_name, baseline_name, baseline_rule,
    memory_ratio, ratio_lo, ratio_hi, verdict,
    candidate_bytes / 1048576 AS candidate_mib, baseline_bytes / 1048576 AS baseline_mib,
    candidate_version, baseline_version,
    candidate_observed_at, baseline_observed_at""",
    order="kernel, pass, gpu, environment, shape, candidate, baseline, candidate_observed_at",
)
# summary: sql/queries/summary.sql aggregates the selected speedups rows (bootstrap over shapes)
_SUMMARY = VerbSql(
    view="speedups",
    select=f"""kernel, {_PASS}, gpu, form_factor, environment,
    metric, statistic, baseline, candidate, baseline_rule,
    cases, geomean_speedup, geomean_lo, geomean_hi, verdict,
    min_speedup, max_speedup, share_faster, within_noise, single_timings""",
    order="kernel, pass, gpu, environment, metric, statistic, baseline, candidate",
    template="queries/summary.sql",
)
# noise: the model (sql/views/noise.sql), per environment and latency class
_NOISE = VerbSql(
    view="noise",
    select="""gpu, form_factor, environment, latency_class, pairs,
    round(floor * 100, 1) AS floor_pct, source,
    round(measured_floor * 100, 1) AS measured_pct,
    round(median_change * 100, 2) AS median_change_pct""",
    order="gpu, form_factor, environment, class_rank",
)
_LATENCY = VerbSql(
    view="latency",
    select=f"""kernel, {_PASS}, gpu, form_factor, environment,
    shape, provider,
    median_ns / 1e6 AS median_ms, p20_ns / 1e6 AS p20_ms, p80_ns / 1e6 AS p80_ms,
    version, observed_at, status""",
    order="kernel, pass, gpu, environment, shape, provider, observed_at",
)
_RUNS = VerbSql(
    view="observations",
    select=f"""run_id, kernel, {_PASS}, provider,
    gpu, form_factor, environment, shape,
    metric, statistic, value, unit, version, observed_at, status""",
    order="kernel, pass, gpu, environment, shape, provider, metric, observed_at, run_id",
)
_GPUS = VerbSql(
    view="observations",
    select="""gpu, form_factor, gpu_arch, environment, count(*) AS runs,
    count(DISTINCT kernel) AS kernels, min(observed_at) AS first_observed,
    max(observed_at) AS last_observed""",
    group="gpu, form_factor, gpu_arch, environment",
    order="gpu, form_factor, environment",
)
_KERNELS = VerbSql(
    view="observations",
    select=f"""kernel, operation_family, count(*) AS runs,
    string_agg(DISTINCT coalesce(pass, '{NO_PASS}'), ', '
               ORDER BY coalesce(pass, '{NO_PASS}')) AS passes,
    string_agg(DISTINCT provider, ', ' ORDER BY provider) AS providers,
    count(DISTINCT environment_digest) AS environments""",
    group="kernel, operation_family",
    order="kernel",
)
# `runs serving`: the serving runs (MLPerf), a table of their own with no table macro
_SERVING = VerbSql(
    view="serving_runs",
    select="""run_digest, benchmark, scenario, division, category, model, accelerator_model,
    total_accelerators, stack, metric, statistic, value, unit, observed_at, status, source""",
    order="benchmark, scenario, accelerator_model, total_accelerators, observed_at, run_digest",
)
VERB_SQL = {
    "speedup": _SPEEDUP,
    "memory": _MEMORY,
    "summary": _SUMMARY,
    "latency": _LATENCY,
    "runs": _RUNS,
    "gpus": _GPUS,
    "kernels": _KERNELS,
    "noise": _NOISE,
}


@dataclass(frozen=True)
class Options:
    """Pairing options: `version` pins runs labelled with it; `all_pairs` keeps every
    same-version pair instead of the newest run of each side."""

    version: str | None = None
    all_pairs: bool = False
    # history verbs (query/history.py): points per version or per run, runs of other branches,
    # the smallest change flagged, the Benjamini-Hochberg level (query/steps.py)
    by: str = "version"
    all_branches: bool = False
    threshold: float = 0.05
    q_level: float = 0.01


@dataclass(frozen=True)
class Compiled:
    """SQL text (no user text in it) and its bound parameters."""

    sql: str
    params: tuple[Any, ...]


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


@dataclass
class _Where:
    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    # kernel, environment and pass filters for observations_for(?, ?, ?) (explain_empty)
    scope: list[list[str] | None] = field(default_factory=lambda: [None, None, None])

    def copy(self) -> _Where:
        return _Where(list(self.clauses), list(self.params), list(self.scope))

    def observations(self) -> tuple[str, list[Any]]:
        """`FROM observations_for(?, ?, ?) [WHERE ...]` and its parameters."""
        sql = "FROM observations_for(?, ?, ?)"
        if self.clauses:
            sql += " WHERE " + " AND ".join(self.clauses)
        return sql, [*self.scope, *self.params]

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def add_in(self, column: str, values: tuple[str, ...]) -> None:
        if values:
            self.add(f"{column} IN ({', '.join('?' for _ in values)})", *values)


# -- vocabulary -------------------------------------------------------------------------------


def load_vocabulary(con: duckdb.DuckDBPyConnection) -> Vocabulary:
    """The kernels, families, GPUs, providers and axes the lake holds."""
    kernels = _column(
        con,
        "SELECT DISTINCT kernel FROM (SELECT operation AS kernel FROM workloads "
        "UNION ALL SELECT kernel FROM runs) WHERE kernel IS NOT NULL ORDER BY kernel",
    )
    # a family: operations.family of the workload's OperationSpec, or the workload's family label
    families = con.execute(
        "SELECT family, list(DISTINCT operation ORDER BY operation) FROM ("
        "SELECT o.family, w.operation FROM operations o JOIN workloads w "
        "USING (operation_spec_digest) UNION ALL "
        "SELECT labels['family'], operation FROM workloads) "
        "WHERE family IS NOT NULL AND operation IS NOT NULL GROUP BY family ORDER BY family"
    ).fetchall()
    gpus = con.execute(
        "SELECT DISTINCT environment_digest, coalesce(name, environment_digest), "
        "coalesce(product, ''), form_factor, architecture FROM environments ORDER BY 1"
    ).fetchall()
    providers = _column(
        con,
        "SELECT DISTINCT p FROM (SELECT provider AS p FROM implementations "
        "UNION ALL SELECT provider FROM runs) WHERE p IS NOT NULL ORDER BY p",
    )
    axes = _column(con, "SELECT DISTINCT unnest(map_keys(axes)) AS a FROM workloads ORDER BY a")
    return Vocabulary(
        kernels=tuple(kernels),
        families={f: tuple(ks) for f, ks in families},
        gpus=tuple(Gpu(*row) for row in gpus),
        providers=tuple(providers),
        axes=tuple(axes),
    )


def _column(con: duckdb.DuckDBPyConnection, sql: str) -> list[Any]:
    return [row[0] for row in con.execute(sql).fetchall()]


# -- compiling --------------------------------------------------------------------------------


def compile_query(query: Query, options: Options = Options()) -> Compiled:
    """Parameterized SQL for `query`: the verb's table macro with the kernel, environment and
    pass filters as its bound arguments (NULL: no filter), the other filters in WHERE."""
    if query.serving:
        if options.version is not None or options.all_pairs:
            raise QueryError("serving runs have no version pairing: drop --version / --all")
        sql = f"SELECT {_SERVING.select}\nFROM {_SERVING.view}\nORDER BY {_SERVING.order}"
        return Compiled(sql=sql, params=())
    spec = VERB_SQL[query.verb]
    if query.verb == "noise":
        _check_noise_filters(query, options)
    where = _filters(query, options, scope=False)
    sql = assemble(spec, f"{spec.view}_for(?, ?, ?)", where.clauses)
    return Compiled(sql=sql, params=(*scope_arguments(query), *where.params))


def assemble(spec: VerbSql, source: str, clauses: list[str]) -> str:
    """A verb's SQL over `source` (its table macro call, or the plain view) with `clauses`."""
    sql = f"SELECT {spec.select}\nFROM {source}"
    if clauses:
        sql += "\nWHERE " + "\n  AND ".join(clauses)
    if spec.template:  # the verb's rows, aggregated by the template's query
        rows = sql.replace(spec.select, "*", 1)
        body = _without_comments(read_sql(spec.template)).replace("{cases}", rows)
        sql = f"SELECT {spec.select}\nFROM (\n{body})"
    if spec.group:
        sql += f"\nGROUP BY {spec.group}"
    return sql + f"\nORDER BY {spec.order}"


def _without_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


def _check_noise_filters(query: Query, options: Options) -> None:
    """The noise model is per GPU environment and latency class: only gpu filters apply."""
    if query.kernels or query.passes or query.shape_filters or query.candidate or query.baseline:
        raise QueryError(
            "the noise model is per GPU and latency class, learned from every kernel: "
            "only gpu filters apply",
            hint='for example `kindex query "noise h100"`',
        )
    if options.version is not None or options.all_pairs:
        raise QueryError("the noise model has no version pairing: drop --version / --all")


def scope_arguments(query: Query) -> tuple[list[str] | None, list[str] | None, list[str] | None]:
    """The kernel, environment and pass filters as the table macros' list arguments."""
    return (
        list(query.kernels) or None,
        list(query.environments) or None,
        list(query.passes) or None,
    )


def _filters(query: Query, options: Options, scope: bool = True) -> _Where:
    """WHERE clauses over the verb's view; scope=False leaves out the kernel, environment and
    pass filters (compile_query passes those to the view's table macro instead)."""
    where = _Where()
    if scope:
        where.add_in("kernel", query.kernels)
        where.add_in("environment_digest", query.environments)
        where.add_in("pass", query.passes)
    for shape in query.shape_filters:
        _shape_clause(where, shape)
    if query.verb in PAIR_VERBS:
        _pair_clauses(where, query, options)
    else:
        for provider in (query.candidate, query.baseline):
            if provider:
                _implementation_clause(where, "provider", provider)
        if options.version is not None:
            where.add("version = ?", options.version)
    return where


def _shape_clause(where: _Where, shape: ShapeFilter) -> None:
    op = OPERATORS[OPERATORS.index(shape.op)]  # the whitelisted spelling, never the user's
    if shape.axis == "dtype":
        where.add(f"dtype {op} ?", shape.value)
    elif shape.axis == "shape":
        where.add(f"shape {op} ?", shape.value)
    else:
        where.add(f"axes[?] {op} ?", shape.axis, shape.value)


def _implementation_clause(where: _Where, column: str, name: str) -> None:
    """`column` is the implementation `name`, or a member of its family (shorthand.in_family:
    liger also selects liger_triton, liger_cutedsl and liger-fused)."""
    if is_family_name(name):
        where.add(
            f"({column} = ? OR starts_with({column}, ?) OR starts_with({column}, ?))",
            name, name + "_", name + "-",
        )  # fmt: skip
    else:
        where.add(f"{column} = ?", name)


def _pair_clauses(where: _Where, query: Query, options: Options) -> None:
    if query.candidate:
        _implementation_clause(where, "candidate", query.candidate)
    # no candidate named: every implementation of the cell against its baseline
    if query.baseline:
        where.add("baseline = ?", query.baseline)
    else:
        # the cell's reference implementation, else its fastest one
        where.add("baseline_rule IS NOT NULL")
    if options.all_pairs:
        where.add("pairing = 'same_version'")
    elif options.version is not None:
        where.add("pairing = 'same_version'")
        where.add("latest_in_version")
    else:
        where.add("pairing = 'latest'")
    if options.version is not None:
        where.add("candidate_version = ?", options.version)


# -- running ----------------------------------------------------------------------------------


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
    con = con or connect(lake, as_of=as_of)
    try:
        vocab = vocab or load_vocabulary(con)
        query = parse(text, vocab)
        if query.verb in HISTORY_VERBS:
            return _history(con, query, options)
        compiled = compile_query(query, options)
        if query.verb in NOISE_VERBS:
            noise.materialize(con, scope_arguments(query)[1])
        result = _execute(con, compiled)
        result.verb = "runs serving" if query.serving else query.verb
        result.diagnostics.extend(_notes(query, result, vocab))
        if not result.rows:
            result.diagnostics.extend(explain_empty(con, query, options, vocab))
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

    if query.baseline:
        raise QueryError(
            f"`{query.verb}` pairs each run with its cell's baseline; name one implementation "
            "(e.g. liger), not `A vs B`"
        )
    where = _filters(query, options, scope=True)
    table = answer(con, query.verb, where.clauses, where.params, _history_options(options))
    return QueryResult(
        table.columns, table.rows, "(history: sql/views/history.sql, sql/views/history_points.sql)",
        tuple(where.params), table.notes, verb=query.verb,
    )  # fmt: skip


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
    con = con or connect(lake, as_of=str(snapshot.id) if snapshot.id else None)
    try:
        query = parse(f"regressions {filters}", load_vocabulary(con))
        if query.baseline:
            raise QueryError("`kindex check` pairs each run with its cell's baseline: no `A vs B`")
        where = _filters(query, options, scope=True)
        history = _history_options(options, rules)
        return check(con, snapshot, where.clauses, where.params, since, history, accept)
    finally:
        if own:
            con.close()


def _execute(con: duckdb.DuckDBPyConnection, compiled: Compiled) -> QueryResult:
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


# -- explaining empty results -----------------------------------------------------------------


def explain_empty(
    con: duckdb.DuckDBPyConnection, query: Query, options: Options, vocab: Vocabulary
) -> list[str]:
    """Why nothing matched: the filter that emptied the runs, or the missing comparable side."""
    if query.serving:
        return [
            "no serving runs: the lake holds none (KernelIndex exports with MLPerf serving runs "
            "add them: kindex import kernelindex EXPORT)"
        ]
    steps = _filter_steps(query)
    where = _Where()
    for label, clause, params, dimension in steps:
        before = where.copy()
        if clause in _SCOPE_SLOTS:
            where.scope[_SCOPE_SLOTS[clause]] = list(params)
        else:
            where.add(clause, *params)
        if _count(con, where) == 0:
            return [
                f"no runs match: the filter {label} left nothing{_held(con, before, dimension)}"
            ]
    if query.verb not in PAIR_VERBS:
        return ["no rows"]
    return [_no_pairs(con, query, where, options)]


_Step = tuple[str, str, tuple[Any, ...], str]
# what to list when a step empties the result: the values its dimension takes before it
_GPU_LABEL = "concat_ws(' ', gpu, form_factor)"
# steps that are observations_for's arguments rather than WHERE clauses
_SCOPE_SLOTS = {"kernel": 0, "environment": 1, "pass": 2}


def _filter_steps(query: Query) -> list[_Step]:
    step: _Step
    if query.verb == "memory":
        step = ("metric memory", "metric = ? AND status = 'passed'", ("memory",), "metric")
    elif query.verb in PAIR_VERBS:
        # speedups pair every metric in a time unit: latency, GPU MODE's score (s), ...
        clause = "kindex_time_unit_ns(unit) IS NOT NULL AND status = 'passed'"
        step = ("a passed run of a metric in a time unit (ns, us, ms, s)", clause, (), "metric")
    else:
        step = ("metric latency", "metric = ? AND status = 'passed'", ("latency",), "metric")
    steps: list[_Step] = [step]
    if query.kernels:
        label = f"kernel {' '.join(query.kernel_words)}"
        steps.append((label, "kernel", query.kernels, "kernel"))
    if query.environments:
        label = f"gpu {' '.join(query.gpu_words)}"
        steps.append((label, "environment", query.environments, _GPU_LABEL))
    if query.passes:
        label = f"pass {' '.join(query.passes)}"
        steps.append((label, "pass", query.passes, "pass"))
    for shape in query.shape_filters:
        sub = _Where()
        _shape_clause(sub, shape)
        steps.append((f"shape {shape}", sub.clauses[0], tuple(sub.params), "shape"))
    return steps


def _held(con: duckdb.DuckDBPyConnection, before: _Where, dimension: str) -> str:
    """'; before it the runs have gpu: NVIDIA A100 SXM4-80GB, ...' (at most 12 values)."""
    source, params = before.observations()
    sql = f"SELECT DISTINCT {dimension} AS v {source}"  # dimension: fixed list above
    values = [str(r[0]) for r in con.execute(sql + " ORDER BY v LIMIT 13", params).fetchall()]
    if not values:
        return ""
    shown = ", ".join(values[:12]) + (", ..." if len(values) > 12 else "")
    name = "gpu" if dimension == _GPU_LABEL else dimension
    return f" (the runs before it have {name}: {shown})"


def _count(con: duckdb.DuckDBPyConnection, where: _Where) -> int:
    source, params = where.observations()
    row = con.execute(f"SELECT count(*) {source}", params).fetchone()
    return int(row[0]) if row else 0


def _no_pairs(con: duckdb.DuckDBPyConnection, query: Query, where: _Where, options: Options) -> str:
    """'the lake holds a liger jsd backward run on NVIDIA B200 but no comparable baseline'."""
    source, params = where.observations()
    sql = f"SELECT provider, kernel, pass, gpu, count(*) {source} GROUP BY ALL ORDER BY ALL"
    groups = con.execute(sql, params).fetchall()
    if query.candidate:
        candidate = query.candidate
        held = [g for g in groups if in_family(g[0], candidate)]
    else:  # every implementation is a candidate against the cell's baseline
        candidate, held = "candidate", groups
    if not held:
        others = sorted({g[0] for g in groups})
        return (
            f"no comparable runs: the matching runs hold no {candidate} implementation "
            f"(implementations: {', '.join(others)})"
        )
    baseline = query.baseline or "baseline"
    parts = [
        f"{_count_runs(n)} {p} {k} {ps or NO_PASS + ' pass'} {_runs(n)} on {gpu}"
        for p, k, ps, gpu, n in held[:12]
    ]
    if len(held) > 12:
        parts.append(f"{len(held) - 12} more groups")
    text = f"no comparable runs: the lake holds {'; '.join(parts)} but no comparable {baseline}"
    text += " (same kernel, pass, workload, environment, protocol, metric and statistic)"
    if options.version is not None:
        text += f" labelled version {options.version}"
    return text


def _count_runs(n: int) -> str:
    return "a" if n == 1 else str(n)


def _runs(n: int) -> str:
    return "run" if n == 1 else "runs"


# -- read-only SQL ----------------------------------------------------------------------------

_ALLOWED_STATEMENTS = ("SELECT", "EXPLAIN")
_EXPLAIN_PREFIX = re.compile(r"^\s*explain\s+(analyze\s+)?", re.IGNORECASE)


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse anything but queries: writes, COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA, CALL."""
    try:
        parsed = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"SQL does not parse: {e}") from e
    if not parsed:
        raise QueryError("no SQL statement given")
    for statement in parsed:
        kind = statement.type.name
        if kind not in _ALLOWED_STATEMENTS:
            # DuckDB files INSTALL under LOAD: name the statement as the user wrote it
            word = statement.query.split(maxsplit=1)[0].upper() if kind == "LOAD" else kind
            raise QueryError(
                f"`kindex sql` is read-only: {word} statements are refused",
                hint="use SELECT (or EXPLAIN SELECT) over the views: runs, latency, speedups, ...",
            )
        if kind == "EXPLAIN":
            check_read_only(con, _EXPLAIN_PREFIX.sub("", statement.query, count=1))
    if len(parsed) > 1:
        raise QueryError(
            f"`kindex sql` runs one statement; {len(parsed)} were given",
            hint="run each statement on its own (or join them with UNION ALL or a WITH clause)",
        )


def run_sql(
    sql: str,
    lake: str | os.PathLike[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
    as_of: str | None = None,
) -> QueryResult:
    """Run one read-only SQL statement over the views (of the lake commit `as_of` names, if
    given). DuckDB's temp directory (`./.tmp` by default) is readable by any query, so this
    connection's is a private, empty folder of its own."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kindex-sql-") as spill:
        own = con is None
        if con is None:
            con = connect(lake, read_only=True, as_of=as_of, temp_directory=spill)
        try:
            check_read_only(con, sql)
            return _execute(con, Compiled(con.extract_statements(sql)[0].query, ()))
        finally:
            if own:
                con.close()
