"""Pass 2: each benchmark run verified (digests, links), labelled and written as a bundle;
measurement rows checked against their bundles; serving runs collected."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from kindex_olap.importers.kernelindex.documents import clean_labels, digest_or_none, truncate
from kindex_olap.importers.kernelindex.read import _FACT_TABLES, MALFORMED, Index, Row, iter_rows
from kindex_olap.importers.kernelindex.report import Finding, KernelIndexImport
from kindex_olap.importers.kernelindex.serving import serving_row

if TYPE_CHECKING:
    from kindex_olap.importers.kernelindex.write import BundleWriters


_TIMING_STATISTICS = {"minimum": "min", "maximum": "max"}


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
        """Stream the fact tables of the export. A row whose fields have types the export's
        schema does not give them (an id that is an object, a manifest that is a list) is a
        finding of its own, `malformed_row`, and the rest goes on (it stopped the import with
        a traceback)."""
        for table, row_id in self.index.malformed:
            self.malformed(table, row_id, "an id (or an alias) that is not text")
        handle = {
            "benchmark_runs": self.benchmark_run,
            "measurements": self.measurement,
            "serving_runs": self.serving_run,
        }
        for table, row in iter_rows(path, _FACT_TABLES):
            try:
                handle.get(table, self.serving_measurement)(row)
            except MALFORMED as e:
                self.malformed(table, row.get("id"), f"{type(e).__name__}: {e}")

    def malformed(self, table: str, row_id: object, error: str) -> None:
        """A row left out because a field has a type the export's schema does not give it."""
        detail = {"error": error[:240]}
        self.find(Finding("malformed_row", table, str(row_id)[:80], None, detail))

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
            actual = digest_or_none(doc)
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
            detail = {
                "claimed": row.get("runDigest"),
                "actual": digest_or_none(row.get("manifest")),
            }
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
