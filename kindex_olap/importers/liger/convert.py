"""Convert Liger-Kernel's benchmark CSV into KernelIndex bundles.

Each CSV row becomes one run bundle (`{run, protocol, environment}`) in the seed text format,
plus the WorkloadCase / ImplementationRevision / OperationSpec documents it points at
(written to `_dimensions.jsonl`).  Rows KernelIndex's public importer curates get exactly
the documents and digests KernelIndex builds; everything else Liger measured gets kindex's
generic binding, its own labels, and (for memory rows) a peak-memory protocol.
The conversion is pure; `import_liger` adds the file I/O and the source resolution.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from kindex_olap.errors import ConfigError, SourceError
from kindex_olap.importers.liger import provenance as P
from kindex_olap.importers.liger import rules as R

COLUMNS = (
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit",
    "x_name", "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80",
    "extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version",
)  # fmt: skip
DIMENSIONS_FILE = "_dimensions.jsonl"
MIB = 2**20
MS_TO_NS = 1_000_000

Doc = dict[str, Any]


# --- JSON as KernelIndex writes it ----------------------------------------------------------


def es_number(value: int | float) -> str:
    """Format a number the way ECMAScript's Number::toString does (JSON.stringify)."""
    if isinstance(value, bool):
        raise TypeError("booleans are not numbers")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ValueError(f"non-finite number {value!r} has no JSON form")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits_t = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_t.digits))
    k, n = len(digits), len(digits) + int(digits_t.exponent)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exp = n - 1
    mant = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mant}e{'+' if exp > 0 else '-'}{abs(exp)}"


def _jsonb_key(key: str) -> tuple[int, bytes]:
    """PostgreSQL jsonb key order (shorter keys first, then bytewise), as the seeds show."""
    raw = key.encode()
    return (len(raw), raw)


def pretty_json(value: Any, pad: str = "") -> str:
    """JSON.stringify(value, null, 2) over jsonb-ordered keys: the seed files' layout."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = pad + "  "
        items = (
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {pretty_json(value[k], inner)}"
            for k in sorted(value, key=_jsonb_key)
        )
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        inner = pad + "  "
        items = (inner + pretty_json(v, inner) for v in value)
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    if value is None or isinstance(value, bool | str):
        return json.dumps(value, ensure_ascii=False)
    return es_number(value)


def bundle_text(display: str, bundle: Doc) -> str:
    """The seed text format: display line, blank line, pretty JSON, no trailing newline."""
    return f"{display}\n\n{pretty_json(bundle)}"


def digest(doc: Doc) -> str:
    """sha256 of the RFC 8785 JSON of {apiVersion, kind, spec}: KernelIndex's document id."""
    try:
        from kindex_olap.model.canonical import document_digest
    except ImportError:  # the lead's module not landed yet: same rule through rfc8785
        import rfc8785

        body = {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "spec": doc["spec"]}
        return "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()
    return document_digest(doc)


# --- small helpers with KernelIndex (JavaScript) semantics ----------------------------------

_KEBAB = re.compile(r"[^a-z0-9]+")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def kebab(value: str) -> str:
    """Lower-case, runs of other characters to '-', trimmed, cut to 100 characters."""
    return _KEBAB.sub("-", value.lower()).strip("-")[:100]


def js_number(text: str) -> float:
    """JavaScript's Number(string): '' is 0, decimals and Infinity parse, the rest is NaN."""
    s = text.strip()
    if not s:
        return 0.0
    if _DECIMAL.fullmatch(s):
        return float(s)
    if s.lstrip("+-") == "Infinity":
        return -math.inf if s.startswith("-") else math.inf
    return math.nan


def utc_instant(timestamp: str) -> str:
    """ISO instant with milliseconds and Z; zone-less CSV timestamps are UTC (as the seeds)."""
    moment = datetime.fromisoformat(timestamp.strip().replace(" ", "T"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def eval_axis(expression: str, values: dict[str, int]) -> int:
    """Evaluate a derived-axis expression (integers, names, + - * // %, parentheses)."""
    tokens = re.findall(r"\d+|[a-z_][a-z0-9_]*|//|[+\-*%()]", expression)
    pos = 0

    def factor() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            val = total()
            pos += 1
            return val
        return int(tok) if tok.isdigit() else values[tok]

    def product() -> int:
        nonlocal pos
        val = factor()
        while pos < len(tokens) and tokens[pos] in ("*", "//", "%"):
            op = tokens[pos]
            pos += 1
            rhs = factor()
            val = val * rhs if op == "*" else val % rhs if op == "%" else val // rhs
        return val

    def total() -> int:
        nonlocal pos
        val = product()
        while pos < len(tokens) and tokens[pos] in ("+", "-"):
            op = tokens[pos]
            pos += 1
            rhs = product()
            val = val + rhs if op == "+" else val - rhs
        return val

    return total()


def _doc(kind: str, metadata: Doc, spec: Doc) -> Doc:
    """A KernelIndex document."""
    return {"apiVersion": R.API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def _label(value: str) -> str:
    """A label value: a string of at most 200 characters."""
    return value[:200]


# --- curated (KernelIndex-identical) documents ---------------------------------------------


def case_key(axes: dict[str, Any], dtype: str) -> str:
    """KernelIndex's stable case identity: sorted `name+value` pairs, then the dtype."""
    pairs = "-".join(f"{name}{es_number(axes[name])}" for name in sorted(axes))
    return f"{pairs}-{dtype}"


def _dtype_token(dtype: str) -> str:
    """Signature dtype: 'cfg' tensors declare the float family."""
    return "float" if dtype == "cfg" else dtype


def operation_spec(kernel: R.KernelSpec) -> Doc:
    """The OperationSpec KernelIndex builds for a curated kernel."""
    axes: dict[str, Doc] = {}
    for tensor in (*kernel.inputs, *kernel.outputs):
        for dim in tensor.shape:
            if isinstance(dim, str) and dim not in kernel.derived:
                axes.setdefault(dim, {"role": "variable", "type": "integer"})
    for name, expression in kernel.derived.items():
        axes[name] = {"role": "derived", "type": "integer", "expression": expression}

    def arg(t: R.Tensor) -> Doc:
        return {"name": t.name, "tensor": {"shape": list(t.shape), "dtype": _dtype_token(t.dtype)}}

    spec = {
        "family": kernel.family,
        "axes": axes,
        "inputs": [arg(t) for t in kernel.inputs],
        "outputs": [arg(t) for t in kernel.outputs],
        "semantics": {"mutation": "none", "determinism": "unspecified"},
    }
    labels = {"operation": kernel.csv_name, "curation": "kernelindex"}
    meta = {"name": kernel.slug, "title": kernel.title, "labels": labels}
    return _doc("OperationSpec", meta, spec)


def workload_case(kernel: R.KernelSpec, op_digest: str, b: R.Binding) -> Doc:
    """The WorkloadCase KernelIndex builds for one bound config of a curated kernel."""
    values = dict(b.axes)
    for name, expression in kernel.derived.items():
        values[name] = eval_axis(expression, values)
    tensors = {
        t.name: {
            "shape": [d if isinstance(d, int) else values[d] for d in t.shape],
            "dtype": b.dtype if t.dtype == "cfg" else t.dtype,
        }
        for t in kernel.inputs
    }
    spec: Doc = {"operationSpecDigest": op_digest, "axes": dict(b.axes), "tensors": tensors}
    if b.scalars:
        spec["scalars"] = {k: {"dtype": "fp32", "value": v} for k, v in b.scalars.items()}
    spec["correctness"] = {"comparator": "not_asserted"}
    key = case_key(b.axes, b.dtype)
    shown = ", ".join(f"{k}={es_number(v)}" for k, v in b.axes.items())
    labels = {"operation": kernel.csv_name, "dtype": b.dtype, "shape": _label(key)}
    meta = {
        "name": kebab(f"{kernel.slug}-{key}"),
        "title": f"{kernel.title} · {shown} · {b.dtype}",
        "labels": {**labels, "curation": "kernelindex"},
    }
    return _doc("WorkloadCase", meta, spec)


def implementation(kernel: R.KernelSpec, provider: str, op_digest: str) -> Doc:
    """The ImplementationRevision KernelIndex builds for a curated (kernel, provider)."""
    entry = R.PROVIDERS[provider]
    spec: Doc = {
        "projectRevision": {},
        "operation": {"specDigest": op_digest},
        "callable": {"language": entry.language},
        "support": {"hardwareArchitectures": [], "dtypes": []},
    }
    if entry.pip_package:
        spec["buildVariants"] = [
            {"name": "pip", "install": {"kind": "pip", "package": entry.pip_package}}
        ]
    licensing = {"declared": entry.declared}
    if entry.concluded:
        licensing["concluded"] = entry.concluded
    spec["licensing"] = licensing
    labels = {"provider": provider, "operation": kernel.csv_name, "display": entry.title}
    meta = {
        "name": kebab(f"liger-bench-{kernel.csv_name}-{provider}"),
        "title": f"{kernel.title} · {entry.title}",
        "labels": {**labels, "curation": "kernelindex"},
    }
    return _doc("ImplementationRevision", meta, spec)


def protocol(mode: str, metric: str) -> Doc:
    """Per-pass protocol: KernelIndex's do_bench latency one, or kindex's peak-memory one."""
    what = R.MODES.get(mode) or R.EXTRA_MODES.get(mode) or mode
    harness = {"name": "Liger-Kernel benchmark scripts", "repository": R.LIGER_REPO_URL}
    if metric == "memory":
        spec = {
            "harness": harness,
            # no timer: the probe is torch.cuda.max_memory_allocated (metric memory, bytes)
            "measurement": {"timer": "max_memory_allocated", "primaryStatistic": "median"},
            "comparability": {
                "family": "liger_kernel_bench_memory",
                "notes": R.PROTOCOL_NOTES_MEMORY.format(what=what),
            },
        }
        meta = {
            "name": kebab(f"liger-bench-peak-memory-{mode}"),
            "title": f"Liger benchmark harness · peak memory · {mode} pass",
        }
        return _doc("BenchmarkProtocol", meta, spec)
    spec = {
        "harness": harness,
        "measurement": {"timer": "cuda_events", "primaryStatistic": "median"},
        "comparability": {
            "family": "liger_kernel_bench",
            "notes": R.PROTOCOL_NOTES_LATENCY.format(what=what),
        },
    }
    meta = {
        "name": kebab(f"liger-bench-do-bench-{mode}"),
        "title": f"Liger benchmark harness · {mode} pass",
    }
    return _doc("BenchmarkProtocol", meta, spec)


def environment(gpu: str) -> tuple[Doc, bool] | None:
    """Hardware-only environment; the flag says whether it comes from kindex's further table."""
    hardware = R.HARDWARE.get(gpu)
    further = hardware is None
    hardware = hardware or R.EXTRA_HARDWARE.get(gpu)
    if hardware is None:
        return None
    meta = {
        "name": kebab(f"liger-bench-{gpu}"),
        "title": f"Liger benchmark host · {gpu.removeprefix('NVIDIA ')}",
    }
    return _doc("ExecutionEnvironment", meta, {"hardware": dict(hardware), "software": {}}), further


# --- generic (kindex) documents -------------------------------------------------------------


def generic_operation(kernel_name: str) -> Doc:
    """kindex's OperationSpec for a kernel bound generically (no verified signature)."""
    spec = {
        "family": kernel_name,
        "binding": "kindex-generic",
        "benchmark": f"benchmark/scripts/benchmark_{kernel_name}.py",
        "semantics": {"mutation": "none", "determinism": "unspecified"},
    }
    labels = {"operation": kernel_name, "curation": "generic"}
    meta = {"name": kebab(f"liger-generic-{kernel_name}"), "title": kernel_name, "labels": labels}
    return _doc("OperationSpec", meta, spec)


@dataclass(frozen=True)
class GenericBinding:
    """x plus integer config keys as axes; every other config key as a digested parameter."""

    axes: dict[str, int | float]
    dtype: str | None
    parameters: dict[str, Any]

    def key(self) -> str:
        """Case key: sorted axes, dtype, and a short hash of the parameters (if any)."""
        base = case_key(self.axes, self.dtype or "na")
        if not self.parameters:
            return base
        blob = json.dumps(self.parameters, sort_keys=True, separators=(",", ":"))
        return f"{base}-p{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def generic_binding(x: float, x_name: str, cfg: dict[str, Any]) -> GenericBinding:
    """Bind any readable config: the swept x and integer keys become axes."""
    axes: dict[str, int | float] = {}
    params: dict[str, Any] = {}
    for name, value in cfg.items():
        if name == x_name:
            continue
        as_int = R.pos_int(value)
        if as_int is not None:
            axes[name] = as_int
        else:
            params[name] = value
    axes[x_name] = int(x) if float(x).is_integer() else x
    dtype = R.dtype_of(cfg.get("dtype"))
    if dtype is not None:
        params.pop("dtype")
    return GenericBinding(axes, dtype, params)


def generic_workload(kernel_name: str, op_digest: str, b: GenericBinding) -> Doc:
    """kindex's WorkloadCase for a generic binding (parameters inside the digest)."""
    spec: Doc = {"operationSpecDigest": op_digest, "axes": dict(b.axes)}
    if b.dtype:
        spec["dtype"] = b.dtype
    if b.parameters:
        spec["parameters"] = b.parameters
    spec["correctness"] = {"comparator": "not_asserted"}
    key = b.key()
    labels = {"operation": kernel_name, "shape": _label(key), "curation": "generic"}
    if b.dtype:
        labels["dtype"] = b.dtype
    shown = ", ".join(f"{k}={es_number(v)}" for k, v in b.axes.items())
    meta = {
        "name": kebab(f"liger-generic-{kernel_name}-{key}"),
        "title": f"{kernel_name} · {shown} · {b.dtype or 'dtype n/a'}",
        "labels": labels,
    }
    return _doc("WorkloadCase", meta, spec)


def generic_implementation(kernel_name: str, provider: str, op_digest: str) -> Doc:
    """kindex's ImplementationRevision for a provider of a generically bound kernel."""
    known = R.PROVIDERS.get(provider)
    language = known.language if known else ("triton" if provider.startswith("liger") else "python")
    spec = {
        "operation": {"specDigest": op_digest},
        "provider": provider,
        "callable": {"language": language},
    }
    display = R.provider_title(provider)
    labels = {"provider": provider, "operation": kernel_name, "display": display}
    meta = {
        "name": kebab(f"liger-generic-{kernel_name}-{provider}"),
        "title": f"{kernel_name} · {display}",
        "labels": {**labels, "curation": "generic"},
    }
    return _doc("ImplementationRevision", meta, spec)


# --- rows -> runs ----------------------------------------------------------------------------


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
                value = json.loads(text, parse_constant=_reject_constant)
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
        env = self._environment(row["gpu_name"])
        if env is None:
            return "unknown_gpu", f"gpu_name {row['gpu_name']!r} is in no GPU table"
        try:
            observed = utc_instant(row["timestamp"])
        except ValueError:
            return "bad_timestamp", f"timestamp {row['timestamp']!r}"
        ys = [js_number(row[c]) for c in ("y_value_50", "y_value_20", "y_value_80")]
        if not math.isfinite(ys[0]) or ys[0] < 0 or (metric == "latency" and ys[0] == 0):
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
        kernel = R.KERNELS_BY_NAME.get(row["kernel_name"])
        if kernel is None:
            return "uncurated_kernel"
        if row["kernel_operation_mode"] not in R.MODES:
            return "uncurated_mode"
        provider = row["kernel_provider"]
        if provider not in R.PROVIDERS:
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
        spread = math.isfinite(ys[1]) and math.isfinite(ys[2])
        native: Doc = {
            "source": R.SOURCE_SLUG,
            "benchmark": f"{csv_name}/{mode}",
            "externalId": external_id,
        }
        if metric == "latency":
            spec["timing"] = {
                "primaryStatistic": "median",
                "latencyNs": {"median": _js_round(ys[0] * MS_TO_NS)},
            }
            if spread:
                spec["measurements"] = [
                    _measure("latency", "ns", stat, _js_round(y * MS_TO_NS))
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
                _measure("memory", "bytes", stat, _js_round(y * MIB)) for stat, y in stats
            ]
            native["metrics"] = {
                "mib_50": ys[0], **({"mib_20": ys[1], "mib_80": ys[2]} if spread else {})
            }  # fmt: skip
            name_prefix = "liger-memory"
        spec["sourceNative"] = native
        curation = "generic" if generic_reason else "kernelindex"
        labels = {"liger_version": row["liger_version"]}
        if generic_reason or further or metric == "memory":
            labels |= {"curation": curation, "metric": metric}
            if generic_reason:
                labels["generic_reason"] = generic_reason
            if further:
                labels["gpu_table"] = "kindex"
        title_kernel = R.KERNELS_BY_NAME[csv_name].title if curation == "kernelindex" else csv_name
        run = _doc(
            "BenchmarkRun",
            {
                "name": kebab(f"{name_prefix}-{csv_name}-{mode}-{provider}-{gpu}-{key}-{ts}"),
                "title": f"{title_kernel} · {provider} · {mode}",
                "labels": {k: _label(v) for k, v in labels.items()},
            },
            spec,
        )
        bundle = {"run": run, "protocol": proto_doc, "environment": env_doc}
        return Converted(
            external_id, R.provider_title(provider), bundle, metric, curation, further,
            generic_reason,
        )  # fmt: skip


def _reject_constant(name: str) -> Any:
    """JSON.parse rejects NaN and Infinity; so does the importer."""
    raise ValueError(f"{name} is not JSON")


def _js_round(value: float) -> int:
    """Math.round: halves round up (towards +infinity)."""
    return math.floor(value + 0.5)


def _measure(metric: str, unit: str, statistic: str, value: int) -> Doc:
    """One measurement entry."""
    return {"metric": metric, "unit": unit, "statistic": statistic, "value": value}


# --- reading CSVs ---------------------------------------------------------------------------


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, str], str | None]]:
    """(line, row, problem) per CSV record; problem names a ragged record; no header column
    of Liger's 15 may be missing (SourceError)."""
    import csv

    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise SourceError(f"{path}: cannot be opened ({exc.strerror})") from exc
    with handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise SourceError(f"{path}: line 1: empty file, expected a CSV header")
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise SourceError(
                f"{path}: line 1 (header): missing column(s) {', '.join(missing)}",
                hint="expected Liger-Kernel's benchmark/data/all_benchmark_data.csv layout",
            )
        # the history CSV's provenance columns come along when present (importers/liger/provenance)
        names = COLUMNS + tuple(c for c in P.COLUMNS if c in header)
        at = [header.index(c) for c in names]
        line = reader.line_num + 1
        try:
            for record in reader:
                if record:
                    problem = None
                    if len(record) != len(header):
                        problem = f"expected {len(header)} fields, found {len(record)}"
                    padded = record + [""] * (len(header) - len(record))
                    yield line, {c: padded[i] for c, i in zip(names, at, strict=True)}, problem
                line = reader.line_num + 1
        except (csv.Error, UnicodeDecodeError) as exc:
            raise SourceError(f"{path}: line {line}: malformed CSV ({exc})") from exc


# --- the whole conversion -------------------------------------------------------------------


@dataclass
class Conversion:
    """Result of converting one or more CSVs: runs by externalId, skips, dimension documents."""

    runs: dict[str, Converted] = field(default_factory=dict)
    skips: list[Skip] = field(default_factory=list)
    duplicates: int = 0
    rows_read: int = 0
    dimensions: dict[str, Doc] = field(default_factory=dict)


def convert_csvs(paths: Iterable[Path], converter: Converter | None = None) -> Conversion:
    """Convert every row of the given CSVs; the first row of an externalId wins."""
    conv = converter or Converter()
    out = Conversion()
    for path in paths:
        for line, row, problem in read_rows(path):
            out.rows_read += 1
            if problem:
                out.skips.append(Skip(str(path), line, "ragged_row", problem, row))
                continue
            result = conv.convert(row)
            if isinstance(result, tuple):
                out.skips.append(Skip(str(path), line, result[0], result[1], row))
            elif result.external_id in out.runs:
                out.duplicates += 1
            else:
                result.provenance = P.provenance(result.bundle["run"], row)
                out.runs[result.external_id] = result
    out.dimensions = conv.dimensions
    return out


def run_file_name(external_id: str) -> str:
    """Deterministic, filesystem-safe file name of a run: a hash of its externalId."""
    return f"liger_{hashlib.sha256(external_id.encode()).hexdigest()[:20]}.txt"


# --- the library entry point ----------------------------------------------------------------


@dataclass
class LigerImportReport:
    """What one import did: rows, runs by kind, skips by reason, files written."""

    sources: list[str] = field(default_factory=list)
    rows_read: int = 0
    runs: int = 0
    latency_curated: int = 0
    latency_generic: int = 0
    memory_runs: int = 0
    further_gpu_runs: int = 0
    kernelindex_exact: int = 0
    generic_reasons: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    files_written: int = 0
    files_unchanged: int = 0
    dimension_documents: int = 0
    raw_dir: str = ""

    def summary(self) -> str:
        """Human-readable lines for the CLI."""
        lines = [
            f"rows read: {self.rows_read} from {len(self.sources)} CSV file(s)",
            f"runs: {self.runs} (latency curated {self.latency_curated}, latency generic "
            f"{self.latency_generic}, memory {self.memory_runs}; on further GPUs "
            f"{self.further_gpu_runs}; KernelIndex-identical {self.kernelindex_exact})",
            f"files written: {self.files_written}, unchanged: {self.files_unchanged} "
            f"in {self.raw_dir}",
            f"duplicate rows (same externalId): {self.duplicates}",
        ]
        if self.generic_reasons:
            lines.append("generic binding because: " + _counts(self.generic_reasons))
        lines.append("skipped: " + (_counts(self.skipped) if self.skipped else "none"))
        return "\n".join(lines)


def _counts(counts: dict[str, int]) -> str:
    """'a 3, b 1' in descending count order."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def report_from(conversion: Conversion, sources: list[str]) -> LigerImportReport:
    """Count a conversion's runs by kind and its skips by reason."""
    rep = LigerImportReport(sources=sources, rows_read=conversion.rows_read)
    reasons: Counter[str] = Counter()
    for run in conversion.runs.values():
        rep.runs += 1
        rep.further_gpu_runs += run.further_gpu
        if run.metric == "memory":
            rep.memory_runs += 1
        elif run.curation == "kernelindex":
            rep.latency_curated += 1
            rep.kernelindex_exact += not run.further_gpu
        else:
            rep.latency_generic += 1
        if run.generic_reason:
            reasons[run.generic_reason] += 1
    rep.generic_reasons = dict(reasons)
    rep.skipped = dict(Counter(s.reason for s in conversion.skips))
    rep.duplicates = conversion.duplicates
    rep.dimension_documents = len(conversion.dimensions)
    return rep


def write_if_changed(path: Path, text: str) -> bool:
    """Write text unless the file already holds exactly it; True when written."""
    data = text.encode()
    if path.exists() and path.read_bytes() == data:
        return False
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return True


def write_dimensions(raw_dir: Path, dims: dict[str, Doc]) -> bool:
    """Merge dimension documents into `_dimensions.jsonl` (union by digest, sorted)."""
    path = raw_dir / DIMENSIONS_FILE
    merged: dict[str, Doc] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                doc = json.loads(line)
                merged[digest(doc)] = doc
    merged.update(dims)
    order = sorted(merged, key=lambda d: (merged[d]["kind"], d))
    lines = [json.dumps(merged[d], ensure_ascii=False, sort_keys=True) for d in order]
    return write_if_changed(path, "".join(line + "\n" for line in lines))


def write_skip_report(path: Path, skips: list[Skip]) -> None:
    """One JSON line per skipped row: file, line, reason, detail and the row itself."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for s in skips:
            entry = {"file": s.file, "line": s.line, "reason": s.reason, "detail": s.detail}
            out.write(json.dumps({**entry, "row": s.row}, ensure_ascii=False) + "\n")


def write_conversion(conversion: Conversion, raw_dir: Path, rep: LigerImportReport) -> None:
    """Write run files and the dimensions file idempotently, counting into the report."""
    raw_dir.mkdir(parents=True, exist_ok=True)
    for run in conversion.runs.values():
        text = bundle_text(run.display, run.bundle)
        if write_if_changed(raw_dir / run_file_name(run.external_id), text):
            rep.files_written += 1
        else:
            rep.files_unchanged += 1
    if write_dimensions(raw_dir, conversion.dimensions):
        rep.files_written += 1
    else:
        rep.files_unchanged += 1
    documents = [r.provenance for r in conversion.runs.values() if r.provenance]
    written = P.write_provenance(raw_dir, documents, write_if_changed)
    if written is not None:
        rep.files_written += written
        rep.files_unchanged += not written


def resolve_sources(source: str | None, *, release: str | None, all_releases: bool) -> list[Path]:
    """The CSV files an import reads: a path, a folder, a URL, or package-index releases."""
    if source and (release or all_releases):
        raise ConfigError("give either CSV_PATH_OR_URL or --release/--all-releases, not both")
    if release and all_releases:
        raise ConfigError("--release and --all-releases exclude each other")
    if source is None:
        from kindex_olap.importers.liger import pypi

        if all_releases:
            return pypi.all_release_csvs()
        return pypi.release_csvs(release)
    if source.startswith(("http://", "https://")):
        from kindex_olap.importers.liger import pypi

        return [pypi.fetch_url(source)]
    path = Path(source)
    if path.is_dir():
        found = sorted(path.glob("all_benchmark_data*.csv"))
        if not found:
            raise SourceError(f"{path}: no all_benchmark_data*.csv in this folder")
        return found
    if not path.is_file():
        raise SourceError(f"{path}: no such CSV file")
    return [path]


def import_liger(
    source: str | None = None,
    *,
    release: str | None = None,
    all_releases: bool = False,
    raw_dir: Path = Path("data/raw/liger"),
    report_path: Path | None = None,
) -> LigerImportReport:
    """Convert Liger's benchmark CSV(s) into bundles under raw_dir; does not ingest.

    source is a CSV path, a folder of CSVs, or an http(s) URL; None takes the CSVs shipped in
    the liger-kernel source distribution (`release`, every release, or the newest).
    """
    paths = resolve_sources(source, release=release, all_releases=all_releases)
    conversion = convert_csvs(paths)
    rep = report_from(conversion, [str(p) for p in paths])
    rep.raw_dir = str(raw_dir)
    write_conversion(conversion, raw_dir, rep)
    if report_path is not None:
        write_skip_report(report_path, conversion.skips)
    return rep
