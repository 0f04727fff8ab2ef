"""A KernelIndex leaderboard's answers, as its slice in tests/data gives them, read right:
two implementations that one provider stands for in a cell read apart (a user's two
submissions; FlashInfer's cuDNN, cuBLASLt and FlashInfer GEMMs, one provider: their rows
printed alike, "flashinfer-baseline 0.96x", "flashinfer-baseline 0.73x" under "baseline
flashinfer-baseline"), a summary keeps them apart, and a kernel scored in another metric is
named as such."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.doors.apart import told_apart
from kindex_olap.doors.columns import verb_columns
from tests.conftest import KERNELINDEX_SLICES

runner = CliRunner()
BOARD = next(p for p in KERNELINDEX_SLICES if "94af2ae7" in p.name)


@pytest.fixture(scope="module")
def board_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    root = tmp_path_factory.mktemp("board")
    import_kernelindex(str(BOARD), raw_dir=root / "raw", lake=root / "lake")
    return root / "lake"


def _table(lake: Path, question: str, width: int) -> list[str]:
    result = runner.invoke(
        app, ["query", question, "--lake", str(lake)], env={"COLUMNS": str(width)}
    )
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


@pytest.mark.parametrize("width", [80, 100])
def test_one_providers_implementations_read_apart(board_lake: Path, width: int) -> None:
    for question in ("speedup gemm_nvfp4_n2048_k2048", "speedup amd-fp8-mm"):
        lines = _table(board_lake, question, width)
        rule = next(i for i, line in enumerate(lines) if line.startswith("──"))
        rows = lines[rule + 1 :]
        assert len(rows) > 1
        assert len(set(rows)) == len(rows), rows  # no two rows print alike
        assert max(len(line) for line in lines) <= width
    lines = _table(board_lake, "speedup gemm_nvfp4_n2048_k2048", 100)
    assert any("baseline flashinfer-baseline (mm_fp4_nvfp4_flashinfer)" in x for x in lines)
    assert any(x.startswith("flashinfer-baseline (mm_fp4_nvfp4_cudnn) ") for x in lines)
    lines = _table(board_lake, "speedup amd-fp8-mm", 100)
    assert any(x.startswith("kernelbot-user-376 (submission 18667) ") for x in lines)


def test_machines_read_the_columns_as_they_are(board_lake: Path) -> None:
    result = runner.invoke(
        app,
        ["query", "speedup gemm_nvfp4_n2048_k2048", "--lake", str(board_lake), "--format", "csv"],
    )
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["candidate"] for r in rows} == {"flashinfer-baseline"}
    assert len({r["candidate_name"] for r in rows}) == len(rows) > 1


def test_only_a_provider_with_two_implementations_in_one_cell_is_told_apart() -> None:
    columns = ["kernel", "shape", "candidate", "baseline", "candidate_name", "baseline_name"]
    rows = [
        ["conv", "s1", "u1", "u1", "conv · submission 5", "conv · submission 7"],
        ["conv", "s1", "u2", "u1", "conv · submission 6", "conv · submission 7"],
        ["conv", "s2", "u2", "u1", "conv · submission 6", "conv · submission 9"],
        ["conv", "s2", "u2", "u1", "conv · submission 8", "conv · submission 9"],
    ]
    shown = told_apart(columns, rows, verb_columns("speedup"))
    assert [(r[2], r[3]) for r in shown] == [
        ("u1 (submission 5)", "u1 (submission 7)"),  # a user against their own other one
        ("u2", "u1 (submission 7)"),
        ("u2 (submission 6)", "u1"),  # another cell: u1 is one implementation there
        ("u2 (submission 8)", "u1"),
    ]
    assert told_apart(columns, rows[1:2], verb_columns("speedup")) == rows[1:2]


def test_a_summary_takes_each_implementation_apart(board_lake: Path) -> None:
    """Two submissions of one user in one cell are two summaries of one case each: they were
    pooled as one user of two cases (a geometric mean over two attempts at one shape)."""
    result = runner.invoke(
        app, ["query", "summary amd-fp8-mm", "--lake", str(board_lake), "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    rows = [
        r for r in csv.DictReader(io.StringIO(result.stdout)) if r["candidate"].endswith("-376")
    ]
    assert sorted((r["candidate_name"], r["cases"]) for r in rows) == [
        ("amd-fp8-mm · submission 18667", "1"),
        ("amd-fp8-mm · submission 29878", "1"),
    ]
    speedups = runner.invoke(
        app, ["query", "speedup amd-fp8-mm", "--lake", str(board_lake), "--format", "csv"]
    )
    by_name = {r["candidate_name"]: r for r in csv.DictReader(io.StringIO(speedups.stdout))}
    for row in rows:  # one case: its geomean is its speedup
        one = by_name[row["candidate_name"]]
        assert float(row["geomean_speedup"]) == pytest.approx(float(one["speedup"]))
    table = _table(board_lake, "summary amd-fp8-mm", 120)
    assert sum("kernelbot-user-376 (submission" in line for line in table) == 2


def test_the_report_names_which_implementation(board_lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", "--lake", str(board_lake), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    for submission in ("18667", "29878"):  # in the section's table and its chart's series
        assert f"<td>kernelbot-user-376 (submission {submission})</td>" in page
        assert f'"_line":"kernelbot-user-376 (submission {submission})"' in page


def test_latency_and_runs_name_a_providers_implementations(board_lake: Path) -> None:
    """FlashInfer's cuDNN, cuBLASLt and FlashInfer GEMMs are one provider: their latencies read
    as four `flashinfer-baseline` rows told apart only by the millisecond they ran."""
    for verb in ("latency", "runs"):
        lines = _table(board_lake, f"{verb} gemm_nvfp4_n2048_k2048", 100)
        named = [x.split("  ")[0] for x in lines if x.startswith("flashinfer-baseline (")]
        assert sorted(set(named)) == [
            "flashinfer-baseline (cublaslt_nvfp4_scaled_mm)",
            "flashinfer-baseline (mm_fp4_nvfp4_cudnn)",
            "flashinfer-baseline (mm_fp4_nvfp4_flashinfer)",
        ], lines


def test_a_kernel_of_another_metric_is_named_as_such(board_lake: Path) -> None:
    """`latency sort_v2` of a leaderboard scored in seconds: the runs are there, of metric
    score. It read "the filter kernel sort_v2 left nothing (the runs before it have kernel:
    ...)", a list of other kernels, as if the lake held no sort_v2."""
    for verb in ("latency", "regressions"):
        result = runner.invoke(app, ["query", f"{verb} sort_v2", "--lake", str(board_lake)])
        assert result.exit_code == 0, result.output
        said = "no runs match: the filter kernel sort_v2 left no run of metric latency"
        assert f"{said} (its runs have metric: score)" in " ".join(result.stderr.split())


def test_steps_of_a_providers_two_implementations_read_apart(tmp_path: Path) -> None:
    """Two liger implementations of one cell (two builds of one provider, named apart) each
    step from 0.8.0 to 0.9.0: two series. `changes` showed two `liger` latency steps of one
    shape, as if one series had stepped twice; it names each one's implementation."""
    import json

    import crafted as c

    from kindex_olap.ingestion.pipeline import ingest

    folder = tmp_path / "in"
    folder.mkdir()
    bundles = [("PyTorch", "torch", "torch", 1.0, 1.0)]
    bundles += [
        ("Liger triton", "liger", "triton", 1.0, 1.6),
        ("Liger cute", "liger", "cute", 1.0, 1.3),
    ]
    n = 0
    for display, provider, build, before, after in bundles:
        for version, ms, day in (("0.8.0", before, "01"), ("0.9.0", after, "02")):
            bundle = c.run(
                provider, median=ms * 1e6, version=version, observed=f"2026-05-{day}T10:00:00.000Z"
            )
            bundle["run"]["spec"]["implementationDigest"] = c.digest(f"impl-{build}")
            bundle["run"]["metadata"]["name"] += f"-{build}"
            n += 1
            text = f"{display}\n\n{json.dumps(bundle, indent=2)}\n"
            (folder / f"b{n:02d}.txt").write_text(text, encoding="utf-8")
    lake = tmp_path / "lake"
    ingest([folder], lake)
    lines = _table(lake, "changes jsd", 120)
    named = {x.split("  ")[0] for x in lines if x.startswith("liger (")}
    assert named == {"liger (Liger cute)", "liger (Liger triton)"}, lines


def test_a_leaderboards_history_shows_each_records_value(board_lake: Path) -> None:
    """The record staircase showed who set each record and when, and no value: its value,
    the best before it and the ratio were all "columns left out"."""
    lines = _table(board_lake, "history gemm_nvfp4_n2048_k2048", 100)
    header = next(x for x in lines if "observed_at" in x)
    assert "value ms" in header and "best before ms" in header, lines
    assert any(x.rstrip().endswith("1.01×") for x in lines), lines
