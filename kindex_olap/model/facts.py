"""Flattening documents into table rows: the per-run facts kindex computes, and dimension rows."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import orjson
from msgspec import UNSET

from kindex_olap.model.canonical import (
    FAST_FLOAT_MAX,
    FAST_FLOAT_MIN,
    MAX_SAFE_INTEGER,
    canonical_json,
    plain_number,
    sorted_json,
)
from kindex_olap.model.validate import NS_PER_UNIT

if TYPE_CHECKING:
    from kindex_olap.model.validate import Bundle, RunSpec


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


class Origin(Protocol):
    """Where a run's document was read (ingestion's `sources.Document` is one): its file, its
    line in a JSON Lines file, and a display name given beside it. A protocol, so that model/
    needs nothing from ingestion/."""

    @property
    def path(self) -> str: ...

    @property
    def line(self) -> int | None: ...

    @property
    def display(self) -> str | None: ...


def staged_facts(
    bundle: Bundle, run_id: str, latency: dict[str, int], doc: Origin, seq: int
) -> dict[str, Any]:
    """The facts of a run that staging computes (ingestion/stage.py): its identity and sequence
    number, where it was read, its display name, observed time and latency in ns. The rest of
    run_facts is derived by DuckDB from the staged run (sql/ingest/batch.sql), vectorized."""
    observed = datetime.fromisoformat(bundle.run.spec.observedAt)
    return {
        "run_id": run_id,
        "seq": seq,
        "src": doc.path,
        "line": doc.line,
        "display": doc.display if doc.display is not None else _opt(bundle.display),
        "observed_us": (observed - _EPOCH) // _MICROSECOND,  # exact (a float timestamp rounds)
        "year": observed.year,
        "lat": latency,
    }


def run_facts(
    bundle: Bundle, run_id: str, latency: dict[str, int], doc: Origin, seq: int
) -> dict[str, Any]:
    """What kindex adds to a run before DuckDB flattens it: identity, names, primary value."""
    spec = bundle.run.spec
    native = spec.sourceNative
    benchmark = native.benchmark if native is not UNSET and native.benchmark is not UNSET else None
    external = native.externalId if native is not UNSET and native.externalId is not UNSET else None
    metric, statistic, unit, value = primary_measurement(bundle, latency)
    kernel, pass_, provider = parse_names(benchmark, external, metric)
    labels = bundle.run.metadata.labels
    return {
        **staged_facts(bundle, run_id, latency, doc, seq),
        "source": native.source if native is not UNSET else "unknown",
        "kernel": kernel,
        "pass": pass_,
        "provider": provider,
        "version": version_label(labels if labels is not UNSET else {}),
        "metric": metric,
        "statistic": statistic,
        "unit": unit,
        "value": value,
        "p20": _measured(bundle, "p20"),
        "p80": _measured(bundle, "p80"),
    }


def run_identity(run: dict[str, Any]) -> str:
    """A run's identity: sha256 of the canonical {apiVersion, kind, spec} of a validated run.

    Validation pins every key to ASCII and every number outside measurement values, metrics
    and correctness to a safe integer, so only those few numbers decide whether orjson's sorted
    output already is RFC 8785; otherwise the full canonicalizer runs.
    """
    core = {"apiVersion": run["apiVersion"], "kind": run["kind"], "spec": run["spec"]}
    plain = _all_plain(_free_numbers(run["spec"]))
    body = sorted_json(core) if plain else canonical_json(core)
    return "sha256:" + hashlib.sha256(body).hexdigest()


def spec_numbers_plain(spec: RunSpec) -> bool:
    """True when msgspec's sorted encoding of a run spec decoded into its validated type is
    RFC 8785, so that its sha256 is `run_identity`: the same argument as there (validated keys
    are ASCII; msgspec escapes strings as RFC 8785 does and spells plain numbers as orjson
    does; omit_defaults leaves out exactly the fields the document did not have)."""
    return _all_plain(_struct_free_numbers(spec))


def _struct_free_numbers(spec: RunSpec) -> list[Any]:
    """`_free_numbers` of a typed run spec (UNSET fields included: `_all_plain` passes them)."""
    numbers: list[Any] = []
    if spec.measurements is not UNSET:
        numbers.extend([m.value for m in spec.measurements])
    if spec.timing is not UNSET:
        latency = msgspec.structs.astuple(spec.timing.latencyNs)
        kinds = set(map(type, latency))
        # A duration is a safe integer (NonNegInt), a string or a float; only a float (or the
        # list confidence95) can be other than plain: look closer only then.
        if float in kinds or list in kinds:
            for value in latency:
                if type(value) is list:
                    numbers.extend(value)
                else:
                    numbers.append(value)
    native = spec.sourceNative
    if native is not UNSET and native.metrics is not UNSET:
        numbers.extend(native.metrics.values())
    if spec.correctness is not UNSET:
        numbers.extend(msgspec.structs.astuple(spec.correctness)[1:])  # after the comparator
    return numbers


def _all_plain(numbers: list[Any]) -> bool:
    """`all(map(plain_number, numbers))`, with the two common types checked inline (a call per
    number was 2.4k instructions, a tenth of staging a bundle)."""
    for value in numbers:
        kind = type(value)
        if kind is float:
            if value.is_integer() or not FAST_FLOAT_MIN <= abs(value) < FAST_FLOAT_MAX:
                return False
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
                return False
        elif value is UNSET or kind is str:  # plain_number passes them (a call each)
            continue
        elif not plain_number(value):
            return False
    return True


def _free_numbers(spec: dict[str, Any]) -> list[Any]:
    """The numbers of a validated run spec that the schema does not pin to safe integers."""
    numbers = [m["value"] for m in spec.get("measurements") or ()]
    timing = spec.get("timing")
    if timing:
        for value in timing["latencyNs"].values():
            numbers.extend(value if isinstance(value, list) else (value,))
    native = spec.get("sourceNative")
    if native and native.get("metrics"):
        numbers.extend(native["metrics"].values())
    correctness = spec.get("correctness")
    if correctness:
        numbers.extend(v for k, v in correctness.items() if k != "comparator")
    return numbers


def parse_names(
    benchmark: str | None, external_id: str | None, metric: str | None = None
) -> tuple[str | None, ...]:
    """(kernel, pass, provider) from `benchmark` ('jsd/backward') and `externalId`.

    KernelIndex's Liger importer writes externalId as benchmark/provider/gpu/shape/time, and
    kindex's as benchmark/memory/provider/... for a run whose `metric` is memory (every such
    run's provider read "memory"); other sources may not, in which case provider stays unknown
    here and comes from dimensions. Only that shape (or a bundle without externalId) says the
    part after '/' is a pass: a leaderboard export's 'amd-fp8-mm/3' with externalId
    'submission/19189' names a problem variant.
    """
    if not benchmark:
        return None, None, None
    kernel, _, rest = benchmark.partition("/")
    liger_shaped = bool(external_id) and external_id.startswith(benchmark + "/")  # type: ignore[union-attr]
    pass_ = rest.split("/")[0] if rest and (liger_shaped or not external_id) else None
    provider = None
    if liger_shaped:
        parts = external_id[len(benchmark) + 1 :].split("/")  # type: ignore[index]
        skip = int(metric == "memory" and parts[0] == "memory" and len(parts) > 1)
        provider = parts[skip] or None
    return kernel or None, pass_ or None, provider


def version_label(labels: dict[str, str]) -> str | None:
    """The version a run was measured with: labels.version, else a label named *_version."""
    if "version" in labels:
        return labels["version"]
    for key in sorted(labels):
        if key.endswith("_version"):
            return labels[key]
    return None


def primary_measurement(
    bundle: Bundle, latency: dict[str, int]
) -> tuple[str | None, str | None, str | None, float | None]:
    """The run's headline number: timing's primary statistic, else its first measurement."""
    timing = bundle.run.spec.timing
    if timing is not UNSET and timing.primaryStatistic in latency:
        return "latency", timing.primaryStatistic, "ns", float(latency[timing.primaryStatistic])
    measurements = bundle.run.spec.measurements
    if measurements is not UNSET and measurements:
        first = measurements[0]
        return first.metric, first.statistic, first.unit, first.value
    return None, None, None, None


def _measured(bundle: Bundle, statistic: str) -> float | None:
    """The value in ns of the run's first latency measurement of `statistic` in a unit of
    time (its p20 or p80: a run's spread)."""
    measurements = bundle.run.spec.measurements
    if measurements is UNSET:
        return None
    for m in measurements:
        ns = NS_PER_UNIT.get(m.unit)  # as sql/ingest/work_tables.sql latency_unit_ns
        if m.metric == "latency" and m.statistic == statistic and ns is not None:
            return m.value * ns
    return None


def _opt(value: Any) -> Any:
    return None if value is UNSET else value


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def environment_row(digest: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One environments row: every field of the ExecutionEnvironment spec."""
    spec = doc["spec"]
    hw, sw, st = spec.get("hardware", {}), spec.get("software", {}), spec.get("settings", {})
    return {
        "environment_digest": digest,
        "name": _get(doc, "metadata", "name"),
        "title": _get(doc, "metadata", "title"),
        "vendor": hw.get("vendor"),
        "product": hw.get("product"),
        "form_factor": hw.get("formFactor"),
        "architecture": hw.get("architecture"),
        "memory_bytes": hw.get("memoryBytes"),
        "gpu_count": hw.get("count"),
        "interconnect": hw.get("interconnect"),
        "operating_system": sw.get("operatingSystem"),
        "os_kernel": sw.get("kernel"),
        "driver": sw.get("driver"),
        "cuda_toolkit": sw.get("cudaToolkit"),
        "compiler": sw.get("compiler"),
        "framework_name": _get(sw, "framework", "name"),
        "framework_version": _get(sw, "framework", "version"),
        "libraries": sw.get("libraries"),
        "clocks_locked": st.get("clocksLocked"),
        "power_limit_watts": st.get("powerLimitWatts"),
        "persistence_mode": st.get("persistenceMode"),
        "ecc_enabled": st.get("eccEnabled"),
        "environment_variables": st.get("environmentVariables"),
        "image_digest": spec.get("imageDigest"),
        "spec_json": _json(spec),
    }


def protocol_row(digest: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One protocols row: every field of the BenchmarkProtocol spec."""
    spec = doc["spec"]
    harness, measure = spec.get("harness", {}), spec.get("measurement", {})
    return {
        "protocol_digest": digest,
        "name": _get(doc, "metadata", "name"),
        "title": _get(doc, "metadata", "title"),
        "harness_name": harness.get("name"),
        "harness_version": harness.get("version"),
        "harness_repository": harness.get("repository"),
        "harness_commit": harness.get("commit"),
        "timer": measure.get("timer"),
        "primary_statistic": measure.get("primaryStatistic"),
        "synchronization": measure.get("synchronization"),
        "compile_included": measure.get("compileIncluded"),
        "setup_included": measure.get("setupIncluded"),
        "warmup_iterations": measure.get("warmupIterations"),
        "warmup_duration": _text(measure.get("warmupDuration")),
        "measured_iterations": measure.get("measuredIterations"),
        "samples": measure.get("samples"),
        "input_regeneration": measure.get("inputRegeneration"),
        "outlier_policy": measure.get("outlierPolicy"),
        "correctness_reference": _get(spec, "correctness", "reference"),
        "correctness_comparator": _get(spec, "correctness", "comparator"),
        "clocks_locked": _get(spec, "devicePolicy", "clocksLocked"),
        "power_limit_watts": _get(spec, "devicePolicy", "powerLimitWatts"),
        "persistence_mode": _get(spec, "devicePolicy", "persistenceMode"),
        "comparability_family": _get(spec, "comparability", "family"),
        "comparability_notes": _get(spec, "comparability", "notes"),
        "spec_json": _json(spec),
    }


def workload_row(digest: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One workloads row: labels say operation/dtype/shape; numeric spec.axes become `axes`."""
    spec, labels = doc["spec"], _get(doc, "metadata", "labels") or {}
    axes = spec.get("axes") if isinstance(spec.get("axes"), dict) else {}
    numeric = {
        k: float(v)
        for k, v in axes.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }
    dtypes = {
        t.get("dtype")
        for t in (spec.get("tensors") or {}).values()
        if isinstance(t, dict) and t.get("dtype")
    }
    return {
        "workload_digest": digest,
        "name": _get(doc, "metadata", "name"),
        "title": _get(doc, "metadata", "title"),
        "operation": labels.get("operation"),
        "operation_spec_digest": spec.get("operationSpecDigest"),
        "dtype": labels.get("dtype") or (dtypes.pop() if len(dtypes) == 1 else None),
        "shape": labels.get("shape"),
        "axes": numeric,
        "axes_json": _json(axes),
        "labels": labels,
        "spec_json": _json(spec),
    }


def implementation_row(digest: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One implementations row: provider and display name from labels, the rest from the spec."""
    spec, labels = doc["spec"], _get(doc, "metadata", "labels") or {}
    return {
        "implementation_digest": digest,
        "name": _get(doc, "metadata", "name"),
        "title": _get(doc, "metadata", "title"),
        "provider": labels.get("provider"),
        "display_name": labels.get("display")
        or doc.get("display")
        or _get(doc, "metadata", "title"),
        "operation": labels.get("operation"),
        "operation_spec_digest": _get(spec, "operation", "specDigest"),
        "language": _get(spec, "callable", "language"),
        "repository": _get(spec, "projectRevision", "repository"),
        "version": _get(spec, "projectRevision", "version") or labels.get("version"),
        "labels": labels,
        "spec_json": _json(spec),
    }


def operation_row(digest: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One operations row."""
    spec = doc["spec"]
    return {
        "operation_spec_digest": digest,
        "name": _get(doc, "metadata", "name"),
        "title": _get(doc, "metadata", "title"),
        "family": spec.get("family"),
        "labels": _get(doc, "metadata", "labels") or {},
        "spec_json": _json(spec),
    }


def provenance_row(digest: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One run_provenance row: the run it describes, the commit and branch it came from."""
    spec = doc["spec"]
    return {
        "provenance_digest": digest,
        "run_id": spec["runId"],
        "source": spec["source"],
        "git_commit": spec.get("commit"),
        "on_main": spec.get("onMainHistory"),
        "first_seen_at": _utc_naive(spec.get("firstSeenAt")),
    }


def _utc_naive(text: str | None) -> datetime | None:
    """An ISO instant as a naive UTC datetime (the lake's TIMESTAMP columns are UTC)."""
    if text is None:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


ROW_BUILDERS = {
    "environments": environment_row,
    "protocols": protocol_row,
    "workloads": workload_row,
    "implementations": implementation_row,
    "operations": operation_row,
    "run_provenance": provenance_row,
}
DIGEST_COLUMNS = {
    "environments": "environment_digest",
    "protocols": "protocol_digest",
    "workloads": "workload_digest",
    "implementations": "implementation_digest",
    "operations": "operation_spec_digest",
    "run_provenance": "provenance_digest",
}
