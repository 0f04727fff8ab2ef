"""kindex's generic binding: documents for rows KernelIndex does not curate (any readable
config; the swept x and integer keys become axes, the rest digested parameters)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from kindex_olap.importers.liger import rules
from kindex_olap.importers.liger.documents import case_key, make_doc, short_label
from kindex_olap.importers.liger.js import kebab
from kindex_olap.importers.liger.jsontext import Doc
from kindex_olap.model.canonical import format_number


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
    return make_doc("OperationSpec", meta, spec)


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
        as_int = rules.pos_int(value)
        if as_int is not None:
            axes[name] = as_int
        else:
            params[name] = value
    axes[x_name] = int(x) if float(x).is_integer() else x
    dtype = rules.dtype_of(cfg.get("dtype"))
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
    labels = {"operation": kernel_name, "shape": short_label(key), "curation": "generic"}
    if b.dtype:
        labels["dtype"] = b.dtype
    shown = ", ".join(f"{k}={format_number(v)}" for k, v in b.axes.items())
    meta = {
        "name": kebab(f"liger-generic-{kernel_name}-{key}"),
        "title": f"{kernel_name} · {shown} · {b.dtype or 'dtype n/a'}",
        "labels": labels,
    }
    return make_doc("WorkloadCase", meta, spec)


def generic_implementation(kernel_name: str, provider: str, op_digest: str) -> Doc:
    """kindex's ImplementationRevision for a provider of a generically bound kernel."""
    known = rules.PROVIDERS.get(provider)
    language = known.language if known else ("triton" if provider.startswith("liger") else "python")
    spec = {
        "operation": {"specDigest": op_digest},
        "provider": provider,
        "callable": {"language": language},
    }
    display = rules.provider_title(provider)
    labels = {"provider": provider, "operation": kernel_name, "display": display}
    meta = {
        "name": kebab(f"liger-generic-{kernel_name}-{provider}"),
        "title": f"{kernel_name} · {display}",
        "labels": {**labels, "curation": "generic"},
    }
    return make_doc("ImplementationRevision", meta, spec)
