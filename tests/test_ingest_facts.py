"""DuckDB derives a run's names, version label and headline value (sql/ingest/batch.sql) from the
staged run; kindex_olap.model.facts.run_facts is the Python definition. These tests hold the two
to the same values on every real corpus and on documents made to hit each rule's corners.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest
from conftest import SEEDS
from test_stage_fast import real_documents  # noqa: F401  (the fixture)

from kindex_olap.ingestion.sources import Document
from kindex_olap.ingestion.stage import parse_document, stage_chunk
from kindex_olap.model import facts
from kindex_olap.model.validate import PROVENANCE_KIND, ValidationError, check_bundle, latency_ns
from kindex_olap.sqlfiles import read_sql

DERIVED = ("source", "kernel", "pass", "provider", "version", "metric", "statistic", "unit")


def _staged_rows(docs: list[Document], folder: Path) -> dict[int, dict[str, Any]]:
    """The staged_runs rows that batch.sql makes of the documents, by sequence number."""
    result = stage_chunk(docs, False, 0)
    staged = folder / "staged.ndjson"
    staged.write_bytes(b"\n".join(result.lines) + b"\n")
    con = duckdb.connect()
    con.execute(read_sql("schema/tables.sql")).fetchall()
    con.execute(read_sql("ingest/work_tables.sql")).fetchall()
    con.execute("SET VARIABLE staging_files = ?", [[str(staged)]]).fetchall()
    con.execute("SET VARIABLE ingested_at = TIMESTAMP '2026-01-01'").fetchall()
    con.execute(read_sql("ingest/batch.sql")).fetchall()
    cursor = con.execute("SELECT * FROM staged_runs")
    names = [c[0] for c in cursor.description]
    return {
        row["seq"]: row for row in (dict(zip(names, r, strict=True)) for r in cursor.fetchall())
    }


def _expected(docs: list[Document]) -> dict[int, dict[str, Any]]:
    """model.facts.run_facts of every bundle that stages, by the sequence number staging gives
    it (one per document that is not rejected, dimension documents included)."""
    out: dict[int, dict[str, Any]] = {}
    seq = 0
    for doc in docs:
        try:
            obj = parse_document(doc.text)
            if "run" not in obj or obj.get("kind") == PROVENANCE_KIND:
                seq += 1  # a dimension document (staging validates it; it has no run row)
                continue
            bundle = check_bundle(obj)
        except ValidationError:
            continue
        latency = latency_ns(bundle)
        identity = facts.run_identity(obj["run"])
        out[seq] = facts.run_facts(bundle, identity, latency, doc, seq)
        seq += 1
    return out


def _assert_same_facts(docs: list[Document], folder: Path) -> int:
    rows, expected = _staged_rows(docs, folder), _expected(docs)
    assert rows.keys() == expected.keys()
    for seq, want in expected.items():
        row = rows[seq]
        got = {name: row[name] for name in DERIVED} | {"value": row["value"]}
        lat = want["lat"]
        assert got == {name: want[name] for name in DERIVED} | {"value": want["value"]}, seq
        for statistic in ("p20", "p80"):
            fallback = float(lat[statistic]) if statistic in lat else want[statistic]
            assert row[f"latency_{statistic}_ns"] == fallback, (seq, statistic)
        assert row["run_id"] == want["run_id"]
        assert row["observed_at"].year == want["year"] == row["year"]
    return len(expected)


def test_sql_facts_equal_python_facts_on_real_bundles(
    real_documents: list[Document],  # noqa: F811
    tmp_path: Path,
) -> None:
    assert _assert_same_facts(real_documents, tmp_path) > 7_000


def _seed() -> dict[str, Any]:
    text = (SEEDS / "001_62d94da41d44ef74.txt").read_text(encoding="utf-8")
    return json.loads(text.partition("\n\n")[2])


def _variant(change: dict[str, Any]) -> dict[str, Any]:
    """The seed bundle with parts of its run replaced (None removes the part)."""
    bundle = copy.deepcopy(_seed())
    for path, value in change.items():
        *parents, last = path.split(".")
        target = bundle["run"]
        for key in parents:
            target = target.setdefault(key, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return bundle


_MEMORY = {
    "spec.timing": None,
    "spec.measurements": [
        {"metric": "memory", "statistic": "median", "unit": "bytes", "value": 9.0}
    ],
}
CORNERS = [
    {},
    {"spec.sourceNative.externalId": None},  # no externalId: the part after '/' is a pass
    {"spec.sourceNative.externalId": "submission/19189"},  # not Liger-shaped: no pass
    {"spec.sourceNative.benchmark": "amd-fp8-mm/3", "spec.sourceNative.externalId": "x/1"},
    {"spec.sourceNative.benchmark": "jsd", "spec.sourceNative.externalId": "jsd/torch/gpu"},
    {"spec.sourceNative.benchmark": "jsd//x", "spec.sourceNative.externalId": None},
    {"spec.sourceNative.benchmark": "a/b/c", "spec.sourceNative.externalId": "a/b/c/prov/g"},
    {"spec.sourceNative.benchmark": "a/b", "spec.sourceNative.externalId": "a/b/"},
    {"spec.sourceNative.benchmark": "a/b", "spec.sourceNative.externalId": "a/b//g"},
    {"spec.sourceNative.benchmark": "a/b", "spec.sourceNative.externalId": "a/bc/d"},
    {"spec.sourceNative.benchmark": None},
    # kindex's Liger importer puts `memory` before a memory run's provider
    {"spec.sourceNative.externalId": "jsd/backward/memory/liger/gpu", **_MEMORY},
    {"spec.sourceNative.externalId": "jsd/backward/memory", **_MEMORY},  # nothing after it
    {"spec.sourceNative.externalId": "jsd/backward/memory/liger/gpu"},  # a latency run
    # names past ASCII (a combining accent: characters, not bytes, count)
    {
        "spec.sourceNative.benchmark": "n\u0301orm/fwd",
        "spec.sourceNative.externalId": "n\u0301orm/fwd/p/g",
    },
    {
        "spec.sourceNative.benchmark": "日本/fwd",
        "spec.sourceNative.externalId": "日本/fwd/memory/p",
        **_MEMORY,
    },
    {"spec.sourceNative": None},  # source 'unknown', no names
    {"metadata.labels": None},
    {"metadata.labels": {"version": "1.0", "a_version": "2.0"}},
    {"metadata.labels": {"z_version": "3", "b_version": "2", "other": "x"}},
    {"metadata.labels": {"versions": "3", "torch_version": "2.1"}},
    {"metadata.labels": {"versionless": "3"}},
    {"spec.timing": None},  # the first measurement is the headline
    {"spec.timing": None, "spec.measurements": None},  # no headline value at all
    {"spec.timing.primaryStatistic": "p99"},  # not among the timing statistics
    {"spec.timing.latencyNs": {"median": 5, "p05": 4, "p95": 6, "mean": 7}},
    {"spec.timing.latencyNs": {"confidence95": [4, 6]}, "spec.timing.primaryStatistic": "ci95_low"},
    {"spec.timing.latencyNs": {"median": "1.5 us", "minimum": "3ms"}, "spec.measurements": []},
    {
        "spec.measurements": [
            {"metric": "latency", "statistic": "p20", "unit": "us", "value": 1.5},
            {"metric": "throughput", "statistic": "p20", "unit": "ns", "value": 2.5},
            # the same p20 again, in ns (one with another value is a reject: test_hostile.py)
            {"metric": "latency", "statistic": "p20", "unit": "ns", "value": 1500},
            {"metric": "latency", "statistic": "p80", "unit": "ns", "value": 4500},
        ]
    },
]


@pytest.mark.parametrize("change", CORNERS, ids=[json.dumps(c)[:60] for c in CORNERS])
def test_sql_facts_equal_python_facts_in_the_corners(
    change: dict[str, Any], tmp_path: Path
) -> None:
    bundle = _variant(change)
    doc = Document("corner.jsonl", 1, orjson.dumps(bundle))
    assert _assert_same_facts([doc], tmp_path) == 1


def test_a_memory_runs_provider_is_the_part_after_memory() -> None:
    """kindex's Liger importer writes a memory run's externalId as benchmark/memory/provider/...:
    every memory run of the Liger history was stored with provider "memory"."""
    names = facts.parse_names("jsd/backward", "jsd/backward/memory/liger/nvidia-h100/x", "memory")
    assert names == ("jsd", "backward", "liger")
    # a run of another metric keeps the part after the benchmark, whatever it is called
    latency = facts.parse_names("jsd/backward", "jsd/backward/memory/liger/nvidia-h100", "latency")
    assert latency == ("jsd", "backward", "memory")
    assert facts.parse_names("jsd/backward", "jsd/backward/memory", "memory")[2] == "memory"
