"""`kindex query TEXT` answers without building the Typer application (kindex_olap.cli.fast);
anything it does not read unambiguously goes to Typer, and both print the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kindex_olap.cli.fast import query_arguments
from kindex_olap.cli.output import Format


def test_the_fast_path_reads_a_plain_query_and_its_common_options() -> None:
    assert query_arguments(["query", "speedup jsd b200"]) == {"text": "speedup jsd b200"}
    # the shorthand's words unquoted, options between them, as Typer reads them
    words = ["query", "speedup", "jsd", "--wide", "b200"]
    assert query_arguments(words) == {"text": "speedup jsd b200", "wide": True}
    assert query_arguments(
        ["query", "--lake", "L", "summary", "-f", "CSV", "--wide", "--as-of=3"]
    ) == {
        "text": "summary",
        "lake": Path("L"),
        "fmt": Format.csv,
        "wide": True,
        "as_of": "3",
    }


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["query"],  # Typer says what is missing
        ["sql", "SELECT 1"],
        ["query", "--help"],
        ["query", "speedup", "--version", "0.8.1"],  # an option the fast path leaves to Typer
        ["query", "speedup", "--lake"],  # a value missing
        ["query", "speedup", "--lake", "a", "--lake", "b"],  # repeated
        ["query", "speedup", "--format", "xml"],  # Typer names the choices
        ["query", "speedup", "--wide=yes"],
    ],
)
def test_everything_else_is_typers(argv: list[str]) -> None:
    assert query_arguments(argv) is None


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True)


def test_both_paths_print_the_same(tmp_lake: Path, seed_inbox: Path) -> None:
    from kindex_olap.ingestion.pipeline import ingest

    ingest([seed_inbox], tmp_lake)
    for text in ("speedup jsd", ["speedup", "jsd"], "runs", "speedup nosuchkernel"):
        words = [text] if isinstance(text, str) else text
        fast = run("-m", "kindex_olap", "query", *words, "--lake", str(tmp_lake))
        typer_path = run(
            "-c",
            "import sys; from kindex_olap.cli.app import app; sys.argv[0] = 'kindex'; app()",
            "query", *words, "--lake", str(tmp_lake),
        )  # fmt: skip
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            typer_path.returncode, typer_path.stdout, typer_path.stderr,
        ), text  # fmt: skip
    assert "Traceback" not in fast.stderr and fast.returncode == 5


def test_the_fast_path_imports_no_typer(tmp_lake: Path, seed_inbox: Path) -> None:
    """Typer and click are about 50 ms of a cold query's start: the fast path, its error edge
    included, answers without them."""
    from kindex_olap.ingestion.pipeline import ingest

    ingest([seed_inbox], tmp_lake)
    code = (
        "import sys\n"
        "from kindex_olap.cli.fast import main\n"
        "sys.argv = ['kindex', 'query', sys.argv[1], '--lake', sys.argv[2]]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    loaded = sorted({m.split('.')[0] for m in sys.modules} & {'typer', 'click'})\n"
        "    print('loaded:', loaded, file=sys.stderr)\n"
    )
    for text, code_expected in (("speedup jsd", 0), ("speedup nosuchkernel", 5)):
        done = run("-c", code, text, str(tmp_lake))
        assert done.returncode == code_expected, done.stderr
        assert "loaded: []" in done.stderr, (text, done.stderr)
