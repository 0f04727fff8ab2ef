"""Query rows as JSON-ready records: the one spelling `--format json`, charts and the report share."""

from __future__ import annotations

import datetime as dt
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


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """One dict per row, as `kindex query --format json` prints them."""
    return [dict(zip(columns, (plain(v) for v in row), strict=True)) for row in rows]
