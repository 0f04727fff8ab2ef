"""Writing the raw folder: one zstd JSON Lines file of bundles per source and one per dimension
table, each replaced only when its bytes change (re-importing leaves them untouched)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from kindex_olap.atomic import replace_if_changed, temporary_beside
from kindex_olap.importers.files import count_file, write_counted
from kindex_olap.importers.kernelindex.documents import (
    digest_or_none,
    dimension_document,
    implementation_labels,
    operation_labels,
    workload_labels,
)
from kindex_olap.importers.kernelindex.read import MALFORMED, Index
from kindex_olap.importers.kernelindex.report import KernelIndexImport


class BundleWriters:
    """One zstd JSON Lines file of bundles per source, replaced only when its bytes change.

    Output is deterministic (export order, fixed compression level), so re-importing an export
    leaves the files untouched and ingest skips them as unchanged.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.open: dict[str, tuple[Path, Path, IO[bytes], Any]] = {}

    def write(self, source: str, line: bytes) -> None:
        """Append one bundle line to the source's file."""
        import zstandard

        if source not in self.open:
            final = self.folder / f"runs-{_file_part(source)}.jsonl.zst"
            tmp = temporary_beside(final)
            handle = open(tmp, "wb")  # noqa: SIM115 - closed in close()
            # one compressor per stream: a ZstdCompressor runs one operation at a time
            compressor = zstandard.ZstdCompressor(level=3)
            self.open[source] = (final, tmp, handle, compressor.stream_writer(handle))
        self.open[source][3].write(line + b"\n")

    def close(self, report: KernelIndexImport) -> None:
        """Finish every file; move it into place if it differs from what is there."""
        for final, tmp, handle, writer in self.open.values():
            writer.flush(zstd_end_frame())
            handle.close()
            count_file(report, replace_if_changed(tmp, final))
        self.open.clear()


def zstd_end_frame() -> int:
    """The zstandard flush mode that ends the frame."""
    import zstandard

    return int(zstandard.FLUSH_FRAME)


def _file_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:100] or "unknown"


_DIMENSION_LABELS = {
    "workloads": workload_labels,
    "implementations": implementation_labels,
    "operations": operation_labels,
}


def write_dimensions(
    folder: Path,
    index: Index,
    used: Mapping[str, Mapping[str, str | None]],
    report: KernelIndexImport,
    malformed: Callable[[str, object, str], None],
) -> None:
    """The dimension documents the runs reference (`used`: table -> row id -> the source that
    first used it, from the converter), one zstd JSON Lines file per table. A row whose
    fields have types the export's schema does not give them is left out and said to
    `malformed` (table, id, error)."""
    import zstandard

    for table, labels_of in _DIMENSION_LABELS.items():
        docs: dict[str, bytes] = {}
        for row_id, source in used.get(table, {}).items():
            row = index.get(table, row_id)
            if row is None or not isinstance(row.get("manifest"), dict):
                continue
            try:
                doc = dimension_document(row["manifest"], labels_of(index, row, source))
                digest = digest_or_none(row["manifest"]) or ""
            except MALFORMED as e:
                malformed(table, row_id, f"{type(e).__name__}: {e}")
                continue
            docs.setdefault(digest, orjson.dumps(doc))
        body = b"".join(docs[d] + b"\n" for d in sorted(docs))
        data = zstandard.ZstdCompressor(level=3).compress(body)
        write_counted(folder / f"{table}.jsonl.zst", data, report)
        report.dimensions[table] = len(docs)
