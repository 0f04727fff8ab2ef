"""Reading input files into raw documents: seed text, .json, .jsonl/.ndjson, each maybe .gz or .zst.

Nothing here parses JSON beyond what is needed to split a file into documents; what cannot be
read becomes a `Problem` with the file, line and reason, so the caller can keep it aside.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
# What a reject keeps of its text: enough to see what went wrong, never a whole file.
KEEP_REJECTED_BYTES = 64 * 1024
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


def discover_names(
    paths: Iterable[Path], *, follow_symlinks: bool = False, skipped: list[str] | None = None
) -> Iterator[str]:
    """Input files as absolute paths: a file as given, a folder searched recursively (in sorted
    order, with plain strings: a million files would spend seconds in pathlib) for known
    extensions.

    A symbolic link inside a folder is followed only to a file inside that folder: one that
    leads out of it (`x.json -> /etc/shadow`), or to a folder, or nowhere (dangling, a loop), is
    left alone and added to `skipped` ("PATH: why"), unless `follow_symlinks`; so is a folder
    inside that cannot be listed, and what is not a regular file (a FIFO: reading one waits for
    a writer). A path named on the command line is read as given (`<(zcat x.jsonl.gz)`).
    """
    for path in paths:
        root = os.path.abspath(path)
        if not os.path.isdir(root):
            yield root
            continue
        yield from _walk(root, os.path.realpath(root), follow_symlinks, skipped, set())


def _walk(
    folder: str, real_root: str, follow: bool, skipped: list[str] | None, seen: set[str]
) -> Iterator[str]:
    seen.add(os.path.realpath(folder))  # a folder link back up would loop forever
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    for entry in entries:
        if entry.is_symlink() and not _may_follow(entry.path, real_root, follow):
            if skipped is not None and (_is_input_name(entry.name) or _is_dir(entry)):
                skipped.append(f"{entry.path}: {_unfollowed(entry.path, real_root)}")
            continue
        if _is_dir(entry):
            if os.path.realpath(entry.path) in seen:
                continue
            try:
                yield from _walk(entry.path, real_root, follow, skipped, seen)
            except OSError as e:  # a folder inside that cannot be listed: the rest is read
                if skipped is not None:
                    skipped.append(f"{entry.path}: a folder that cannot be listed ({e.strerror})")
        elif _is_input_name(entry.name):
            kind = None if _is_file(entry) else _not_regular(entry.path)
            if kind is None:
                yield entry.path
            elif skipped is not None:  # a FIFO named x.json held the whole ingest, waiting
                skipped.append(f"{entry.path}: {kind}, not a regular file")


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether `entry` is a folder, following a link; False where that cannot be told (a link
    that loops: is_dir raises for it, and one such link stopped the whole ingest)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    """Whether `entry` is a regular file (following a link): the kind the folder's listing
    tells for most entries, without a stat."""
    try:
        return entry.is_file()
    except OSError:
        return False


def _not_regular(path: str) -> str | None:
    """What the file at `path` is, where it is not a regular file; None where it cannot be
    told (a dangling link: the reader says why it cannot be read)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _unfollowed(link: str, real_root: str) -> str:
    """Why the symbolic link `link` inside an input folder was not read."""
    if not os.path.exists(link):
        return "a symbolic link to nothing (dangling, or a loop)"
    target = os.path.realpath(link)
    if os.path.isdir(link) and (target + os.sep).startswith(real_root + os.sep):
        return "a symbolic link to a folder inside the input folder (read where it is)"
    return "a symbolic link out of the input folder (--follow-symlinks reads it)"


def _may_follow(link: str, real_root: str, follow: bool) -> bool:
    """Follow a link when asked, or when it names a file inside the input folder."""
    if follow:
        return True
    target = os.path.realpath(link)
    return os.path.isfile(target) and target.startswith(real_root + os.sep)


# Serving runs (MLPerf) have no bundle shape: an importer writes them as Parquet rows shaped like
# the lake's serving_runs table, in a file ending so, and ingest writes them with the bundles.
SERVING_SUFFIX = "serving_runs.parquet"


def is_serving_file(name: str) -> bool:
    return name.endswith(SERVING_SUFFIX)


_PLAIN_NAME_ENDS = tuple(sorted(_JSON_SUFFIXES))


def _is_input_name(name: str) -> bool:
    if name.startswith("."):
        return False
    lower = name.lower()
    if lower.endswith(_PLAIN_NAME_ENDS):  # most names: what the rest would say, at once
        return True
    if is_serving_file(name):
        return True
    parts = lower.rsplit(".", 2)[1:]
    if not parts:
        return False
    if "." + parts[-1] in _COMPRESSED:
        return len(parts) == 2 and "." + parts[0] in _JSON_SUFFIXES
    return "." + parts[-1] in _JSON_SUFFIXES


def _format_of(path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """(format, compression) from the name: format is 'lines', 'json' or 'text'."""
    name = os.path.basename(os.fspath(path)).lstrip(".")
    dot = name.find(".")
    # The suffixes are all in what follows the name's first dot: the answer for that tail is
    # kept (a tree of 100k seed-text files has one tail, ".txt": 2-3 us a file saved).
    return _format_of_tail(name[dot:] if dot >= 0 else "")


@lru_cache(maxsize=256)
def _format_of_tail(tail: str) -> tuple[str, str | None]:
    """`_format_of` of a name whose part from its first dot (leading dots aside) is `tail`."""
    suffixes = [s.lower() for s in _suffixes("x" + tail)[-2:]]
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
    Compressed input goes in 1 KiB pieces, so a decompression bomb cannot fill memory (zstd
    turns 1 KiB into at most about 32 MiB)."""

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
            piece = self._in[self._in_pos : self._in_pos + 1024]
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
    if data is not None and compression is None:  # a small file read already: no stream
        if fmt != "lines":
            yield from _whole_bytes(name, data, fmt)
            return
        lines = _split_range(data, len(data))
        if lines is not None:
            yield from _split_documents(name, lines, 1)
            return
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
            whole = end - start <= RANGE_READ_BYTES  # a range holding a huge line is streamed
            lines = _split_range(handle.read(end - start), end - start) if whole else None
            if lines is None:
                handle.seek(start)
                yield from _lines(name, _Limited(handle, end - start), first_line)
                return
    except OSError as e:
        yield Problem(name, first_line, f"unreadable file: {e}")
        return
    yield from _split_documents(name, lines, first_line)


def _split_documents(name: str, lines: list[bytes], first_line: int) -> Iterator[Document]:
    """The documents of lines from `_split_range`, numbered from `first_line`."""
    for number, line in enumerate(lines, first_line):
        text = line.strip()
        if text:
            yield Document(name, number, text)


# A range up to this size is read in one piece (line_ranges' ranges are about CHUNK_BYTES, more
# only when a line is longer).
RANGE_READ_BYTES = 16 * 1024 * 1024


def _split_range(data: bytes, size: int) -> list[bytes] | None:
    """The lines of a whole range read in one piece, when they are exactly what `_lines` would
    read (else None, and the range is streamed by `_lines`): every line within
    MAX_DOCUMENT_BYTES (its newline not counted), the range within the file budget's bytes and
    blank lines (it has fewer blank lines than newlines), and a budget of seconds without a
    document that splitting bytes in memory cannot spend. Reading this way saves a Python
    readline and budget check a line (8 of a bundle's 60-70 us of staging)."""
    if len(data) != size:  # the file changed under us: let the stream say what it reads
        return None
    budget = Budget.from_environment()
    if size > budget.bytes or budget.seconds_without_document < 1:
        return None
    lines = data.split(b"\n")
    if len(lines) > budget.blank_lines:  # more newlines than the blank lines admitted
        return None
    if not lines[-1]:
        lines.pop()  # the range ends with a newline: nothing after it
    if size > MAX_DOCUMENT_BYTES and max(map(len, lines)) > MAX_DOCUMENT_BYTES:
        return None
    return lines


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


@dataclass(frozen=True)
class Budget:
    """What one input file may cost before it is set aside: bytes after decompression, blank
    lines, and seconds of reading without finding a document. The defaults admit a 5M-bundle
    JSON Lines file (about 12 GiB, no blank line, a document every few microseconds) with room
    to spare, and stop a small compressed file of nothing (82 KB of zstd is 2.5 GiB of newlines)
    within a second. Each can be changed with its environment variable (docs/security.md)."""

    bytes: int = 64 * 1024**3
    blank_lines: int = 1_000_000
    seconds_without_document: float = 60.0

    @classmethod
    def from_environment(cls) -> Budget:
        env = os.environ
        return cls(
            int(env.get("KINDEX_MAX_FILE_BYTES", cls.bytes)),
            int(env.get("KINDEX_MAX_BLANK_LINES", cls.blank_lines)),
            float(env.get("KINDEX_MAX_SECONDS_WITHOUT_DOCUMENT", cls.seconds_without_document)),
        )


class _Spent:
    """A file's budget as it is spent, line by line."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.bytes = 0
        self.blank = 0
        self.last_document = time.monotonic()

    def over(self, line: bytes, blank: bool) -> str | None:
        """Why reading must stop after `line`, or None."""
        self.bytes += len(line)
        self.blank += blank
        b = self.budget
        if self.bytes > b.bytes:
            return f"more than {b.bytes} bytes after decompression (KINDEX_MAX_FILE_BYTES)"
        if self.blank > b.blank_lines:
            return f"more than {b.blank_lines} blank lines (KINDEX_MAX_BLANK_LINES)"
        if time.monotonic() - self.last_document > b.seconds_without_document:
            return (
                f"{b.seconds_without_document:g} s of reading without a document "
                "(KINDEX_MAX_SECONDS_WITHOUT_DOCUMENT)"
            )
        return None


def _lines(
    name: str, stream: IO[bytes] | _Limited, first_line: int = 1
) -> Iterator[Document | Problem]:
    number = first_line - 1
    spent = _Spent(Budget.from_environment())
    while True:
        line = stream.readline(MAX_DOCUMENT_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_DOCUMENT_BYTES and not line.endswith(b"\n"):
            head = line[:KEEP_REJECTED_BYTES]
            while line and not line.endswith(b"\n"):  # skip the rest of the oversized line
                line = stream.readline(MAX_DOCUMENT_BYTES)
                spent.bytes += len(line)
                if spent.bytes > spent.budget.bytes:
                    break
            yield Problem(name, number, _too_big(), head)
            continue
        text = line.strip()
        if (why := spent.over(line, not text)) is not None:
            yield Problem(name, number, f"file set aside at this line: {why}")
            return
        if text:
            yield Document(name, number, text)
            spent.last_document = time.monotonic()  # time spent by the reader is not counted


def _whole(name: str, stream: IO[bytes], fmt: str) -> Iterator[Document | Problem]:
    yield from _whole_bytes(name, stream.read(MAX_DOCUMENT_BYTES + 1), fmt)


def _whole_bytes(name: str, data: bytes, fmt: str) -> Iterator[Document | Problem]:
    """The document of a whole file's bytes (`data`: more than MAX_DOCUMENT_BYTES is too big)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        yield Problem(name, None, _too_big(), data[:KEEP_REJECTED_BYTES])
        return
    if not data or data.isspace():  # what strip() leaves empty, without copying the file
        yield Problem(name, None, "empty file: expected a JSON bundle")
        return
    display = None
    if fmt == "text":
        display, data = _split_display(data)
        if display is None and not data.lstrip().startswith((b"{", b"[")):
            yield Problem(
                name,
                None,
                "not a seed text file: expected a display-name line, a blank line, then JSON",
                data[:KEEP_REJECTED_BYTES],
            )
            return
        if display is not None and has_control(display):
            yield Problem(name, None, "the display-name line holds a control character")
            return
    yield Document(name, None, data.strip(), display)


def _split_display(data: bytes) -> tuple[str | None, bytes]:
    """Split the seed text format: 'Display name\\n\\n{json}'. A bare JSON text has no display.
    A display name may begin as JSON does ('[beta] Triton', '{fused}'): a first line that is
    not '{' or '[' alone, a blank line, then an object is a display name and a bundle (as a
    JSON text it would not parse: two values; it was read whole and rejected)."""
    head, sep, rest = data.partition(b"\n")
    if not sep or not rest.startswith((b"\n", b"\r\n")):
        return None, data
    if data.lstrip().startswith((b"{", b"[")) and (
        head.strip() in (b"", b"{", b"[") or not rest.lstrip().startswith(b"{")
    ):
        return None, data
    try:
        display = head.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, data
    return display, rest


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def has_control(text: str) -> bool:
    """True when `text` holds a C0 or C1 control character (a terminal escape starts with one)."""
    return _CONTROL.search(text) is not None


def _too_big() -> str:
    return f"document larger than the {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB limit per document"
