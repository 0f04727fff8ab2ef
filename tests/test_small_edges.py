"""The small edges a new user meets first: `kindex --version`, a file or a missing folder
given as --lake (exit 2, a message that says what is wrong), a chart format kindex does not
write (exit 2), and a failed `import kernelindex` that leaves no empty folder behind."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from tests.conftest import JSD_SEED, REPO, SEEDS

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"kindex {version('kindex-olap')}\n"


def test_a_file_as_the_lake_says_so() -> None:
    result = runner.invoke(app, ["query", "gpus", "--lake", str(REPO / "README.md")])
    assert result.exit_code == 2, result.output
    assert "README.md is a file, not a lake folder" in result.stderr
    assert "parent folder" not in result.stderr


def test_a_missing_lake_is_a_bad_argument(tmp_path: Path) -> None:
    result = runner.invoke(app, ["query", "gpus", "--lake", str(tmp_path / "nowhere")])
    assert result.exit_code == 2, result.output
    assert "is not a kindex lake" in result.stderr


@pytest.mark.slow
def test_a_chart_format_kindex_does_not_write(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    assert runner.invoke(app, ["ingest", str(SEEDS), "--lake", str(lake)]).exit_code == 0
    out = tmp_path / "x.gif"
    result = runner.invoke(app, ["plot", "latency", "--out", str(out), "--lake", str(lake)])
    assert result.exit_code == 2, result.output
    assert "name a .png, .svg or .html file" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("content", [None, b"not zstd at all"])
def test_a_failed_kernelindex_import_leaves_no_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | None
) -> None:
    monkeypatch.chdir(tmp_path)
    export = tmp_path / "catalog-broken.jsonl.zst"
    if content is not None:
        export.write_bytes(content)
    result = runner.invoke(app, ["import", "kernelindex", str(export)])
    assert result.exit_code in (2, 6), result.output
    assert result.stderr.startswith("error: ")
    assert not (tmp_path / "data").exists(), sorted(tmp_path.rglob("*"))


def test_the_spark_engine_without_pandas_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyspark installed on its own (no pandas: applyInArrow refuses to run) is one line and
    exit 2 before any Spark work, not pyspark's PySparkImportError from a history question."""
    import importlib

    from kindex_olap.ingestion.pipeline import ingest
    from kindex_olap.spark import session

    lake = tmp_path / "lake"
    ingest([SEEDS], lake)
    real = importlib.import_module

    def without_pandas(name: str, package: str | None = None) -> object:
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        if name == "pyspark":
            return object()  # as if installed: the check must not stop at pyspark
        return real(name, package)

    monkeypatch.setattr(session.importlib, "import_module", without_pandas)
    result = CliRunner().invoke(
        app, ["query", "history jsd", "--engine", "spark", "--lake", str(lake)]
    )
    assert result.exit_code == 2, result.output
    assert "the Spark engine needs pandas" in result.stderr
    assert "kindex-olap[spark]" in result.stderr
    assert "Traceback" not in result.output


def test_a_zero_latency_run_is_named_when_nothing_pairs(tmp_path: Path) -> None:
    """The schema admits a 0 ns median; the pairing leaves such a run out (a speedup divides by
    it), and an empty speedup said "no comparable baseline" for a cell that holds one. Two rows
    of Liger's history (liger and huggingface, one cell), liger's median set to 0."""
    import csv
    import json

    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest
    from kindex_olap.query.run import run_query
    from tests.conftest import LIGER_HISTORY

    with LIGER_HISTORY.open(newline="") as src:
        reader = csv.DictReader(src)
        rows = [
            r
            for r in reader
            if (r["kernel_name"], r["kernel_operation_mode"], r["metric_name"]) == (
                "cross_entropy", "forward", "speed")
            and r["gpu_name"] == "NVIDIA A100-SXM4-80GB" and r["x_value"] == "4096"
            and r["liger_version"] == "0.2.1"
        ]  # fmt: skip
    assert sorted(r["kernel_provider"] for r in rows) == ["huggingface", "liger"]
    with (tmp_path / "two.csv").open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import_liger(str(tmp_path / "two.csv"), raw_dir=tmp_path / "raw")
    for bundle in (tmp_path / "raw").glob("liger_*.txt"):
        display, _, body = bundle.read_text().partition("\n\n")
        document = json.loads(body)
        if display == "Liger":
            document["run"]["spec"]["timing"]["latencyNs"]["median"] = 0
            bundle.write_text(f"{display}\n\n{json.dumps(document)}")
    ingest([tmp_path / "raw"], tmp_path / "lake")
    both = run_query("speedup cross_entropy liger vs huggingface", tmp_path / "lake")
    assert both.rows == []
    assert both.diagnostics == [
        "no comparable runs: the matching runs hold no liger implementation (implementations: "
        "huggingface); 1 run with a value of zero or less left out (a speedup divides by it)"
    ]


@pytest.fixture(scope="module")
def seeds_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kindex_olap.ingestion.pipeline import ingest

    lake = tmp_path_factory.mktemp("seeds") / "lake"
    ingest([SEEDS], lake)
    return lake


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # each answered silently: inf flagged nothing, nan judged no step, -1 divided by
        # zero (RuntimeWarnings), --q 5 flagged every step, --q 0 took the default
        (["--threshold", "inf"], "--threshold must be a fraction, 0 or more"),
        (["--threshold", "nan"], "--threshold must be a fraction, 0 or more"),
        (["--threshold", "-1"], "--threshold must be a fraction, 0 or more"),
        (["--q", "5"], "--q is a false-discovery rate: more than 0 and at most 1"),
        (["--q", "0"], "--q is a false-discovery rate"),
        (["--by", "commit"], "--by takes version or run, not 'commit'"),  # was exit 5
    ],
)
def test_a_step_rule_out_of_range_is_a_bad_argument(
    seeds_lake: Path, args: list[str], said: str
) -> None:
    for command in (["check"], ["query", "regressions"]):
        result = runner.invoke(app, [*command, *args, "--lake", str(seeds_lake)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {said}"), result.stderr


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("accept = 5\n", 'accept must be [[accept]] tables, each with step = "..."'),
        ("threshold = 1e400\n", "threshold must be a fraction, 0 or more (0.05: 5 %), not inf"),
        ("threshold = -0.1\n", "threshold must be a fraction, 0 or more (0.05: 5 %), not -0.1"),
        ("q = 5\n", "q is a false-discovery rate, at most 1, not 5"),
    ],
)
def test_a_gate_file_out_of_range_names_its_field(tmp_path: Path, text: str, said: str) -> None:
    """`accept = 5` was a TypeError traceback; `threshold = 1e400` (inf) flagged nothing."""
    from kindex_olap.errors import ConfigError
    from kindex_olap.query.gate import read_gate_file

    gate = tmp_path / "gate.toml"
    gate.write_text(text)
    with pytest.raises(ConfigError) as info:
        read_gate_file(gate)
    assert info.value.message.startswith(f"{gate}: {said}")


def test_a_gate_file_takes_a_threshold_of_zero_as_the_option_does(tmp_path: Path) -> None:
    """`--threshold 0` (every change large enough) was taken and `threshold = 0` in a gate
    file refused as "must be a positive fraction": one setting, one range."""
    from kindex_olap.query.gate import read_gate_file

    gate = tmp_path / "gate.toml"
    gate.write_text("threshold = 0\n[thresholds]\njsd = 0\n")
    read = read_gate_file(gate)
    assert read.threshold == 0.0 and read.thresholds == (("jsd", 0.0),)


def test_a_gate_threshold_of_a_kernel_the_lake_lacks_is_said(seeds_lake: Path) -> None:
    """`[thresholds] jds = 0.1` (a typo of jsd) set nothing, silently."""
    from kindex_olap.query.run import run_check
    from kindex_olap.query.steps import Rules

    result = run_check("", seeds_lake, rules=Rules(thresholds=(("jds", 0.1), ("jsd", 0.2))))
    assert any(
        "names 1 kernel(s) the lake does not hold" in n and "'jds'" in n for n in result.notes
    )


@pytest.mark.slow
def test_a_run_valued_zero_is_named_where_the_answer_has_other_rows(tmp_path: Path) -> None:
    """A cell whose newest liger run has a 0 ns median drops out of `speedup` (a speedup
    divides by it) and out of `summary`'s mean: answers with other rows said nothing of it.
    Liger's history, cross_entropy forward on an A100 at two sizes; one liger median set to 0."""
    import csv
    import json
    import warnings

    import kindex_olap
    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest
    from kindex_olap.query.run import run_query
    from tests.conftest import LIGER_HISTORY

    with LIGER_HISTORY.open(newline="") as src:
        rows = [
            r
            for r in csv.DictReader(src)
            if (r["kernel_name"], r["kernel_operation_mode"], r["metric_name"]) == (
                "cross_entropy", "forward", "speed")
            and r["gpu_name"] == "NVIDIA A100-SXM4-80GB" and r["x_value"] in ("4096", "8192")
            and r["liger_version"] == "0.2.1"
        ]  # fmt: skip
    assert len(rows) == 4
    with (tmp_path / "cells.csv").open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import_liger(str(tmp_path / "cells.csv"), raw_dir=tmp_path / "raw")
    lake = tmp_path / "lake"
    ingest([tmp_path / "raw"], lake)
    whole = run_query("speedup cross_entropy", lake)
    assert len(whole.rows) == 2
    assert not any("zero or less" in line for line in whole.diagnostics)
    shape = whole.columns.index("shape")
    zeroed = None
    for bundle in sorted((tmp_path / "raw").glob("liger_*.txt")):
        display, _, body = bundle.read_text().partition("\n\n")
        document = json.loads(body)
        if display == "Liger" and zeroed is None:
            zeroed = document["run"]["metadata"]["name"]
            document["run"]["spec"]["timing"]["latencyNs"]["median"] = 0
            document["run"]["metadata"]["name"] += "-zero"
            document["run"]["spec"]["observedAt"] = "2030-01-01T00:00:00Z"
            (tmp_path / "zero.txt").write_text(f"{display}\n\n{json.dumps(document)}")
    ingest([tmp_path / "zero.txt"], lake)
    for verb in ("speedup", "summary"):
        answer = run_query(f"{verb} cross_entropy", lake)
        assert answer.rows, verb
        said = [line for line in answer.diagnostics if "zero or less" in line]
        assert len(said) == 1, answer.diagnostics
        assert said[0].startswith(
            "1 run with a value of zero or less left out of the pairs (a speedup divides by "
            "it): liger cross_entropy forward on NVIDIA A100 SXM4-80GB, "
        ), said
    left = run_query("speedup cross_entropy", lake)
    assert len(left.rows) == 1
    (kept,) = (row[shape] for row in left.rows)
    assert said[0].endswith(next(row[shape] for row in whole.rows if row[shape] != kept))
    # `A vs B` of the two (the family clause), and the API's warning
    named = run_query("speedup liger vs huggingface", lake)
    assert [x for x in named.diagnostics if "zero or less" in x] == said
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kindex_olap.Lake(lake).speedups("cross_entropy")
    assert any("zero or less left out of the pairs" in str(w.message) for w in caught)


def test_a_folder_of_other_files_is_not_made_a_lake(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / "notes.txt").write_text("mine\n")
    seed = str(SEEDS / JSD_SEED)
    result = runner.invoke(app, ["ingest", seed, "--lake", str(home)])
    assert result.exit_code == 2, result.output
    assert "is not a lake and holds other files ('Documents', 'notes.txt')" in result.stderr
    for verb in ("vacuum", "compact", "migrate"):  # the writers that need a lake say so
        result = runner.invoke(app, [verb, "--lake", str(home)])
        assert result.exit_code == 2, result.output
        assert "is not a kindex lake" in result.stderr
    assert sorted(p.name for p in home.iterdir()) == ["Documents", "notes.txt"]
    # a folder kept in git by a hidden file, and one whose creation was cut short, are taken
    kept, cut = tmp_path / "kept", tmp_path / "cut"
    kept.mkdir()
    (kept / ".gitkeep").touch()
    for inside in ("_kindex", "runs", "measurements"):
        (cut / inside).mkdir(parents=True)
    for folder in (kept, cut):
        result = runner.invoke(app, ["ingest", seed, "--lake", str(folder)])
        assert result.exit_code == 0, result.output
        assert "1 runs added" in result.stderr
