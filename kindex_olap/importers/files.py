"""Writing an importer's raw folder and counting what changed: each file is replaced only when its
bytes change (re-importing leaves it untouched, and ingest then skips it), and the import report
counts the files written and those left unchanged. Shared by every importer."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kindex_olap.atomic import write_if_changed


class FileCounts(Protocol):
    """An import report's file counts."""

    files_written: int
    files_unchanged: int


def count_file(report: FileCounts, written: bool) -> None:
    """Count one file of the raw folder: written, or left as it was."""
    if written:
        report.files_written += 1
    else:
        report.files_unchanged += 1


def write_counted(path: Path, data: bytes, report: FileCounts, *, durable: bool = True) -> None:
    """Write `data` to `path` atomically, leaving an identical file untouched; count it."""
    count_file(report, write_if_changed(path, data, durable=durable))
