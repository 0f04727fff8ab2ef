"""Reading input files into raw documents: seed text, .json, .jsonl/.ndjson, each maybe .gz or .zst.

Nothing here parses JSON beyond what is needed to split a file into documents; what cannot be
read becomes a `Problem` with the file, line and reason, so the caller can keep it aside.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
KEEP_REJECTED_BYTES = 1024 * 1024
_JSON_SUFFIXES = {".json", ".jsonl", ".ndjson", ".txt"}
_COMPRESSED = {".gz", ".zst"}


@dataclass(frozen=True)
class Document:
    """One JSON document as read from a file (bytes, not yet parsed)."""

    path: str
    line: int | None  # 1-based line for JSON Lines; None for a whole-file document
    text: bytes
    display: str | None = None


@dataclass(frozen=True)
class Problem:
    """Something in a file that is not a document: the reason, and what was read (bounded)."""

    path: str
    line: int | None
    reason: str
    text: bytes = b""


def discover_names(paths: Iterable[Path]) -> Iterator[str]:
    """Input files as absolute paths: a file as given, a folder searched recursively for known
    extensions. Folders are walked in sorted order with os.walk (plain strings: a million files
    would spend seconds in pathlib's comparisons and stats)."""
    for path in paths:
        root = os.path.abspath(path)
        if not os.path.isdir(root):
            yield root
            continue
        for folder, subfolders, names in os.walk(root):
            subfolders.sort()
            for name in sorted(names):
                if _is_input_name(name):
                    yield os.path.join(folder, name)


# Serving runs (MLPerf) have no bundle shape: an importer writes them as Parquet rows shaped like
# the lake's serving_runs table, in a file ending so, and ingest writes them with the bundles.
SERVING_SUFFIX = "serving_runs.parquet"


def is_serving_file(name: str) -> bool:
    return name.endswith(SERVING_SUFFIX)


def _is_input_name(name: str) -> bool:
    if name.startswith("."):
        return False
    if is_serving_file(name):
        return True
    parts = name.lower().rsplit(".", 2)[1:]
    if not parts:
        return False
    if "." + parts[-1] in _COMPRESSED:
        return len(parts) == 2 and "." + parts[0] in _JSON_SUFFIXES
    return "." + parts[-1] in _JSON_SUFFIXES


def _format_of(path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """(format, compression) from the name: format is 'lines', 'json' or 'text'."""
    suffixes = [s.lower() for s in _suffixes(os.path.basename(os.fspath(path)))[-2:]]
    compression = suffixes[-1][1:] if suffixes and suffixes[-1] in _COMPRESSED else None
    base = (
        suffixes[-2] if compression and len(suffixes) == 2 else (suffixes[-1] if suffixes else "")
    )
    if compression and len(suffixes) < 2:
        base = ""
    if base in {".jsonl", ".ndjson"}:
        return "lines", compression
    if base == ".json":
        return "json", compression
    return "text", compression


def _suffixes(name: str) -> list[str]:
    """Path(name).suffixes without building a Path (a million files spend seconds there)."""
    if name.endswith("."):
        return []
    return ["." + suffix for suffix in name.lstrip(".").split(".")[1:]]


def is_plain_lines(path: Path) -> bool:
    """True for an uncompressed JSON Lines file (which can be split into byte ranges)."""
    return _format_of(path) == ("lines", None)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def open_decompressed(path: Path) -> IO[bytes]:
    """A binary stream of a file's content, gunzipped or un-zstd'ed by its suffix.

    Truncated compressed input raises EOFError instead of ending quietly.
    """
    _, compression = _format_of(path)
    return _open(path, compression, None)


def _open(path: str | os.PathLike[str], compression: str | None, data: bytes | None) -> IO[bytes]:
    raw: IO[bytes] = io.BytesIO(data) if data is not None else open(path, "rb")  # noqa: SIM115
    if compression == "gz":
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    if compression == "zst":
        return io.BufferedReader(_ZstdReader(raw), buffer_size=1 << 20)
    return raw


class _ZstdReader(io.RawIOBase):
    """Streaming zstd decompression (frame after frame) that raises EOFError on a truncated
    stream; zstandard's stream_reader silently returns what it decoded, losing the rest.
    Compressed input goes in small pieces, so a decompression bomb cannot fill memory."""

    def __init__(self, raw: IO[bytes]) -> None:
        import zstandard

        self._raw = raw
        self._new = zstandard.ZstdDecompressor().decompressobj
        self._dobj = self._new()
        self._mid_frame = False
        self._in, self._in_pos = b"", 0
        self._out, self._pos = b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._pos >= len(self._out):
            if self._in_pos >= len(self._in):
                self._in, self._in_pos = self._raw.read(1 << 20), 0
                if not self._in:
                    if self._mid_frame:
                        raise EOFError("zst stream ended inside a frame (truncated)")
                    return 0
            piece = self._in[self._in_pos : self._in_pos + 4096]
            self._in_pos += len(piece)
            self._out, self._pos = self._decompress(piece), 0
        size = min(len(buffer), len(self._out) - self._pos)
        buffer[:size] = self._out[self._pos : self._pos + size]
        self._pos += size
        return size

    def _decompress(self, chunk: bytes) -> bytes:
        parts = []
        while chunk:
            parts.append(self._dobj.decompress(chunk))
            self._mid_frame = not self._dobj.eof
            chunk = b""
            if self._dobj.eof:  # the next frame may follow in the same chunk
                chunk, self._dobj = self._dobj.unused_data, self._new()
        return b"".join(parts)

    def close(self) -> None:
        self._raw.close()
        super().close()


def read_documents(
    path: str | os.PathLike[str], data: bytes | None = None
) -> Iterator[Document | Problem]:
    """The documents of one input file (or of its bytes, already read), or what stops them."""
    name = os.fspath(path)
    fmt, compression = _format_of(path)
    try:
        with _open(path, compression, data) as stream:
            if fmt == "lines":
                yield from _lines(name, stream)
            else:
                yield from _whole(name, stream, fmt)
    except (OSError, EOFError, zlib.error, ValueError) as e:
        kind = f"corrupt {compression} stream" if compression else "unreadable file"
        yield Problem(name, None, f"{kind}: {e}")
    except Exception as e:  # zstandard raises its own ZstdError
        if type(e).__name__ != "ZstdError":
            raise
        yield Problem(name, None, f"corrupt zst stream: {e}")


def line_ranges(path: Path, target_bytes: int) -> Iterator[tuple[int, int, int]]:
    """Split an uncompressed JSON Lines file into (start, end, first line number) byte ranges of
    about `target_bytes`, each ending after a newline (or at the end of the file), so that
    staging processes can read their part themselves. Memory stays one block, however long a
    line is."""
    start, line = 0, 1
    with open(path, "rb") as handle:
        while True:
            handle.seek(start)
            block = handle.read(target_bytes)
            if not block:
                return
            cut = block.rfind(b"\n") + 1
            if cut:
                end, lines = start + cut, block.count(b"\n", 0, cut)
            else:  # a line longer than the block: the range runs to its end (or the file's)
                end, lines = start + len(block), 0
                while more := handle.read(target_bytes):
                    newline = more.find(b"\n")
                    if newline >= 0:
                        end, lines = end + newline + 1, 1
                        break
                    end += len(more)
            yield start, end, line
            line += lines
            start = end


def read_line_range(
    path: Path, start: int, end: int, first_line: int
) -> Iterator[Document | Problem]:
    """The documents of one range of an uncompressed JSON Lines file (see `line_ranges`)."""
    name = str(path)
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            yield from _lines(name, _Limited(handle, end - start), first_line)
    except OSError as e:
        yield Problem(name, first_line, f"unreadable file: {e}")


class _Limited(io.RawIOBase):
    """The next `size` bytes of a stream, as a stream."""

    def __init__(self, raw: IO[bytes], size: int) -> None:
        self._raw, self._left = raw, size

    def readable(self) -> bool:
        return True

    def readline(self, limit: int | None = -1) -> bytes:
        wanted = self._left if limit is None or limit < 0 else min(limit, self._left)
        line = self._raw.readline(wanted)
        self._left -= len(line)
        return line


def _lines(
    name: str, stream: IO[bytes] | _Limited, first_line: int = 1
) -> Iterator[Document | Problem]:
    number = first_line - 1
    while True:
        line = stream.readline(MAX_DOCUMENT_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_DOCUMENT_BYTES and not line.endswith(b"\n"):
            head = line[:KEEP_REJECTED_BYTES]
            while line and not line.endswith(b"\n"):  # skip the rest of the oversized line
                line = stream.readline(MAX_DOCUMENT_BYTES)
            yield Problem(name, number, _too_big(), head)
            continue
        text = line.strip()
        if text:
            yield Document(name, number, text)


def _whole(name: str, stream: IO[bytes], fmt: str) -> Iterator[Document | Problem]:
    data = stream.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        yield Problem(name, None, _too_big(), data[:KEEP_REJECTED_BYTES])
        return
    if not data.strip():
        yield Problem(name, None, "empty file: expected a JSON bundle")
        return
    display = None
    if fmt == "text" and not data.lstrip().startswith((b"{", b"[")):
        display, data = _split_display(data)
        if display is None:
            yield Problem(
                name,
                None,
                "not a seed text file: expected a display-name line, a blank line, then JSON",
                data[:KEEP_REJECTED_BYTES],
            )
            return
    yield Document(name, None, data.strip(), display)


def _split_display(data: bytes) -> tuple[str | None, bytes]:
    """Split the seed text format: 'Display name\\n\\n{json}'. A bare JSON text has no display."""
    stripped = data.lstrip()
    if stripped.startswith((b"{", b"[")):
        return None, data
    head, sep, rest = data.partition(b"\n")
    if not sep or not rest.startswith((b"\n", b"\r\n")):
        return None, data
    try:
        display = head.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, data
    return display, rest


def _too_big() -> str:
    return f"document larger than the {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB limit per document"
