"""Reading a KernelIndex catalog export: its name, a local copy of a URL, its rows streamed
table by table, and pass 1, the index of its dimension rows."""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from kindex_olap.errors import ConfigError, SourceError
from kindex_olap.importers.download import download
from kindex_olap.ingestion.sources import open_decompressed

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
    with tempfile.TemporaryDirectory(prefix="kindex-export-") as folder:
        target = Path(folder) / source.rsplit("/", 1)[-1].split("?", 1)[0]
        try:
            download(source, target)
        except OSError as e:
            raise SourceError(f"cannot download {source} ({getattr(e, 'reason', e)})") from e
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


# what reading a field of a type the export's schema does not give it raises (a row left out:
# a `malformed_row` finding)
MALFORMED = (TypeError, ValueError, KeyError, AttributeError, IndexError)


@dataclass
class Index:
    """The export's dimension rows by id, trimmed to what conversion needs."""

    tables: dict[str, dict[str, Row]] = field(default_factory=lambda: defaultdict(dict))
    aliases: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    # (table, id) of the rows left out: an id, or an alias, that is not text
    malformed: list[tuple[str, object]] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Index:
        """Pass 1 over the export."""
        index = cls()
        for table, row in iter_rows(path, _INDEX_TABLES):
            keys = ("operationId", "alias") if table == "operation_aliases" else ("id",)
            if not all(isinstance(row.get(key), str) for key in keys):
                index.malformed.append((table, row.get("id")))
            elif table == "operation_aliases":
                index.aliases[row["operationId"]].append(row["alias"])
            else:
                index.tables[table][row["id"]] = row
        return index

    def get(self, table: str, row_id: object) -> Row | None:
        """The row of `table` with this id, or None (an id that is not text names none)."""
        return self.tables[table].get(row_id) if isinstance(row_id, str) else None

    def operation_name(self, operation_id: str | None) -> str | None:
        """The short name runs are queried by: the operation's first alias, else its name."""
        names = self.aliases.get(operation_id or "")
        if names:
            return names[0]
        op = self.get("operations", operation_id)
        return op.get("name") if op else None
