"""RFC 8785 (JSON Canonicalization Scheme) serialization and KernelIndex document digests.

The reference `rfc8785` package manages about 10k documents/s, too slow for bulk ingest. Here the
common case goes through orjson with sorted keys after a cheap normalization pass that makes
orjson's output identical to RFC 8785: integral floats become ints (ECMAScript prints 162.0 as
"162"), and anything orjson would format differently from ECMAScript (huge or tiny magnitudes,
non-ASCII keys whose UTF-16 order differs from code-point order, integers beyond 2**53) sends the
document down a slower, fully spelled-out serializer. For validated runs, whose keys are ASCII
and whose numbers are mostly pinned by the schema, ingest skips even the normalization walk:
`plain_number` checks the few free numbers and `sorted_json` is then already RFC 8785
(flatten.run_identity). Property tests check every path against the reference implementation.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson

# ECMAScript's Number.MAX_SAFE_INTEGER: RFC 8785 numbers are IEEE doubles, and an integer beyond
# it has no exact form. The one safe-integer bound of kindex (validation and facts use it too).
MAX_SAFE_INTEGER = 2**53 - 1
# orjson and ECMAScript agree on float formatting for magnitudes in this range (both use the
# shortest round-trip digits and plain decimal notation there).
FAST_FLOAT_MIN = 1e-4
FAST_FLOAT_MAX = 1e16


class CanonicalizationError(ValueError):
    """A value that RFC 8785 cannot represent (NaN, infinity, a lone surrogate, a non-JSON type)."""


class _NeedsSlowPath(Exception):
    pass


def canonical_json(obj: Any) -> bytes:
    """Return the RFC 8785 canonical UTF-8 encoding of a JSON-compatible value."""
    try:
        normalized = _normalize(obj)
        return orjson.dumps(normalized, option=orjson.OPT_SORT_KEYS)
    except _NeedsSlowPath:
        return _slow(obj).encode("utf-8")
    except (TypeError, orjson.JSONEncodeError) as e:
        raise CanonicalizationError(str(e)) from e


def document_digest(doc: dict[str, Any]) -> str:
    """Digest of a KernelIndex document: sha256 of the canonical `{apiVersion, kind, spec}`."""
    core = {"apiVersion": doc.get("apiVersion"), "kind": doc.get("kind"), "spec": doc.get("spec")}
    return "sha256:" + hashlib.sha256(canonical_json(core)).hexdigest()


def _normalize(value: Any) -> Any:
    """Copy `value` into a form orjson serializes exactly as RFC 8785 does, or raise _NeedsSlowPath."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalizationError(f"object key {key!r} is not a string")
            if not key.isascii():
                raise _NeedsSlowPath
            out[key] = _normalize(item)
        return out
    if isinstance(value, list | tuple):
        return [_normalize(item) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
        # RFC 8785 numbers are IEEE doubles: an integer beyond 2**53 - 1 has no exact form.
        raise CanonicalizationError(f"integer {value} exceeds the safe range of JSON numbers")
    if isinstance(value, float):
        return _normalize_float(value)
    raise CanonicalizationError(f"{type(value).__name__} is not a JSON type")


def _normalize_float(value: float) -> float | int:
    if not math.isfinite(value):
        raise CanonicalizationError(f"{value} cannot be represented in JSON")
    magnitude = abs(value)
    if value.is_integer():
        if magnitude <= MAX_SAFE_INTEGER:
            return int(value)
        raise _NeedsSlowPath
    if FAST_FLOAT_MIN <= magnitude < FAST_FLOAT_MAX:
        return value
    raise _NeedsSlowPath


def format_number(value: float | int) -> str:
    """Format a number as ECMAScript's Number.prototype.toString() does (RFC 8785 section 3.2.2.3)."""
    number = float(value)
    if not math.isfinite(number):
        raise CanonicalizationError(f"{value} cannot be represented in JSON")
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest_digits(abs(number))
    k = len(digits)
    if k <= point <= 21:
        body = digits + "0" * (point - k)
    elif 0 < point <= 21:
        body = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        body = "0." + "0" * (-point) + digits
    else:
        exponent = point - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    return sign + body


def _shortest_digits(magnitude: float) -> tuple[str, int]:
    """Shortest round-trip digits of a positive float and the decimal point position.

    The value equals 0.DIGITS x 10**point. Python's repr already yields the shortest digits.
    """
    mantissa, _, exp_text = repr(magnitude).partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = int(exp_text) if exp_text else 0
    raw = (whole + fraction).lstrip("0")
    leading_zeros = len(whole + fraction) - len(raw)
    digits = raw.rstrip("0") or "0"
    point = len(whole) - leading_zeros + exponent
    return digits, point


def _slow(value: Any) -> str:
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise CanonicalizationError(f"object key {key!r} is not a string")
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(_string(k) + ":" + _slow(value[k]) for k in keys) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_slow(item) for item in value) + "]"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int) and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise CanonicalizationError(f"integer {value} exceeds the safe range of JSON numbers")
    if isinstance(value, int | float):
        return format_number(value)
    raise CanonicalizationError(f"{type(value).__name__} is not a JSON type")


def _string(text: str) -> str:
    try:
        return orjson.dumps(text).decode("utf-8")
    except orjson.JSONEncodeError as e:
        raise CanonicalizationError(f"string {text[:40]!r} is not valid Unicode: {e}") from e


def plain_number(value: object) -> bool:
    """True when orjson spells this number exactly as RFC 8785 does."""
    if isinstance(value, float):
        return not value.is_integer() and FAST_FLOAT_MIN <= abs(value) < FAST_FLOAT_MAX
    return not isinstance(value, int) or -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def sorted_json(doc: Any) -> bytes:
    """orjson's sorted compact output: RFC 8785 for documents whose keys are ASCII and whose
    numbers all pass `plain_number` (the caller must know that, e.g. from validation)."""
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
