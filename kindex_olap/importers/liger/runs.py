"""CSV rows -> run bundles: the row-by-row converter (curated path first, generic path else)
with its caches of dimension documents, and what a conversion yields."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from kindex_olap.importers.liger import rules
from kindex_olap.importers.liger.documents import (
    case_key,
    environment,
    implementation,
    make_doc,
    operation_spec,
    protocol,
    short_label,
    workload_case,
)
from kindex_olap.importers.liger.generic import (
    generic_binding,
    generic_implementation,
    generic_operation,
    generic_workload,
)
from kindex_olap.importers.liger.js import js_number, js_round, kebab, reject_constant, utc_instant
from kindex_olap.importers.liger.jsontext import Doc, digest
from kindex_olap.model.canonical import MAX_SAFE_INTEGER

MIB = 2**20


MS_TO_NS = 1_000_000
# What a row's metric_unit means, as a factor to the unit the bundles are built from: ms for
# speed, MiB for memory. Liger writes "ms" and "MB" (torch.cuda.max_memory_allocated / 2**20:
# MiB, labelled MB, so KB and GB are read as KiB and GiB too). The unit was not read: a speed
# in "us" became a latency 1000x too long and any unit at all was taken for ms.
UNIT_SCALE: dict[str, dict[str, float]] = {
    "latency": {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "μs": 1e-3, "ms": 1.0, "s": 1e3},
    "memory": {
        "B": 1 / MIB, "bytes": 1 / MIB, "KB": 1 / 1024, "KiB": 1 / 1024, "MB": 1.0, "MiB": 1.0,
        "GB": 1024.0, "GiB": 1024.0,
    },
}  # fmt: skip


def _storable(value: float, metric: str) -> bool:
    """Whether `value` (ms or MiB) is a number whose ns or bytes a bundle can hold: finite,
    and an integer JSON keeps exactly (1e308 ms made an infinite count of ns)."""
    scaled = value * (MS_TO_NS if metric == "latency" else MIB)
    return math.isfinite(scaled) and abs(scaled) <= MAX_SAFE_INTEGER


@dataclass
class Skip:
    """A row that cannot be converted, with where it came from and why."""

    file: str
    line: int
    reason: str
    detail: str
    row: dict[str, str]


@dataclass
class Converted:
    """One run bundle ready to write, with its display line and counting category."""

    external_id: str
    display: str
    bundle: Doc
    metric: str  # "latency" | "memory"
    curation: str  # "kernelindex" | "generic"
    further_gpu: bool
    generic_reason: str | None = None
    provenance: Doc | None = None  # RunProvenance (history CSV: commit, main branch)


class Converter:
    """Row-by-row converter with digest caches; collects the dimension documents it uses."""

    def __init__(self) -> None:
        self.dimensions: dict[str, Doc] = {}  # digest -> document
        self._digests: dict[tuple[Any, ...], str] = {}
        self._protocols: dict[tuple[str, str], tuple[Doc, str]] = {}
        self._envs: dict[str, tuple[Doc, str, bool] | None] = {}
        self._configs: dict[str, dict[str, Any] | None] = {}

    # cached documents ------------------------------------------------------------------------
    def _dim(self, key: tuple[Any, ...], build: Any) -> str:
        """Digest of a dimension document built once per key (and remembered for export)."""
        found = self._digests.get(key)
        if found is None:
            doc = build()
            found = digest(doc)
            self._digests[key] = found
            self.dimensions[found] = doc
        return found

    def _protocol(self, mode: str, metric: str) -> tuple[Doc, str]:
        """Protocol document and digest for a pass and metric."""
        key = (mode, metric)
        if key not in self._protocols:
            doc = protocol(mode, metric)
            self._protocols[key] = (doc, digest(doc))
        return self._protocols[key]

    def _environment(self, gpu: str) -> tuple[Doc, str, bool] | None:
        """Environment document, digest and further-GPU flag, or None for an unknown GPU."""
        if gpu not in self._envs:
            built = environment(gpu)
            self._envs[gpu] = (built[0], digest(built[0]), built[1]) if built else None
        return self._envs[gpu]

    def _config(self, text: str) -> dict[str, Any] | None:
        """The row's config as a JSON object (JSON.parse semantics: no NaN), else None."""
        if text not in self._configs:
            try:
                value = json.loads(text, parse_constant=reject_constant)
            except (ValueError, RecursionError):
                value = None
            self._configs[text] = value if isinstance(value, dict) else None
        return self._configs[text]

    # conversion -------------------------------------------------------------------------------
    def convert(self, row: dict[str, str]) -> Converted | tuple[str, str]:
        """Convert one CSV row into a run, or return (skip reason, detail)."""
        metric = {"speed": "latency", "memory": "memory"}.get(row["metric_name"])
        if metric is None:
            return "unknown_metric", f"metric_name {row['metric_name']!r}"
        scale = UNIT_SCALE[metric].get(row["metric_unit"])
        if scale is None:
            known = ", ".join(UNIT_SCALE[metric])
            return "unknown_unit", (
                f"metric_unit {row['metric_unit']!r} of metric_name {row['metric_name']!r} "
                f"(expected one of {known})"
            )
        if (bad := _bad_names(row)) is not None:
            return "bad_name", bad
        env = self._environment(row["gpu_name"])
        if env is None:
            return "unknown_gpu", f"gpu_name {row['gpu_name']!r} is in no GPU table"
        try:
            observed = utc_instant(row["timestamp"])
        except ValueError:
            return "bad_timestamp", f"timestamp {row['timestamp']!r}"
        ys = [js_number(row[c]) for c in ("y_value_50", "y_value_20", "y_value_80")]
        if scale != 1.0:  # ms and MB, Liger's own units, stay the numbers they were
            ys = [y * scale for y in ys]
        if not _storable(ys[0], metric) or ys[0] < 0 or (metric == "latency" and ys[0] == 0):
            return "bad_value", f"y_value_50 {row['y_value_50']!r}"
        cfg = self._config(row["extra_benchmark_config_str"])
        x = js_number(row["x_value"])
        curated = self._curated(row, cfg, x)
        if not isinstance(curated, str):
            return self._run(row, metric, env, observed, ys, curated, None)
        if cfg is None:
            return "unreadable_config", "extra_benchmark_config_str is not a JSON object"
        if not math.isfinite(x):
            return "non_numeric_x", f"x_value {row['x_value']!r} is not a number"
        ids = self._generic_ids(row, cfg, x)
        return self._run(row, metric, env, observed, ys, ids, curated)

    def _curated(
        self, row: dict[str, str], cfg: dict[str, Any] | None, x: float
    ) -> tuple[str, str, str, str] | str:
        """KernelIndex's path: (impl, workload digests, case key, kernel), or why not curated."""
        kernel = rules.KERNELS_BY_NAME.get(row["kernel_name"])
        if kernel is None:
            return "uncurated_kernel"
        if row["kernel_operation_mode"] not in rules.MODES:
            return "uncurated_mode"
        provider = row["kernel_provider"]
        if provider not in rules.PROVIDERS:
            return "uncurated_provider"
        if cfg is None or not (math.isfinite(x) and x > 0 and float(x).is_integer()):
            return "unbound_config"
        binding = kernel.bind(int(x), row["x_name"], cfg)
        if binding is None:
            return "unbound_config"
        op = self._dim(("op", kernel.csv_name), lambda: operation_spec(kernel))
        impl = self._dim(
            ("impl", kernel.csv_name, provider), lambda: implementation(kernel, provider, op)
        )
        key = case_key(binding.axes, binding.dtype)
        work = self._dim(("case", kernel.csv_name, key), lambda: workload_case(kernel, op, binding))
        return impl, work, key, kernel.csv_name

    def _generic_ids(
        self, row: dict[str, str], cfg: dict[str, Any], x: float
    ) -> tuple[str, str, str, str]:
        """kindex's generic path: digests and case key for any readable row."""
        name, provider = row["kernel_name"], row["kernel_provider"]
        b = generic_binding(x, row["x_name"], cfg)
        op = self._dim(("gop", name), lambda: generic_operation(name))
        impl = self._dim(
            ("gimpl", name, provider), lambda: generic_implementation(name, provider, op)
        )
        key = b.key()
        work = self._dim(("gcase", name, key), lambda: generic_workload(name, op, b))
        return impl, work, key, name

    def _run(
        self,
        row: dict[str, str],
        metric: str,
        env: tuple[Doc, str, bool],
        observed: str,
        ys: list[float],
        ids: tuple[str, str, str, str],
        generic_reason: str | None,
    ) -> Converted:
        """Assemble the run bundle (KernelIndex's layout for latency, kindex's for memory)."""
        impl_digest, work_digest, key, csv_name = ids
        mode, provider, gpu, ts = (
            row["kernel_operation_mode"], row["kernel_provider"], row["gpu_name"], row["timestamp"]
        )  # fmt: skip
        env_doc, env_digest, further = env
        proto_doc, proto_digest = self._protocol(mode, metric)
        parts = [csv_name, mode, provider, kebab(gpu), key, kebab(ts)]
        if metric == "memory":
            parts.insert(2, "memory")
        external_id = "/".join(parts)
        spec: Doc = {
            "implementationDigest": impl_digest,
            "workloadDigest": work_digest,
            "protocolDigest": proto_digest,
            "environmentDigest": env_digest,
            "status": "passed",
            "observedAt": observed,
        }
        spread = _storable(ys[1], metric) and _storable(ys[2], metric)
        native: Doc = {
            "source": rules.SOURCE_SLUG,
            "benchmark": f"{csv_name}/{mode}",
            "externalId": external_id,
        }
        if metric == "latency":
            spec["timing"] = {
                "primaryStatistic": "median",
                "latencyNs": {"median": js_round(ys[0] * MS_TO_NS)},
            }
            if spread:
                spec["measurements"] = [
                    _measure("latency", "ns", stat, js_round(y * MS_TO_NS))
                    for stat, y in (("p20", ys[1]), ("p80", ys[2]))
                ]
            native["metrics"] = {
                "ms_50": ys[0],
                **({"ms_20": ys[1], "ms_80": ys[2]} if spread else {}),
            }
            name_prefix = "liger"
        else:
            stats = [("median", ys[0])] + ([("p20", ys[1]), ("p80", ys[2])] if spread else [])
            spec["measurements"] = [
                _measure("memory", "bytes", stat, js_round(y * MIB)) for stat, y in stats
            ]
            native["metrics"] = {
                "mib_50": ys[0], **({"mib_20": ys[1], "mib_80": ys[2]} if spread else {})
            }  # fmt: skip
            name_prefix = "liger-memory"
        spec["sourceNative"] = native
        curation = "generic" if generic_reason else "kernelindex"
        # an empty cell is no version: as a label "" it was a version named "" (history's
        # points and same-version pairs of its own)
        version = row["liger_version"]
        labels = {"liger_version": version} if version else {}
        if generic_reason or further or metric == "memory":
            labels |= {"curation": curation, "metric": metric}
            if generic_reason:
                labels["generic_reason"] = generic_reason
            if further:
                labels["gpu_table"] = "kindex"
        title_kernel = (
            rules.KERNELS_BY_NAME[csv_name].title if curation == "kernelindex" else csv_name
        )
        run = make_doc(
            "BenchmarkRun",
            {
                "name": kebab(f"{name_prefix}-{csv_name}-{mode}-{provider}-{gpu}-{key}-{ts}"),
                "title": f"{title_kernel} · {provider} · {mode}",
                "labels": {k: short_label(v) for k, v in labels.items()},
            },
            spec,
        )
        bundle = {"run": run, "protocol": proto_doc, "environment": env_doc}
        return Converted(
            external_id, rules.provider_title(provider), bundle, metric, curation, further,
            generic_reason,
        )  # fmt: skip


def _measure(metric: str, unit: str, statistic: str, value: int) -> Doc:
    """One measurement entry."""
    return {"metric": metric, "unit": unit, "statistic": statistic, "value": value}


@dataclass
class Conversion:
    """Result of converting one or more CSVs: runs by externalId, skips, dimension documents."""

    runs: dict[str, Converted] = field(default_factory=dict)
    skips: list[Skip] = field(default_factory=list)
    duplicates: int = 0
    rows_read: int = 0
    dimensions: dict[str, Doc] = field(default_factory=dict)


# A kernel or provider name becomes part of `benchmark` (kernel/pass), `externalId`
# (benchmark/provider/gpu/...) and document names of at most 200 characters: a '/' would split it
# into kernel and pass, and a long one would make bundles that ingest rejects.
NAME_LIMITS = {"kernel_name": 80, "kernel_provider": 60}


def _bad_names(row: dict[str, str]) -> str | None:
    """Why the row's kernel or provider name cannot name a run, or None."""
    for column, limit in NAME_LIMITS.items():
        name = row[column]
        if not name.strip():  # a run of no kernel or of no implementation
            return f"{column} is empty"
        if "/" in name or len(name) > limit or not name.isprintable():
            return f"{column} {name[:60]!r}: at most {limit} printable characters, no '/'"
    return None
