"""Validation of KernelIndex documents against the v1alpha1 rules of the kinds kindex ingests.

The rules are transcribed from KernelIndex's JSON Schemas (benchmark-run, benchmark-protocol,
execution-environment) into msgspec types, which check required fields, unknown fields, types,
patterns and bounds at C speed. What a schema cannot say (whole nanoseconds in a duration string,
finite measurement values) is checked in `check_run` afterwards. WorkloadCase, ImplementationRevision
and OperationSpec documents get their envelope checked strictly and their spec loosely: kindex
only reads a few of their fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

import msgspec
import orjson
from msgspec import UNSET, Meta, Struct, UnsetType

from kindex_olap.model.canonical import MAX_SAFE_INTEGER, CanonicalizationError, document_digest

API_VERSION = "kernelindex.dev/v1alpha1"

Digest = Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}$")]
Ident = Annotated[str, Meta(pattern=r"^[a-z][a-z0-9_]*$")]
Name = Annotated[str, Meta(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=200)]
Commit = Annotated[str, Meta(pattern=r"^[0-9a-f]{40}$")]
# Text that kindex prints (names, labels, GPU products): no C0 or C1 control character, so that a
# bundle cannot carry a terminal escape (retitle, clear the screen) into `kindex query`.
_PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]*$"

Text200 = Annotated[str, Meta(max_length=200, pattern=_PRINTABLE)]
Text500 = Annotated[str, Meta(max_length=500, pattern=_PRINTABLE)]
NonNegInt = Annotated[int, Meta(ge=0, le=MAX_SAFE_INTEGER)]
PosInt = Annotated[int, Meta(gt=0, le=MAX_SAFE_INTEGER)]
# JSON Schema's "integer" admits 162642944.0 (a number with a zero fraction), so whole-valued
# floats are durations too; `duration_ns` refuses a fractional one.
Duration = (
    NonNegInt
    | Annotated[float, Meta(ge=0, le=MAX_SAFE_INTEGER)]
    | Annotated[str, Meta(pattern=r"^\d+(\.\d+)?\s?(ns|us|µs|ms|s)$")]
)
# Bounds reject NaN (every comparison with it fails) and infinities.
_MAX_FLOAT = 1.7976931348623157e308
# A JSON integer stays an int (not 5.0), so that re-encoding a decoded run spells every number
# as the document did and as RFC 8785 does (stage._stage_fast hashes that encoding).
Finite = int | Annotated[float, Meta(ge=-_MAX_FLOAT, le=_MAX_FLOAT)]
NonNegFinite = Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0, le=_MAX_FLOAT)]
PosFinite = Annotated[int, Meta(gt=0)] | Annotated[float, Meta(gt=0, le=_MAX_FLOAT)]
Ratio = Annotated[int, Meta(ge=0, le=1)] | Annotated[float, Meta(ge=0, le=1)]
# RFC 3339 date-time in UTC ("Z"); the calendar date itself is checked in `check_bundle`
# (cheaper than the schema's leap-year regex, same verdicts).
UtcTimestamp = Annotated[
    str, Meta(pattern=r"^\d{4}-\d\d-\d\dT(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?Z$")
]
Status = Literal[
    "passed",
    "incorrect_shape",
    "incorrect_dtype",
    "incorrect_numerical",
    "compile_error",
    "runtime_error",
    "timeout",
    "resource_exceeded",
    "invalid_reference",
    "policy_violation",
    "suspected_reward_hack",
    "incomplete_evidence",
    "revoked",
]


class _Strict(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Author(_Strict):
    name: Annotated[str, Meta(max_length=200)] | UnsetType = UNSET
    github: Annotated[str, Meta(max_length=100)] | UnsetType = UNSET


class SourceRef(_Strict):
    url: Annotated[str, Meta(max_length=2000)]


class Metadata(_Strict):
    name: Name
    title: Text200 | UnsetType = UNSET
    description: Annotated[str, Meta(max_length=2000)] | UnsetType = UNSET
    labels: dict[Ident, Text200] | UnsetType = UNSET
    authors: list[Author] | UnsetType = UNSET
    sourceRefs: list[SourceRef] | UnsetType = UNSET


# --- BenchmarkRun ---------------------------------------------------------------------------


class Correctness(_Strict):
    comparator: Ident
    maximumAbsoluteError: NonNegFinite | UnsetType = UNSET
    maximumRelativeError: NonNegFinite | UnsetType = UNSET
    matchedRatio: Ratio | UnsetType = UNSET


class LatencyNs(_Strict):
    median: Duration | UnsetType = UNSET
    mean: Duration | UnsetType = UNSET
    p05: Duration | UnsetType = UNSET
    p95: Duration | UnsetType = UNSET
    minimum: Duration | UnsetType = UNSET
    maximum: Duration | UnsetType = UNSET
    mad: Duration | UnsetType = UNSET
    confidence95: Annotated[list[Duration], Meta(min_length=2, max_length=2)] | UnsetType = UNSET


class ArtifactRef(_Strict):
    uri: Annotated[str, Meta(max_length=2000)]
    digest: Digest


class Timing(_Strict):
    primaryStatistic: Ident
    latencyNs: LatencyNs
    samples: PosInt | UnsetType = UNSET
    rawSamples: ArtifactRef | UnsetType = UNSET


class Measurement(_Strict):
    metric: Ident
    unit: Ident
    statistic: Ident
    value: Finite
    sampleCount: PosInt | UnsetType = UNSET


class SourceNative(_Strict):
    source: Annotated[str, Meta(max_length=100, pattern=r"^[a-z0-9][a-z0-9-]*$")]
    benchmark: Text200 | UnsetType = UNSET
    externalId: Text500 | UnsetType = UNSET
    metrics: dict[Ident, Finite] | UnsetType = UNSET


class HarnessRef(_Strict):
    repository: Annotated[str, Meta(max_length=2000)]
    commit: Commit


class Evidence(_Strict):
    logs: ArtifactRef | UnsetType = UNSET
    rawSamples: ArtifactRef | UnsetType = UNSET
    harness: HarnessRef | UnsetType = UNSET


class RunSpec(_Strict):
    implementationDigest: Digest
    workloadDigest: Digest
    protocolDigest: Digest
    environmentDigest: Digest
    status: Status
    observedAt: UtcTimestamp
    correctness: Correctness | UnsetType = UNSET
    timing: Timing | UnsetType = UNSET
    measurements: list[Measurement] | UnsetType = UNSET
    sourceNative: SourceNative | UnsetType = UNSET
    evidence: Evidence | UnsetType = UNSET


class BenchmarkRun(_Strict):
    apiVersion: Literal["kernelindex.dev/v1alpha1"]
    kind: Literal["BenchmarkRun"]
    metadata: Metadata
    spec: RunSpec


# --- BenchmarkProtocol ----------------------------------------------------------------------


class Harness(_Strict):
    name: Annotated[str, Meta(max_length=200)]
    version: Annotated[str, Meta(max_length=100)] | UnsetType = UNSET
    repository: Annotated[str, Meta(max_length=2000)] | UnsetType = UNSET
    commit: Commit | UnsetType = UNSET


class ProtocolMeasurement(_Strict):
    timer: Ident
    primaryStatistic: Ident
    synchronization: Ident | UnsetType = UNSET
    compileIncluded: bool | UnsetType = UNSET
    setupIncluded: bool | UnsetType = UNSET
    warmupIterations: NonNegInt | UnsetType = UNSET
    warmupDuration: Duration | UnsetType = UNSET
    measuredIterations: PosInt | UnsetType = UNSET
    samples: PosInt | UnsetType = UNSET
    inputRegeneration: Ident | UnsetType = UNSET
    outlierPolicy: Annotated[str, Meta(max_length=500)] | UnsetType = UNSET


class ProtocolCorrectness(_Strict):
    reference: Annotated[str, Meta(max_length=500)]
    comparator: Ident


class DevicePolicy(_Strict):
    clocksLocked: bool | UnsetType = UNSET
    powerLimitWatts: PosFinite | UnsetType = UNSET
    persistenceMode: bool | UnsetType = UNSET


class Comparability(_Strict):
    family: Ident
    notes: Annotated[str, Meta(max_length=1000)] | UnsetType = UNSET


class ProtocolSpec(_Strict):
    harness: Harness
    measurement: ProtocolMeasurement
    correctness: ProtocolCorrectness | UnsetType = UNSET
    devicePolicy: DevicePolicy | UnsetType = UNSET
    comparability: Comparability | UnsetType = UNSET


class BenchmarkProtocol(_Strict):
    apiVersion: Literal["kernelindex.dev/v1alpha1"]
    kind: Literal["BenchmarkProtocol"]
    metadata: Metadata
    spec: ProtocolSpec


# --- ExecutionEnvironment -------------------------------------------------------------------


class Hardware(_Strict):
    vendor: Ident
    product: Text200
    architecture: Ident
    formFactor: Annotated[str, Meta(max_length=100)] | UnsetType = UNSET
    memoryBytes: PosInt | UnsetType = UNSET
    count: PosInt | UnsetType = UNSET
    interconnect: Annotated[str, Meta(max_length=200)] | UnsetType = UNSET


class Framework(_Strict):
    name: Ident
    version: Annotated[str, Meta(max_length=100)]


class Software(_Strict):
    operatingSystem: Annotated[str, Meta(max_length=200)] | UnsetType = UNSET
    kernel: Annotated[str, Meta(max_length=200)] | UnsetType = UNSET
    driver: Annotated[str, Meta(max_length=100)] | UnsetType = UNSET
    cudaToolkit: Annotated[str, Meta(max_length=100)] | UnsetType = UNSET
    compiler: Annotated[str, Meta(max_length=200)] | UnsetType = UNSET
    framework: Framework | UnsetType = UNSET
    libraries: dict[Ident, Annotated[str, Meta(max_length=100)]] | UnsetType = UNSET


class Settings(_Strict):
    clocksLocked: bool | UnsetType = UNSET
    powerLimitWatts: PosFinite | UnsetType = UNSET
    persistenceMode: bool | UnsetType = UNSET
    eccEnabled: bool | UnsetType = UNSET
    environmentVariables: (
        dict[Annotated[str, Meta(max_length=200)], Annotated[str, Meta(max_length=500)]] | UnsetType
    ) = UNSET


class EnvironmentSpec(_Strict):
    hardware: Hardware
    software: Software
    settings: Settings | UnsetType = UNSET
    imageDigest: Digest | UnsetType = UNSET


class ExecutionEnvironment(_Strict):
    apiVersion: Literal["kernelindex.dev/v1alpha1"]
    kind: Literal["ExecutionEnvironment"]
    metadata: Metadata
    spec: EnvironmentSpec


# --- bundles and dimension documents --------------------------------------------------------


class Bundle(_Strict):
    """A bundle's envelope and run; its protocol and environment are checked (and cached) apart,
    since thousands of runs share a few of each."""

    run: BenchmarkRun
    protocol: dict[str, Any]
    environment: dict[str, Any]
    display: Text200 | UnsetType = UNSET


# A WorkloadSuite (KernelIndex exports: a leaderboard problem's suite of cases) is a workload too.
DIMENSION_KINDS = ("WorkloadCase", "WorkloadSuite", "ImplementationRevision", "OperationSpec")


class DimensionDocument(_Strict):
    apiVersion: Literal["kernelindex.dev/v1alpha1"]
    kind: Literal["WorkloadCase", "WorkloadSuite", "ImplementationRevision", "OperationSpec"]
    metadata: Metadata
    spec: dict[str, Any]
    display: Text200 | UnsetType = UNSET


# Provenance of a run (kindex's own kind, not KernelIndex's): where the run's numbers came from,
# e.g. the git commit that first held a row of Liger's benchmark CSV and whether that commit is
# on the main branch. Kept beside the run (table run_provenance, keyed by run_id), so the run
# document and its identity stay exactly what KernelIndex builds.
PROVENANCE_API_VERSION = "kindex.dev/v1alpha1"
PROVENANCE_KIND = "RunProvenance"
GitCommit = Annotated[str, Meta(pattern=r"^[0-9a-f]{7,64}$")]


class ProvenanceSpec(_Strict):
    runId: Digest
    source: Annotated[str, Meta(max_length=200)]
    commit: GitCommit | UnsetType = UNSET
    onMainHistory: bool | UnsetType = UNSET
    firstSeenAt: Annotated[str, Meta(max_length=40)] | UnsetType = UNSET


class ProvenanceDocument(_Strict):
    apiVersion: Literal["kindex.dev/v1alpha1"]
    kind: Literal["RunProvenance"]
    metadata: Metadata
    spec: ProvenanceSpec


class ValidationError(ValueError):
    """A document breaks a rule; the message names the field (a JSON path) and what was expected."""


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s?(ns|us|µs|ms|s)$")
# ns per unit of a duration (a string in latencyNs, a measurement in a unit of time)
NS_PER_UNIT = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def duration_ns(value: int | float | str, where: str) -> int:
    """Whole nanoseconds of a duration: an integer, or a decimal string with a unit.

    "3.714593 ms" is 3714593 ns; "0.0000005 ms" is half a nanosecond and is refused, and so is
    a number with a fraction (12.5).
    """
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not value.is_integer():
            raise ValidationError(f"{where}: {value!r} is not a whole number of nanoseconds")
        return int(value)
    match = _DURATION.match(value)
    if match is None:
        raise ValidationError(f"{where}: {value!r} is not a duration (expected e.g. '3.7 ms')")
    try:
        nanos = Decimal(match.group(1)) * NS_PER_UNIT[match.group(2)]
    except InvalidOperation as e:  # pragma: no cover - the pattern admits only decimals
        raise ValidationError(f"{where}: {value!r} is not a decimal duration") from e
    if nanos != nanos.to_integral_value():
        raise ValidationError(
            f"{where}: {value!r} is not a whole number of nanoseconds ({nanos} ns)"
        )
    if nanos > MAX_SAFE_INTEGER:
        raise ValidationError(f"{where}: {value!r} is out of range")
    return int(nanos)


def check_bundle(obj: Any) -> Bundle:
    """Validate a decoded bundle; raise ValidationError naming the offending field."""
    try:
        bundle = msgspec.convert(obj, type=Bundle, strict=True)
    except msgspec.ValidationError as e:
        raise ValidationError(_describe(e)) from e
    check_date(bundle.run.spec.observedAt, "$.run.spec.observedAt")
    check_measurements(bundle.run.spec)
    _check_shared(bundle.protocol, BenchmarkProtocol, "$.protocol")
    _check_shared(bundle.environment, ExecutionEnvironment, "$.environment")
    return bundle


def _check_shared(doc: dict[str, Any], kind: type, where: str) -> None:
    """Validate a protocol or environment document once per distinct content."""
    try:
        validated_shared(kind, orjson.dumps(doc), orjson.loads)
    except msgspec.ValidationError as e:
        raise ValidationError(where + _describe(e).removeprefix("$")) from e
    except CanonicalizationError:
        pass  # valid as `kind`; its digest is refused where it is needed


# (kind, exact JSON text) -> (the document, its digest), for protocol and environment documents
# that passed validation as that kind: thousands of runs share a few of each. The same text as
# the other kind is checked again. Cleared when full.
_VALIDATED_SHARED: dict[tuple[type, bytes], tuple[dict[str, Any], str]] = {}
_VALIDATED_SHARED_LIMIT = 10_000


def validated_shared(
    kind: type, text: bytes, parse: Callable[[bytes], Any]
) -> tuple[dict[str, Any], str]:
    """A protocol or environment document from its JSON text, validated as `kind`, with its
    digest; each distinct text is parsed (with `parse`) and validated once. Raises
    msgspec.ValidationError, CanonicalizationError, or what `parse` raises."""
    known = _VALIDATED_SHARED.get((kind, text))
    if known is not None:
        return known
    obj = parse(text)
    msgspec.convert(obj, type=kind, strict=True)
    entry = (obj, document_digest(obj))
    if len(_VALIDATED_SHARED) >= _VALIDATED_SHARED_LIMIT:
        _VALIDATED_SHARED.clear()
    _VALIDATED_SHARED[(kind, text)] = entry
    return entry


# Units whose measurements are durations or sizes: never negative, as timing's durations are
# (Duration). A latency p20 of -5 ns gave `speedup` the interval [0.45, -222.00] judged
# "slower" and `summary` a bootstrap of [0.45, nan]; no real run has one.
_KINDS_OF_UNIT = {**{unit: "duration" for unit in NS_PER_UNIT}, "bytes": "size"}


def check_measurements(spec: RunSpec) -> None:
    """Refuse a negative measurement in a unit of time or of bytes (any other unit, a rate or a
    score, may take either sign); a p20 above the p80 of the same metric (times compared in
    ns): quantiles of one sample are ordered, and the views read p20 and p80 as a run's spread,
    which swapped ones collapsed onto its central value (a run 20 % noisy either way read as a
    point); and a metric's statistic given twice with different values, in the measurements
    or in them and the timing: the views read one of the two, and which one was arbitrary."""
    if spec.measurements is UNSET:
        return
    measurements = spec.measurements
    if len(measurements) > 2:
        _check_repeats(measurements)
    elif len(measurements) == 2:  # most bundles: p20 and p80, compared without a dict
        first, second = measurements
        if first.statistic == second.statistic and first.metric == second.metric:
            _check_repeats(measurements)
    quantiles: dict[tuple[str, str], dict[str, int]] = {}  # (metric, kind) -> statistic -> index
    for index, m in enumerate(measurements):
        if m.value < 0 and m.unit in _KINDS_OF_UNIT:
            raise ValidationError(
                f"$.run.spec.measurements[{index}].value: {m.value!r} {m.unit} is negative (a "
                f"measurement in {m.unit} is a {_KINDS_OF_UNIT[m.unit]}: expected >= 0)"
            )
        if m.statistic in _TIMED_STATISTICS and m.metric == "latency" and spec.timing is not UNSET:
            _check_against_timing(spec.timing.latencyNs, m, index)
        if m.statistic in ("p20", "p80"):
            kind = "time" if m.unit in NS_PER_UNIT else m.unit
            quantiles.setdefault((m.metric, kind), {})[m.statistic] = index
    for (metric, _), at in quantiles.items():
        if "p20" in at and "p80" in at:
            low, high = measurements[at["p20"]], measurements[at["p80"]]
            if _in_ns(low) > _in_ns(high):
                raise ValidationError(
                    f"$.run.spec.measurements[{at['p20']}].value: the {metric} p20 "
                    f"{low.value!r} {low.unit} is above its p80 {high.value!r} {high.unit} "
                    f"(measurements[{at['p80']}]; quantiles of one sample: expected p20 <= p80)"
                )


def _check_repeats(measurements: list[Measurement]) -> None:
    """Refuse a metric's statistic given twice with two values (the same value twice, in any
    unit of time, is one value)."""
    seen: dict[tuple[str, str], int] = {}  # (metric, statistic) -> its first index
    for index, m in enumerate(measurements):
        first = seen.setdefault((m.metric, m.statistic), index)
        if first != index and not _same_value(measurements[first], m):
            other = measurements[first]
            raise ValidationError(
                f"$.run.spec.measurements[{index}].value: a second {m.metric} {m.statistic}, "
                f"{m.value!r} {m.unit}, where measurements[{first}] gives {other.value!r} "
                f"{other.unit} (expected one value a metric and statistic)"
            )


def _check_against_timing(timed: LatencyNs, m: Measurement, index: int) -> None:
    """Refuse a latency measurement of a statistic the timing also gives, with another value."""
    if m.unit not in NS_PER_UNIT:
        return
    value = getattr(timed, m.statistic)
    if value is UNSET:
        return
    where = f"$.run.spec.timing.latencyNs.{m.statistic}"
    timed_ns = duration_ns(value, where)  # "3.7 ms" read "'3.7 ms' ns" in the message
    if not _close(timed_ns, _in_ns(m)):
        raise ValidationError(
            f"$.run.spec.measurements[{index}].value: the latency {m.statistic} {m.value!r} "
            f"{m.unit} differs from the timing's {timed_ns} ns ({where}; expected one value)"
        )


def _same_value(a: Measurement, b: Measurement) -> bool:
    """Whether two measurements give the same value: times in ns, anything else in one unit."""
    if a.unit in NS_PER_UNIT and b.unit in NS_PER_UNIT:
        return _close(_in_ns(a), _in_ns(b))
    return a.unit == b.unit and a.value == b.value


def _close(a: float, b: float) -> bool:
    """Equal up to the rounding of a unit's conversion (3.714592 ms against 3714592 ns)."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


# the timing's statistics a latency measurement may repeat (confidence95 is a pair)
_TIMED_STATISTICS = frozenset(LatencyNs.__struct_fields__) - {"confidence95"}


def _in_ns(m: Measurement) -> float:
    """A measurement's value, in ns where its unit is one of time."""
    return m.value * NS_PER_UNIT.get(m.unit, 1)


def check_date(timestamp: str, where: str) -> None:
    try:
        date.fromisoformat(timestamp[:10])
    except ValueError as e:
        raise ValidationError(f"{where}: {timestamp!r} is not a calendar date ({e})") from e


def check_dimension(obj: Any) -> DimensionDocument:
    """Validate the envelope of a WorkloadCase, ImplementationRevision or OperationSpec document,
    and every digest in its spec (all are `sha256:<64 hex>` in these schemas)."""
    try:
        doc = msgspec.convert(obj, type=DimensionDocument, strict=True)
    except msgspec.ValidationError as e:
        raise ValidationError(_describe(e)) from e
    _check_digests(doc.spec, "$.spec")
    return doc


def check_provenance(obj: Any) -> ProvenanceDocument:
    """Validate a RunProvenance document."""
    try:
        doc = msgspec.convert(obj, type=ProvenanceDocument, strict=True)
    except msgspec.ValidationError as e:
        raise ValidationError(_describe(e)) from e
    if doc.spec.firstSeenAt is not UNSET:
        check_date(doc.spec.firstSeenAt, "$.spec.firstSeenAt")
    return doc


_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _check_digests(value: Any, where: str) -> None:
    """Digest-named fields (`digest`, `*Digest`) of a loosely typed spec must be sha256 digests."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}"
            if (key == "digest" or key.endswith("Digest")) and isinstance(item, str):
                if _DIGEST.match(item) is None:
                    raise ValidationError(
                        f"{path}: {item!r} is not a digest of the form sha256:<64 hex>"
                    )
            else:
                _check_digests(item, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_digests(item, f"{where}[{index}]")


def latency_ns(bundle: Bundle) -> dict[str, int]:
    """The run's timing statistics in whole nanoseconds, by statistic name."""
    timing = bundle.run.spec.timing
    if timing is UNSET:
        return {}
    out: dict[str, int] = {}
    values = msgspec.structs.astuple(timing.latencyNs)
    for field, value in zip(LatencyNs.__struct_fields__, values, strict=True):
        if value is UNSET:
            continue
        if type(value) is int:  # the common case, without building `where`
            out[field] = value
            continue
        where = f"$.run.spec.timing.latencyNs.{field}"
        if field == "confidence95":
            out["ci95_low"] = duration_ns(value[0], where + "[0]")
            out["ci95_high"] = duration_ns(value[1], where + "[1]")
        else:
            out[field] = duration_ns(value, where)
    return out


def _describe(error: msgspec.ValidationError) -> str:
    text = str(error)
    # msgspec says "- at `$.run.spec`"; make the field lead, the way users read it.
    message, sep, where = text.rpartition(" - at ")
    if sep:
        return f"{where.strip('`')}: {message}"
    return f"$: {text}"
