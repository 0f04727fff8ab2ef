"""Whether two engines' answers agree: what the Spark tests and bench/spark.py assert of Spark's
answer against DuckDB's, and what a user can check of a cluster's answer against a local one.

Floats agree to 1e-9 relative (the engines sum in different orders); rows agree in order, or
as multisets where the order cannot tell them apart: ties of the verb's ORDER BY, and history
series that print alike (a KernelIndex suite's cases share kernel, GPU, shape and
implementation), which each engine orders by its own series hash.
"""

from __future__ import annotations

import math
from typing import Any


def same_answer(found: Any, expected: Any) -> bool:
    """The same columns, notes and rows (query/run.py QueryResult)."""
    return bool(
        found.columns == expected.columns and found.diagnostics == expected.diagnostics
    ) and (same_rows(found.rows, expected.rows))


def same_rows(found: list[Any], expected: list[Any]) -> bool:
    """Row for row in order, else as multisets (see the module docstring)."""
    if len(found) != len(expected):
        return False
    if all(close(a, b) for a, b in zip(found, expected, strict=True)):
        return True
    pairs = zip(sorted(found, key=repr), sorted(expected, key=repr), strict=True)
    return all(close(a, b) for a, b in pairs)


def close(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-9 relative (NaN agrees with NaN), through dicts, lists and tuples."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
