"""The small edges a new user meets first: `kindex --version`, a file or a missing folder
given as --lake (exit 2, a message that says what is wrong), a chart format kindex does not
write (exit 2), and a failed `import kernelindex` that leaves no empty folder behind."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from tests.conftest import REPO, SEEDS

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
