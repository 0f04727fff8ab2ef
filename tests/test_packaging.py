"""The built wheel holds the whole package: every subpackage and every SQL file (a package
missing from it works in the editable install CI uses and breaks for a user of the wheel)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the checkout's sources (building in the
    checkout would leave build/ and egg-info there)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for folder in ("kindex_olap", "sql"):
        shutil.copytree(
            REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("kindex_olap-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel(wheel_path: Path) -> set[str]:
    """The file names in the wheel."""
    with zipfile.ZipFile(wheel_path) as archive:
        return set(archive.namelist())


def test_every_subpackage_is_in_the_wheel(wheel: set[str]) -> None:
    packages = sorted(p.parent for p in (REPO / "kindex_olap").rglob("__init__.py"))
    assert len(packages) >= 10
    for package in packages:
        for module in package.glob("*.py"):
            assert module.relative_to(REPO).as_posix() in wheel, module


def test_every_sql_file_is_in_the_wheel(wheel: set[str]) -> None:
    sql_files = sorted((REPO / "sql").rglob("*.sql"))
    assert sql_files
    for path in sql_files:
        assert f"kindex_olap/sql/{path.relative_to(REPO / 'sql').as_posix()}" in wheel, path


def test_the_wheel_holds_neither_tests_nor_benchmarks(wheel: set[str]) -> None:
    assert not [name for name in wheel if name.startswith(("tests/", "bench/", "data/"))]
    assert not [name for name in wheel if "synthetic" in name]


def test_every_imported_distribution_is_declared(wheel: set[str], wheel_path: Path) -> None:
    """rich was imported but not declared: it came in through typer, until typer stops
    depending on it."""
    with zipfile.ZipFile(wheel_path) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    declared = {
        re.split(r"[ ;<>=!~\[]", line.removeprefix("Requires-Dist: "), maxsplit=1)[0].lower()
        for line in text.splitlines()
        if line.startswith("Requires-Dist: ") and "extra ==" not in line
    }
    distributions = importlib.metadata.packages_distributions()
    imported: set[str] = set()
    for path in (REPO / "kindex_olap").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {
        dist.lower()
        for name in imported - set(sys.stdlib_module_names) - {"kindex_olap"}
        for dist in distributions.get(name, [name])
    }
    assert "rich" in third_party
    assert third_party <= declared, third_party - declared
