"""Every input format, every validation rule with a broken bundle, and odd bundles that must land.

Each broken document is ingested in the same batch as a good seed: the bad one is rejected with
a reason naming the field (or line), and the good one still lands.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from conftest import (
    GRPO_SEED,
    INVALID_EXAMPLES,
    JSD_SEED,
    SEEDS,
    BundleFactory,
    all_files,
    read_seed,
    rows,
    seed_text,
)

from kindex_olap.errors import ConfigError
from kindex_olap.ingestion.pipeline import IngestReport, ingest
from kindex_olap.ingestion.rejects import iter_rejects
from kindex_olap.ingestion.sources import KEEP_REJECTED_BYTES, MAX_DOCUMENT_BYTES

Bundle = dict[str, Any]

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "": lambda data: data,
    ".gz": gzip.compress,
    ".zst": lambda data: zstandard.ZstdCompressor().compress(data),
}


def write(path: Path, data: bytes | str) -> Path:
    """Write (compressing by the name's last suffix) and return the path."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix if path.suffix in {".gz", ".zst"} else ""
    path.write_bytes(COMPRESSORS[suffix](raw))
    return path


def run_medians(lake: Path) -> list[float]:
    return sorted(r["latency_median_ns"] for r in rows(lake, "runs"))


# --- input formats ---------------------------------------------------------------------------


@pytest.mark.parametrize("compression", ["", ".gz", ".zst"])
class TestFormats:
    def test_seed_text(self, tmp_path: Path, tmp_lake: Path, compression: str) -> None:
        text = (SEEDS / JSD_SEED).read_text()
        path = write(tmp_path / f"in/jsd.txt{compression}", text)
        report = ingest([path], tmp_lake)
        assert (report.runs_added, report.rejected) == (1, 0), report.rejects
        (row,) = rows(tmp_lake, "runs")
        assert (row["display_name"], row["latency_median_ns"]) == ("Liger", 3714592)

    def test_json(
        self, tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory, compression: str
    ) -> None:
        path = write(tmp_path / f"in/run.json{compression}", json.dumps(make_bundle(JSD_SEED)))
        report = ingest([path], tmp_lake)
        assert (report.runs_added, report.rejected) == (1, 0), report.rejects
        (row,) = rows(tmp_lake, "runs")
        assert row["kernel"] == "jsd"
        assert row["display_name"] is None  # a .json bundle carries no display name

    @pytest.mark.parametrize("extension", [".jsonl", ".ndjson"])
    def test_json_lines(
        self,
        tmp_path: Path,
        tmp_lake: Path,
        make_bundle: BundleFactory,
        compression: str,
        extension: str,
    ) -> None:
        shown = make_bundle(variant=1) | {"display": "Shown name"}
        lines = [json.dumps(make_bundle(variant=0)), json.dumps(shown), ""]
        path = write(tmp_path / f"in/feed{extension}{compression}", "\n".join(lines))
        report = ingest([path], tmp_lake)
        assert (report.runs_added, report.rejected) == (2, 0), report.rejects
        got = {r["latency_median_ns"]: r for r in rows(tmp_lake, "runs")}
        assert got[1001]["display_name"] == "Shown name"
        assert got[1000]["display_name"] is None
        assert {r["source_line"] for r in got.values()} == {1, 2}


def test_seed_text_with_crlf_line_ends(tmp_path: Path, tmp_lake: Path) -> None:
    text = (SEEDS / JSD_SEED).read_text().replace("\n", "\r\n")
    path = write(tmp_path / "crlf.txt", text)
    assert ingest([path], tmp_lake).runs_added == 1
    assert rows(tmp_lake, "runs")[0]["display_name"] == "Liger"


def test_jsonl_with_crlf_and_blank_lines(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    body = "\r\n".join(["", json.dumps(make_bundle(variant=0)), "  ", json.dumps(make_bundle())])
    report = ingest([write(tmp_path / "feed.jsonl", body + "\r\n")], tmp_lake)
    assert (report.runs_added, report.rejected) == (2, 0), report.rejects
    assert sorted(r["source_line"] for r in rows(tmp_lake, "runs")) == [2, 4]


def test_concatenated_compressed_streams_are_read_whole(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    a, b = (json.dumps(make_bundle(variant=i)).encode() + b"\n" for i in range(2))
    (tmp_path / "two.jsonl.gz").write_bytes(gzip.compress(a) + gzip.compress(b))
    zstd = zstandard.ZstdCompressor()
    (tmp_path / "two.jsonl.zst").write_bytes(zstd.compress(a) + zstd.compress(b))
    report = ingest([tmp_path / "two.jsonl.gz", tmp_path / "two.jsonl.zst"], tmp_lake)
    assert (report.runs_added, report.duplicates, report.rejected) == (2, 2, 0), report.rejects


def test_folders_are_searched_recursively(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    inbox = tmp_path / "inbox"
    write(inbox / "a.txt", (SEEDS / GRPO_SEED).read_text())
    write(inbox / "deep/er/b.json.gz", json.dumps(make_bundle(variant=1)))
    write(inbox / "deep/c.jsonl.zst", json.dumps(make_bundle(variant=2)) + "\n")
    write(inbox / "deep/er/est/d.NDJSON", json.dumps(make_bundle(variant=3)) + "\n")
    # Not inputs: other extensions, hidden files, a compressed file without a JSON extension.
    write(inbox / "README.md", "# not a bundle")
    write(inbox / "deep/.hidden.json", "not json at all")
    write(inbox / "deep/notes.csv.gz", "a,b\n1,2\n")
    report = ingest([inbox], tmp_lake)
    assert report.files_seen == 4
    assert (report.runs_added, report.rejected) == (4, 0), report.rejects
    assert run_medians(tmp_lake) == [1001, 1002, 1003, 162642944]


def test_a_pipe_is_read_and_a_device_refused(tmp_path: Path, tmp_lake: Path) -> None:
    """A named pipe (what `<(zcat runs.jsonl.gz)` passes) is read once, as a file; a device is
    refused before the lock: /dev/zero never ends, and an ingest of it read for ever."""
    with pytest.raises(ConfigError, match="/dev/zero is a device"):
        ingest(["/dev/zero"], tmp_lake)
    assert not tmp_lake.exists()
    fifo = tmp_path / "runs.txt"
    os.mkfifo(fifo)
    text = (SEEDS / JSD_SEED).read_text()
    writer = threading.Thread(target=fifo.write_text, args=(text,))
    writer.start()
    report = ingest([fifo], tmp_lake)
    writer.join()
    assert (report.runs_added, report.rejected) == (1, 0), report.rejects


# --- broken documents ------------------------------------------------------------------------


def mutated(change: Callable[[Bundle], object]) -> Callable[[Bundle], str]:
    """A case builder: apply `change` to a copy of the bundle and serialize it."""

    def build(bundle: Bundle) -> str:
        copy_ = copy.deepcopy(bundle)
        change(copy_)
        return json.dumps(copy_, ensure_ascii=False)

    return build


def text_edit(old: str, new: str) -> Callable[[Bundle], str]:
    """A case builder editing the pretty-printed JSON text (for what json.dumps cannot write)."""

    def build(bundle: Bundle) -> str:
        text = json.dumps(bundle, indent=2)
        assert old in text, old
        return text.replace(old, new, 1)

    return build


def set_at(*path: str | int, value: Any) -> Callable[[Bundle], str]:
    def change(bundle: Bundle) -> None:
        target: Any = bundle
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutated(change)


def delete_at(*path: str | int) -> Callable[[Bundle], str]:
    def change(bundle: Bundle) -> None:
        target: Any = bundle
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutated(change)


LATENCY = ("run", "spec", "timing", "latencyNs", "median")
OBSERVED = ("run", "spec", "observedAt")
DEEP = 50_000

# name -> (file suffix, builder from the seed bundle, what the reason must say)
BROKEN: dict[str, tuple[str, Callable[[Bundle], str], list[str]]] = {
    "truncated_json": (".json", lambda b: json.dumps(b)[:700], ["not valid JSON"]),
    "empty_file": (".json", lambda b: "", ["empty file"]),
    "whitespace_only": (".json", lambda b: " \n\t\n", ["empty file"]),
    "not_json": (".json", lambda b: "hello, world", ["not valid JSON"]),
    "seed_text_without_blank_line": (
        ".txt",
        lambda b: "PyTorch\n" + json.dumps(b),
        ["not a seed text file"],
    ),
    "top_level_array": (".json", lambda b: json.dumps([b]), ["top-level array"]),
    "top_level_number": (".json", lambda b: "42", ["top-level number"]),
    "top_level_null": (".json", lambda b: "null", ["top-level null"]),
    "top_level_string": (".json", lambda b: '"a bundle"', ["top-level string"]),
    "top_level_boolean": (".json", lambda b: "true", ["top-level boolean"]),
    "not_a_bundle": (".json", delete_at("run"), ["not a bundle"]),
    "missing_field": (".json", delete_at("run", "spec", "status"), ["$.run.spec", "status"]),
    "missing_environment": (".json", delete_at("environment"), ["environment"]),
    "missing_protocol_timer": (
        ".json",
        delete_at("protocol", "spec", "measurement", "timer"),
        ["$.protocol.spec.measurement", "timer"],
    ),
    "unknown_field": (".json", set_at("run", "spec", "popularity", value=9001), ["popularity"]),
    "unknown_top_level_field": (".json", set_at("extra", value=1), ["extra"]),
    "unknown_hardware_field": (
        ".json",
        set_at("environment", "spec", "hardware", "colour", value="green"),
        ["$.environment.spec.hardware", "colour"],
    ),
    "wrong_run_kind": (".json", set_at("run", "kind", value="ServingRun"), ["$.run.kind"]),
    "wrong_protocol_kind": (
        ".json",
        set_at("protocol", "kind", value="BenchmarkRun"),
        ["$.protocol.kind"],
    ),
    "wrong_api_version": (
        ".json",
        set_at("run", "apiVersion", value="kernelindex.dev/v1"),
        ["$.run.apiVersion"],
    ),
    "wrong_environment_api_version": (
        ".json",
        set_at("environment", "apiVersion", value="kernelindex.dev/v1beta1"),
        ["$.environment.apiVersion"],
    ),
    "md5_digest": (
        ".json",
        set_at("run", "spec", "workloadDigest", value="md5:abc123"),
        ["$.run.spec.workloadDigest"],
    ),
    "uppercase_hex_digest": (
        ".json",
        set_at("run", "spec", "protocolDigest", value="sha256:" + "A" * 64),
        ["$.run.spec.protocolDigest"],
    ),
    "nan_literal": (
        ".json",
        text_edit('"value": 162642944,', '"value": NaN,'),
        ["not valid JSON"],
    ),
    "nan_latency": (".json", text_edit('"median": 162642944', '"median": NaN'), ["JSON"]),
    "infinity_1e999": (
        ".json",
        text_edit('"value": 162642944,', '"value": 1e999,'),
        ["infinity"],
    ),
    "infinity_in_metrics": (
        ".json",
        text_edit('"ms_20": 162.6429443359375', '"ms_20": -1e999'),
        ["infinity"],
    ),
    "negative_latency": (
        ".json",
        set_at(*LATENCY, value=-5),
        ["$.run.spec.timing.latencyNs.median"],
    ),
    "fractional_nanosecond": (
        ".json",
        set_at(*LATENCY, value="0.0000005 ms"),
        ["$.run.spec.timing.latencyNs.median", "whole number of nanoseconds"],
    ),
    "fractional_integer_latency": (
        ".json",
        set_at(*LATENCY, value=1.5),
        ["$.run.spec.timing.latencyNs.median"],
    ),
    "latency_without_unit": (
        ".json",
        set_at(*LATENCY, value="3714592"),
        ["$.run.spec.timing.latencyNs.median"],
    ),
    "latency_unknown_unit": (
        ".json",
        set_at(*LATENCY, value="3 minutes"),
        ["$.run.spec.timing.latencyNs.median"],
    ),
    "negative_latency_string": (
        ".json",
        set_at(*LATENCY, value="-3 ms"),
        ["$.run.spec.timing.latencyNs.median"],
    ),
    "latency_out_of_range": (
        ".json",
        set_at(*LATENCY, value="99999999999 s"),
        ["$.run.spec.timing.latencyNs.median", "out of range"],
    ),
    "observed_at_offset": (
        ".json",
        set_at(*OBSERVED, value="2025-08-05T02:04:16+02:00"),
        ["$.run.spec.observedAt"],
    ),
    "observed_at_no_zone": (
        ".json",
        set_at(*OBSERVED, value="2025-08-05T00:04:16"),
        ["$.run.spec.observedAt"],
    ),
    "observed_at_not_a_date": (
        ".json",
        set_at(*OBSERVED, value="2025-02-30T00:00:00Z"),
        ["$.run.spec.observedAt", "calendar date"],
    ),
    "source_with_slash": (
        ".json",
        set_at("run", "spec", "sourceNative", "source", value="../../x"),
        ["$.run.spec.sourceNative.source"],
    ),
    "source_dot_dot": (
        ".json",
        set_at("run", "spec", "sourceNative", "source", value=".."),
        ["$.run.spec.sourceNative.source"],
    ),
    "source_too_long": (
        ".json",
        set_at("run", "spec", "sourceNative", "source", value="a" * 101),
        ["$.run.spec.sourceNative.source"],
    ),
    "bad_status": (".json", set_at("run", "spec", "status", value="ok"), ["$.run.spec.status"]),
    "string_measurement_value": (
        ".json",
        set_at("run", "spec", "measurements", 0, "value", value="162642944"),
        ["$.run.spec.measurements[0].value"],
    ),
    "duplicate_key": (
        ".json",
        text_edit('"status": "passed",', '"status": "passed",\n"status": "timeout",'),
        ["duplicate key 'status'"],
    ),
    "duplicate_key_same_value": (
        ".json",
        text_edit('"vendor": "nvidia",', '"vendor": "nvidia", "vendor": "nvidia",'),
        ["duplicate key 'vendor'"],
    ),
    "deep_nesting_50000": (
        ".json",
        lambda b: '{"run": ' + "[" * DEEP + "]" * DEEP + "}",
        ["depth"],
    ),
    "deep_nesting_in_a_label": (
        ".json",
        text_edit('"liger_version": "0.6.1"', '"x": ' + "[" * 400 + "]" * 400),
        ["nested too deeply"],
    ),
    "over_4_mib": (
        ".json",
        set_at("run", "metadata", "description", value="x" * (MAX_DOCUMENT_BYTES + 10)),
        ["larger than the 4 MiB limit"],
    ),
    "over_4_mib_after_gunzip": (
        ".json.gz",
        set_at("run", "metadata", "description", value="x" * (MAX_DOCUMENT_BYTES + 10)),
        ["larger than the 4 MiB limit"],
    ),
    "over_4_mib_after_unzstd": (
        ".jsonl.zst",
        set_at("run", "metadata", "description", value="x" * (MAX_DOCUMENT_BYTES + 10)),
        ["larger than the 4 MiB limit"],
    ),
    "long_title": (
        ".json",
        set_at("run", "metadata", "title", value="t" * 201),
        ["$.run.metadata.title"],
    ),
    "bad_name": (
        ".json",
        set_at("run", "metadata", "name", value="Has Spaces"),
        ["$.run.metadata.name"],
    ),
    "invalid_utf8": (".json", lambda b: "", ["UTF-8"]),  # bytes written below
    "byte_order_mark": (".json", lambda b: "", ["BOM"]),  # bytes written below
    "software_project": (
        ".json",
        lambda b: json.dumps(
            {
                "apiVersion": "kernelindex.dev/v1alpha1",
                "kind": "SoftwareProject",
                "metadata": {"name": "p"},
                "spec": {"name": "P"},
            }
        ),
        ["not a bundle"],
    ),
}
RAW_BYTES: dict[str, Callable[[Bundle], bytes]] = {
    "invalid_utf8": lambda b: (
        json.dumps(b, ensure_ascii=False).encode().replace("·".encode(), b"\xb7")
    ),
    "byte_order_mark": lambda b: b"\xef\xbb\xbf" + json.dumps(b).encode(),
}


def ingest_with_good_seed(lake: Path, bad: Path) -> IngestReport:
    """Ingest a bad file together with a good seed; the seed must land whatever the bad one is."""
    report = ingest([bad, SEEDS / JSD_SEED], lake)
    assert report.runs_added == 1
    assert [r["kernel"] for r in rows(lake, "runs")] == ["jsd"]
    return report


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_document_is_rejected_and_the_batch_lands(
    case: str, tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    suffix, build, expected = BROKEN[case]
    bundle = make_bundle()
    data: bytes | str = RAW_BYTES[case](bundle) if case in RAW_BYTES else build(bundle)
    path = write(tmp_path / "in" / f"{case}{suffix}", data)
    report = ingest_with_good_seed(tmp_lake, path)
    assert report.rejected == 1
    (reject,) = report.rejects
    for fragment in expected:
        assert fragment in reject.reason, (fragment, reject.reason)
    (stored,) = rows(tmp_lake, "rejects")
    assert stored["source_file"] == str(path)
    assert stored["reason"] == reject.reason
    raw = data.encode() if isinstance(data, str) else data
    if suffix.endswith(".jsonl.zst"):
        assert stored["line"] == 1
    else:
        assert stored["line"] is None
    # The original text is kept (decompressed), cut to its first MiB.
    if case in RAW_BYTES:
        assert stored["text"]
    elif len(raw) <= KEEP_REJECTED_BYTES:
        assert stored["text"] == raw.decode().strip()
    else:
        assert stored["text"] == raw[:KEEP_REJECTED_BYTES].decode()
    files = {Path(r["path"]).name: r for r in rows(tmp_lake, "ingested_files")}
    assert (files[path.name]["documents"], files[path.name]["rejected"]) in {(1, 1), (0, 1)}


def test_huge_document_keeps_only_its_first_mib(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    bundle = make_bundle()
    bundle["run"]["metadata"]["description"] = "y" * (6 * 1024 * 1024)
    path = write(tmp_path / "huge.json", json.dumps(bundle))
    ingest_with_good_seed(tmp_lake, path)
    (stored,) = rows(tmp_lake, "rejects")
    assert len(stored["text"].encode()) == KEEP_REJECTED_BYTES
    assert path.read_text()[:KEEP_REJECTED_BYTES] == stored["text"]


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("random.json.gz", lambda good: os.urandom(2000), "corrupt gz stream"),
        ("plain.json.gz", lambda good: good, "corrupt gz stream"),
        ("cut.json.gz", lambda good: gzip.compress(good)[:300], "corrupt gz stream"),
        ("random.json.zst", lambda good: os.urandom(2000), "corrupt zst stream"),
        (
            "cut.jsonl.zst",
            lambda good: zstandard.ZstdCompressor().compress(good * 20)[:-8],
            "corrupt zst stream",
        ),
    ],
)
def test_corrupt_compressed_file_is_rejected(
    tmp_path: Path,
    tmp_lake: Path,
    make_bundle: BundleFactory,
    name: str,
    make: Callable[[bytes], bytes],
    reason: str,
) -> None:
    good = json.dumps(make_bundle()).encode() + b"\n"
    path = tmp_path / name
    path.write_bytes(make(good))
    report = ingest_with_good_seed(tmp_lake, path)
    assert report.rejected == 1
    assert reason in report.rejects[0].reason
    (stored,) = rows(tmp_lake, "rejects")
    assert (stored["source_file"], stored["line"]) == (str(path), None)


def test_jsonl_with_one_bad_line_among_good_ones(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    bad = make_bundle(variant=99)
    bad["run"]["spec"]["observedAt"] = "2025-08-05T00:04:16+02:00"
    lines = [json.dumps(make_bundle(variant=i)) for i in range(5)]
    lines.insert(3, json.dumps(bad))  # line 4
    for compression in ("", ".gz", ".zst"):
        path = write(
            tmp_path / f"feed{compression or '.plain'}.jsonl{compression}", "\n".join(lines)
        )
        report = ingest([path], tmp_lake)
        assert report.rejected == 1
        (reject,) = report.rejects
        assert (reject.source_file, reject.line) == (str(path), 4)
        assert "$.run.spec.observedAt" in reject.reason
    assert run_medians(tmp_lake) == [1000, 1001, 1002, 1003, 1004]
    stored = rows(tmp_lake, "rejects")
    assert sorted(r["line"] for r in stored) == [4, 4, 4]
    assert all(json.loads(r["text"]) == bad for r in stored)


def test_jsonl_with_an_oversized_line_keeps_the_lines_after_it(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    big = make_bundle(variant=50)
    big["run"]["metadata"]["description"] = "z" * (MAX_DOCUMENT_BYTES * 2)
    lines = [
        json.dumps(make_bundle(variant=0)),
        json.dumps(big),
        json.dumps(make_bundle(variant=1)),
    ]
    path = write(tmp_path / "feed.ndjson", "\n".join(lines) + "\n")
    report = ingest([path], tmp_lake)
    assert (report.runs_added, report.rejected) == (2, 1)
    assert report.rejects[0].line == 2
    assert "4 MiB" in report.rejects[0].reason
    assert run_medians(tmp_lake) == [1000, 1001]


def test_truncated_gzip_jsonl_keeps_complete_lines_and_says_so(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    lines = "".join(json.dumps(make_bundle(variant=i)) + "\n" for i in range(2))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(lines.encode())[:-8])  # the CRC and size trailer is gone
    report = ingest([path], tmp_lake)
    assert report.rejected == 1
    assert "corrupt gz stream" in report.rejects[0].reason
    assert report.runs_added == 2  # everything before the damage was readable


def test_rejected_runs_do_not_leak_dimensions(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    bundle = make_bundle()
    bundle["run"]["spec"]["status"] = "ok"
    report = ingest([write(tmp_path / "bad.json", json.dumps(bundle))], tmp_lake)
    assert (report.runs_added, report.rejected) == (0, 1)
    assert rows(tmp_lake, "environments") == []
    assert rows(tmp_lake, "protocols") == []
    assert rows(tmp_lake, "measurements") == []


# --- KernelIndex's own invalid examples, recreated as JSON ----------------------------------

RECREATED = {
    # ambiguous-duration.yaml: 0.0000005 ms is not an integer nanosecond count
    "ambiguous-duration": (
        set_at(*LATENCY, value="0.0000005 ms"),
        ["$.run.spec.timing.latencyNs.median", "whole number"],
    ),
    # bad-digest.yaml: digests must match sha256:<64 lowercase hex>
    "bad-digest": (
        set_at("run", "spec", "workloadDigest", value="md5:abc123"),
        ["$.run.spec.workloadDigest"],
    ),
    # duplicate-key.yaml: duplicate mapping keys are rejected at parse time
    "duplicate-key": (
        text_edit(
            '"name": "Liger-Kernel benchmark scripts",',
            '"name": "First Name",\n"name": "Second Name",',
        ),
        ["duplicate key 'name'"],
    ),
    # unknown-field.yaml: strict schemas reject unknown fields
    "unknown-field": (
        set_at("protocol", "spec", "harness", "popularity", value=9001),
        ["$.protocol.spec.harness", "popularity"],
    ),
}


def test_every_invalid_example_is_recreated() -> None:
    assert {p.stem for p in INVALID_EXAMPLES.glob("*.yaml")} == set(RECREATED)


@pytest.mark.parametrize("example", sorted(RECREATED))
def test_invalid_example_recreated_as_a_bundle(
    example: str, tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    build, expected = RECREATED[example]
    path = write(tmp_path / f"{example}.json", build(make_bundle()))
    report = ingest_with_good_seed(tmp_lake, path)
    assert report.rejected == 1
    for fragment in expected:
        assert fragment in report.rejects[0].reason, report.rejects[0].reason


def test_bad_digest_example_as_a_workload_case_is_rejected(tmp_path: Path, tmp_lake: Path) -> None:
    """bad-digest.yaml itself is a WorkloadCase, a dimension document kindex also ingests."""
    workload = {
        "apiVersion": "kernelindex.dev/v1alpha1",
        "kind": "WorkloadCase",
        "metadata": {"name": "bad-digest-workload"},
        "spec": {
            "operationSpecDigest": "md5:abc123",
            "axes": {"tokens": 2048},
            "tensors": {"input": {"shape": [2048, 4096], "dtype": "bf16"}},
            "correctness": {"comparator": "elementwise_close"},
        },
    }
    path = write(tmp_path / "workload.json", json.dumps(workload))
    report = ingest_with_good_seed(tmp_lake, path)
    assert report.rejected == 1
    assert "$.spec.operationSpecDigest" in report.rejects[0].reason
    assert rows(tmp_lake, "workloads") == []


# --- odd but valid ---------------------------------------------------------------------------

ODD: dict[str, Callable[[Bundle], object]] = {
    "sql_in_title": lambda b: b["run"]["metadata"].update(title="'; DROP TABLE runs; --"),
    "sql_in_display_and_labels": lambda b: (
        b.update(display="x'); DROP TABLE runs; --")
        or b["run"]["metadata"]["labels"].update(note="\"; DELETE FROM runs WHERE ''='")
    ),
    "non_ascii_text": lambda b: (
        b["run"]["metadata"].update(
            title="Ядро · 内核 · カーネル 🚀 — naïve", labels={"note": "µs ✓ 日本"}
        )
        or b.update(display="Fünf 五")
    ),
    # control characters in a title are rejected (issue 26: names are printed); odd spaces are not
    "odd_spaces_in_title": lambda b: b["run"]["metadata"].update(title="a\u2028b\u00a0c\u3000d"),
    "product_dot_dot": lambda b: b["environment"]["spec"]["hardware"].update(product="../../x"),
    "product_with_slash": lambda b: b["environment"]["spec"]["hardware"].update(
        product="NVIDIA/../../H100 80GB/x"
    ),
    "form_factor_absolute_path": lambda b: b["environment"]["spec"]["hardware"].update(
        formFactor="/etc/passwd"
    ),
    "source_digits_and_dashes": lambda b: b["run"]["spec"]["sourceNative"].update(
        source="0--" + "9" * 97
    ),
    "source_single_char": lambda b: b["run"]["spec"]["sourceNative"].update(source="a"),
    "no_source_native": lambda b: b["run"]["spec"].pop("sourceNative"),
    "benchmark_with_dot_dot": lambda b: b["run"]["spec"]["sourceNative"].update(
        benchmark="../../etc/passwd", externalId="../../etc/passwd/../x"
    ),
    "zero_latency": lambda b: b["run"]["spec"]["timing"]["latencyNs"].update(median=0),
    "zero_latency_string": lambda b: b["run"]["spec"]["timing"]["latencyNs"].update(median="0 ms"),
    "far_past": lambda b: b["run"]["spec"].update(observedAt="0001-01-01T00:00:00Z"),
    "far_future_nanoseconds": lambda b: b["run"]["spec"].update(
        observedAt="9999-12-31T23:59:59.999999999Z"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_but_valid_bundle_lands_and_does_no_harm(
    case: str, tmp_path: Path, make_bundle: BundleFactory
) -> None:
    lake = tmp_path / "work" / "lake"
    bundle = make_bundle(variant=7)
    ODD[case](bundle)
    path = write(tmp_path / "work" / "in" / f"{case}.jsonl", json.dumps(bundle) + "\n")
    # Another run first, so that a destructive statement would have something to destroy.
    assert ingest([SEEDS / JSD_SEED], lake).runs_added == 1
    before = all_files(tmp_path)
    report = ingest([path], lake)
    assert (report.runs_added, report.rejected) == (1, 0), report.rejects
    created = all_files(tmp_path) - before
    assert created, "the ingest wrote nothing"
    for new in created:
        assert new.resolve().is_relative_to(lake.resolve()), new
    assert all(".." not in p.parts for p in all_files(lake))
    runs = {r["name"]: r for r in rows(lake, "runs")}
    assert len(runs) == 2
    row = runs["variant-7"]
    run = bundle["run"]
    assert row["title"] == run["metadata"]["title"]
    assert row["labels"] == run["metadata"]["labels"]
    assert row["display_name"] == bundle.get("display")
    assert row["observed_at"].isoformat().startswith(run["spec"]["observedAt"][:19])
    assert row["year"] == int(run["spec"]["observedAt"][:4])
    median = run["spec"]["timing"]["latencyNs"]["median"]
    assert row["latency_median_ns"] == (0 if median == "0 ms" else median)
    native = run["spec"].get("sourceNative")
    assert row["source"] == (native["source"] if native else "unknown")
    assert row["benchmark"] == (native or {}).get("benchmark")
    env = {r["environment_digest"]: r for r in rows(lake, "environments")}[
        run["spec"]["environmentDigest"]
    ]
    hardware = bundle["environment"]["spec"]["hardware"]
    assert (env["product"], env["form_factor"]) == (hardware["product"], hardware["formFactor"])
    assert len(rows(lake, "measurements", f"run_id = '{row['run_id']}'")) == 3
    assert list(iter_rejects(lake)) == []


def test_non_ascii_keys_verify_against_the_reference_digest(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    """A non-ASCII key (legal in environmentVariables) takes canonical JSON's slow path."""
    import hashlib

    import rfc8785

    bundle = make_bundle()
    env = bundle["environment"]
    env["spec"]["settings"] = {"environmentVariables": {"ÄRGER": "1", "\U0001f600": "2", "z": "ü"}}
    core = {k: env[k] for k in ("apiVersion", "kind", "spec")}
    digest = "sha256:" + hashlib.sha256(rfc8785.dumps(core)).hexdigest()
    bundle["run"]["spec"]["environmentDigest"] = digest
    path = write(tmp_path / "env.json", json.dumps(bundle, ensure_ascii=False))
    report = ingest([path], tmp_lake, verify_digests=True)
    assert (report.runs_added, report.rejected) == (1, 0), report.rejects
    (row,) = rows(tmp_lake, "environments")
    assert row["environment_digest"] == digest
    assert row["environment_variables"] == {"ÄRGER": "1", "\U0001f600": "2", "z": "ü"}


def test_seed_text_display_name_survives_non_ascii(tmp_path: Path, tmp_lake: Path) -> None:
    _, bundle = read_seed(SEEDS / GRPO_SEED)
    path = write(tmp_path / "naïve 名前.txt", seed_text("Ликер · 🚀", bundle))
    assert ingest([path], tmp_lake).runs_added == 1
    (row,) = rows(tmp_lake, "runs")
    assert row["display_name"] == "Ликер · 🚀"
    assert row["source_file"] == str(path)


@pytest.mark.parametrize("display", ["[beta] Triton", '{"B": [1, 2]}', "{fused}"])
def test_a_display_name_that_begins_as_json_does(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory, display: str
) -> None:
    """A seed text file whose display line begins with '[' or '{' was read as one JSON text
    and rejected ("not valid JSON"); the Liger importer writes the CSV's provider there. A
    text file of bare JSON after blank lines still has no display name."""
    path = write(tmp_path / "shown.txt", seed_text(display, make_bundle(variant=1)))
    bare = write(tmp_path / "bare.txt", "\n\n" + json.dumps(make_bundle(variant=2), indent=2))
    report = ingest([path, bare], tmp_lake)
    assert (report.runs_added, report.rejected) == (2, 0), report.rejects
    shown = {row["latency_median_ns"]: row["display_name"] for row in rows(tmp_lake, "runs")}
    assert shown == {1001: display, 1002: None}


def test_jsonl_split_into_many_byte_ranges_keeps_every_line_number(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big JSON Lines file is staged as byte ranges read by the staging jobs; with ranges of
    4 KiB (a few lines each, cut mid-file) every run and reject keeps its own line number."""
    import kindex_olap.ingestion.pipeline

    monkeypatch.setattr(
        kindex_olap.ingestion.pipeline, "SMALL_FILE_BYTES", 0
    )  # every file counts as big
    monkeypatch.setattr(kindex_olap.ingestion.pipeline, "CHUNK_BYTES", 4096)
    lines: list[str] = []
    expected_runs, expected_rejects = {}, []
    for number in range(1, 121):
        if number % 17 == 0:
            lines.append("   " if number % 2 else "")
        elif number % 29 == 0:
            lines.append('{"run": ')  # not JSON
            expected_rejects.append(number)
        else:
            lines.append(json.dumps(make_bundle(variant=number)))
            expected_runs[1000 + number] = number
    path = write(tmp_path / "feed.jsonl", "\r\n".join(lines))  # CRLF, no final newline
    report = ingest([path], tmp_lake)
    assert (report.runs_added, report.rejected) == (len(expected_runs), len(expected_rejects))
    got = {r["latency_median_ns"]: r["source_line"] for r in rows(tmp_lake, "runs")}
    assert got == expected_runs
    assert sorted(r["line"] for r in rows(tmp_lake, "rejects")) == expected_rejects
