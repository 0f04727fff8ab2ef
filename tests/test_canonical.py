"""kindex's canonical JSON must equal the reference RFC 8785 implementation on every input."""

from __future__ import annotations

import hashlib
import json

import pytest
import rfc8785
from conftest import SEEDS
from hypothesis import given, settings
from hypothesis import strategies as st

from kindex_olap.model.canonical import (
    CanonicalizationError,
    canonical_json,
    document_digest,
    format_number,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**54), max_value=2**54)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(json_values)
def test_matches_reference_implementation(value: object) -> None:
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        with pytest.raises(CanonicalizationError):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_formatting_matches_ecmascript(value: float) -> None:
    assert format_number(value).encode() == rfc8785.dumps(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (162.0, "162"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (2.0**60, "1152921504606847000"),
        (2.0**53, "9007199254740992"),
        (5e-324, "5e-324"),
        (123.456, "123.456"),
    ],
)
def test_ecmascript_number_examples(value: float, text: str) -> None:
    assert format_number(value) == text
    assert canonical_json(value) == text.encode()


def test_utf16_key_order_and_escapes() -> None:
    # U+1F600 sorts before U+FB01 in UTF-16 (surrogate 0xD83D < 0xFB01) but after it by code point.
    value = {"\ufb01": 1, "\U0001f600": 2, "a\x1f\u2028": "é\x7f"}
    assert canonical_json(value) == rfc8785.dumps(value)


def test_rejects_non_finite_numbers() -> None:
    with pytest.raises(CanonicalizationError):
        canonical_json({"x": float("nan")})


def test_seed_digests_recompute() -> None:
    """The seeds' protocol and environment digests are RFC 8785 digests of {apiVersion, kind, spec}."""
    for path in sorted(SEEDS.glob("*.txt")):
        bundle = json.loads(path.read_text().split("\n", 2)[2])
        spec = bundle["run"]["spec"]
        assert document_digest(bundle["protocol"]) == spec["protocolDigest"], path.name
        assert document_digest(bundle["environment"]) == spec["environmentDigest"], path.name


def _run(values: list[object], metrics: dict[str, object]) -> dict[str, object]:
    """A seed run whose measurement values and sourceNative metrics are `values` / `metrics`."""
    path = sorted(SEEDS.glob("*.txt"))[0]
    run = json.loads(path.read_text().split("\n", 2)[2])["run"]
    run["spec"]["measurements"] = [
        {"metric": "latency", "unit": "ns", "statistic": f"p{i}", "value": v}
        for i, v in enumerate(values)
    ]
    run["spec"]["sourceNative"]["metrics"] = metrics
    return run


def _reference_identity(run: dict[str, object]) -> str:
    core = {"apiVersion": run["apiVersion"], "kind": run["kind"], "spec": run["spec"]}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(core)).hexdigest()


numbers = st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1) | st.floats(
    allow_nan=False, allow_infinity=False
)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(
    st.lists(numbers, max_size=4),
    st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), numbers, max_size=3),
)
def test_run_identity_fast_path_matches_reference(
    values: list[object], metrics: dict[str, object]
) -> None:
    """The ingest's identity (orjson sorted output when the free numbers are plain) is RFC 8785."""
    from kindex_olap.model.facts import run_identity

    run = _run(values, metrics)
    assert run_identity(run) == _reference_identity(run)


@pytest.mark.parametrize("value", [162.0, -0.0, 1e-7, 2.5e20, 2.0**60, 1e-5, 0.1])
def test_run_identity_falls_back_on_numbers_orjson_spells_differently(value: float) -> None:
    from kindex_olap.model.facts import run_identity

    run = _run([value], {"ms_50": value})
    assert run_identity(run) == _reference_identity(run)


def test_run_identity_refuses_integers_beyond_the_safe_range() -> None:
    from kindex_olap.model.facts import run_identity

    with pytest.raises(CanonicalizationError):
        run_identity(_run([123456789012345678], {}))


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.sampled_from([0.0, -0.0, 1e-4, 1e16, 2.0**53, -(2.0**53), 2**53, -(2**53), 1.5, True]),
    )
)
def test_the_inlined_plain_check_is_plain_number(value: float | int) -> None:
    """Ingest's hot loop (flatten._all_plain) inlines canonical.plain_number: same verdicts."""
    from kindex_olap.model.canonical import plain_number
    from kindex_olap.model.facts import _all_plain

    assert _all_plain([value]) == plain_number(value)
