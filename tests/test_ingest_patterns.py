"""The run's typed decode in two steps (model/patterns.py): the schema without its string
patterns, then every patterned string checked apart. Held to the one-step decode (the schema
with its patterns, as msgspec checks it) on a bundle that has every optional field, on each of
its strings broken, and on real and synthetic bundles; and the collector against an
independent walk of the schema's type information."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from typing import Annotated, Any

import msgspec
import msgspec.inspect as mi
import orjson
import pytest
from conftest import SEEDS
from msgspec import Meta
from test_stage_fast import _assert_same
from test_stage_fast import real_documents as real_documents  # the fixture

from kindex_olap.ingestion.sources import Document
from kindex_olap.ingestion.stage import _ENVELOPE, _TWIN, _Envelope
from kindex_olap.model.patterns import PatternCheck, PatternFree

DIGEST = "sha256:" + "ab" * 32


def _seed() -> dict[str, Any]:
    text = (SEEDS / "001_62d94da41d44ef74.txt").read_text(encoding="utf-8")
    return dict(json.loads(text.partition("\n\n")[2]))


def full_bundle() -> dict[str, Any]:
    """A valid bundle with every optional field of the run (and a display name)."""
    bundle = _seed()
    run = bundle["run"]
    run["metadata"].update(
        description="d",
        labels={"liger_version": "0.8.0", "gpu": "B200"},
        authors=[{"name": "A", "github": "a"}],
        sourceRefs=[{"url": "https://example.com"}],
    )
    spec = run["spec"]
    spec["correctness"] = {
        "comparator": "allclose",
        "maximumAbsoluteError": 0.001,
        "maximumRelativeError": 0.002,
        "matchedRatio": 1,
    }
    spec["timing"] = {
        "primaryStatistic": "median",
        "latencyNs": {
            "median": "3.714592 ms",
            "mean": 3714000,
            "p05": "3700 us",
            "p95": 3800000,
            "minimum": "3600000 ns",
            "maximum": "0.004 s",
            "mad": 1000,
            "confidence95": ["3.7 ms", 3730000],
        },
        "samples": 100,
        "rawSamples": {"uri": "s3://x/y", "digest": DIGEST},
    }
    spec["evidence"] = {
        "logs": {"uri": "s3://x/log", "digest": DIGEST},
        "rawSamples": {"uri": "s3://x/raw", "digest": DIGEST},
        "harness": {"repository": "https://github.com/x/y", "commit": "a" * 40},
    }
    bundle["display"] = "liger"
    return bundle


def _line(bundle: dict[str, Any]) -> bytes:
    return json.dumps(bundle, separators=(",", ":"), ensure_ascii=False).encode()


def _one_step(text: bytes) -> bool:
    try:
        _ENVELOPE.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False
    return True


def _two_steps(text: bytes) -> bool:
    try:
        envelope = msgspec.json.decode(text, type=_TWIN.type)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False
    strings = _TWIN.new_strings()
    _TWIN.collect(envelope, strings)
    return not any(PatternCheck(_TWIN.patterns).failing(strings))


def _string_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every string in a JSON value (keys of objects too, as (..., key, None))."""
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            out.append((*path, key, None))
            out += _string_paths(item, (*path, key))
        return out
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _string_paths(item, (*path, i))]
    return [path] if isinstance(value, str) else []


def _replaced(bundle: dict[str, Any], path: tuple[Any, ...], new: str) -> dict[str, Any]:
    out = copy.deepcopy(bundle)
    parent = out
    if path[-1] is None:  # a key: rename it, keeping its value
        *head, key, _ = path
        for step in head:
            parent = parent[step]
        parent[new] = parent.pop(key)
        return out
    *head, last = path
    for step in head:
        parent = parent[step]
    parent[last] = new
    return out


BROKEN = ["", "X", "x\x01", "a\n", "a\n\n", "sha256:" + "AB" * 32, "3.7 ms\n", "é", "-a", "1a"]


def test_the_full_bundle_is_valid_and_takes_the_fast_path() -> None:
    text = _line(full_bundle())
    assert _one_step(text) and _two_steps(text)
    fast = _assert_same([Document("full.jsonl", 1, text)])
    assert fast.fast == 1


@pytest.mark.parametrize("new", BROKEN)
def test_every_string_of_the_run_broken_gets_the_same_verdict(new: str) -> None:
    """Each string (and each key) of the full bundle's run and display replaced: the two-step
    decode accepts exactly what the one-step decode accepts, and staging gives the same rows
    and reject reasons on both paths."""
    bundle = full_bundle()
    paths = [("run", *p) for p in _string_paths(bundle["run"])] + [("display",)]
    docs = []
    for number, path in enumerate(paths):
        text = _line(_replaced(bundle, path, new))
        assert _one_step(text) == _two_steps(text), (path, new)
        docs.append(Document("broken.jsonl", number + 1, text))
    _assert_same(docs)


def _patterned(info: Any, value: Any, out: Counter[tuple[str, str]]) -> None:
    """The patterned strings of a plain JSON value, by its msgspec type information."""
    if isinstance(info, mi.StructType):
        for field in info.fields:
            if field.encode_name in value:
                _patterned(field.type, value[field.encode_name], out)
    elif isinstance(info, mi.UnionType):
        for arm in info.types:
            if _fits(arm, value):
                _patterned(arm, value, out)
                return
    elif isinstance(info, mi.ListType):
        for item in value:
            _patterned(info.item_type, item, out)
    elif isinstance(info, mi.DictType):
        for key, item in value.items():
            _patterned(info.key_type, key, out)
            _patterned(info.value_type, item, out)
    elif isinstance(info, mi.StrType) and info.pattern is not None:
        out[(info.pattern, value)] += 1


def _fits(info: Any, value: Any) -> bool:
    kinds = {
        mi.StrType: str,
        mi.StructType: dict,
        mi.ListType: list,
        mi.DictType: dict,
        mi.IntType: int,
        mi.FloatType: float,
    }
    kind = kinds.get(type(info))
    return kind is not None and isinstance(value, kind) and not isinstance(value, bool)


def test_the_collector_finds_what_the_schema_patterns(real_bundles: list[bytes]) -> None:
    """The generated collector lists the same strings per pattern as an independent walk of
    msgspec's type information over the same documents."""
    info = mi.type_info(_Envelope)
    for text in [_line(full_bundle()), *real_bundles]:
        obj = orjson.loads(text)
        expected: Counter[tuple[str, str]] = Counter()
        _patterned(info, obj, expected)
        strings = _TWIN.new_strings()
        _TWIN.collect(msgspec.json.decode(text, type=_TWIN.type), strings)
        got = Counter(
            (pattern, value)
            for pattern, values in zip(_TWIN.patterns, strings, strict=True)
            for value in values
        )
        assert got == expected


@pytest.fixture(scope="module")
def real_bundles(real_documents: list[Document]) -> list[bytes]:
    """The valid bundles of the real corpora (Liger's history, a KernelIndex export, the seeds:
    test_stage_fast's fixture) and 600 synthetic ones."""
    from synthetic import bundles

    out = [d.text for d in real_documents] + [_line(b) for b in bundles(600, seed=3)]
    return [t for t in out if _one_step(t)]


def test_the_twin_encodes_as_the_schema_does(real_bundles: list[bytes]) -> None:
    """Staging hashes the re-encoded run: the twin type must encode it byte for byte alike."""
    full = _line(full_bundle())
    for text in [full, *real_bundles]:
        one = _ENVELOPE.decode(text)
        two = msgspec.json.decode(text, type=_TWIN.type)
        for order in (None, "sorted"):
            encode = msgspec.json.Encoder(order=order).encode
            assert encode(one) == encode(two)


def test_pattern_check_remembers_only_matching_strings() -> None:
    check = PatternCheck([r"^[a-z]+$"])
    assert check.failing([["abc", "abc\n", "Abc", "abc\n\n"]]) == [{"Abc", "abc\n\n"}]
    assert check.failing([["Abc"]]) == [{"Abc"}]  # a failure is not remembered as a match
    assert check.failing([["abc"]]) == [set()]
    assert re.search(r"^[a-z]+$", "abc\n")  # msgspec's semantics: `$` before a final newline


def test_a_pattern_on_a_non_string_or_an_ambiguous_union_is_refused() -> None:
    class Odd(msgspec.Struct):
        value: Annotated[str, Meta(pattern="^a$")] | Annotated[str, Meta(pattern="^b$")]

    with pytest.raises(TypeError, match="union arms"):
        PatternFree(Odd)
