"""Ingest of the real seeds: exact values in the lake, identity, idempotence, incremental ingest."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import rfc8785
from conftest import (
    GRPO_SEED,
    JSD_SEED,
    KL_SEED,
    SEEDS,
    BundleFactory,
    all_files,
    read_seed,
    rows,
    seed_text,
)

from kindex_olap.errors import LakeError
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.store import TABLES, Lake


def reference_digest(doc: dict) -> str:
    """sha256 of the RFC 8785 form of {apiVersion, kind, spec}, by the reference library."""
    core = {"apiVersion": doc["apiVersion"], "kind": doc["kind"], "spec": doc["spec"]}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(core)).hexdigest()


@pytest.fixture
def seeded_lake(tmp_lake: Path, seed_inbox: Path) -> Path:
    report = ingest([seed_inbox], tmp_lake)
    assert (report.runs_added, report.rejected, report.duplicates) == (3, 0, 0)
    return tmp_lake


def test_seed_runs_hold_exactly_the_values_of_the_files(seeded_lake: Path) -> None:
    runs = {r["run_id"]: r for r in rows(seeded_lake, "runs")}
    assert len(runs) == 3
    for seed in (GRPO_SEED, JSD_SEED, KL_SEED):
        display, bundle = read_seed(SEEDS / seed)
        run = bundle["run"]
        spec = run["spec"]
        row = runs[reference_digest(run)]  # identity is the RFC 8785 digest of the run
        by_stat = {m["statistic"]: m["value"] for m in spec["measurements"]}
        assert row["latency_median_ns"] == spec["timing"]["latencyNs"]["median"]
        assert row["latency_p20_ns"] == by_stat["p20"]
        assert row["latency_p80_ns"] == by_stat["p80"]
        assert (row["metric"], row["statistic"], row["unit"]) == ("latency", "median", "ns")
        assert row["value"] == spec["timing"]["latencyNs"]["median"]
        assert row["name"] == run["metadata"]["name"]
        assert row["title"] == run["metadata"]["title"]
        assert row["display_name"] == display
        assert row["status"] == "passed"
        assert row["observed_at"].isoformat() == spec["observedAt"].replace(".000Z", "")
        assert row["year"] == int(spec["observedAt"][:4])
        for column, key in [
            ("protocol_digest", "protocolDigest"),
            ("workload_digest", "workloadDigest"),
            ("environment_digest", "environmentDigest"),
            ("implementation_digest", "implementationDigest"),
        ]:
            assert row[column] == spec[key]
        native = spec["sourceNative"]
        assert row["source"] == native["source"] == "liger-kernel-bench"
        assert row["benchmark"] == native["benchmark"]
        assert row["external_id"] == native["externalId"]
        assert row["labels"] == run["metadata"]["labels"]
        assert row["version"] == run["metadata"]["labels"]["liger_version"]
        assert row["source_file"].endswith(seed)


def test_grpo_backward_median_is_162642944_ns(seeded_lake: Path) -> None:
    (row,) = rows(seeded_lake, "runs", "benchmark = 'fused_linear_grpo_loss_token/backward'")
    assert row["latency_median_ns"] == 162642944
    assert row["latency_p20_ns"] == 162642944
    assert row["latency_p80_ns"] == 162642944
    assert (row["kernel"], row["pass"], row["provider"]) == (
        "fused_linear_grpo_loss_token",
        "backward",
        "torch",
    )


def test_jsd_seed_is_jsd_backward_liger(seeded_lake: Path) -> None:
    (row,) = rows(seeded_lake, "runs", "kernel = 'jsd'")
    assert (row["kernel"], row["pass"], row["provider"]) == ("jsd", "backward", "liger")
    assert row["latency_median_ns"] == 3714592
    assert (row["latency_p20_ns"], row["latency_p80_ns"]) == (3713056, 3716128)
    assert row["display_name"] == "Liger"
    (kl,) = rows(seeded_lake, "runs", "kernel = 'kl_div'")
    assert (kl["pass"], kl["provider"], kl["latency_median_ns"]) == ("full", "torch", 2855200)


def test_measurements_hold_timing_and_measured_statistics(seeded_lake: Path) -> None:
    got = {
        (r["run_id"], r["statistic"]): (r["value"], r["unit"], r["origin"])
        for r in rows(seeded_lake, "measurements")
    }
    assert len(got) == 9
    for seed in (GRPO_SEED, JSD_SEED, KL_SEED):
        run = read_seed(SEEDS / seed)[1]["run"]
        run_id = reference_digest(run)
        median = run["spec"]["timing"]["latencyNs"]["median"]
        assert got[(run_id, "median")] == (median, "ns", "timing")
        for m in run["spec"]["measurements"]:
            assert got[(run_id, m["statistic"])] == (m["value"], m["unit"], "measurements")


def test_three_environments_and_two_protocols_one_row_per_digest(seeded_lake: Path) -> None:
    environments = {r["environment_digest"]: r for r in rows(seeded_lake, "environments")}
    protocols = {r["protocol_digest"]: r for r in rows(seeded_lake, "protocols")}
    assert len(environments) == 3
    assert len(protocols) == 2
    for seed in (GRPO_SEED, JSD_SEED, KL_SEED):
        bundle = read_seed(SEEDS / seed)[1]
        env_digest = bundle["run"]["spec"]["environmentDigest"]
        assert reference_digest(bundle["environment"]) == env_digest  # seeds are consistent
        env = environments[env_digest]
        hw = bundle["environment"]["spec"]["hardware"]
        assert (env["vendor"], env["product"], env["architecture"]) == (
            hw["vendor"],
            hw["product"],
            hw["architecture"],
        )
        assert env["form_factor"] == hw.get("formFactor")
        assert env["name"] == bundle["environment"]["metadata"]["name"]
        assert json.loads(env["spec_json"]) == bundle["environment"]["spec"]
        proto = protocols[bundle["run"]["spec"]["protocolDigest"]]
        pspec = bundle["protocol"]["spec"]
        assert proto["harness_name"] == pspec["harness"]["name"]
        assert proto["harness_repository"] == pspec["harness"]["repository"]
        assert proto["timer"] == pspec["measurement"]["timer"] == "cuda_events"
        assert proto["primary_statistic"] == "median"
        assert proto["comparability_family"] == pspec["comparability"]["family"]
        assert proto["comparability_notes"] == pspec["comparability"]["notes"]


def test_second_ingest_adds_nothing(seeded_lake: Path, seed_inbox: Path) -> None:
    before_snapshot = Lake(seeded_lake).snapshot()
    before_files = all_files(seeded_lake)
    report = ingest([seed_inbox], seeded_lake)
    assert report.runs_added == 0
    assert report.files_read == 0
    assert report.files_unchanged == 3
    assert report.dimensions_added == 0
    assert report.rejected == 0
    assert Lake(seeded_lake).snapshot().id == before_snapshot.id
    assert all_files(seeded_lake) - before_files == set()
    assert len(rows(seeded_lake, "runs")) == 3


def test_the_same_seeds_under_another_path_add_nothing(seeded_lake: Path) -> None:
    """The same bytes under another path are recognised by content hash."""
    report = ingest([SEEDS], seeded_lake)
    assert (report.files_unchanged, report.runs_added) == (3, 0)
    assert len(rows(seeded_lake, "runs")) == 3


def test_a_new_file_is_the_only_one_ingested(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    inbox = tmp_path / "inbox"
    shutil.copytree(SEEDS, inbox)
    assert ingest([inbox], tmp_lake).runs_added == 3
    (inbox / "new.txt").write_text(seed_text("New one", make_bundle(variant=1)))
    report = ingest([inbox], tmp_lake)
    assert (report.files_read, report.files_unchanged) == (1, 3)
    assert (report.runs_added, report.duplicates, report.dimensions_added) == (1, 0, 0)
    assert len(rows(tmp_lake, "runs")) == 4
    (new,) = rows(tmp_lake, "runs", "display_name = 'New one'")
    assert new["latency_median_ns"] == 1001
    ingested = {Path(r["path"]).name for r in rows(tmp_lake, "ingested_files")}
    assert ingested == {p.name for p in inbox.iterdir()}


def test_the_same_bundle_under_another_name_is_a_duplicate(
    tmp_path: Path, seeded_lake: Path
) -> None:
    display, bundle = read_seed(SEEDS / JSD_SEED)
    copy = tmp_path / "elsewhere" / "jsd-again.json"
    copy.parent.mkdir()
    copy.write_text(json.dumps(bundle))  # other bytes, same run
    report = ingest([copy], seeded_lake)
    assert (report.files_read, report.runs_added, report.duplicates) == (1, 0, 1)
    assert report.rejected == 0
    assert len(rows(seeded_lake, "runs")) == 3
    assert len(rows(seeded_lake, "measurements")) == 9
    (row,) = rows(seeded_lake, "runs", "kernel = 'jsd'")
    assert row["display_name"] == display  # the first arrival is kept


def test_a_modified_file_adds_only_its_new_runs(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    feed = tmp_path / "feed.jsonl"
    lines = [json.dumps(make_bundle(variant=i)) for i in range(2)]
    feed.write_text("\n".join(lines) + "\n")
    assert ingest([feed], tmp_lake).runs_added == 2
    lines.append(json.dumps(make_bundle(variant=2)))
    feed.write_text("\n".join(lines) + "\n")
    report = ingest([feed], tmp_lake)
    assert (report.files_read, report.runs_added, report.duplicates) == (1, 1, 2)
    medians = sorted(r["latency_median_ns"] for r in rows(tmp_lake, "runs"))
    assert medians == [1000, 1001, 1002]


def test_duplicates_within_one_batch_are_stored_once(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    feed = tmp_path / "twice.ndjson"
    line = json.dumps(make_bundle())
    feed.write_text(f"{line}\n{line}\n")
    report = ingest([feed], tmp_lake)
    assert (report.runs_added, report.duplicates) == (1, 1)
    assert len(rows(tmp_lake, "runs")) == 1
    assert len(rows(tmp_lake, "measurements")) == 3


def test_run_without_timing_takes_its_first_measurement(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    bundle = make_bundle()
    spec = bundle["run"]["spec"]
    del spec["timing"]
    spec["measurements"] = [
        {"metric": "peak_memory", "statistic": "max", "unit": "mb", "value": 1234.5},
    ]
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(bundle))
    report = ingest([path], tmp_lake)
    assert (report.runs_added, report.rejected) == (1, 0), report.rejects
    (row,) = rows(tmp_lake, "runs")
    assert (row["metric"], row["statistic"], row["unit"], row["value"]) == (
        "peak_memory",
        "max",
        "mb",
        1234.5,
    )
    assert row["latency_median_ns"] is None
    (m,) = rows(tmp_lake, "measurements")
    assert (m["metric"], m["value"], m["origin"]) == ("peak_memory", 1234.5, "measurements")


def test_latency_strings_convert_to_whole_nanoseconds(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    bundle = make_bundle()
    bundle["run"]["spec"]["timing"]["latencyNs"] = {
        "median": "3.714593 ms",
        "mean": "3714 us",
        "minimum": "1.5 s",
        "confidence95": ["3 ms", 3800000],
    }
    path = tmp_path / "strings.json"
    path.write_text(json.dumps(bundle))
    report = ingest([path], tmp_lake)
    assert report.rejected == 0, report.rejects
    (row,) = rows(tmp_lake, "runs")
    assert row["latency_median_ns"] == 3714593
    assert row["latency_mean_ns"] == 3714000
    timing = {
        r["statistic"]: r["value"] for r in rows(tmp_lake, "measurements", "origin = 'timing'")
    }
    assert timing == {
        "median": 3714593,
        "mean": 3714000,
        "minimum": 1_500_000_000,
        "ci95_low": 3_000_000,
        "ci95_high": 3_800_000,
    }


def test_whole_valued_float_latency_is_an_integer(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    """JSON Schema's "integer" admits 162642944.0; a fraction (1.5) stays refused elsewhere."""
    bundle = make_bundle()
    bundle["run"]["spec"]["timing"]["latencyNs"]["median"] = 162642944.0
    path = tmp_path / "float.json"
    path.write_text(json.dumps(bundle))
    report = ingest([path], tmp_lake)
    assert report.rejected == 0, report.rejects
    (row,) = rows(tmp_lake, "runs")
    assert row["latency_median_ns"] == 162642944
    assert row["run_id"] == reference_digest(bundle["run"])


class TestVerifyDigests:
    def test_seeds_pass(self, tmp_lake: Path) -> None:
        report = ingest([SEEDS], tmp_lake, verify_digests=True)
        assert (report.runs_added, report.rejected) == (3, 0), report.rejects

    @pytest.mark.parametrize("part", ["protocol", "environment"])
    def test_tampered_document_is_rejected_naming_the_mismatch(
        self, tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory, part: str
    ) -> None:
        bundle = make_bundle()
        if part == "protocol":
            bundle["protocol"]["spec"]["measurement"]["timer"] = "wall_clock"
        else:
            bundle["environment"]["spec"]["hardware"]["product"] = "NVIDIA H200"
        key = f"{part}Digest"
        path = tmp_path / "tampered.json"
        path.write_text(json.dumps(bundle))
        report = ingest([path, SEEDS / JSD_SEED], tmp_lake, verify_digests=True)
        assert (report.runs_added, report.rejected) == (1, 1)
        (reject,) = report.rejects
        assert key in reject.reason
        assert bundle["run"]["spec"][key] in reject.reason
        assert reference_digest(bundle[part]) in reject.reason
        assert [r["kernel"] for r in rows(tmp_lake, "runs")] == ["jsd"]

    def test_without_the_flag_a_tampered_bundle_lands(
        self, tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
    ) -> None:
        bundle = make_bundle()
        bundle["protocol"]["spec"]["measurement"]["timer"] = "wall_clock"
        path = tmp_path / "tampered.json"
        path.write_text(json.dumps(bundle))
        assert ingest([path], tmp_lake).runs_added == 1


class TestLakeFormat:
    def test_lake_records_its_format(self, seeded_lake: Path) -> None:
        info = json.loads((seeded_lake / "kindex-lake.json").read_text())
        assert info["format"] == 2
        for table in TABLES:  # every table is a Delta table
            assert (seeded_lake / table / "_delta_log").is_dir(), table

    def test_newer_format_is_refused_with_a_clear_message(self, seeded_lake: Path) -> None:
        (seeded_lake / "kindex-lake.json").write_text(json.dumps({"format": 99}))
        before = all_files(seeded_lake)
        with pytest.raises(LakeError, match=r"format 99.*reads format 2") as caught:
            ingest([SEEDS], seeded_lake)
        assert "upgrade" in str(caught.value)
        with pytest.raises(LakeError, match="format 99"):
            Lake(seeded_lake).snapshot()
        assert all_files(seeded_lake) == before


def test_importing_etl_loads_neither_typer_nor_rich() -> None:
    code = (
        "import sys, kindex_olap.ingestion.pipeline\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'typer', 'rich', 'click'})\n"
        "print(','.join(bad))\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("files_per_job", [500, 1])
def test_copies_within_one_ingest_count_once(
    tmp_path: Path,
    tmp_lake: Path,
    make_bundle: BundleFactory,
    monkeypatch: pytest.MonkeyPatch,
    files_per_job: int,
) -> None:
    """A file whose bytes repeat another file of the same ingest (same job or another one) is
    unchanged: its runs are neither added nor counted as duplicates, its rejects not kept."""
    import kindex_olap.ingestion.pipeline

    monkeypatch.setattr(kindex_olap.ingestion.pipeline, "CHUNK_FILES", files_per_job)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    good = seed_text("Good", make_bundle(variant=1))
    bad_bundle = make_bundle(variant=2)
    bad_bundle["run"]["spec"]["status"] = "fine"
    bad = seed_text("Bad", bad_bundle)
    for name, text in [("a.txt", good), ("b.txt", bad), ("c.txt", good), ("d.txt", bad)]:
        (inbox / name).write_text(text)
    report = ingest([inbox], tmp_lake)
    assert (report.files_read, report.files_unchanged) == (2, 2)
    assert (report.runs_added, report.duplicates, report.rejected) == (1, 0, 1)
    assert [r["source_file"] for r in rows(tmp_lake, "rejects")] == [str(inbox / "b.txt")]
    assert [r["source_file"] for r in rows(tmp_lake, "runs")] == [str(inbox / "a.txt")]


def test_a_big_jsonl_file_is_hashed_and_its_copies_add_nothing(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    """A JSON Lines file above SMALL_FILE_BYTES is split into byte ranges; when no other file
    has its size its sha256 is computed alongside the staging. Either way the file row holds
    the file's hash, and the same bytes under other names (in the same ingest, or later) add
    nothing."""
    from kindex_olap.ingestion.pipeline import SMALL_FILE_BYTES

    lines = []
    while sum(map(len, lines)) <= SMALL_FILE_BYTES:
        lines.append(json.dumps(make_bundle(variant=len(lines))).encode() + b"\n")
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"".join(lines))
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    report = ingest([big], tmp_lake)
    assert (report.runs_added, report.rejected) == (len(lines), 0)
    (row,) = rows(tmp_lake, "ingested_files")
    assert (row["path"], row["sha256"], row["documents"]) == (str(big), digest, len(lines))
    twins = tmp_path / "twins"
    twins.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        shutil.copy(big, twins / name)
    report = ingest([twins], tmp_lake)
    assert (report.files_read, report.files_unchanged, report.runs_added) == (0, 2, 0)
    (twins / "b.jsonl").write_bytes(b"".join(reversed(lines)))  # same size, other bytes
    report = ingest([twins], tmp_lake)
    assert (report.files_read, report.runs_added, report.duplicates) == (1, 0, len(lines))
    assert {r["sha256"] for r in rows(tmp_lake, "ingested_files")} == {
        digest,
        hashlib.sha256((twins / "b.jsonl").read_bytes()).hexdigest(),
    }


def test_file_rows_are_the_same_through_json_lines_and_arrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ingested_files rows go through JSON Lines for a few files, through Arrow for many."""
    from kindex_olap.ingestion import writer

    def file_rows(lake: Path) -> list[dict]:
        return sorted(
            (
                {k: v for k, v in r.items() if k != "ingested_at"}
                for r in rows(lake, "ingested_files")
            ),
            key=lambda r: r["path"],
        )

    ingest([SEEDS], tmp_path / "json")
    monkeypatch.setattr(writer, "FILE_ROWS_AS_JSON", 0)
    ingest([SEEDS], tmp_path / "arrow")
    json_rows, arrow_rows = file_rows(tmp_path / "json"), file_rows(tmp_path / "arrow")
    assert json_rows == arrow_rows
    assert len(json_rows) == 3 and all(r["documents"] == 1 for r in json_rows)


@pytest.mark.parametrize("few_bytes", [8 * 1024 * 1024, 0])
def test_few_rejects_and_spilled_rejects_are_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, few_bytes: int
) -> None:
    """A few rejects go to the rejects table straight from JSON Lines (RejectSpill.few); more
    text than FEW_REJECT_BYTES goes through a Parquet part: the same rows either way."""
    from kindex_olap.ingestion import rejects

    monkeypatch.setattr(rejects, "FEW_REJECT_BYTES", few_bytes)
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(b'{"broken": true}\nnot json\n\n[1, 2]\n')
    report = ingest([source], tmp_path / "lake")
    assert report.rejected == 3
    kept = rows(tmp_path / "lake", "rejects")
    assert [(r["source_file"], r["line"]) for r in kept] == [(str(source), n) for n in (1, 2, 4)]
    assert [r["text"] for r in kept] == ['{"broken": true}', "not json", "[1, 2]"]
    assert all(r["reason"] and r["rejected_at"] is not None for r in kept)
    assert not list((tmp_path / "lake" / "_kindex").glob("staging/*"))


@pytest.mark.parametrize(("cores", "most"), [(1, 1), (64, 2)])
def test_the_work_database_never_takes_a_thread_per_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int, most: int
) -> None:
    """Each DuckDB thread holds buffers of its own under the work database's one memory limit:
    on a 16-core machine DuckDB's default (a thread per core) ran 100k seed-text files and 1M
    bundles out of memory. Every statement of an ingest (flatten, finish, sorted writes,
    rejects) runs on at most work_threads(): 1 on one core, WORK_THREADS on 64."""
    from kindex_olap.ingestion import writer

    monkeypatch.setattr(writer.os, "cpu_count", lambda: cores)
    seen: list[int] = []
    run = writer.BatchWriter._run

    def recording(self: writer.BatchWriter, sql: str, params: list | None = None) -> list:
        out = run(self, sql, params)
        seen.append(int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0]))
        return out

    monkeypatch.setattr(writer.BatchWriter, "_run", recording)
    from kindex_olap.ingestion import rejects

    monkeypatch.setattr(rejects, "FEW_REJECT_BYTES", 0)  # the spilled rejects' write too
    source = tmp_path / "broken.jsonl"
    source.write_bytes(b"not json\n")
    report = ingest([SEEDS, source], tmp_path / "lake")
    assert report.runs_added == 3 and report.rejected == 1
    assert seen and max(seen) == most == writer.work_threads()


@pytest.mark.parametrize(("cores", "workers"), [(1, 1), (2, 2), (16, 3), (64, 3)])
def test_staging_processes_are_one_per_core_and_at_most_three(
    monkeypatch: pytest.MonkeyPatch, cores: int, workers: int
) -> None:
    """More staging processes than the parent's one flattening thread keeps up with add only
    memory: on a 16-core machine 8 of them took 1M bundles past 1 GiB (issue 25's bound)."""
    from kindex_olap.ingestion import pipeline

    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: cores)
    assert pipeline._workers() == workers
