"""Which columns answer each verb's question: the one table a new verb or column adds a line to.

The terminal table (`kindex_olap.cli.table`) and the report's row tables read it. CSV, JSON and
Markdown ignore it: they keep every column.

- `show`: the columns a verb shows by default, in order. A column whose value is the same on
  every row moves into the title line instead; the others are left out and named on stderr
  (`--wide` shows them). A pair `X_lo`, `X_hi` shows as one interval column (INTERVALS).
- `answer`: the columns that always stay in the table, even when constant (one-row results).
A verb missing here (or `kindex sql`) shows every column; a column a verb gains later is left
out by default, and named, until it is listed here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerbColumns:
    """`show`: default columns in order; `answer`: always kept (never folded, never dropped to
    fit); `keys`: the columns that tell rows apart, dropped to fit only as a last resort;
    `thin`: answer columns kept only when some row's value is not `None`/empty and is not in
    `thin_ok` (evidence says where a side was timed once)."""

    show: tuple[str, ...]
    answer: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    thin: tuple[str, ...] = ()


_GPU = ("gpu", "form_factor", "environment")
_PAIR = ("candidate", "candidate_version", "baseline", "baseline_version")
_CELL = ("kernel", "pass", "gpu", "environment", "metric", "statistic")
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
    answer=("ratio", "ratio_interval", "verdict", "q_value"),
    keys=("kernel", "pass", "gpu", "shape", "implementation", "series", "to_version"),
)

VERB_COLUMNS: dict[str, VerbColumns] = {
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
        ),
        answer=("median_ms", "change", "verdict", "speedup", "speedup_verdict"),
        keys=("kernel", "pass", "gpu", "shape", "implementation", "version", "observed_at"),
    ),
    "regressions": _STEP,
    "improvements": _STEP,
    "changes": _STEP,
}

# columns read together as one: `gpu` shows "NVIDIA H100 PCIe" (gpu and form_factor)
COMBINED: dict[str, tuple[str, str]] = {"gpu": ("gpu", "form_factor")}
# Ratios print as `3.66×`; the interval of `speedup` is the pair speedup_lo / speedup_hi.
RATIOS = frozenset(
    {
        "speedup",
        "memory_ratio",
        "geomean_speedup",
        "min_speedup",
        "max_speedup",
        "ratio",
        "change",
        "speedup_change",
    }
)
# display column -> (low, high) columns; any other `X_lo`/`X_hi` pair becomes `X_interval`
INTERVALS: dict[str, tuple[str, str]] = {
    "speedup_interval": ("speedup_lo", "speedup_hi"),
    "ratio_interval": ("ratio_lo", "ratio_hi"),
    "geomean_interval": ("geomean_lo", "geomean_hi"),
}
# headers shorter than the column names; a number column's unit is in its header (UNITS)
HEADERS = {
    # the run's own p20-p80, widened by both sides' run-to-run noise (docs/uncertainty.md)
    "speedup_interval": "interval±noise",
    "ratio_interval": "interval±noise",
    "run_speedup_interval": "run p20–p80",
    "geomean_interval": "bootstrap",
    "geomean_speedup": "geomean",
    "min_speedup": "min",
    "max_speedup": "max",
    "share_faster": "faster",
    "within_noise": "in noise",
    "candidate_ms": "cand ms",
    "baseline_ms": "base ms",
    "candidate_mib": "cand MiB",
    "baseline_mib": "base MiB",
    "floor_pct": "floor %",
    "measured_pct": "measured %",
    "median_change_pct": "median change %",
    "single_timings": "single",
    "speedup_change": "sp. change",
    "speedup_verdict": "sp. verdict",
    "total_accelerators": "accelerators",
}
# a column named `X_<suffix>` reads `X <unit>` in a table header
UNITS = {"_ms": "ms", "_mib": "MiB", "_pct": "%", "_s": "s", "_ns": "ns"}
# names are never shortened: a name column that does not fit is left out whole, and named
NAMES = frozenset(
    {
        "kernel",
        "gpu",
        "provider",
        "implementation",
        "candidate",
        "baseline",
        "operation_family",
        "model",
        "accelerator_model",
        "benchmark",
        "candidate_name",
        "baseline_name",
    }
)
# text cut from its end (its start says the most)
HEAD_CUT = frozenset({"evidence", "verdict", "speedup_verdict"})
# a `thin` column stays when some row's value holds one of these words
THIN_WORDS = ("single timing",)
# a step's from/to values are in the unit of its series (latency in ms, speedup a ratio)
SERIES_UNITS = {"latency": "ms", "speedup": "×"}
# colour (and word) of each verdict: green better, red worse, dim within noise
VERDICT_STYLES = {
    "faster": "green",
    "smaller": "green",
    "slower": "red",
    "larger": "red",
    "within noise": "dim",
}
# constant columns read together in the title: a phrase is used when all its columns present
# in the result are constant; `{name}` is the value, absent or empty parts drop out
TITLE_PHRASES: tuple[tuple[tuple[str, ...], str], ...] = (
    (_GPU, "{gpu} {form_factor} ({environment})"),
    (_PAIR, "{candidate} {candidate_version} vs {baseline} {baseline_version}"),
    (("candidate", "baseline"), "{candidate} vs {baseline}"),
    (("statistic", "metric"), "{statistic} {metric}"),
)
# constant columns whose value speaks for itself in the title (others read `name value`)
SELF_EVIDENT = frozenset({"kernel", "pass", "gpu", "shape", "provider", "environment"})


def header(name: str) -> str:
    """A column's table header: its short name, with its unit (`median_ms` -> `median ms`)."""
    if name in HEADERS:
        return HEADERS[name]
    for suffix, unit in UNITS.items():
        if name.endswith(suffix) and len(name) > len(suffix):
            return f"{name.removesuffix(suffix)} {unit}"
    return name


def verb_columns(verb: str | None) -> VerbColumns | None:
    """The verb's columns, or None: show every column."""
    return VERB_COLUMNS.get(verb or "")


def interval_columns(columns: list[str]) -> dict[str, tuple[str, str]]:
    """Display interval -> (low, high) for every `X_lo`/`X_hi` pair among `columns`."""
    present = set(columns)
    found = {}
    for name in columns:
        if name.endswith("_lo") and f"{name[:-3]}_hi" in present:
            stem = name[:-3]
            display = next(
                (d for d, (lo, _) in INTERVALS.items() if lo == name), f"{stem}_interval"
            )
            found[display] = (name, f"{stem}_hi")
    return found
