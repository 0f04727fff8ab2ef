"""Atomic file writes for everything outside the lake (importers' raw folders, database files,
exports, caches): a reader sees the old file or the new one, never a part.

The new bytes go to a unique hidden name beside the target (two writers never share a temp
file), are fsynced, and replace the target in one `os.replace`; then the folder is fsynced so
that the rename itself survives a crash.
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


def temporary_beside(path: Path) -> Path:
    """A unique hidden name in `path`'s folder for bytes that will replace `path`."""
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def replace(tmp: Path, path: Path, *, durable: bool = True) -> None:
    """Move the finished `tmp` over `path`; with `durable`, fsync the file before and the folder
    after the rename."""
    if durable:
        _fsync(tmp, os.O_RDONLY)
    os.replace(tmp, path)
    if durable:
        _fsync(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))


@contextlib.contextmanager
def atomic_path(path: Path, *, durable: bool = True) -> Iterator[Path]:
    """A temporary path to write `path`'s new content to (by any means: DuckDB, a compressor);
    it replaces `path` when the block ends without an error, and is removed when it fails."""
    tmp = temporary_beside(path)
    try:
        yield tmp
        replace(tmp, path, durable=durable)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write `data` to `path` atomically."""
    with atomic_path(path, durable=durable) as tmp:
        tmp.write_bytes(data)


def write_if_changed(path: Path, data: bytes, *, durable: bool = True) -> bool:
    """Write `data` to `path` atomically unless the file already holds exactly it (its mtime
    then stays, so that ingest skips it as unchanged); True when written."""
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    write_atomic(path, data, durable=durable)
    return True


def replace_if_changed(tmp: Path, path: Path) -> bool:
    """Move the finished `tmp` over `path` unless `path` holds the same bytes (then `tmp` is
    removed and `path` keeps its mtime); True when replaced."""
    if path.is_file() and filecmp.cmp(tmp, path, shallow=False):
        tmp.unlink()
        return False
    replace(tmp, path)
    return True


def _fsync(path: Path, flags: int) -> None:
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
