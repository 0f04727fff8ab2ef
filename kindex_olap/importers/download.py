"""The one way importers read a URL: GET with a timeout, tried again on transient failures.

A package index or an export host that drops a connection, times out, or answers 408, 425, 429
or 5xx is asked again after 1 s, then 2 s; any other answer (404, a bad certificate) is final.
Two clocks bound a download: STALL_S without a byte arriving (per socket operation), and an
overall deadline (`deadline(seconds)`, `kindex import --timeout`) over every attempt, so a
server that trickles a byte every few seconds cannot hold an import forever.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from kindex_olap.atomic import atomic_path

STALL_S = 30.0  # seconds without a byte before an attempt is given up
DEADLINE_S = 300.0  # the default overall deadline of one import's downloads
ATTEMPTS = 3
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
T = TypeVar("T")


def fetch(url: str, *, accept: str | None = None, pause_s: float = 1.0) -> bytes:
    """The body of `url` (http, https or file). Raises the last urllib.error.URLError or
    OSError when every attempt failed."""
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})

    def once() -> bytes:
        parts: list[bytes] = []
        with _open(request) as response:
            _copy(response, parts.append)
        return b"".join(parts)

    with _own_deadline():
        return _with_retries(url, once, pause_s)


def download(url: str, target: Path, *, pause_s: float = 1.0) -> None:
    """Stream `url` into `target`; a failed download leaves no part of it behind."""

    def once() -> None:
        with _open(url) as response, atomic_path(target) as tmp, open(tmp, "wb") as out:
            _copy(response, out.write)

    with _own_deadline():
        _with_retries(url, once, pause_s)


def _own_deadline() -> contextlib.AbstractContextManager[None]:
    """A call outside any `deadline` block gets DEADLINE_S of its own."""
    return deadline() if _deadline.get() is None else contextlib.nullcontext()


@contextlib.contextmanager
def deadline(seconds: float = DEADLINE_S) -> Iterator[None]:
    """Every download inside the block ends within `seconds` from now (all attempts together)."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left() -> float:
    """Seconds left before the deadline."""
    end = _deadline.get()
    left = DEADLINE_S if end is None else end - time.monotonic()
    if left <= 0:
        raise urllib.error.URLError(f"no complete answer within the deadline ({_TIMEOUT_HINT})")
    return left


_TIMEOUT_HINT = "`--timeout SECONDS` gives it longer"


def _open(request: str | urllib.request.Request) -> Any:
    return urllib.request.urlopen(request, timeout=min(STALL_S, _left()))


def _copy(response: IO[bytes], write: Callable[[bytes], Any]) -> None:
    """The body in pieces as they arrive, checking the deadline between them; a body shorter
    than its Content-Length is an error (an OSError, so it is retried, then one line)."""
    try:
        while piece := response.read1(1 << 20):  # type: ignore[attr-defined]
            write(piece)
            _left()
    except http.client.HTTPException as e:
        raise urllib.error.URLError(f"the answer broke off: {e!r}") from e
    # read1 raises nothing when the connection closes early: it returns b'' and leaves the
    # bytes still expected in `length` (None: no Content-Length, or not an HTTP answer)
    missing = getattr(response, "length", None)
    if missing:
        raise urllib.error.URLError(f"the answer broke off: {missing} bytes short of its length")


def _with_retries(url: str, action: Callable[[], T], pause_s: float) -> T:
    tries = 1 if url.startswith("file:") else ATTEMPTS
    for number in range(tries):
        try:
            return action()
        except OSError as error:  # urllib.error.URLError (and HTTPError) are OSErrors
            if number == tries - 1 or not _transient(error) or _left() < pause_s * 2**number:
                raise
        time.sleep(pause_s * 2**number)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _transient(error: OSError) -> bool:
    if isinstance(error, urllib.error.HTTPError):
        return error.code in _TRANSIENT_STATUS
    return True  # a refused or dropped connection, a timeout, a name that did not resolve
