"""The one-decode staging path against the general path, on real and hostile documents.

Staging first tries to decode a bundle straight into its validated type (stage._stage_fast) and
falls back to the general path (parse, duplicate-key check, validate, canonicalize) for anything
it cannot prove. These tests hold the two to the same verdicts and the same staged rows.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import SEEDS
from hypothesis import given, settings
from hypothesis import strategies as st
from realdata import KERNELINDEX_SLICES, export_rows

from kindex_olap.ingestion.sources import (
    Document,
    discover_names,
    line_ranges,
    read_documents,
    read_line_range,
)
from kindex_olap.ingestion.stage import ChunkResult, stage_chunk

KERNELINDEX_EXPORT = KERNELINDEX_SLICES[0]  # the export with serving runs (its slice)
LIGER_RUNS = 7898  # runs in Liger's history CSV (tests/data/README.md)


def _real_runs() -> int:
    """Runs in the real data staged here: Liger's history, the export (counted from its
    lines), the seeds."""
    seeds = len(list(SEEDS.glob("*.txt")))
    return LIGER_RUNS + export_rows(KERNELINDEX_EXPORT)["benchmark_runs"] + seeds


def _outcome(result: ChunkResult) -> tuple[list[Any], list[str], dict[str, Any]]:
    """What staging decided, in comparable form: staged rows, reject reasons, dimensions."""
    rows = [orjson.loads(line) for line in result.lines]
    return rows, [r.reason for r in result.rejects], result.dimensions


def _both(docs: list[Document], verify: bool = False) -> tuple[ChunkResult, ChunkResult]:
    return stage_chunk(docs, verify, 0), stage_chunk(docs, verify, 0, fast=False)


def _assert_same(docs: list[Document], verify: bool = False) -> ChunkResult:
    fast, general = _both(docs, verify)
    assert _outcome(fast) == _outcome(general)
    assert general.fast == 0
    return fast


@pytest.fixture(scope="session")
def real_documents(
    liger_history_lake: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[Document]:
    """Bundles converted from Liger's CSV history (the raw folder conftest's liger_history_lake
    was ingested from: converted once per session) and a KernelIndex export, plus the seeds."""
    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    raw = tmp_path_factory.mktemp("raw")
    import_kernelindex(str(KERNELINDEX_EXPORT), raw_dir=raw / "kernelindex", ingest=False)
    seeds = sorted(SEEDS.glob("*.txt"))
    paths = [*discover_names([raw]), *discover_names([liger_raw(liger_history_lake)]), *seeds]
    docs = [d for p in paths for d in read_documents(p) if isinstance(d, Document)]
    assert len(docs) >= _real_runs()  # every run's bundle, and the exports' dimension documents
    return docs


def liger_raw(liger_history_lake: Path) -> Path:
    """The folder of Liger bundles that liger_history_lake was ingested from."""
    return liger_history_lake.parent / "raw"


def test_fast_path_stages_real_bundles_exactly_as_the_general_path(
    real_documents: list[Document], liger_history_lake: Path
) -> None:
    fast = _assert_same(real_documents)
    runs = len(fast.lines)
    assert runs >= _real_runs()
    # Most real runs take the fast path (else it silently stopped working): every Liger run;
    # KernelIndex runs with a number below 1e-4 (spelled differently by RFC 8785) do not.
    assert fast.fast > 0.85 * runs, (fast.fast, runs)
    folder = liger_raw(liger_history_lake)
    liger = [  # its bundles
        d
        for d in real_documents
        if Path(d.path).parent == folder and Path(d.path).name.startswith("liger_")
    ]
    assert stage_chunk(liger, False, 0).fast == len(liger) > 7_000


def test_fast_path_verifies_digests_like_the_general_path(real_documents: list[Document]) -> None:
    sample = real_documents[::50]
    fast = _assert_same(sample, verify=True)
    assert fast.fast > 0


def _seed_line(name: str = "001_62d94da41d44ef74.txt") -> dict[str, Any]:
    return json.loads((SEEDS / name).read_text(encoding="utf-8").partition("\n\n")[2])


def _dump_with_duplicate(value: Any, path: tuple[str, ...], key: str, first: Any) -> str:
    """Compact JSON of `value`, where the object at `path` says `key` twice: first `first`,
    then its real value (a parser keeps the last, so the document still validates)."""
    if isinstance(value, dict):
        members = []
        for k, v in value.items():
            if not path and k == key:
                members.append(f"{json.dumps(k)}:{json.dumps(first, separators=(',', ':'))}")
            inner = _dump_with_duplicate(v, path[1:], key, first) if path[:1] == (k,) else None
            members.append(f"{json.dumps(k)}:{inner or json.dumps(v, separators=(',', ':'))}")
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        index = int(path[0]) if path else -1
        items = [
            _dump_with_duplicate(v, path[1:], key, first)
            if i == index
            else json.dumps(v, separators=(",", ":"))
            for i, v in enumerate(value)
        ]
        return "[" + ",".join(items) + "]"
    return json.dumps(value, separators=(",", ":"))


DUPLICATES = [
    ((), "run", {}),
    ((), "display", "x"),
    (("run",), "metadata", {"name": "x"}),
    (("run", "metadata"), "name", "other-name"),
    (("run", "metadata", "labels"), "liger_version", "0.0.1"),
    (("run", "spec"), "status", "timeout"),
    (("run", "spec"), "observedAt", "2020-01-01T00:00:00Z"),
    (("run", "spec", "timing", "latencyNs"), "median", 5),
    (("run", "spec", "measurements", "0"), "value", 1),
    (("run", "spec", "sourceNative"), "benchmark", "b"),
    (("run", "spec", "sourceNative", "metrics"), "ms_50", 7),
    (("protocol", "spec"), "harness", {"name": "h"}),
    (("environment", "spec", "hardware"), "product", "NVIDIA B200"),
]


@pytest.mark.parametrize(("path", "key", "first"), DUPLICATES)
def test_duplicate_keys_are_rejected_on_either_path(
    path: tuple[str, ...], key: str, first: Any
) -> None:
    bundle = _seed_line()
    bundle["display"] = "liger"
    text = _dump_with_duplicate(bundle, path, key, first).encode()
    assert text.count(json.dumps(key).encode()) >= 2
    fast, general = _both([Document("dup.jsonl", 1, text)])
    assert _outcome(fast) == _outcome(general)
    assert not fast.lines
    assert "duplicate key" in fast.rejects[0].reason


def test_a_protocol_in_the_environment_slot_is_rejected_after_it_was_seen_as_a_protocol() -> None:
    """Shared documents are validated once per distinct text *and kind*: the exact bytes of a
    valid protocol, already seen in its own slot, are not an environment."""
    good = _seed_line()
    swapped = _seed_line()
    swapped["environment"] = swapped["protocol"]
    docs = [
        Document("b.jsonl", n, json.dumps(b, separators=(",", ":"), ensure_ascii=False).encode())
        for n, b in ((1, good), (2, swapped))
    ]
    fast = _assert_same(docs)
    assert len(fast.lines) == 1 and fast.fast == 1
    assert fast.rejects[0].line == 2 and "$.environment" in fast.rejects[0].reason


def test_random_mutations_get_the_same_verdict_on_both_paths() -> None:
    """Byte-level damage (deleted, repeated or swapped spans) to real bundles, compact and
    indented: every mutant is staged or rejected identically by both paths."""
    rng = random.Random(20261129)
    bases = []
    for seed in sorted(SEEDS.glob("*.txt")):
        bundle = json.loads(seed.read_text(encoding="utf-8").partition("\n\n")[2])
        bases.append(json.dumps(bundle, separators=(",", ":"), ensure_ascii=False).encode())
        bases.append(json.dumps(bundle, indent=1, ensure_ascii=False).encode())
    docs = []
    for number in range(1500):
        text = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            i, j = sorted(rng.sample(range(len(text)), 2))
            j = min(j, i + rng.randint(1, 40))
            action = rng.randrange(3)
            if action == 0:
                del text[i:j]
            elif action == 1:
                text[i:i] = text[i:j]
            else:
                k = rng.randrange(len(text))
                text[k:k] = text[i:j]
        docs.append(Document("mutants.jsonl", number + 1, bytes(text)))
    fast = _assert_same(docs)
    assert fast.lines and fast.rejects  # the mix holds both kinds


def test_line_ranges_cover_a_file_exactly(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = []
    for i in range(2000):
        if i % 9 == 0:
            lines.append(rng.choice([b"", b"   ", b"\r"]))
        else:
            lines.append(b'{"n":%d,"pad":"%s"}' % (i, b"x" * rng.choice([0, 10, 3000])))
    for ending in (b"", b"\n"):
        path = tmp_path / "mixed.jsonl"
        data = b"\n".join(lines) + ending
        path.write_bytes(data)
        expected = [(d.line, d.text) for d in read_documents(path)]
        for block in (16, 1000, 1 << 16, 1 << 24):
            ranges = list(line_ranges(path, block))
            assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
            assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
            got = [
                (d.line, d.text)
                for start, end, first in ranges
                for d in read_line_range(path, start, end, first)
            ]
            assert got == expected, block


@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(1e-4, 1e15),  # where the fast path takes floats
            st.floats(allow_nan=False, allow_infinity=False),
            st.integers(-(2**60), 2**60),
        ),
        min_size=3,
        max_size=3,
    ),
    median=st.one_of(st.integers(0, 2**53 - 1), st.floats(0, 2**53 - 1)),
    text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
)
def test_fast_identity_equals_the_general_one_for_any_numbers_and_text(
    values: list[float | int], median: float | int, text: str
) -> None:
    """Random free numbers (measurement values, a metric, the median) and a random benchmark
    name: whenever the fast path stages the bundle, it stages exactly what the general path
    does (identity included); otherwise both reject it alike."""
    bundle = _seed_line()
    spec = bundle["run"]["spec"]
    spec["measurements"][0]["value"] = values[0]
    spec["measurements"][1]["value"] = values[1]
    spec["sourceNative"]["metrics"] = {"ms_50": values[2]}
    spec["timing"]["latencyNs"]["median"] = median
    spec["sourceNative"]["benchmark"] = text
    line = json.dumps(bundle, separators=(",", ":"), ensure_ascii=False).encode()
    _assert_same([Document("p.jsonl", 1, line)])
