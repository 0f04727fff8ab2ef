"""A KernelIndex leaderboard's answers, as its slice in tests/data gives them, read right:
two implementations that one provider stands for in a cell read apart (a user's two
submissions; FlashInfer's cuDNN, cuBLASLt and FlashInfer GEMMs, one provider: their rows
printed alike, "flashinfer-baseline 0.96x", "flashinfer-baseline 0.73x" under "baseline
flashinfer-baseline"), a summary keeps them apart, and a kernel scored in another metric is
named as such."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.cli.table import render
from kindex_olap.doors.apart import told_apart
from kindex_olap.doors.columns import verb_columns
from kindex_olap.query.run import run_query
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


def test_a_shape_label_two_workloads_share_reads_apart(board_lake: Path) -> None:
    """KernelIndex labels a workload by its first tensor's shape: the full export holds four
    amd-fp8-mm workloads of "[1024, 7168]" (n 512 to 4608), whose rows read as one case measured
    four times (tests/test_kernelindex_import.py). The slice's real rows, a second workload given
    under one label (its n changed), read apart by that axis; the other labels stay as they are."""
    result = run_query("speedup", board_lake)  # every kernel: only amd-fp8-mm's label changes
    index = {name: i for i, name in enumerate(result.columns)}
    at, axes_at, kernel = index["shape"], index["axes"], index["kernel"]
    first = next(row for row in result.rows if row[kernel] == "amd-fp8-mm")
    label = first[at]
    mine = [
        i for i, row in enumerate(result.rows) if (row[kernel], row[at]) == ("amd-fp8-mm", label)
    ]
    assert len(mine) > 1 and all(result.rows[i][axes_at] == first[axes_at] for i in mine)
    rows = [list(row) for row in result.rows]
    for i in mine[1::2]:  # every other row of the label: a workload of another n
        rows[i][axes_at] = {**rows[i][axes_at], "n": rows[i][axes_at]["n"] + 1}
    shown = told_apart(result.columns, rows, verb_columns("speedup"))
    n = int(first[axes_at]["n"])
    assert [shown[i][at] for i in mine] == [
        f"{label} (n={n})" if k % 2 == 0 else f"{label} (n={n + 1})" for k in range(len(mine))
    ]
    others = [i for i in range(len(rows)) if i not in mine]
    assert others and all(shown[i][at] == rows[i][at] for i in others)
    as_is = told_apart(result.columns, result.rows, verb_columns("speedup"))
    assert [row[at] for row in as_is] == [row[at] for row in result.rows]  # one workload a label
    table = render(result.columns, [rows[i] for i in mine], result.verb, width=120)
    assert any(f"(n={n + 1})" in line for line in table.lines), table.lines


@pytest.mark.parametrize("width", [80, 100])
def test_two_runs_of_one_name_on_a_side_say_when_they_ran(board_lake: Path, width: int) -> None:
    """Two submissions of one user under one name (sol-user-geometric's, 04:04 and 16:24) are
    two rows of one cell that printed alike, "0.80x" and "0.81x": when the candidate ran tells
    them apart, in the whole lake's answer too, and only where rows would read alike."""
    for question in ("speedup 001_fp8_attention_output_projection", "speedup"):
        lines = _table(board_lake, question, width)
        at = next(i for i, x in enumerate(lines) if x.startswith("001_fp8_attention_output_proj"))
        group = lines[at : [*lines, ""].index("", at)]
        rule = next(i for i, x in enumerate(group) if x.startswith("──"))
        assert "cand observed" in group[rule - 1] and "base observed" not in group[rule - 1]
        assert [x.split()[:2] for x in group[rule + 1 :]] == [
            ["2026-08-11", "04:04"],
            ["2026-08-11", "16:24"],
        ], group
    lines = _table(board_lake, "speedup 001_attention_softmax_dropout_value_matmul", width)
    assert not any("observed" in x for x in lines)  # its rows read apart by their candidates


def test_a_workloads_axes_read_as_written(board_lake: Path) -> None:
    """The axes (a map) in a Markdown cell read `k=7168 m=1024 n=512 seed=6563`, as JSON gives
    them, where Python's spelling `{'k': 7168.0, ...}` leaked; a terminal table reads them only
    to tell a shape's workloads apart (the shape label says them), even with --wide."""
    question = ["query", "speedup amd-fp8-mm", "--lake", str(board_lake)]
    as_json = runner.invoke(app, [*question, "--format", "json"])
    axes = json.loads(as_json.stdout)[0]["axes"]
    written = " ".join(f"{k}={int(v) if float(v).is_integer() else v}" for k, v in axes.items())
    assert "k=" in written and "{" not in written
    markdown = runner.invoke(app, [*question, "--format", "markdown"]).stdout.splitlines()
    assert markdown[2].endswith(f"| {written} |"), markdown[2]
    wide = runner.invoke(app, [*question, "--wide"], env={"COLUMNS": "400"})
    assert "axes" not in wide.stdout + wide.stderr and "seed=" not in wide.stdout


def test_workloads_are_told_apart_by_the_fewest_axes() -> None:
    """The axis with the most values first, and only as many as tell every workload apart."""
    columns = ["kernel", "shape", "candidate", "baseline", "axes"]
    rows = [
        ["mm", "[8, 8]", "u1", "u2", {"m": 8.0, "n": 1.0, "seed": 7.0}],
        ["mm", "[8, 8]", "u1", "u2", {"m": 8.0, "n": 2.0, "seed": 9.0}],
        ["mm", "[8, 8]", "u1", "u2", {"m": 8.0, "n": 2.0, "seed": 5.0}],
        ["mm", "[4, 4]", "u1", "u2", {"m": 4.0, "n": 2.5, "seed": 1.0}],
        ["conv", "[8, 8]", "u1", "u2", {"m": 8.0, "n": 3.0}],
    ]
    shown = told_apart(columns, rows, verb_columns("speedup"))
    assert [r[1] for r in shown] == [
        "[8, 8] (seed=7)",  # seed has three values, n two: seed alone tells the three apart
        "[8, 8] (seed=9)",
        "[8, 8] (seed=5)",
        "[4, 4]",  # one workload a label: as it is
        "[8, 8]",  # another kernel's label
    ]
    rows[2][4] = {"m": 8.0, "n": 3.0, "seed": 7.0}  # now n has three values, seed two
    assert [r[1] for r in told_apart(columns, rows, verb_columns("speedup"))][:3] == [
        "[8, 8] (n=1)",
        "[8, 8] (n=2)",
        "[8, 8] (n=3)",
    ]


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
