"""Serving runs (MLPerf): no bundle shape, so they become rows shaped like the lake's serving_runs
table, written as one Parquet file in the raw folder; ingest writes them with the bundles, in one
lake commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from kindex_olap.importers.files import write_counted
from kindex_olap.importers.kernelindex.documents import digest_or_none
from kindex_olap.importers.kernelindex.read import Index, Row
from kindex_olap.importers.kernelindex.report import KernelIndexImport

SERVING_FILE = "serving_runs.parquet"


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
        "digest_verified": digest_or_none(manifest) == row.get("runDigest"),
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


def write_serving(folder: Path, rows: list[Row], report: KernelIndexImport) -> Path | None:
    """The serving runs as a Parquet file shaped like the lake's serving_runs table."""
    if not rows:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kindex_olap.schema import rows_to_arrow

    for row in rows:
        if not row["measurements"]:
            row["measurements"] = _manifest_measurements(row)
    table = rows_to_arrow("serving_runs", rows)  # a key the table lacks is an error
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    path = folder / SERVING_FILE
    write_counted(path, sink.getvalue().to_pybytes(), report)
    return path
