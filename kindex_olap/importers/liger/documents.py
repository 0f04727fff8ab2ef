"""The documents a curated row points at, exactly as KernelIndex's public importer builds them
(OperationSpec, WorkloadCase, ImplementationRevision), and the per-pass protocols and
hardware-only environments every Liger run shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kindex_olap.importers.liger import rules
from kindex_olap.importers.liger.js import eval_axis, kebab
from kindex_olap.importers.liger.jsontext import Doc
from kindex_olap.model.canonical import format_number


def make_doc(kind: str, metadata: Doc, spec: Doc) -> Doc:
    """A KernelIndex document."""
    return {"apiVersion": rules.API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def short_label(value: str) -> str:
    """A label value: a string of at most 200 characters."""
    return value[:200]


def case_key(axes: dict[str, Any], dtype: str) -> str:
    """KernelIndex's stable case identity: sorted `name+value` pairs, then the dtype."""
    pairs = "-".join(f"{name}{format_number(axes[name])}" for name in sorted(axes))
    return f"{pairs}-{dtype}"


def _dtype_token(dtype: str) -> str:
    """Signature dtype: 'cfg' tensors declare the float family."""
    return "float" if dtype == "cfg" else dtype


def operation_spec(kernel: rules.KernelSpec) -> Doc:
    """The OperationSpec KernelIndex builds for a curated kernel."""
    axes: dict[str, Doc] = {}
    for tensor in (*kernel.inputs, *kernel.outputs):
        for dim in tensor.shape:
            if isinstance(dim, str) and dim not in kernel.derived:
                axes.setdefault(dim, {"role": "variable", "type": "integer"})
    for name, expression in kernel.derived.items():
        axes[name] = {"role": "derived", "type": "integer", "expression": expression}

    def arg(t: rules.Tensor) -> Doc:
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
    return make_doc("OperationSpec", meta, spec)


def workload_case(kernel: rules.KernelSpec, op_digest: str, b: rules.Binding) -> Doc:
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
    shown = ", ".join(f"{k}={format_number(v)}" for k, v in b.axes.items())
    labels = {"operation": kernel.csv_name, "dtype": b.dtype, "shape": short_label(key)}
    meta = {
        "name": kebab(f"{kernel.slug}-{key}"),
        "title": f"{kernel.title} · {shown} · {b.dtype}",
        "labels": {**labels, "curation": "kernelindex"},
    }
    return make_doc("WorkloadCase", meta, spec)


def implementation(kernel: rules.KernelSpec, provider: str, op_digest: str) -> Doc:
    """The ImplementationRevision KernelIndex builds for a curated (kernel, provider)."""
    entry = rules.PROVIDERS[provider]
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
    return make_doc("ImplementationRevision", meta, spec)


@dataclass(frozen=True)
class _Probe:
    """What a Liger protocol measures with: the values its two kinds differ in."""

    timer: str
    family: str
    notes: str  # a template: {what} is the pass's wording
    name: str  # the probe in the document's name
    title: str  # the probe in its title (none for latency: KernelIndex's wording)


# latency: KernelIndex's do_bench protocol; memory: kindex's peak-memory one (no timer: the probe
# is torch.cuda.max_memory_allocated, metric memory, bytes)
_LATENCY = _Probe("cuda_events", "liger_kernel_bench", rules.PROTOCOL_NOTES_LATENCY, "do-bench", "")
_MEMORY = _Probe(
    "max_memory_allocated",
    "liger_kernel_bench_memory",
    rules.PROTOCOL_NOTES_MEMORY,
    "peak-memory",
    "peak memory · ",
)


def protocol(mode: str, metric: str) -> Doc:
    """Per-pass protocol: KernelIndex's do_bench latency one, or kindex's peak-memory one."""
    what = rules.MODES.get(mode) or rules.EXTRA_MODES.get(mode) or mode
    probe = _MEMORY if metric == "memory" else _LATENCY
    spec = {
        "harness": {"name": "Liger-Kernel benchmark scripts", "repository": rules.LIGER_REPO_URL},
        "measurement": {"timer": probe.timer, "primaryStatistic": "median"},
        "comparability": {"family": probe.family, "notes": probe.notes.format(what=what)},
    }
    meta = {
        "name": kebab(f"liger-bench-{probe.name}-{mode}"),
        "title": f"Liger benchmark harness · {probe.title}{mode} pass",
    }
    return make_doc("BenchmarkProtocol", meta, spec)


def environment(gpu: str) -> tuple[Doc, bool] | None:
    """Hardware-only environment; the flag says whether it comes from kindex's further table."""
    hardware = rules.HARDWARE.get(gpu)
    further = hardware is None
    hardware = hardware or rules.EXTRA_HARDWARE.get(gpu)
    if hardware is None:
        return None
    meta = {
        "name": kebab(f"liger-bench-{gpu}"),
        "title": f"Liger benchmark host · {gpu.removeprefix('NVIDIA ')}",
    }
    return make_doc(
        "ExecutionEnvironment", meta, {"hardware": dict(hardware), "software": {}}
    ), further
