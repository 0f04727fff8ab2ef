"""`kindex ingest` and `kindex rejects`: exit codes, the summary line, where the lake came from."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GRPO_SEED, JSD_SEED, SEEDS, BundleFactory, rows
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.ingestion.rejects import iter_rejects
from kindex_olap.ingestion.sources import KEEP_REJECTED_BYTES

runner = CliRunner()


def summary_line(stderr: str) -> str:
    """The one-line summary: the last line on stderr."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    return lines[-1]


def test_clean_ingest_exits_0_and_names_the_lake(tmp_lake: Path) -> None:
    result = runner.invoke(app, ["ingest", str(SEEDS), "--lake", str(tmp_lake)])
    assert result.exit_code == 0, result.output
    line = summary_line(result.stderr)
    assert "3 files read" in line
    assert "3 runs added" in line
    assert "0 rejected" in line
    assert f"-> {tmp_lake.resolve()} [--lake]" in line
    assert "rejected " not in result.stderr.replace("0 rejected", "")
    assert len(rows(tmp_lake, "runs")) == 3

    again = runner.invoke(app, ["ingest", str(SEEDS), "--lake", str(tmp_lake)])
    assert again.exit_code == 0, again.output
    assert "0 runs added" in summary_line(again.stderr)
    assert "3 unchanged" in summary_line(again.stderr)


def test_lake_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = tmp_path / "env-lake"
    monkeypatch.setenv("KINDEX_LAKE", str(lake))
    result = runner.invoke(app, ["ingest", str(SEEDS / JSD_SEED)])
    assert result.exit_code == 0, result.output
    assert f"-> {lake.resolve()} [$KINDEX_LAKE]" in summary_line(result.stderr)
    assert len(rows(lake, "runs")) == 1


def test_lake_option_beats_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINDEX_LAKE", str(tmp_path / "env-lake"))
    chosen = tmp_path / "option-lake"
    result = runner.invoke(app, ["ingest", str(SEEDS / JSD_SEED), "--lake", str(chosen)])
    assert result.exit_code == 0, result.output
    assert f"-> {chosen.resolve()} [--lake]" in summary_line(result.stderr)
    assert not (tmp_path / "env-lake").exists()


def test_default_lake_and_inputs_are_under_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(SEEDS, tmp_path / "data" / "raw")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["ingest"])
    assert result.exit_code == 0, result.output
    line = summary_line(result.stderr)
    lake = (tmp_path / "data" / "parquet").resolve()
    assert f"-> {lake} [default" in line
    assert "3 runs added" in line
    assert len(rows(lake, "runs")) == 3


def test_rejects_give_exit_1_and_are_listed(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    bad = make_bundle(variant=1)
    bad["run"]["spec"]["timing"]["latencyNs"]["median"] = "0.0000005 ms"
    feed = tmp_path / "feed.jsonl"
    feed.write_text(json.dumps(make_bundle(variant=0)) + "\n" + json.dumps(bad) + "\n")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    result = runner.invoke(app, ["ingest", str(feed), str(empty), "--lake", str(tmp_lake)])
    assert result.exit_code == 1, result.output
    assert f"rejected {feed}:2: $.run.spec.timing.latencyNs.median" in result.stderr
    assert f"rejected {empty}: empty file" in result.stderr
    line = summary_line(result.stderr)
    assert "1 runs added" in line and "2 rejected" in line

    listed = runner.invoke(app, ["rejects", "--lake", str(tmp_lake)])
    assert listed.exit_code == 0, listed.output
    out = sorted(listed.stdout.splitlines())
    assert len(out) == 2
    assert out[0].startswith(f"{empty}\tempty file")
    assert out[1].startswith(f"{feed}:2\t$.run.spec.timing.latencyNs.median")
    assert "whole number of nanoseconds" in out[1]
    assert "2 rejected document(s)" in listed.stderr

    with_text = runner.invoke(app, ["rejects", "--lake", str(tmp_lake), "--text"])
    kept = [line[4:] for line in with_text.stdout.splitlines() if line.startswith("    ")]
    assert [json.loads(line) for line in kept] == [bad]  # the empty file kept no text

    stored = {r["source_file"]: r for r in iter_rejects(tmp_lake)}
    assert stored[str(feed)]["line"] == 2
    assert json.loads(stored[str(feed)]["text"]) == bad  # the original text is kept
    assert stored[str(empty)]["line"] is None
    assert stored[str(empty)]["rejected_at"] is not None


def test_rejected_text_is_bounded_to_one_mib(
    tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory
) -> None:
    huge = make_bundle()
    huge["run"]["metadata"]["description"] = "q" * (5 * 1024 * 1024)
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(huge))
    result = runner.invoke(app, ["ingest", str(path), "--lake", str(tmp_lake)])
    assert result.exit_code == 1
    (row,) = iter_rejects(tmp_lake)
    assert len(row["text"]) == KEEP_REJECTED_BYTES
    assert "4 MiB" in row["reason"]


def test_many_rejects_are_summarised(tmp_path: Path, tmp_lake: Path) -> None:
    feed = tmp_path / "junk.jsonl"
    feed.write_text("".join(f"not json {i}\n" for i in range(25)))
    result = runner.invoke(app, ["ingest", str(feed), "--lake", str(tmp_lake)])
    assert result.exit_code == 1
    assert result.stderr.count("rejected ") >= 10
    assert "and 15 more: see `kindex rejects`" in result.stderr
    listed = runner.invoke(app, ["rejects", "--lake", str(tmp_lake), "--limit", "100"])
    assert len(listed.stdout.splitlines()) == 25
    lines = sorted(int(x.split("\t")[0].rsplit(":", 1)[1]) for x in listed.stdout.splitlines())
    assert lines == list(range(1, 26))


def test_verify_digests_flag(tmp_path: Path, tmp_lake: Path, make_bundle: BundleFactory) -> None:
    ok = runner.invoke(app, ["ingest", str(SEEDS), "--lake", str(tmp_lake), "--verify-digests"])
    assert ok.exit_code == 0, ok.output
    tampered = make_bundle(variant=3)
    tampered["protocol"]["spec"]["measurement"]["primaryStatistic"] = "mean"
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(tampered))
    result = runner.invoke(app, ["ingest", str(path), "--lake", str(tmp_lake), "--verify-digests"])
    assert result.exit_code == 1
    assert "$.run.spec.protocolDigest" in result.stderr
    assert "does not match the protocol document" in result.stderr
    assert len(rows(tmp_lake, "runs")) == 3


def test_newer_lake_format_is_refused(tmp_lake: Path) -> None:
    assert runner.invoke(app, ["ingest", str(SEEDS), "--lake", str(tmp_lake)]).exit_code == 0
    (tmp_lake / "kindex-lake.json").write_text(json.dumps({"format": 99, "tool": "kindex-olap"}))
    for args in (["ingest", str(SEEDS / GRPO_SEED)], ["rejects"]):
        result = runner.invoke(app, [*args, "--lake", str(tmp_lake)])
        assert result.exit_code == 3, result.output
        assert "has format 99" in result.stderr
        assert "upgrade" in result.stderr


def test_missing_input_is_a_usage_error(tmp_path: Path, tmp_lake: Path) -> None:
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope"), "--lake", str(tmp_lake)])
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


def test_real_process_exit_codes(tmp_path: Path) -> None:
    """The installed entry point, as a user runs it: 0 when clean, 1 when something was kept aside."""
    lake = tmp_path / "lake"
    entry = "from kindex_olap.cli.app import app; app(prog_name='kindex')"  # what the script runs
    command = [sys.executable, "-c", entry, "ingest", "--lake", str(lake), "-q"]
    clean = subprocess.run([*command, str(SEEDS)], capture_output=True, text=True, cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    assert "3 runs added" in clean.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("[]")
    bad = subprocess.run([*command, str(broken)], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 1, bad.stderr
    assert "top-level array" in bad.stderr
    assert "1 rejected" in bad.stderr


@pytest.mark.slow
def test_ctrl_c_during_a_parallel_ingest_rolls_back_quietly(tmp_path: Path) -> None:
    """SIGINT to the process group (Ctrl-C in a terminal) while staging processes run: one
    line on stderr, exit 130, no snapshot, no staging left behind."""
    import os
    import signal
    import time

    from synthetic import write_jsonl

    from kindex_olap.lake.store import Lake

    data = write_jsonl(40_000, tmp_path / "big.jsonl")  # above the parallel threshold
    lake = tmp_path / "lake"
    process = subprocess.Popen(
        [sys.executable, "-m", "kindex_olap", "ingest", str(data), "--lake", str(lake), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    staged = lake / "_kindex" / "staging"
    # Interrupt once staging processes are at work (they have written a staged file): before
    # that, on a busy machine, a worker still starting up would not yet ignore SIGINT.
    while not any(staged.glob("*/staged-*.ndjson")) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    if process.returncode == 1:  # the machine was fast enough to finish first
        pytest.skip("the ingest finished before the interrupt")
    assert process.returncode == 130, err.decode()
    assert err.decode().strip().splitlines() == [
        "interrupted: an ingest commits all or nothing; the lake is as last committed"
    ]
    assert Lake(lake).snapshot().id == 0
    assert not any((lake / "_kindex" / "staging").iterdir())
