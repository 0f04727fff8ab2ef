"""What a process keeps of one lake commit while it reads it (a session's repeated answers):
each kind of value with the key it was computed for (the lake commit's file lists: a data file
is never rewritten, so a new lake commit that changes a table changes its list). One lake
commit per kind: a new key replaces the old value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_KEPT: dict[str, tuple[tuple[str, ...], Any]] = {}


def kept(kind: str, key: tuple[str, ...], compute: Callable[[], T]) -> T:
    """`compute()`, kept for `kind` while `key` stays the one it was computed for."""
    held = _KEPT.get(kind)
    if held is None or held[0] != key:
        held = _KEPT[kind] = (key, compute())
    value: T = held[1]
    return value
