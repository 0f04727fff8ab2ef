"""The staging processes' side of an ingest: one job (a chunk of documents, a byte range of a
JSON Lines file, or a batch of small files to read) staged into its own NDJSON file."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kindex_olap.ingestion.sources import Document, Problem, read_documents, read_line_range
from kindex_olap.ingestion.stage import FILE_SEQ_STRIDE, ChunkResult, stage_chunk

# (kind: "documents" | "range" | "files", payload, verify digests, first sequence number, out)
Job = tuple[str, Any, bool, int, str]


def ignore_interrupts() -> None:
    """Staging processes leave Ctrl-C to the parent, which stops them and rolls back."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass
class JobResult:
    """What a staging job sends back: its documents' counts, rejects and dimensions, the files
    it read (a batch of small files: each one's row and sequence block), and the NDJSON file
    its valid runs were written to (None when it staged no run)."""

    chunk: ChunkResult
    files: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    staged_file: str | None = None
    staged_runs: int = 0


def stage_job(job: Job) -> JobResult:
    """Run in a staging process: a chunk of documents, a byte range of a JSON Lines file, or a
    batch of small files to read. Valid runs go to the job's own staging file."""
    kind, payload, verify, first_seq, out = job
    if kind == "documents":
        result = JobResult(stage_chunk(payload, verify, first_seq))
    elif kind == "range":
        path, start, end, line = payload
        documents = list(read_line_range(Path(path), start, end, line))
        result = JobResult(stage_chunk(documents, verify, first_seq))
    else:
        result = _stage_files(payload, verify, first_seq)
    _write_staged(result, out)
    return result


def _stage_files(files: list[tuple[str, int, int]], verify: bool, first_seq: int) -> JobResult:
    """A batch of small files, each read and hashed here, in a sequence block of its own; their
    documents are staged as one chunk (the string patterns are checked once for the batch)."""
    result = JobResult(ChunkResult())
    items: list[Document | Problem] = []
    seq_starts: dict[int, int] = {}
    for number, (path, size, mtime) in enumerate(files):
        seq = first_seq + number * FILE_SEQ_STRIDE
        seq_starts[len(items)] = seq
        try:
            data = _read_file(path)
        except OSError as e:
            items.append(Problem(path, None, f"unreadable file: {e}"))
            row = file_row(path, size, mtime, None)
        else:
            items.extend(read_documents(path, data))
            row = file_row(path, size, mtime, hashlib.sha256(data).hexdigest())
        result.files.append((row, seq // FILE_SEQ_STRIDE))
    stage_chunk(items, verify, first_seq, into=result.chunk, seq_starts=seq_starts)
    return result


def _read_file(path: str) -> bytes:
    """A file's bytes, through the OS calls alone (`open()` builds a buffered file object:
    9 of the 15 us of reading a small file here)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        parts = []
        while chunk := os.read(fd, 1 << 20):
            parts.append(chunk)
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _write_staged(result: JobResult, out: str) -> None:
    """The job's valid runs (NDJSON lines) to its staging file, `out`."""
    lines, result.chunk.lines = result.chunk.lines, []
    if lines:
        try:
            with open(out, "wb") as handle:
                handle.write(b"\n".join(lines))
                handle.write(b"\n")
        except OSError as e:  # a full disk's write error names no file: name it
            raise OSError(e.errno, e.strerror, out) from e
        result.staged_file, result.staged_runs = out, len(lines)


def file_row(path: str, size: int, mtime: int, content_hash: str | None) -> dict[str, Any]:
    return {
        "path": path,
        "size": size,
        "mtime_ns": mtime,
        "sha256": content_hash,
        "documents": 0,
        "rejected": 0,
    }


@contextlib.contextmanager
def main_script_hidden() -> Iterator[None]:
    """Start worker processes without the parent's main script: spawn re-runs it in every
    worker unless it is a module run with -m, and the `kindex` script imports the whole CLI
    (typer, pydantic: 0.15-0.3 s of CPU and about 40 MB per worker), which staging never uses."""
    main = sys.modules["__main__"]
    path = getattr(main, "__file__", None)
    if path is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path
