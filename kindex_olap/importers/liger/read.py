"""Where an import's CSVs come from (a path, a folder, a URL, package-index releases) and how
their rows are read."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kindex_olap.errors import ConfigError, SourceError
from kindex_olap.importers.liger.provenance import COLUMNS as PROVENANCE_COLUMNS

COLUMNS = (
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit",
    "x_name", "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80",
    "extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version",
)  # fmt: skip


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, str], str | None]]:
    """(line, row, problem) per CSV record; problem names a ragged record; no header column
    of Liger's 15 may be missing (SourceError)."""
    try:
        # utf-8-sig: a CSV saved by Excel ("CSV UTF-8") starts with a byte-order mark, which
        # made the first column "\ufeffkernel_name" ("missing column(s) kernel_name")
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise SourceError(f"{path}: cannot be opened ({exc.strerror})") from exc
    with handle:
        try:
            yield from _records(path, csv.reader(handle))
        except UnicodeDecodeError as exc:
            raise SourceError(
                f"{path}: not UTF-8 text ({exc.reason})",
                hint="Liger's benchmark CSVs are UTF-8; convert the file (e.g. iconv -t UTF-8)",
            ) from exc


def _records(path: Path, reader: Any) -> Iterator[tuple[int, dict[str, str], str | None]]:
    header = next(reader, None)
    if header is None:
        raise SourceError(f"{path}: line 1: empty file, expected a CSV header")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise SourceError(
            f"{path}: line 1 (header): missing column(s) {', '.join(missing)}",
            hint="expected Liger-Kernel's benchmark/data/all_benchmark_data.csv layout",
        )
    # the history CSV's provenance columns come along when present (liger/provenance.py)
    names = COLUMNS + tuple(c for c in PROVENANCE_COLUMNS if c in header)
    at = [header.index(c) for c in names]
    line = reader.line_num + 1
    try:
        for record in reader:
            if record:
                problem = None
                if len(record) != len(header):
                    problem = f"expected {len(header)} fields, found {len(record)}"
                padded = record + [""] * (len(header) - len(record))
                yield line, {c: padded[i] for c, i in zip(names, at, strict=True)}, problem
            line = reader.line_num + 1
    except csv.Error as exc:
        raise SourceError(f"{path}: line {line}: malformed CSV ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{path}: line {line}: not UTF-8 text ({exc.reason})",
            hint="Liger's benchmark CSVs are UTF-8; convert the file (e.g. iconv -t UTF-8)",
        ) from exc


def resolve_sources(source: str | None, *, release: str | None, all_releases: bool) -> list[Path]:
    """The CSV files an import reads: a path, a folder, a URL, or package-index releases."""
    if source and (release or all_releases):
        raise ConfigError("give either CSV_PATH_OR_URL or --release/--all-releases, not both")
    if release and all_releases:
        raise ConfigError("--release and --all-releases exclude each other")
    if source is None:
        from kindex_olap.importers.liger import pypi

        if all_releases:
            return pypi.all_release_csvs()
        return pypi.release_csvs(release)
    if source.startswith(("http://", "https://")):
        from kindex_olap.importers.liger import pypi

        return [pypi.fetch_url(source)]
    path = Path(source)
    if path.is_dir():
        found = sorted(path.glob("all_benchmark_data*.csv"))
        if not found:
            raise SourceError(f"{path}: no all_benchmark_data*.csv in this folder")
        return found
    if not path.is_file():
        what = "not a file" if path.exists() else "no such CSV file"
        raise SourceError(f"{path}: {what}")
    return [path]
