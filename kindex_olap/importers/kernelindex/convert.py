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

The parts: `read` (the export; pass 1, the dimension index), `runs` (pass 2), `documents`
(dimension documents and their labels), `serving` (serving runs), `write` (the raw folder) and
`report`; this module runs them in order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kindex_olap.errors import SourceError
from kindex_olap.importers.kernelindex.read import Index, export_name, local_copy
from kindex_olap.importers.kernelindex.report import REPORT_LIMIT, KernelIndexImport, write_report
from kindex_olap.importers.kernelindex.runs import Converter
from kindex_olap.importers.kernelindex.serving import SERVING_FILE, write_serving
from kindex_olap.importers.kernelindex.write import BundleWriters, write_dimensions

if TYPE_CHECKING:
    from kindex_olap.ingestion.pipeline import ProgressFn

DEFAULT_RAW_ROOT = Path("data/raw/kernelindex")


def import_kernelindex(
    source: str,
    *,
    raw_dir: Path | None = None,
    ingest: bool = True,
    lake: str | os.PathLike[str] | None = None,
    report_path: Path | None = None,
    on_phase: Callable[[str], None] | None = None,
    progress: ProgressFn | None = None,
) -> KernelIndexImport:
    """Convert one catalog export into bundles and dimension documents, then ingest them.

    `source` is a path or an http(s) URL of a .jsonl, .jsonl.zst or .jsonl.gz export; the raw
    folder defaults to data/raw/kernelindex/<export name>/. `on_phase` hears each step begin
    (downloading, converting, ingesting); `progress` is the ingest's progress callback.
    """
    phase = on_phase or (lambda _: None)
    started = time.perf_counter()
    name = export_name(source)
    folder = raw_dir if raw_dir is not None else DEFAULT_RAW_ROOT / name
    made = _missing_folders(folder)
    folder.mkdir(parents=True, exist_ok=True)
    report = KernelIndexImport(export=name, raw_dir=folder)
    phase(f"downloading {name}" if source.startswith(("http://", "https://")) else "reading")
    try:
        with local_copy(source) as path:
            phase(f"converting {name}")
            converter = convert(path, folder, report)
    except BaseException:
        _remove_empty(made)  # a failed import leaves no empty folder behind
        raise
    report.convert_seconds = time.perf_counter() - started
    report.examples = converter.findings[:REPORT_LIMIT]
    if report_path is not None:
        write_report(report_path, converter.findings)
    if ingest:
        phase(f"ingesting {name}")
        _ingest(folder, lake, report, progress)
    report.seconds = time.perf_counter() - started
    return report


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()  # only an empty folder: bundles already written stay
        except OSError:
            return


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
    write_dimensions(folder, index, converter.used, report, converter.malformed)
    write_serving(folder, list(converter.serving.values()), report)
    return converter


def _ingest(
    folder: Path,
    lake: str | os.PathLike[str] | None,
    report: KernelIndexImport,
    progress: ProgressFn | None,
) -> None:
    from kindex_olap.ingestion.pipeline import ingest

    inputs = sorted(folder.glob("*.jsonl.zst"))
    if (folder / SERVING_FILE).is_file():
        # ingest writes the serving runs with the bundles, in one lake commit (or none)
        inputs.append(folder / SERVING_FILE)
    report.ingest = ingest(inputs, lake, verify_digests=True, progress=progress)
    report.serving_added = report.ingest.serving_added
