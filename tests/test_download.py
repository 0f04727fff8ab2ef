"""Downloads with retries (kindex_olap.importers.download): a transient failure is tried again,
a final answer is not, and neither leaves a partial file."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kindex_olap.importers.download import download, fetch


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
