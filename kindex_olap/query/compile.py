"""Compile shorthand queries to parameterized SQL over the views: SQL only (running them is
query/run.py, explaining an empty answer query/explain.py, `kindex sql`'s check
query/readonly.py).

User text never reaches SQL text: every value is a bound `?` parameter, and every identifier
comes from the verb registry (query/verbs.py) and the fixed tables below (`OPERATORS`).

Each verb reads a table macro of sql/views/views.sql (the views are the same macros called without
filters) and passes the kernel, environment and pass filters to it as bound lists: they then
apply to the runs scan, before the latest-run ranking and the pair self-join, instead of after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kindex_olap.errors import QueryError
from kindex_olap.query.shorthand import OPERATORS, Query, ShapeFilter, is_family_name
from kindex_olap.query.verbs import PAIR_VERBS, REGISTRY, SERVING_SQL, VerbSql
from kindex_olap.sqlfiles import read_sql


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
class Where:
    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    # kernel, environment and pass filters for observations_for(?, ?, ?) (explain_empty)
    scope: list[list[str] | None] = field(default_factory=lambda: [None, None, None])

    def copy(self) -> Where:
        return Where(list(self.clauses), list(self.params), list(self.scope))

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


# -- compiling --------------------------------------------------------------------------------


def compile_query(query: Query, options: Options = Options()) -> Compiled:
    """Parameterized SQL for `query`: the verb's table macro with the kernel, environment and
    pass filters as its bound arguments (NULL: no filter), the other filters in WHERE."""
    if query.serving:
        if options.version is not None or options.all_pairs:
            raise QueryError("serving runs have no version pairing: drop --version / --all")
        sql = f"SELECT {SERVING_SQL.select}\nFROM {SERVING_SQL.view}\nORDER BY {SERVING_SQL.order}"
        return Compiled(sql=sql, params=())
    spec = REGISTRY[query.verb].sql
    assert spec is not None, f"{query.verb} has no SQL of its own (history: query/history.py)"
    if query.verb == "noise":
        _check_noise_filters(query, options)
    where = where_of(query, options, scope=False)
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


def where_of(query: Query, options: Options, scope: bool = True) -> Where:
    """WHERE clauses over the verb's view; scope=False leaves out the kernel, environment and
    pass filters (compile_query passes those to the view's table macro instead)."""
    where = Where()
    if scope:
        where.add_in("kernel", query.kernels)
        where.add_in("environment_digest", query.environments)
        where.add_in("pass", query.passes)
    for shape in query.shape_filters:
        shape_clause(where, shape)
    if query.verb in PAIR_VERBS:
        _pair_clauses(where, query, options)
    else:
        for provider in (query.candidate, query.baseline):
            if provider:
                implementation_clause(where, "provider", provider)
        if options.version is not None:
            where.add("version = ?", options.version)
    return where


def shape_clause(where: Where, shape: ShapeFilter) -> None:
    op = OPERATORS[OPERATORS.index(shape.op)]  # the whitelisted spelling, never the user's
    if shape.axis == "dtype":
        where.add(f"dtype {op} ?", shape.value)
    elif shape.axis == "shape":
        where.add(f"shape {op} ?", shape.value)
    else:
        where.add(f"axes[?] {op} ?", shape.axis, shape.value)


def implementation_clause(where: Where, column: str, name: str) -> None:
    """`column` is the implementation `name`, or a member of its family (shorthand.in_family:
    liger also selects liger_triton, liger_cutedsl and liger-fused)."""
    if is_family_name(name):
        where.add(
            f"({column} = ? OR starts_with({column}, ?) OR starts_with({column}, ?))",
            name, name + "_", name + "-",
        )  # fmt: skip
    else:
        where.add(f"{column} = ?", name)


# the pairs a verb reads when the query names no baseline and no pairing option
DEFAULT_BASELINE = "baseline_rule IS NOT NULL"
DEFAULT_PAIRING = "pairing = 'latest'"


def stored_summary_sql(some: bool = False, kernels: bool = False) -> str:
    """The summary of every default pair of the lake commit (every implementation against its
    cell's baseline, the newest runs), its template's columns: what layer_summary stores. some:
    of the environments a `?` parameter lists; kernels: of the kernels a `?` parameter before
    it lists."""
    spec = REGISTRY["summary"].sql
    assert spec is not None and spec.template is not None
    rows = _default_pairs(spec, some, kernels)
    return _without_comments(read_sql(spec.template)).replace("{cases}", rows)


def stored_speedups_sql(some: bool = False, kernels: bool = False) -> str:
    """Every column of the speedups of every default pair of the lake commit: what
    layer_speedups stores. some: of the environments a `?` parameter lists; kernels: of the
    kernels a `?` parameter before it lists."""
    spec = REGISTRY["speedup"].sql
    assert spec is not None
    return _default_pairs(spec, some, kernels)


def _default_pairs(spec: VerbSql, some: bool, kernels: bool) -> str:
    environments = "?" if some else "NULL"
    return (
        f"SELECT * FROM {spec.view}_for({'?' if kernels else 'NULL'}, {environments}, NULL) "
        f"WHERE {DEFAULT_BASELINE} AND {DEFAULT_PAIRING}"
    )


# the verbs whose default answer a lake commit stores (kindex_olap.layers.summary)
STORED = {"summary": "layer_summary", "speedup": "layer_speedups"}


def compile_stored(query: Query, options: Options) -> Compiled | None:
    """`speedup` or `summary` read from the lake commit's stored layer (STORED), when the query
    pairs the default way (no named baseline, no --version, no --all) and, for the summary,
    only chooses groups of it (kernels, GPUs, passes, a candidate: a shape filter changes what is
    bootstrapped); None otherwise."""
    table = STORED.get(query.verb)
    if (
        table is None
        or query.serving
        or query.baseline
        or (query.verb == "summary" and query.shape_filters)
        or options.version is not None
        or options.all_pairs
    ):
        return None
    where = where_of(query, Options(), scope=True)
    where.clauses = [c for c in where.clauses if c not in (DEFAULT_BASELINE, DEFAULT_PAIRING)]
    spec = REGISTRY[query.verb].sql
    assert spec is not None and not spec.group  # the stored rows are the answer's rows
    sql = f"SELECT {spec.select}\nFROM {table}"
    if where.clauses:
        sql += "\nWHERE " + "\n  AND ".join(where.clauses)
    return Compiled(sql=sql + f"\nORDER BY {spec.order}", params=tuple(where.params))


def _pair_clauses(where: Where, query: Query, options: Options) -> None:
    if query.candidate:
        implementation_clause(where, "candidate", query.candidate)
    # no candidate named: every implementation of the cell against its baseline
    if query.baseline:
        where.add("baseline = ?", query.baseline)
    else:
        # the cell's reference implementation, else its fastest one
        where.add(DEFAULT_BASELINE)
    if options.all_pairs:
        where.add("pairing = 'same_version'")
    elif options.version is not None:
        where.add("pairing = 'same_version'")
        where.add("latest_in_version")
    else:
        where.add(DEFAULT_PAIRING)
    if options.version is not None:
        where.add("candidate_version = ?", options.version)
