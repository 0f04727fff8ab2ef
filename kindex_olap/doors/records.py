"""Query rows as JSON-ready records: the one spelling `--format json`, charts and the report share."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from typing import Any


def plain(value: Any) -> Any:
    """A JSON-ready value: timestamps as ISO 8601, NaN/inf as null, other objects as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)


def spelled(value: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> str:
    """A map or list in a table cell: a workload's axes as `k=7168 m=1024 n=4608` (whole
    numbers without `.0`), anything nested as JSON; Python's `{'k': 7168.0}` read as code."""
    if isinstance(value, dict) and all(
        v is None or isinstance(v, bool | int | float | str) for v in value.values()
    ):
        return " ".join(f"{k}={axis_value(v)}" for k, v in value.items())
    return json.dumps(plain(value), sort_keys=True, ensure_ascii=False)


def axis_value(value: Any) -> str:
    """A scalar as written: 4608, not 4608.0."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return "" if value is None else str(value)


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """One dict per row, as `kindex query --format json` prints them."""
    return [dict(zip(columns, (plain(v) for v in row), strict=True)) for row in rows]
