"""The verbs of `kindex query`, in one registry: each verb's name, family, SQL skeleton, default
columns and chart. Shorthand parsing, compiling, history, plots, the report and the column
chooser read it; a new verb is one entry here (tests/test_verbs.py looks for verb lists
elsewhere).

- family: `pairs` (speedup, summary, memory: comparable pairs of runs, the noise model's
  verdicts), `runs` (rows of runs), `noise` (the model itself) and `history` (query/history.py:
  points and steps over versions, the SQL in sql/views/history*.sql).
- sql: the fixed SQL skeleton (VerbSql) of the non-history verbs: a table macro of
  sql/views/views.sql called with the kernel, environment and pass filters, a select list,
  grouping and order.
- columns: which columns answer the question (VerbColumns; kindex_olap.cli.table and the
  report's tables read them; CSV, JSON and Markdown keep every column).
- chart: the kindex_olap.doors.charts function that draws the verb (`kindex plot`), if any.

This module imports nothing of kindex: it is data.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    candidate_runs, baseline_runs, candidate_samples, baseline_samples, axes""",
    order="kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, candidate, baseline, "
    "candidate_observed_at",
)
_MEMORY = VerbSql(
    view="memory_ratios",
    select=f"""kernel, {_PASS}, gpu, form_factor, environment, shape,
    candidate, baseline, candidate_name, baseline_name, baseline_rule,
    memory_ratio, ratio_lo, ratio_hi, verdict,
    candidate_bytes / 1048576 AS candidate_mib, baseline_bytes / 1048576 AS baseline_mib,
    candidate_version, baseline_version,
    candidate_observed_at, baseline_observed_at, axes""",
    order="kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, candidate, baseline, "
    "candidate_observed_at",
)
# summary: sql/queries/summary.sql aggregates the selected speedups rows (bootstrap over shapes)
_SUMMARY = VerbSql(
    view="speedups",
    select=f"""kernel, {_PASS}, gpu, form_factor, environment,
    metric, statistic, baseline, candidate, baseline_name, candidate_name, baseline_rule,
    cases, geomean_speedup, geomean_lo, geomean_hi, verdict,
    min_speedup, max_speedup, share_faster, within_noise, single_timings""",
    order="kernel, kindex_pass_order(pass), pass, gpu, environment, metric, statistic, baseline, "
    "candidate, baseline_name, candidate_name",
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
    shape, provider, implementation,
    median_ns / 1e6 AS median_ms, p20_ns / 1e6 AS p20_ms, p80_ns / 1e6 AS p80_ms,
    version, observed_at, status, axes""",
    order="kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, provider, "
    "implementation, observed_at",
)
_RUNS = VerbSql(
    view="observations",
    select=f"""run_id, kernel, {_PASS}, provider, implementation,
    gpu, form_factor, environment, shape,
    metric, statistic, value, unit, version, observed_at, status, axes""",
    order="kernel, kindex_pass_order(pass), pass, gpu, environment, kindex_shape_order(shape), shape, provider, "
    "implementation, metric, observed_at, run_id",
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
SERVING_SQL = VerbSql(
    view="serving_runs",
    select="""run_digest, benchmark, scenario, division, category, model, accelerator_model,
    total_accelerators, stack, metric, statistic, value, unit, observed_at, status, source""",
    order="benchmark, scenario, accelerator_model, total_accelerators, observed_at, run_digest",
)


@dataclass(frozen=True)
class VerbColumns:
    """`show`: default columns in order; `answer`: always kept (never folded, never dropped to
    fit); `keys`: the columns that tell rows apart, dropped to fit only as a last resort;
    `thin`: answer columns kept only when some row's value is not `None`/empty and is not in
    `thin_ok` (evidence says where a side was timed once); `tiebreak`: columns shown (after the
    keys), those of them with a value, only when the keys shown leave two rows alike (two runs
    of one case and version) or a row's `same` columns are equal (a step from 0.5.3 to 0.5.3:
    two commits, or two invocations, under one version label); `spare`: shown where the line
    has room for them whole, else the first left out (a step's rule cut to "…2.7%, floor…s, all
    GPUs)" at 80 columns read worse than none, and cost the step's from and to values)."""

    show: tuple[str, ...]
    answer: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    thin: tuple[str, ...] = ()
    tiebreak: tuple[str, ...] = ()
    same: tuple[str, ...] = ()
    spare: tuple[str, ...] = ()


_GPU = ("gpu", "form_factor", "environment")
_PAIR = ("candidate", "candidate_version", "baseline", "baseline_version")
_CELL = ("kernel", "pass", "gpu", "environment", "metric", "statistic")
# what tells apart two rows of one cell whose sides print alike: when each side ran
_OBSERVED = ("candidate_observed_at", "baseline_observed_at")
_STEP = VerbColumns(
    show=(
        "kernel",
        "pass",
        "gpu",
        "shape",
        "implementation",
        "series",
        "from_version",
        "to_version",
        "from_value",
        "to_value",
        "ratio",
        "ratio_interval",
        "verdict",
        "q_value",
        "rule",
    ),
    answer=("from_value", "to_value", "ratio", "ratio_interval", "verdict", "q_value"),
    keys=("kernel", "pass", "gpu", "shape", "implementation", "series", "to_version"),
    # a step inside one version label says which code or when: its commits, else its time
    tiebreak=("from_commits", "to_commits", "to_observed"),
    same=("from_version", "to_version"),
    spare=("rule",),
)

_COLUMNS: dict[str, VerbColumns] = {
    "speedup": VerbColumns(
        show=(
            "kernel",
            "pass",
            *_GPU,
            "metric",
            "statistic",
            *_PAIR,
            "shape",
            "speedup",
            "speedup_interval",
            "verdict",
            "evidence",
            "candidate_ms",
            "baseline_ms",
        ),
        answer=("speedup", "speedup_interval", "verdict", "evidence"),
        keys=(*_CELL, "candidate", "baseline", "shape"),
        thin=("evidence",),
        # two implementations of one name on a side (a leaderboard user's resubmission)
        tiebreak=_OBSERVED,
    ),
    "memory": VerbColumns(
        show=(
            "kernel",
            "pass",
            *_GPU,
            *_PAIR,
            "shape",
            "memory_ratio",
            "ratio_interval",
            "verdict",
            "candidate_mib",
            "baseline_mib",
        ),
        answer=("memory_ratio", "ratio_interval", "verdict"),
        keys=(*_CELL, "candidate", "baseline", "shape"),
        tiebreak=_OBSERVED,
    ),
    "summary": VerbColumns(
        show=(
            "kernel",
            "pass",
            *_GPU,
            "metric",
            "statistic",
            "candidate",
            "baseline",
            "cases",
            "geomean_speedup",
            "geomean_interval",
            "verdict",
            "share_faster",
            "within_noise",
            "single_timings",
            "min_speedup",
            "max_speedup",
        ),
        answer=("geomean_speedup", "geomean_interval", "verdict", "cases"),
        keys=(*_CELL, "candidate", "baseline"),
    ),
    "latency": VerbColumns(
        show=(
            "kernel",
            "pass",
            *_GPU,
            "shape",
            "provider",
            "version",
            "median_ms",
            "p20_ms",
            "p80_ms",
            "status",
        ),
        answer=("median_ms",),
        keys=("kernel", "pass", "gpu", "environment", "shape", "provider", "version"),
        tiebreak=("observed_at",),
    ),
    "runs": VerbColumns(
        show=(
            "kernel",
            "pass",
            "provider",
            *_GPU,
            "shape",
            "metric",
            "statistic",
            "value",
            "unit",
            "version",
            "observed_at",
            "status",
        ),
        answer=("value", "unit"),
        keys=(
            "kernel",
            "pass",
            "provider",
            "gpu",
            "environment",
            "shape",
            "version",
            "observed_at",
        ),
    ),
    "runs serving": VerbColumns(
        show=(
            "benchmark",
            "scenario",
            "division",
            "model",
            "accelerator_model",
            "total_accelerators",
            "metric",
            "statistic",
            "value",
            "unit",
            "status",
        ),
        answer=("total_accelerators", "value", "unit"),
        keys=("benchmark", "scenario", "division", "model", "accelerator_model", "metric"),
    ),
    "gpus": VerbColumns(
        show=(
            "gpu",
            "form_factor",
            "gpu_arch",
            "environment",
            "runs",
            "kernels",
            "first_observed",
            "last_observed",
        ),
        answer=("runs",),
        keys=("gpu", "environment"),
    ),
    "kernels": VerbColumns(
        show=("kernel", "operation_family", "runs", "passes", "providers", "environments"),
        answer=("runs",),
        keys=("kernel", "operation_family"),
    ),
    "noise": VerbColumns(
        show=(
            "gpu",
            "form_factor",
            "environment",
            "latency_class",
            "pairs",
            "floor_pct",
            "source",
            "measured_pct",
            "median_change_pct",
        ),
        answer=("floor_pct", "pairs"),
        keys=("gpu", "environment", "latency_class"),
    ),
    # history: the answer is the speedup and the change, with their verdicts; a version's
    # spread (p20, p80, min, max) is one value for one run and goes first when room is short
    "history": VerbColumns(
        show=(
            "kernel",
            "pass",
            "gpu",
            "shape",
            "implementation",
            "version",
            "observed_at",
            "runs",
            "median_ms",
            "change",
            "verdict",
            "baseline",
            "speedup",
            "speedup_change",
            "speedup_verdict",
            "p20_ms",
            "p80_ms",
            # a leaderboard's record staircase (history_records): each record's value, the
            # best before it and by how much it beat it (it showed who and when, no value)
            "value_ms",
            "previous_best_ms",
            "improvement",
        ),
        answer=("median_ms", "change", "verdict", "speedup", "speedup_verdict", "value_ms"),
        keys=("kernel", "pass", "gpu", "shape", "implementation", "version", "observed_at"),
        # two points of one version label: their commits, else when each was first measured
        tiebreak=("commits", "first_observed"),
    ),
}


@dataclass(frozen=True)
class Verb:
    """One verb of the shorthand (see the module docstring)."""

    name: str
    family: str  # pairs | runs | noise | history
    summary: str  # one line for help texts
    sql: VerbSql | None = None  # None: a history verb (query/history.py)
    columns: VerbColumns | None = None  # None: every column
    chart: str | None = None  # the doors.charts function that plots it
    steps: tuple[str, ...] = ()  # a step verb: the step verdicts it lists (query/steps.py)
    in_report: bool = False  # a section of `kindex report`


_VERBS = (
    Verb("speedup", "pairs", "baseline / candidate latency per case, with interval and verdict",
         _SPEEDUP, _COLUMNS["speedup"], chart="speedup", in_report=True),
    Verb("summary", "pairs", "geometric mean speedup per kernel, pass and GPU",
         _SUMMARY, _COLUMNS["summary"], chart="summary", in_report=True),
    Verb("latency", "runs", "the runs' median latency with p20 and p80",
         _LATENCY, _COLUMNS["latency"], chart="latency", in_report=True),
    Verb("memory", "pairs", "baseline / candidate peak memory per case",
         _MEMORY, _COLUMNS["memory"], chart="memory"),
    Verb("runs", "runs", "every run with its metric and value", _RUNS, _COLUMNS["runs"]),
    Verb("gpus", "runs", "the GPU environments and their runs", _GPUS, _COLUMNS["gpus"]),
    Verb("kernels", "runs", "the kernels, their passes and implementations",
         _KERNELS, _COLUMNS["kernels"]),
    Verb("noise", "noise", "the noise model: floors per GPU and latency class",
         _NOISE, _COLUMNS["noise"]),
    Verb("history", "history", "a series' points over versions, with changes and verdicts",
         columns=_COLUMNS["history"], chart="history"),
    Verb("regressions", "history", "steps that got slower, judged by the noise model",
         columns=_STEP, steps=("regression",)),
    Verb("improvements", "history", "steps that got faster", columns=_STEP,
         steps=("improvement",)),
    # every step that moved: flagged, environment shifts, and changes the noise cannot judge
    Verb("changes", "history", "every step that moved", columns=_STEP,
         steps=("regression", "improvement", "environment shift", "insufficient")),
)  # fmt: skip
REGISTRY: dict[str, Verb] = {verb.name: verb for verb in _VERBS}
NAMES: tuple[str, ...] = tuple(REGISTRY)


def of_family(family: str) -> tuple[str, ...]:
    """The names of the verbs of one family, in registry order."""
    return tuple(verb.name for verb in _VERBS if verb.family == family)


PAIR_VERBS = of_family("pairs")
HISTORY_VERBS = of_family("history")
STEP_VERBS = tuple(verb.name for verb in _VERBS if verb.steps)
PLOT_VERBS = tuple(verb.name for verb in _VERBS if verb.chart)
REPORT_VERBS = tuple(verb.name for verb in _VERBS if verb.in_report)
# verbs whose answers read the noise model (memory pairs through the same comparable_pairs_for)
NOISE_VERBS = (*PAIR_VERBS, *of_family("noise"))
# the default columns of each verb that has them (kindex_olap.cli.table, doors.report)
VERB_COLUMNS: dict[str, VerbColumns] = {
    verb.name: verb.columns for verb in _VERBS if verb.columns is not None
}
