"""Values read and written with KernelIndex's (JavaScript) semantics: Number(), Math.round,
JSON.parse, ISO instants, kebab-case names, derived-axis expressions."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

_KEBAB = re.compile(r"[^a-z0-9]+")


_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def kebab(value: str) -> str:
    """Lower-case, runs of other characters to '-', trimmed, cut to 100 characters."""
    return _KEBAB.sub("-", value.lower()).strip("-")[:100]


def js_number(text: str) -> float:
    """JavaScript's Number(string): '' is 0, decimals and Infinity parse, the rest is NaN."""
    s = text.strip()
    if not s:
        return 0.0
    if _DECIMAL.fullmatch(s):
        return float(s)
    if s.lstrip("+-") == "Infinity":
        return -math.inf if s.startswith("-") else math.inf
    return math.nan


def js_round(value: float) -> int:
    """Math.round: halves round up (towards +infinity)."""
    return math.floor(value + 0.5)


def reject_constant(name: str) -> Any:
    """JSON.parse rejects NaN and Infinity; so does the importer."""
    raise ValueError(f"{name} is not JSON")


def utc_instant(timestamp: str) -> str:
    """ISO instant with milliseconds and Z; zone-less CSV timestamps are UTC (as the seeds)."""
    moment = datetime.fromisoformat(timestamp.strip().replace(" ", "T"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def eval_axis(expression: str, values: dict[str, int]) -> int:
    """Evaluate a derived-axis expression (integers, names, + - * // %, parentheses)."""
    tokens = re.findall(r"\d+|[a-z_][a-z0-9_]*|//|[+\-*%()]", expression)
    pos = 0

    def factor() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            val = total()
            pos += 1
            return val
        return int(tok) if tok.isdigit() else values[tok]

    def product() -> int:
        nonlocal pos
        val = factor()
        while pos < len(tokens) and tokens[pos] in ("*", "//", "%"):
            op = tokens[pos]
            pos += 1
            rhs = factor()
            val = val * rhs if op == "*" else val % rhs if op == "%" else val // rhs
        return val

    def total() -> int:
        nonlocal pos
        val = product()
        while pos < len(tokens) and tokens[pos] in ("+", "-"):
            op = tokens[pos]
            pos += 1
            rhs = product()
            val = val + rhs if op == "+" else val - rhs
        return val

    return total()
