"""Import a KernelIndex catalog export (zstd JSON Lines of `{"table", "row"}`) into the lake.

Each `benchmark_runs.manifest` already is a bundle; this importer adds what queries need from
the export's other tables, as KernelIndex documents ingest understands:

* the bundle gets `display` (the implementation's title, else its project's name) and two
  provenance labels in `run.metadata.labels` (outside the digest, so the run id is unchanged);
* the WorkloadCase/WorkloadSuite, ImplementationRevision and OperationSpec manifests the runs
  reference are written with kindex facets in `metadata.labels` (operation, family, dtype,
  shape, provider, project, display, source), again outside their digests;
* serving runs (MLPerf) have no bundle shape; they become rows shaped like the lake's
  `serving_runs` table in a Parquet file in the raw folder (serving_runs.parquet), which ingest
  writes with the bundles, so that an export's kernel and serving runs land in one lake commit.

The file is read twice, streaming: pass 1 indexes the dimension tables (a few MB), pass 2
converts runs and checks measurements. What the export says about itself is verified (every
digest recomputes, links agree) and every disagreement is reported, never dropped silently.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from kindex_olap.errors import ConfigError, SourceError
from kindex_olap.ingestion.sources import file_sha256, open_decompressed
from kindex_olap.model.canonical import CanonicalizationError, document_digest

if TYPE_CHECKING:
    from kindex_olap.ingestion.pipeline import IngestReport

DEFAULT_RAW_ROOT = Path("data/raw/kernelindex")
SERVING_FILE = "serving_runs.parquet"
REPORT_LIMIT = 50
LABEL_MAX = 200
Row = dict[str, Any]

_TABLE = re.compile(rb'^\{\s*"table"\s*:\s*"([A-Za-z0-9_]+)"')
_INDEX_TABLES = frozenset(
    {
        "sources",
        "projects",
        "operations",
        "operation_aliases",
        "workloads",
        "implementations",
        "model_revisions",
        "serving_stack_revisions",
        "serving_configurations",
        "serving_workloads",
    }
)
_FACT_TABLES = frozenset({"benchmark_runs", "measurements", "serving_runs", "serving_measurements"})
# timing.latencyNs statistic names -> the statistic names the export's measurement rows use
_TIMING_STATISTICS = {"minimum": "min", "maximum": "max"}


# --- reading the export ---------------------------------------------------------------------


def export_name(source: str) -> str:
    """The export's name from its file name or URL: 'catalog-2026-08-16-0022af0b'."""
    name = source.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0]
    for suffix in (".zst", ".gz", ".jsonl", ".ndjson", ".json"):
        name = name.removesuffix(suffix)
    if not name or name in {".", ".."}:
        raise ConfigError(f"cannot name the export {source!r}", hint="pass --raw DIR")
    return name


@contextlib.contextmanager
def local_copy(source: str) -> Iterator[Path]:
    """The export as a local file: the path itself, or an http(s) URL downloaded to a temp file."""
    if not source.startswith(("http://", "https://")):
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"export {source} is not a file", hint="pass a .jsonl(.zst) export")
        yield path
        return
    import urllib.request

    with tempfile.TemporaryDirectory(prefix="kindex-export-") as folder:
        target = Path(folder) / source.rsplit("/", 1)[-1].split("?", 1)[0]
        try:
            with urllib.request.urlopen(source, timeout=60) as response, open(target, "wb") as out:
                shutil.copyfileobj(response, out, 1 << 20)
        except OSError as e:
            raise SourceError(f"cannot download {source}: {e}") from e
        yield target


@contextlib.contextmanager
def open_lines(path: Path) -> Iterator[IO[bytes]]:
    """A buffered binary stream of the export's decompressed lines (.zst, .gz or plain).

    A truncated export raises EOFError rather than ending early (sources.open_decompressed).
    """
    with open_decompressed(path) as stream:
        yield stream


def iter_rows(path: Path, tables: frozenset[str]) -> Iterator[tuple[str, Row]]:
    """(table, row) of each line whose table is in `tables`; other lines are not parsed."""
    try:
        with open_lines(path) as stream:
            for number, line in enumerate(stream, 1):
                match = _TABLE.match(line)
                if match is not None and match.group(1).decode() not in tables:
                    continue
                if not line.strip():
                    continue
                item = _parse_line(path, number, line)
                if item["table"] in tables:
                    yield item["table"], item["row"]
    except (OSError, EOFError) as e:
        raise SourceError(f"{path}: cannot be read: {e}") from e
    except Exception as e:  # zstandard raises its own ZstdError
        if type(e).__name__ != "ZstdError":
            raise
        raise SourceError(f"{path}: corrupt zstd stream: {e}") from e


def _parse_line(path: Path, number: int, line: bytes) -> Row:
    try:
        item = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise SourceError(f"{path}: line {number}: not valid JSON ({e})") from e
    if not isinstance(item, dict) or not isinstance(item.get("row"), dict) or "table" not in item:
        raise SourceError(
            f'{path}: line {number}: expected {{"table": ..., "row": {{...}}}}',
            hint="is this a KernelIndex catalog export?",
        )
    return item


# --- pass 1: the dimension index -------------------------------------------------------------


@dataclass
class Index:
    """The export's dimension rows by id, trimmed to what conversion needs."""

    tables: dict[str, dict[str, Row]] = field(default_factory=lambda: defaultdict(dict))
    aliases: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def read(cls, path: Path) -> Index:
        """Pass 1 over the export."""
        index = cls()
        for table, row in iter_rows(path, _INDEX_TABLES):
            if table == "operation_aliases":
                index.aliases[row["operationId"]].append(row["alias"])
            else:
                index.tables[table][row["id"]] = row
        return index

    def get(self, table: str, row_id: str | None) -> Row | None:
        """The row of `table` with this id, or None."""
        return self.tables[table].get(row_id) if row_id is not None else None

    def operation_name(self, operation_id: str | None) -> str | None:
        """The short name runs are queried by: the operation's first alias, else its name."""
        names = self.aliases.get(operation_id or "")
        if names:
            return names[0]
        op = self.get("operations", operation_id)
        return op.get("name") if op else None


# --- facets ----------------------------------------------------------------------------------


def clean_labels(labels: dict[str, Any]) -> dict[str, str]:
    """Labels as KernelIndex allows them: identifier keys, string values of at most 200 chars."""
    out: dict[str, str] = {}
    for key, value in labels.items():
        if value is None or value == "" or not re.fullmatch(r"[a-z][a-z0-9_]*", key):
            continue
        out[key] = truncate(str(value))
    return out


def truncate(text: str, limit: int = LABEL_MAX) -> str:
    """At most `limit` characters (code points, as the schemas count), ending in '…' if cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def workload_dtype(dtypes: list[str] | None) -> str | None:
    """One dtype label: the only dtype, else the non-integer ones joined with '+'."""
    unique = list(dict.fromkeys(dtypes or []))
    if len(unique) <= 1:
        return unique[0] if unique else None
    floats = [d for d in unique if not re.match(r"u?int\d*$|bool$", d)]
    return "+".join(floats or unique)


def operation_facets(index: Index, operation_id: str | None) -> dict[str, Any]:
    """operation (short name), operation_title and family of an operation id."""
    op = index.get("operations", operation_id) or {}
    name = index.operation_name(operation_id)
    title = op.get("name")
    return {
        "operation": name,
        "operation_title": title if title != name else None,
        "family": op.get("family"),
    }


def workload_labels(index: Index, row: Row, source: str | None) -> dict[str, str]:
    """The kindex facets of a workloads row."""
    return clean_labels(
        {
            **operation_facets(index, row.get("operationId")),
            "dtype": workload_dtype(row.get("dtypes")),
            "shape": row.get("shapeSummary"),
            "source": source,
        }
    )


def implementation_labels(index: Index, row: Row, source: str | None) -> dict[str, str]:
    """The kindex facets of an implementations row."""
    project = index.get("projects", row.get("projectId")) or {}
    return clean_labels(
        {
            **operation_facets(index, row.get("operationId")),
            "provider": project.get("slug"),
            "project": project.get("name"),
            "display": row.get("title") or project.get("name"),
            "source": source,
        }
    )


def operation_labels(index: Index, row: Row, source: str | None) -> dict[str, str]:
    """The kindex facets of an operations row."""
    return clean_labels({**operation_facets(index, row.get("id")), "source": source})


def dimension_document(manifest: Row, labels: dict[str, str]) -> Row:
    """The manifest with kindex's labels merged into metadata.labels (outside the digest)."""
    from kindex_olap.model.validate import ValidationError, check_dimension

    meta = dict(manifest.get("metadata") or {})
    meta["labels"] = {**clean_labels(meta.get("labels") or {}), **labels}
    if isinstance(meta.get("title"), str):
        meta["title"] = truncate(meta["title"])
    if isinstance(meta.get("description"), str):
        meta["description"] = truncate(meta["description"], 2000)
    doc = {**manifest, "metadata": meta}
    try:
        check_dimension(doc)
    except ValidationError:  # keep what identifies and labels it; drop the rest of metadata
        doc["metadata"] = {k: meta[k] for k in ("name", "title", "labels") if k in meta}
    return doc


# --- pass 2: runs, verification, serving -----------------------------------------------------


@dataclass
class Finding:
    """Something the export says about itself that does not hold, for one row."""

    kind: str
    table: str
    row_id: str
    source: str | None
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> bytes:
        """One line of the --report file."""
        body = {"kind": self.kind, "table": self.table, "id": self.row_id, "source": self.source}
        return orjson.dumps({**body, **self.detail})


@dataclass
class KernelIndexImport:
    """What one import did: counts, verification results, where the files went, timings."""

    export: str
    raw_dir: Path
    runs: int = 0
    runs_by_source: Counter[str] = field(default_factory=Counter)
    runs_by_gpu: Counter[str] = field(default_factory=Counter)
    serving_runs: int = 0
    serving_by_source: Counter[str] = field(default_factory=Counter)
    serving_by_gpu: Counter[str] = field(default_factory=Counter)
    dimensions: Counter[str] = field(default_factory=Counter)
    digests_checked: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    examples: list[Finding] = field(default_factory=list)
    measurement_rows: int = 0
    files_written: int = 0
    files_unchanged: int = 0
    convert_seconds: float = 0.0
    ingest: IngestReport | None = None
    serving_added: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """The lines the CLI prints (to stderr: diagnostics, not data)."""
        lines = [
            f"{self.export}: {self.runs} kernel runs, {self.serving_runs} serving runs, "
            f"{sum(self.dimensions.values())} dimension documents -> {self.raw_dir} "
            f"({self.files_written} files written, {self.files_unchanged} unchanged) "
            f"in {self.convert_seconds:.2f} s",
            f"runs per source: {_counts(self.runs_by_source + self.serving_by_source)}",
            f"runs per GPU: {_counts(self.runs_by_gpu)}",
            f"verified {self.digests_checked} digests and {self.measurement_rows} measurement "
            f"rows: {_counts(self.findings) or 'no problems'}",
        ]
        if self.ingest is not None:
            lines.append(self.ingest.summary())
            lines.append(f"{self.serving_added} serving runs added to the lake")
        lines.append(f"total {self.seconds:.2f} s")
        return "\n".join(lines)


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counts.items(), key=lambda kv: -kv[1]))


class Converter:
    """Pass 2: turns runs into bundles, checks them, and remembers which dimensions they use."""

    def __init__(self, index: Index, report: KernelIndexImport, writers: BundleWriters) -> None:
        self.index = index
        self.report = report
        self.writers = writers
        self.findings: list[Finding] = []
        self.used: dict[str, dict[str, str | None]] = defaultdict(dict)  # table -> id -> source
        self.bundle_values: dict[str, set[tuple[Any, ...]]] = {}
        self.run_sources: dict[str, str | None] = {}
        self.serving: dict[str, Row] = {}

    def run(self, path: Path) -> None:
        """Stream the fact tables of the export."""
        for table, row in iter_rows(path, _FACT_TABLES):
            if table == "benchmark_runs":
                self.benchmark_run(row)
            elif table == "measurements":
                self.measurement(row)
            elif table == "serving_runs":
                self.serving_run(row)
            else:
                self.serving_measurement(row)

    def find(self, finding: Finding) -> None:
        """Count and keep a finding."""
        self.report.findings[finding.kind] += 1
        self.findings.append(finding)

    def benchmark_run(self, row: Row) -> None:
        """One benchmark_runs row: verify, link, convert, write."""
        bundle = row.get("manifest")
        if not isinstance(bundle, dict) or "run" not in bundle:
            src = self._source_slug(row)
            self.find(Finding("run_without_bundle", "benchmark_runs", row["id"], src))
            return
        source = _native_source(bundle) or self._source_slug(row)
        self._verify_run(row, bundle, source)
        workload = self.index.get("workloads", row.get("workloadId"))
        implementation = self.index.get("implementations", row.get("implementationId"))
        problem = self._check_links(row, source, workload, implementation)
        self._use(source, workload, implementation)
        out = self._bundle(row, bundle, implementation, problem)
        self.writers.write(source or "unknown", orjson.dumps(out))
        self.report.runs += 1
        self.report.runs_by_source[source or "unknown"] += 1
        self.report.runs_by_gpu[_gpu(bundle)] += 1
        self.bundle_values[row["id"]] = bundle_measurements(bundle)
        self.run_sources[row["id"]] = source

    def _source_slug(self, row: Row) -> str | None:
        src = self.index.get("sources", row.get("sourceId"))
        return src.get("slug") if src else None

    def _verify_run(self, row: Row, bundle: Row, source: str | None) -> None:
        spec = bundle["run"].get("spec") or {}
        checks = [
            ("run", bundle["run"], row.get("runDigest")),
            ("protocol", bundle.get("protocol"), spec.get("protocolDigest")),
            ("environment", bundle.get("environment"), spec.get("environmentDigest")),
        ]
        for part, doc, claimed in checks:
            self.report.digests_checked += 1
            actual = _digest(doc)
            if actual != claimed:
                detail = {"part": part, "claimed": claimed, "actual": actual}
                self.find(Finding("digest_mismatch", "benchmark_runs", row["id"], source, detail))

    def _check_links(
        self, row: Row, source: str | None, workload: Row | None, implementation: Row | None
    ) -> str | None:
        """Check the run's workload and implementation links; return a problem label or None."""
        spec = row["manifest"]["run"].get("spec") or {}
        problem = None
        for table, dim, key, digest_key in (
            ("workloads", workload, "workloadId", "workloadDigest"),
            ("implementations", implementation, "implementationId", "implementationDigest"),
        ):
            if dim is None:
                problem = f"missing_{table[:-1]}"
                self.find(
                    Finding(problem, "benchmark_runs", row["id"], source, {key: row.get(key)})
                )
            elif dim.get(digest_key) != spec.get(digest_key):
                problem = f"{table[:-1]}_digest_mismatch"
                detail = {"row": dim.get(digest_key), "run": spec.get(digest_key)}
                self.find(Finding(problem, "benchmark_runs", row["id"], source, detail))
        if workload and implementation and workload["operationId"] != implementation["operationId"]:
            problem = "operation_mismatch"
            detail = {
                "runDigest": row.get("runDigest"),
                "workload_operation": self.index.operation_name(workload["operationId"]),
                "implementation_operation": self.index.operation_name(
                    implementation["operationId"]
                ),
                "implementation": implementation.get("title"),
            }
            self.find(Finding(problem, "benchmark_runs", row["id"], source, detail))
        return problem

    def _use(self, source: str | None, workload: Row | None, implementation: Row | None) -> None:
        for table, dim in (("workloads", workload), ("implementations", implementation)):
            if dim is not None:
                self.used[table].setdefault(dim["id"], source)
                self.used["operations"].setdefault(dim.get("operationId") or "", source)

    def _bundle(
        self, row: Row, bundle: Row, implementation: Row | None, problem: str | None
    ) -> Row:
        """The bundle as ingest reads it: display, plus provenance labels outside the digest."""
        run = dict(bundle["run"])
        meta = dict(run.get("metadata") or {})
        labels = dict(meta.get("labels") or {})
        labels["kernelindex_export"] = self.report.export
        labels["kernelindex_id"] = row["id"]
        if problem is not None:
            labels["kernelindex_link_problem"] = problem
        meta["labels"] = clean_labels(labels)
        run["metadata"] = meta
        out = {
            "run": run,
            "protocol": bundle.get("protocol"),
            "environment": bundle.get("environment"),
        }
        project = self.index.get("projects", (implementation or {}).get("projectId")) or {}
        display = (implementation or {}).get("title") or project.get("name")
        if display:
            out["display"] = truncate(display)
        return out

    def measurement(self, row: Row) -> None:
        """A measurements row must repeat a value of its run's bundle (else it is reported)."""
        self.report.measurement_rows += 1
        key = (row.get("metric"), row.get("statistic"), row.get("unit"), _number(row.get("value")))
        values = self.bundle_values.get(row.get("runId") or "")
        if values is None:
            self.find(Finding("measurement_without_run", "measurements", row["id"], None))
        elif key not in values:
            detail = {"runId": row.get("runId"), "measurement": list(key)}
            source = self.run_sources.get(row["runId"])
            self.find(
                Finding("measurement_not_in_bundle", "measurements", row["id"], source, detail)
            )

    def serving_run(self, row: Row) -> None:
        """One serving_runs row becomes a serving_runs table row (measurements come later)."""
        out = serving_row(self.index, row, self.report.export)
        if out["digest_verified"] is False:
            detail = {"claimed": row.get("runDigest"), "actual": _digest(row.get("manifest"))}
            self.find(Finding("digest_mismatch", "serving_runs", row["id"], out["source"], detail))
        self.report.digests_checked += 1
        self.serving[row["id"]] = out
        self.report.serving_runs += 1
        self.report.serving_by_source[out["source"] or "unknown"] += 1
        self.report.serving_by_gpu[out["accelerator_model"] or "unknown"] += 1

    def serving_measurement(self, row: Row) -> None:
        """Attach a serving_measurements row to its serving run."""
        target = self.serving.get(row.get("runId") or "")
        if target is None:
            self.find(Finding("measurement_without_run", "serving_measurements", row["id"], None))
            return
        target["measurements"].append(
            {
                "metric": row.get("metric"),
                "statistic": row.get("statistic"),
                "unit": row.get("unit"),
                "value": row.get("value"),
                "sample_count": row.get("sampleCount"),
            }
        )


def _digest(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return None
    try:
        return document_digest(doc)
    except CanonicalizationError:
        return None


def _native_source(bundle: Row) -> str | None:
    native = (bundle["run"].get("spec") or {}).get("sourceNative") or {}
    return native.get("source")


def _gpu(bundle: Row) -> str:
    hardware = ((bundle.get("environment") or {}).get("spec") or {}).get("hardware") or {}
    return str(hardware.get("product") or "unknown")


def _number(value: Any) -> Any:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def bundle_measurements(bundle: Row) -> set[tuple[Any, ...]]:
    """(metric, statistic, unit, value) of every value a bundle holds (timing in ns too)."""
    from kindex_olap.model.validate import ValidationError, duration_ns

    spec = bundle["run"].get("spec") or {}
    out = {
        (m.get("metric"), m.get("statistic"), m.get("unit"), _number(m.get("value")))
        for m in spec.get("measurements") or ()
    }
    latency = (spec.get("timing") or {}).get("latencyNs") or {}
    for statistic, value in latency.items():
        if statistic == "confidence95":
            continue
        with contextlib.suppress(ValidationError, TypeError):
            name = _TIMING_STATISTICS.get(statistic, statistic)
            out.add(("latency", name, "ns", float(duration_ns(value, statistic))))
    return out


def serving_row(index: Index, row: Row, export: str) -> Row:
    """A serving_runs table row: the run, its model, workload, configuration and topology."""
    manifest = row.get("manifest") or {}
    spec, meta = manifest.get("spec") or {}, manifest.get("metadata") or {}
    native, topology = spec.get("sourceNative") or {}, spec.get("topology") or {}
    harness = spec.get("harness") or {}
    config = index.get("serving_configurations", row.get("configurationId")) or {}
    stack = index.get("serving_stack_revisions", config.get("stackRevisionId")) or {}
    model = index.get("model_revisions", row.get("modelRevisionId")) or {}
    workload = index.get("serving_workloads", row.get("workloadId")) or {}
    primary = (spec.get("measurements") or [{}])[0]
    source = index.get("sources", row.get("sourceId")) or {}
    return {
        "run_digest": row.get("runDigest"),
        "name": meta.get("name"),
        "title": meta.get("title"),
        "status": spec.get("status") or row.get("status"),
        "observed_at": _timestamp(spec.get("observedAt") or row.get("observedAt")),
        "source": native.get("source") or source.get("slug"),
        "benchmark": native.get("benchmark"),
        "external_id": native.get("externalId"),
        "division": native.get("division"),
        "category": native.get("category"),
        "scenario": native.get("scenario") or row.get("scenario"),
        "harness_name": harness.get("name"),
        "harness_version": harness.get("version"),
        "quality_policy": spec.get("qualityPolicy"),
        "model": model.get("name"),
        "model_digest": spec.get("modelDigest"),
        "workload": workload.get("slug"),
        "workload_digest": spec.get("workloadDigest"),
        "configuration": config.get("summary"),
        "configuration_digest": spec.get("configurationDigest"),
        "dtype": config.get("dtype"),
        "quantization": config.get("quantization"),
        "tensor_parallel": config.get("tensorParallel"),
        "stack": stack.get("name"),
        "accelerator_vendor": topology.get("acceleratorVendor") or row.get("acceleratorVendor"),
        "accelerator_model": topology.get("acceleratorModel") or row.get("acceleratorModel"),
        "accelerators_per_node": topology.get("acceleratorsPerNode"),
        "node_count": topology.get("nodeCount") or row.get("nodeCount"),
        "total_accelerators": row.get("totalAccelerators"),
        "metric": primary.get("metric"),
        "statistic": primary.get("statistic"),
        "unit": primary.get("unit"),
        "value": primary.get("value"),
        "measurements": [],
        "digest_verified": _digest(manifest) == row.get("runDigest"),
        "kernelindex_id": row.get("id"),
        "kernelindex_export": export,
        "spec_json": orjson.dumps(spec, option=orjson.OPT_SORT_KEYS).decode(),
        "ingested_at": None,
    }


def _timestamp(text: str | None) -> Any:
    from datetime import UTC, datetime

    if not text:
        return None
    return datetime.fromisoformat(text).astimezone(UTC).replace(tzinfo=None)


def _manifest_measurements(row: Row) -> list[Row]:
    spec = loads_spec(row)
    return [
        {
            "metric": m.get("metric"),
            "statistic": m.get("statistic"),
            "unit": m.get("unit"),
            "value": m.get("value"),
            "sample_count": m.get("sampleCount"),
        }
        for m in spec.get("measurements") or ()
    ]


def loads_spec(row: Row) -> Row:
    """The serving row's spec, parsed back from spec_json."""
    return orjson.loads(row["spec_json"]) if row.get("spec_json") else {}


# --- writing the raw folder ------------------------------------------------------------------


class BundleWriters:
    """One zstd JSON Lines file of bundles per source, replaced only when its bytes change.

    Output is deterministic (export order, fixed compression level), so re-importing an export
    leaves the files untouched and ingest skips them as unchanged.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.open: dict[str, tuple[Path, IO[bytes], Any]] = {}

    def write(self, source: str, line: bytes) -> None:
        """Append one bundle line to the source's file."""
        import zstandard

        if source not in self.open:
            final = self.folder / f"runs-{_file_part(source)}.jsonl.zst"
            tmp = final.with_name(f".{final.name}.tmp")
            handle = open(tmp, "wb")  # noqa: SIM115 - closed in close()
            # one compressor per stream: a ZstdCompressor runs one operation at a time
            compressor = zstandard.ZstdCompressor(level=3)
            self.open[source] = (final, handle, compressor.stream_writer(handle))
        self.open[source][2].write(line + b"\n")

    def close(self, report: KernelIndexImport) -> None:
        """Finish every file; move it into place if it differs from what is there."""
        for final, handle, writer in self.open.values():
            writer.flush(zstd_end_frame())
            handle.close()
            replace_if_changed(final.with_name(f".{final.name}.tmp"), final, report)
        self.open.clear()


def zstd_end_frame() -> int:
    """The zstandard flush mode that ends the frame."""
    import zstandard

    return int(zstandard.FLUSH_FRAME)


def _file_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:100] or "unknown"


def replace_if_changed(tmp: Path, final: Path, report: KernelIndexImport) -> None:
    """Move `tmp` to `final` unless `final` already holds the same bytes (keeps its mtime)."""
    if final.is_file() and file_sha256(final) == file_sha256(tmp):
        tmp.unlink()
        report.files_unchanged += 1
        return
    os.replace(tmp, final)
    report.files_written += 1


def write_bytes_if_changed(path: Path, data: bytes, report: KernelIndexImport) -> None:
    """Write `data` to `path` through a temp file, leaving an identical file untouched."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    replace_if_changed(tmp, path, report)


_DIMENSION_LABELS = {
    "workloads": workload_labels,
    "implementations": implementation_labels,
    "operations": operation_labels,
}


def write_dimensions(folder: Path, index: Index, converter: Converter) -> None:
    """The dimension documents the runs reference, one zstd JSON Lines file per table."""
    import zstandard

    report = converter.report
    for table, labels_of in _DIMENSION_LABELS.items():
        docs: dict[str, bytes] = {}
        for row_id, source in converter.used[table].items():
            row = index.get(table, row_id)
            if row is None or not isinstance(row.get("manifest"), dict):
                continue
            doc = dimension_document(row["manifest"], labels_of(index, row, source))
            digest = _digest(row["manifest"]) or ""
            docs.setdefault(digest, orjson.dumps(doc))
        body = b"".join(docs[d] + b"\n" for d in sorted(docs))
        data = zstandard.ZstdCompressor(level=3).compress(body)
        write_bytes_if_changed(folder / f"{table}.jsonl.zst", data, report)
        report.dimensions[table] = len(docs)


def write_serving(folder: Path, rows: list[Row], report: KernelIndexImport) -> Path | None:
    """The serving runs as a Parquet file shaped like the lake's serving_runs table."""
    if not rows:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kindex_olap.lake.tables import rows_to_arrow

    for row in rows:
        if not row["measurements"]:
            row["measurements"] = _manifest_measurements(row)
    table = rows_to_arrow("serving_runs", rows)  # a key the table lacks is an error
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    path = folder / SERVING_FILE
    write_bytes_if_changed(path, sink.getvalue().to_pybytes(), report)
    return path


def write_report(path: Path, findings: list[Finding]) -> None:
    """Every finding as one JSON line (the --report file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for finding in findings:
            handle.write(finding.as_json() + b"\n")


# --- the import ------------------------------------------------------------------------------


def import_kernelindex(
    source: str,
    *,
    raw_dir: Path | None = None,
    ingest: bool = True,
    lake: str | os.PathLike[str] | None = None,
    report_path: Path | None = None,
) -> KernelIndexImport:
    """Convert one catalog export into bundles and dimension documents, then ingest them.

    `source` is a path or an http(s) URL of a .jsonl, .jsonl.zst or .jsonl.gz export; the raw
    folder defaults to data/raw/kernelindex/<export name>/.
    """
    started = time.perf_counter()
    name = export_name(source)
    folder = raw_dir if raw_dir is not None else DEFAULT_RAW_ROOT / name
    folder.mkdir(parents=True, exist_ok=True)
    report = KernelIndexImport(export=name, raw_dir=folder)
    with local_copy(source) as path:
        converter = convert(path, folder, report)
    report.convert_seconds = time.perf_counter() - started
    report.examples = converter.findings[:REPORT_LIMIT]
    if report_path is not None:
        write_report(report_path, converter.findings)
    if ingest:
        _ingest(folder, lake, report)
    report.seconds = time.perf_counter() - started
    return report


def convert(path: Path, folder: Path, report: KernelIndexImport) -> Converter:
    """Both passes over the export: write bundles, dimensions and serving runs into `folder`."""
    index = Index.read(path)
    if not index.tables["sources"] and not index.tables["workloads"]:
        raise SourceError(
            f"{path}: no sources or workloads rows",
            hint='is this a KernelIndex catalog export (lines of {"table", "row"})?',
        )
    writers = BundleWriters(folder)
    converter = Converter(index, report, writers)
    try:
        converter.run(path)
    finally:
        writers.close(report)
    write_dimensions(folder, index, converter)
    write_serving(folder, list(converter.serving.values()), report)
    return converter


def _ingest(folder: Path, lake: str | os.PathLike[str] | None, report: KernelIndexImport) -> None:
    from kindex_olap.ingestion.pipeline import ingest

    inputs = sorted(folder.glob("*.jsonl.zst"))
    if (folder / SERVING_FILE).is_file():
        # ingest writes the serving runs with the bundles, in one lake commit (or none)
        inputs.append(folder / SERVING_FILE)
    report.ingest = ingest(inputs, lake, verify_digests=True)
    report.serving_added = report.ingest.serving_added
