"""The analyst's doors on a lake built from Liger's real benchmark history: the DuckDB CLI with
kindex's init SQL (kindex_olap.doors.shell), a `kindex db` file opened from elsewhere, the Python
API, and docs that describe every column and whose commands run (`kindex export`: in
test_doors_export.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.doors.shell import CLI_STORAGE_VERSION, find_cli
from kindex_olap.errors import ConfigError
from kindex_olap.lake.store import TABLES, Lake
from kindex_olap.lake.tables import scan_sql, stored_view
from kindex_olap.query.engine import connect
from kindex_olap.query.run import run_query

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
QUERY = "speedup jsd b200"
# The SQL `kindex query "speedup jsd b200"` runs, with its values written in (the CLI binds none).
CLI_SQL = (
    "SELECT kernel, pass, gpu, shape, candidate, baseline, speedup, speedup_lo, speedup_hi, "
    "verdict FROM speedups WHERE kernel = 'jsd' AND gpu = 'NVIDIA B200' AND candidate = 'liger' "
    "AND baseline_is_reference AND pairing = 'latest' ORDER BY pass, shape, baseline"
)
KEY = ("kernel", "pass", "gpu", "shape", "candidate", "baseline")

pytestmark = pytest.mark.slow


@pytest.fixture
def lake(liger_history_lake: Path) -> Path:
    """Liger's whole benchmark history (conftest), under the name these tests use."""
    return liger_history_lake


def query_rows(lake: Path, text: str = QUERY) -> list[dict[str, Any]]:
    result = run_query(text, lake)
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def by_key(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
    keyed = {tuple(r[k] for k in KEY): r for r in rows}
    assert len(keyed) == len(rows), "the key must identify each row"
    return keyed


def assert_same_speedups(rows: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    got, want = by_key(rows), by_key(expected)
    assert got.keys() == want.keys()
    for key, row in want.items():
        for column in ("speedup", "speedup_lo", "speedup_hi"):
            assert got[key][column] == pytest.approx(row[column], rel=1e-12), (key, column)
        assert got[key]["verdict"] == row["verdict"]


def duckdb_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(find_cli()), *args], cwd=cwd, capture_output=True, text=True, check=True
    )


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


# -- kindex shell -----------------------------------------------------------------------------


def test_duckdb_cli_with_init_sql_returns_the_rows_of_kindex_query(
    lake: Path, tmp_path: Path
) -> None:
    init = tmp_path / "kindex.sql"
    init.write_text(invoke("shell", "--sql-file", "--lake", str(lake)).stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = duckdb_cli("-init", str(init), "-json", "-c", CLI_SQL, cwd=elsewhere)
    expected = query_rows(lake)
    assert len(expected) == 12
    assert_same_speedups(json.loads(out.stdout), expected)


def test_kindex_shell_passes_arguments_to_duckdb_and_prints_a_banner(
    lake: Path, tmp_path: Path
) -> None:
    command = [str(BIN / "kindex"), "shell", "--lake", str(lake), "--", "-json", "-c", CLI_SQL]
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # where the init file goes, and is removed
    out = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert_same_speedups(json.loads(out.stdout), query_rows(lake))
    assert f"kindex: lake {lake} (lake commit 1)" in out.stderr
    assert "views: runs, measurements," in out.stderr and "speedup_summary" in out.stderr
    assert "-- Loading resources from" in out.stderr
    assert not list(tmp_path.glob("kindex-*.sql"))


def test_shell_without_the_cli_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        find_cli()
    assert "pip install 'duckdb-cli>=1.5'" in str(caught.value)
    assert "kindex shell --sql-file" in str(caught.value)


def test_shell_command_without_the_cli_exits_2_before_any_banner(
    lake: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(app, ["shell", "--lake", str(lake)])
    assert result.exit_code == 2
    assert result.output.startswith("error: the DuckDB command-line shell (duckdb) was not found")


# -- kindex db --------------------------------------------------------------------------------


def test_db_file_opens_from_another_folder_with_the_cli_and_python(
    lake: Path, tmp_path: Path
) -> None:
    target = tmp_path / "made" / "kindex.duckdb"
    target.parent.mkdir()
    invoke("db", str(target), "--lake", str(lake))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    relative = os.path.relpath(target, elsewhere)
    out = duckdb_cli(relative, "-json", "-c", CLI_SQL, cwd=elsewhere)
    assert_same_speedups(json.loads(out.stdout), query_rows(lake))
    script = "import duckdb, json, sys; con = duckdb.connect(sys.argv[1], read_only=True); "
    script += "print(json.dumps(con.execute(sys.argv[2]).fetchall()))"
    sql = "SELECT (SELECT count(*) FROM speedups), (SELECT count(*) FROM runs)"
    py = subprocess.run(
        [sys.executable, "-c", script, relative, sql],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    with connect(lake) as con:
        assert json.loads(py.stdout) == [list(con.execute(sql).fetchone() or ())]


def test_db_file_is_written_in_the_storage_version_the_cli_reads(
    lake: Path, tmp_path: Path
) -> None:
    target = tmp_path / "kindex.duckdb"
    invoke("db", str(target), "--lake", str(lake))
    out = duckdb_cli("-csv", "-noheader", "-c", "SELECT version()", cwd=tmp_path)
    assert out.stdout.strip().startswith("v1.5"), "the declared CLI is duckdb-cli 1.5.x"
    sql = "SELECT tags['storage_version'] FROM duckdb_databases() WHERE NOT internal"
    tags = duckdb_cli(str(target), "-csv", "-noheader", "-c", sql, cwd=tmp_path)
    assert tags.stdout.strip() == f"{CLI_STORAGE_VERSION}+"
    assert not Path(f"{target}.wal").exists()


def test_materialized_db_needs_no_lake(lake: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(lake, tmp_path / "lake")
    target = tmp_path / "kindex-full.duckdb"
    invoke("db", str(target), "--lake", str(copy), "--materialize")
    shutil.rmtree(copy)
    out = duckdb_cli(str(target), "-json", "-c", CLI_SQL, cwd=tmp_path)
    assert_same_speedups(json.loads(out.stdout), query_rows(lake))
    tables = duckdb_cli(str(target), "-csv", "-noheader", "-c", "SHOW TABLES", cwd=tmp_path)
    assert set(TABLES) <= set(tables.stdout.split())


def test_db_refuses_to_overwrite_without_force(lake: Path, tmp_path: Path) -> None:
    target = tmp_path / "kindex.duckdb"
    target.write_text("precious")
    result = CliRunner().invoke(app, ["db", str(target), "--lake", str(lake)])
    assert result.exit_code == 2
    assert "already exists" in result.output and "--force" in result.output
    assert target.read_text() == "precious"
    invoke("db", str(target), "--lake", str(lake), "--force")
    assert target.stat().st_size > 0 and target.read_bytes() != b"precious"


# -- Python API -------------------------------------------------------------------------------


def test_python_api_returns_the_rows_of_kindex_query(lake: Path) -> None:
    import kindex_olap

    frame = kindex_olap.speedups("jsd", "b200", lake=lake)
    result = run_query(QUERY, lake)
    assert frame.columns == result.columns
    assert frame.rows() == result.rows
    assert kindex_olap.summary("jsd b200", lake=lake).height == len(
        run_query("summary jsd b200", lake).rows
    )
    assert kindex_olap.runs("runs jsd b200", lake=lake).height == len(
        run_query("runs jsd b200", lake).rows
    )
    with pytest.warns(UserWarning, match="no comparable runs|no runs match"):
        assert kindex_olap.speedups("jsd", "b200", "torch vs huggingface", lake=lake).is_empty()


# -- docs -------------------------------------------------------------------------------------


def fenced(path: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(), re.M | re.S)


@pytest.fixture
def user_folder(lake: Path, tmp_path: Path) -> Path:
    """A new user's folder: the lake where the docs expect it, kindex and duckdb on PATH."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "parquet").symlink_to(lake)
    return tmp_path


def user_env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_python_api_doc_example_runs(user_folder: Path) -> None:
    blocks = fenced(REPO / "docs" / "python-api.md", "python")
    assert blocks
    for block in blocks:
        subprocess.run(
            [sys.executable, "-c", block],
            cwd=user_folder,
            env=user_env(),
            check=True,
            capture_output=True,
        )


def test_analyst_doc_commands_run_as_written(user_folder: Path) -> None:
    blocks = fenced(REPO / "docs" / "analyst.md", "bash")
    assert len(blocks) >= 4
    for block in blocks:
        for line in block.strip().splitlines():
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", line],
                cwd=user_folder,
                env=user_env(),
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, f"{line}\n{done.stderr}"


def schema_doc() -> dict[str, dict[str, str]]:
    """{relation: {column: type}} from docs/schema.md (### headings, | `col` | `type` | rows)."""
    doc: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in (REPO / "docs" / "schema.md").read_text().splitlines():
        if line.startswith("### "):
            current = doc.setdefault(line[4:].strip(), {})
        match = re.match(r"^\| `([^`]+)` \| `([^`]+)` \| (.+?) \|$", line)
        if match and match.group(3).strip():
            current[match.group(1)] = match.group(2)
    return doc


def test_schema_doc_describes_every_column(lake: Path) -> None:
    doc = schema_doc()
    found: dict[str, list[tuple[str, str]]] = {}
    snapshot = Lake(lake).snapshot()
    raw = duckdb.connect()
    for table in TABLES:
        sql = f"DESCRIBE {scan_sql(table, '?')}"
        found[table] = [(r[0], r[1]) for r in raw.execute(sql, [snapshot.files(table)]).fetchall()]
    with connect(lake) as con:
        views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
        stored = {stored_view(table): table for table in TABLES}
        tables = dict(found)
        for (view,) in views:
            # a view named like a table reads that table: its section describes both; `runs`
            # adds the GPU model to its table's columns, and run_rows is the table as stored
            rows = con.execute(f'DESCRIBE SELECT * FROM "{view}"').fetchall()
            described = [(r[0], r[1]) for r in rows]
            if view in stored:
                assert described == tables[stored[view]], view
            elif view in TABLES:
                assert described[: len(tables[view])] == tables[view], view
                found[view] = described
            else:
                found[view] = described
    missing = [
        f"{relation}.{column} {kind}"
        for relation, columns in found.items()
        for column, kind in columns
        if doc.get(relation, {}).get(column) != kind
    ]
    assert not missing, "describe these in docs/schema.md (name, type, meaning):\n" + "\n".join(
        missing
    )


def test_kindex_help_loads_no_data_stack() -> None:
    code = "import sys, kindex_olap.cli.app; print(sorted(m for m in ('duckdb', 'polars', "
    code += (
        "'pyarrow', 'kindex_olap.doors.export', 'kindex_olap.doors.shell') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
