"""The helpers written once for the whole package: atomic writes and downloads with retries."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kindex_olap.atomic import atomic_path, replace_if_changed, write_atomic, write_if_changed
from kindex_olap.importers.download import download, fetch


def test_write_atomic_replaces_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_bytes(b"old")
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("the writer failed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_two_writers_never_share_a_temporary_name(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    with atomic_path(target) as first, atomic_path(target) as second:
        assert first != second and first.parent == second.parent == tmp_path
        first.write_bytes(b"first")
        second.write_bytes(b"second")
    assert target.read_bytes() == b"first"  # the outer block ends last and wins


def test_an_unchanged_file_keeps_its_mtime(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    assert write_if_changed(target, b"same")
    os.utime(target, ns=(1, 1))
    assert not write_if_changed(target, b"same")
    assert target.stat().st_mtime_ns == 1
    tmp = tmp_path / "next"
    tmp.write_bytes(b"same")
    assert not replace_if_changed(tmp, target) and not tmp.exists()
    assert target.stat().st_mtime_ns == 1
    tmp.write_bytes(b"other")
    assert replace_if_changed(tmp, target) and target.read_bytes() == b"other"


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers each path with the statuses queued for it, then 200 and the path as body."""

    queued: dict[str, list[int]] = {}  # noqa: RUF012 - set per test, read by the server thread
    seen: list[str] = []  # noqa: RUF012

    def do_GET(self) -> None:
        self.seen.append(self.path)
        statuses = self.queued.get(self.path) or [200]
        status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
        body = self.path.encode() if status == 200 else b"no"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    _Flaky.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_transient_failure_is_tried_again(server: str, tmp_path: Path) -> None:
    _Flaky.queued = {"/a": [503, 429, 200], "/b": [502, 200]}
    assert fetch(server + "/a", pause_s=0) == b"/a"
    download(server + "/b", tmp_path / "b", pause_s=0)
    assert (tmp_path / "b").read_bytes() == b"/b"
    assert _Flaky.seen == ["/a", "/a", "/a", "/b", "/b"]


def test_a_final_answer_is_not_retried_and_leaves_no_file(server: str, tmp_path: Path) -> None:
    _Flaky.queued = {"/missing": [404], "/down": [503]}
    with pytest.raises(OSError, match="404"):
        fetch(server + "/missing", pause_s=0)
    with pytest.raises(OSError, match="503"):
        download(server + "/down", tmp_path / "down", pause_s=0)
    assert _Flaky.seen == ["/missing", "/down", "/down", "/down"]
    assert list(tmp_path.iterdir()) == []
