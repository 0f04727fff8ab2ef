"""The one way importers read a URL: GET with a timeout, tried again on transient failures.

A package index or an export host that drops a connection, times out, or answers 408, 425, 429
or 5xx is asked again after 1 s, then 2 s; any other answer (404, a bad certificate) is final.
"""

from __future__ import annotations

import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kindex_olap.atomic import atomic_path

TIMEOUT_S = 60
ATTEMPTS = 3
_TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
T = TypeVar("T")


def fetch(url: str, *, accept: str | None = None, pause_s: float = 1.0) -> bytes:
    """The body of `url` (http, https or file). Raises the last urllib.error.URLError or
    OSError when every attempt failed."""
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})

    def once() -> bytes:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return bytes(response.read())

    return _with_retries(url, once, pause_s)


def download(url: str, target: Path, *, pause_s: float = 1.0) -> None:
    """Stream `url` into `target`; a failed download leaves no part of it behind."""

    def once() -> None:
        with (
            urllib.request.urlopen(url, timeout=TIMEOUT_S) as response,
            atomic_path(target) as tmp,
            open(tmp, "wb") as out,
        ):
            shutil.copyfileobj(response, out, 1 << 20)

    _with_retries(url, once, pause_s)


def _with_retries(url: str, action: Callable[[], T], pause_s: float) -> T:
    tries = 1 if url.startswith("file:") else ATTEMPTS
    for number in range(tries):
        try:
            return action()
        except OSError as error:  # urllib.error.URLError (and HTTPError) are OSErrors
            if number == tries - 1 or not _transient(error):
                raise
        time.sleep(pause_s * 2**number)
    raise AssertionError("unreachable: the last attempt returns or raises")


def _transient(error: OSError) -> bool:
    if isinstance(error, urllib.error.HTTPError):
        return error.code in _TRANSIENT_STATUS
    return True  # a refused or dropped connection, a timeout, a name that did not resolve
