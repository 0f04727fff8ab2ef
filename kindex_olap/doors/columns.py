"""How columns read: which are combined, which are ratios and intervals, their titles and units.
Which columns each verb shows by default is the verb registry's (query/verbs.py: VerbColumns).

The terminal table (`kindex_olap.cli.table`) and the report's row tables read both. CSV, JSON
and Markdown ignore them: they keep every column.
"""

from __future__ import annotations

from typing import Any

from kindex_olap.query.verbs import VERB_COLUMNS, VerbColumns

_GPU = ("gpu", "form_factor", "environment")
_PAIR = ("candidate", "candidate_version", "baseline", "baseline_version")

# columns read together as one: `gpu` shows "NVIDIA H100 PCIe" (the views' gpu is the model
# already; a table with a bare product, e.g. `kindex sql` over environments, gets its form
# factor: kindex_olap.labels.gpu_label)
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
        "improvement",  # a leaderboard record: the best before it / its value
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
    "candidate_observed_at": "cand observed",
    "baseline_observed_at": "base observed",
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
    "previous_best_ms": "best before ms",
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
    (_GPU, "{gpu} ({environment})"),  # gpu names the model (form factor included)
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


def number(value: float) -> str:
    """Two decimals in the usual range (3.66, 0.39), three significant digits outside it."""
    return f"{value:.2f}" if 0.01 <= abs(value) < 1000 else f"{value:.3g}"


def interval_text(lo: Any, hi: Any) -> str:
    """`[0.11, 0.15]`, or empty when a bound is missing."""
    if lo is None or hi is None:
        return ""
    return f"[{number(lo)}, {number(hi)}]"
