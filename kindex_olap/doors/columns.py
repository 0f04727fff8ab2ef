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
    show: tuple[str, ...]
    answer: tuple[str, ...] = ()


_GPU = ("gpu", "form_factor", "environment")
_PAIR = ("candidate", "candidate_version", "baseline", "baseline_version")

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
            "candidate_ms",
            "baseline_ms",
        ),
        answer=("speedup", "speedup_interval", "verdict"),
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
            "share_faster",
            "within_noise",
            "min_speedup",
            "max_speedup",
        ),
        answer=("geomean_speedup", "geomean_interval", "cases"),
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
        answer=("value",),
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
        answer=("value",),
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
    ),
    "kernels": VerbColumns(
        show=("kernel", "operation_family", "runs", "passes", "providers", "environments"),
        answer=("runs",),
    ),
}

# columns read together as one: `gpu` shows "NVIDIA H100 PCIe" (gpu and form_factor)
COMBINED: dict[str, tuple[str, str]] = {"gpu": ("gpu", "form_factor")}
# Ratios print as `3.66×`; the interval of `speedup` is the pair speedup_lo / speedup_hi.
RATIOS = frozenset({"speedup", "memory_ratio", "geomean_speedup", "min_speedup", "max_speedup"})
# display column -> (low, high) columns; any other `X_lo`/`X_hi` pair becomes `X_interval`
INTERVALS: dict[str, tuple[str, str]] = {
    "speedup_interval": ("speedup_lo", "speedup_hi"),
    "ratio_interval": ("ratio_lo", "ratio_hi"),
    "geomean_interval": ("geomean_lo", "geomean_hi"),
}
# headers shorter than the column names
HEADERS = {
    "speedup_interval": "p20–p80",
    "ratio_interval": "p20–p80",
    "geomean_interval": "interval",
    "geomean_speedup": "geomean",
    "min_speedup": "min",
    "max_speedup": "max",
    "share_faster": "faster",
    "within_noise": "in noise",
    "candidate_ms": "cand ms",
    "baseline_ms": "base ms",
    "candidate_mib": "cand MiB",
    "baseline_mib": "base MiB",
}
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
