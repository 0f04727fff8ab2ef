"""Why a query answered nothing: the filter that emptied the runs, the comparable side that is
missing, or for a step verb why no step shows (one line for stderr, naming what the lake does
hold)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb

from kindex_olap.query.compile import Options, Where, implementation_clause, shape_clause
from kindex_olap.query.shorthand import Query, in_family
from kindex_olap.query.verbs import NO_PASS, PAIR_VERBS

if TYPE_CHECKING:
    from kindex_olap.query.history_report import Selected
    from kindex_olap.query.steps import Rules


def explain_empty(con: duckdb.DuckDBPyConnection, query: Query, options: Options) -> list[str]:
    """Why nothing matched: the filter that emptied the runs, or the missing comparable side."""
    if query.serving:
        return [
            "no serving runs: the lake holds none (KernelIndex exports with MLPerf serving runs "
            "add them: kindex import kernelindex EXPORT)"
        ]
    emptied, where = _emptied(con, query)
    if emptied is not None:
        return [emptied]
    if query.verb not in PAIR_VERBS:
        return ["no rows"]
    return [_no_pairs(con, query, where, options)]


def emptied_by_filter(con: duckdb.DuckDBPyConnection, query: Query) -> str | None:
    """'no runs match: the filter gpu a100 left nothing (the runs before it have gpu: ...)'
    where one of `query`'s filters leaves no run; None where the runs it selects exist."""
    return _emptied(con, query)[0]


def _emptied(con: duckdb.DuckDBPyConnection, query: Query) -> tuple[str | None, Where]:
    """The filters of `query` applied one by one: the line naming the first that leaves no run
    (or None), and the clauses applied."""
    where = Where()
    steps = _filter_steps(query)
    for number, (label, clause, params, dimension) in enumerate(steps):
        before = where.copy()
        _apply(where, clause, params)
        if _count(con, where) == 0:
            verb_own = _without_the_verbs_metric(con, steps[1 : number + 1])
            if number > 0 and verb_own is not None:
                # the user's filters match runs, all of another metric than the verb reads:
                # "the runs before it" would list every other kernel's latency runs instead
                held = _held(con, verb_own, steps[0][3], "its runs")
                return (
                    f"no runs match: the filter {label} left no run of {steps[0][0]}{held}",
                    where,
                )
            held = _held(con, before, dimension)
            return f"no runs match: the filter {label} left nothing{held}", where
    return None, where


def _without_the_verbs_metric(con: duckdb.DuckDBPyConnection, steps: list[_Step]) -> Where | None:
    """The clauses of the user's `steps` alone, where they select runs (of another metric than
    the verb's); None where they select none."""
    where = Where()
    for _, clause, params, _ in steps:
        _apply(where, clause, params)
    return where if _count(con, where) else None


def _apply(where: Where, clause: str, params: tuple[Any, ...]) -> None:
    """Add one of _filter_steps' filters to `where`."""
    if clause in _SCOPE_SLOTS:
        where.scope[_SCOPE_SLOTS[clause]] = list(params)
    else:
        where.add(clause, *params)


# how many of the runs a pairing verb leaves out a note names
_NAMED = 3


def left_out_of_pairs(con: duckdb.DuckDBPyConnection, query: Query, options: Options) -> list[str]:
    """With a pairing verb's answer that has rows: '1 run with a value of zero or less left out
    of the pairs (a speedup divides by it): liger jsd backward on NVIDIA B200, tokens4096...'
    where the runs its filters select hold such (an empty answer says so in its explanation:
    _no_pairs). The schema admits a 0 ns median; the pairing leaves the run out, so a cell whose
    newest run it is drops out of the answer, and out of a summary's mean, without a word.
    Whether the lake holds any is read once per lake commit (a count the runs' statistics
    answer: 4 ms at 1M runs)."""
    if query.verb not in PAIR_VERBS or query.serving or not _lake_holds_not_positive(con):
        return []
    zero = Where()
    for _, clause, params, _ in _filter_steps(query):
        _apply(zero, clause, params)
    if query.candidate and query.baseline:  # `A vs B`: only their runs can be paired
        sides = Where()
        for name in (query.candidate, query.baseline):
            implementation_clause(sides, "provider", name)
        zero.add(f"({' OR '.join(sides.clauses)})", *sides.params)  # clauses of fixed text
    if options.version is not None:
        zero.add("version = ?", options.version)
    zero.add("value <= 0")
    source, values = zero.observations()
    rows = con.execute(
        f"SELECT provider, kernel, pass, {_GPU_LABEL}, shape, count(*) OVER () {source} "
        f"ORDER BY ALL LIMIT {_NAMED}",
        values,
    ).fetchall()  # fixed names; the values are parameters
    if not rows:
        return []
    n = int(rows[0][-1])
    named = "; ".join(
        " ".join(str(x) for x in (provider, kernel, run_pass) if x is not None)
        + f" on {gpu or 'an unnamed GPU'}"
        + (f", {shape}" if shape else "")
        for provider, kernel, run_pass, gpu, shape, _ in rows
    )
    more = f"; {n - len(rows)} more" if n > len(rows) else ""
    divides = "a ratio" if query.verb == "memory" else "a speedup"
    return [
        f"{n} {_runs(n)} with a value of zero or less left out of the pairs ({divides} "
        f"divides by it): {named}{more}"
    ]


def _lake_holds_not_positive(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any run of the lake commit `con` reads has a value of zero or less (kept while
    its runs files stay those read: a data file is never rewritten)."""
    from kindex_olap.query.kept import kept
    from kindex_olap.query.variables import variable

    def holds() -> bool:
        return bool(con.execute("SELECT count(*) FROM run_rows WHERE value <= 0").fetchall()[0][0])

    files = variable(con, "runs_files")
    if not files:
        return holds()
    return kept("not_positive", tuple(str(f) for f in files), holds)


def explain_no_steps(
    con: duckdb.DuckDBPyConnection,
    query: Query,
    options: Options,
    selected: Selected | None,
    rules: Rules,
) -> list[str]:
    """Why a history verb answered nothing: a filter that emptied the runs; for a step verb,
    from the steps into what it `selected`, the runs selected making no step, only their
    cells' baselines making steps, or none of the steps fitting the verb under `rules`."""
    emptied = emptied_by_filter(con, query)
    if emptied is not None:
        return [emptied]
    branch = "" if options.all_branches else _MAIN_ONLY
    version = "" if options.version is None else f" labelled version {options.version}"
    verb = query.verb
    if selected is None:  # `history` (or a leaderboard's records)
        return [f"no history points for the runs selected{version}{branch}"]
    flagged = (
        f"moved by more than {rules.threshold:.0%}"
        if verb == "changes"
        else f"is {_ARTICLE[verb]} (a change > {rules.threshold:.0%} with Benjamini-Hochberg "
        f"q <= {rules.q_level:g})"
    )
    joins = "a step joins two versions of an implementation in one cell"
    if selected.steps == 0:
        return [f"no {verb}: the runs selected{version} make no step ({joins}){branch}"]
    if selected.measured == 0:
        return [
            f"no {verb}: of the runs selected{version} only their cells' baselines "
            f"({', '.join(selected.baselines[:6])}) make steps, and a step verb lists the "
            f"implementations measured against a baseline{branch}"
        ]
    return [
        f"no {verb}: none of the {selected.measured} steps of the runs selected{version} "
        f"{flagged}{branch}"
    ]


_MAIN_ONLY = "; main-branch runs only (--all-branches adds runs first seen elsewhere)"
_ARTICLE = {"regressions": "a regression", "improvements": "an improvement"}
_Step = tuple[str, str, tuple[Any, ...], str]
# what to list when a step empties the result: the values its dimension takes before it
_GPU_LABEL = "kindex_gpu_label(gpu, form_factor)"
# steps that are observations_for's arguments rather than WHERE clauses
_SCOPE_SLOTS = {"kernel": 0, "environment": 1, "pass": 2}


def _filter_steps(query: Query) -> list[_Step]:
    step: _Step
    if query.verb == "memory":
        step = ("metric memory", "metric = ?", ("memory",), "metric")
    elif query.verb in PAIR_VERBS:
        # speedups pair every metric in a time unit: latency, GPU MODE's score (s), ...
        clause = "kindex_time_unit_ns(unit) IS NOT NULL"
        step = ("a metric in a time unit (ns, us, ms, s)", clause, (), "metric")
    else:
        step = ("metric latency", "metric = ?", ("latency",), "metric")
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
        sub = Where()
        shape_clause(sub, shape)
        steps.append((f"shape {shape}", sub.clauses[0], tuple(sub.params), "shape"))
    # last, and a step of its own: where every run selected timed out, the answer names their
    # status (it named the metric step, "(the runs before it have metric: latency)")
    steps.append(("status passed", "status = 'passed'", (), "status"))
    return steps


def _held(
    con: duckdb.DuckDBPyConnection, before: Where, dimension: str, runs: str = "the runs before it"
) -> str:
    """' (the runs before it have gpu: NVIDIA A100 SXM4-80GB, ...)' (at most 12 values)."""
    source, params = before.observations()
    sql = f"SELECT DISTINCT {dimension} AS v {source}"  # dimension: fixed list above
    values = [str(r[0]) for r in con.execute(sql + " ORDER BY v LIMIT 13", params).fetchall()]
    if not values:
        return ""
    shown = ", ".join(values[:12]) + (", ..." if len(values) > 12 else "")
    name = "gpu" if dimension == _GPU_LABEL else dimension
    return f" ({runs} have {name}: {shown})"


def _count(con: duckdb.DuckDBPyConnection, where: Where) -> int:
    source, params = where.observations()
    row = con.execute(f"SELECT count(*) {source}", params).fetchone()
    return int(row[0]) if row else 0


def _no_pairs(con: duckdb.DuckDBPyConnection, query: Query, where: Where, options: Options) -> str:
    """'the lake holds a liger jsd backward run on NVIDIA B200 but no comparable baseline'."""
    positive = where.copy()
    positive.add("value > 0")  # what the pairing reads (_not_positive says what it leaves out)
    source, params = positive.observations()
    sql = f"SELECT provider, kernel, pass, gpu, count(*) {source} GROUP BY ALL ORDER BY ALL"
    groups = con.execute(sql, params).fetchall()
    if not groups:
        return (
            "no comparable runs: every matching run has a value of zero or less (a speedup "
            "divides by it)"
        )
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
        ) + _not_positive(con, where)
    baseline = query.baseline or "baseline"
    parts = [
        # a run may name no provider or kernel (its externalId and benchmark say none): they
        # read "None" in the sentence
        " ".join(x for x in (_count_runs(n), p, k, ps or NO_PASS + " pass", _runs(n)) if x)
        + f" on {gpu or 'an unnamed GPU'}"
        for p, k, ps, gpu, n in held[:12]
    ]
    if len(held) > 12:
        parts.append(f"{len(held) - 12} more groups")
    text = f"no comparable runs: the lake holds {'; '.join(parts)} but no comparable {baseline}"
    text += " (same kernel, pass, workload, environment, protocol, metric and statistic)"
    if options.version is not None:
        text += f" labelled version {options.version}"
    return text + _not_positive(con, where)


def _not_positive(con: duckdb.DuckDBPyConnection, where: Where) -> str:
    """'; 1 run with a value of zero or less left out ...' where the matching runs hold such
    (the schema admits a 0 ns median; the pairing leaves it out: a speedup divides by it)."""
    zero = where.copy()
    zero.add("value <= 0")
    n = _count(con, zero)
    if not n:
        return ""
    return f"; {n} {_runs(n)} with a value of zero or less left out (a speedup divides by it)"


def _count_runs(n: int) -> str:
    return "a" if n == 1 else str(n)


def _runs(n: int) -> str:
    return "run" if n == 1 else "runs"
