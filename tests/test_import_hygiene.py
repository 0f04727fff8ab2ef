"""The package's import graph: no cycle, and data flowing one way.

- No two modules import each other, directly or through others: the graph of every import
  statement (function-level and TYPE_CHECKING ones included) has no cycle.
- Every module imports on its own in a fresh interpreter (a cycle of module-level imports shows
  as a partially initialized module when the cycle is entered from the wrong end).
- A contract over every import statement, function-level and TYPE_CHECKING ones included:
  model/ imports only model/ and the leaf modules errors and atomic; the core (model, ingestion,
  lake, query) never imports typer, rich or the CLI; importers never import the lake or the lake
  writer; query/ and doors/ never import ingestion or the lake's write functions.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "kindex_olap"

CORE = ("kindex_olap.model", "kindex_olap.ingestion", "kindex_olap.lake", "kindex_olap.query")
READERS = ("kindex_olap.query", "kindex_olap.doors")
MODEL_RULE = "model/ is the bottom layer: it imports only model/ and the leaf modules"
RULES: list[tuple[tuple[str, ...], tuple[str, ...], str]] = [
    (CORE, ("typer", "rich", "click", "kindex_olap.cli"), "the core never imports the CLI"),
    (
        ("kindex_olap.model",),
        (
            "kindex_olap.ingestion",
            "kindex_olap.lake",
            "kindex_olap.query",
            "kindex_olap.doors",
            "kindex_olap.cli",
            "kindex_olap.importers",
        ),
        MODEL_RULE,
    ),
    (
        ("kindex_olap.importers",),
        ("kindex_olap.lake", "kindex_olap.ingestion.writer"),
        "importers only make bundles; ingest writes the lake",
    ),
    (
        READERS,
        (
            "kindex_olap.ingestion",
            "kindex_olap.lake.compact",
            "kindex_olap.lake.create",
            "kindex_olap.lake.recovery",
            "kindex_olap.lake.transaction",
        ),
        "the query path never writes the lake",
    ),
]
# What model/ may import of the package, besides the package itself (which every import loads).
MODEL_MAY_IMPORT = ("kindex_olap.model", "kindex_olap.errors", "kindex_olap.atomic")
# Exceptions to the rules (none: the KernelIndex importer's serving runs go through ingest now).
# The test fails when an entry is no longer needed, so that it is removed with the code.
KNOWN: set[tuple[str, str]] = set()


def module_sources() -> dict[str, str]:
    """Every module of the package by dotted name, with its source."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path.read_text(encoding="utf-8")
    return found


def imported_names(module: str, source: str) -> set[str]:
    """What a module imports anywhere in its body: `import a.b` gives a.b; `from a import b`
    gives a and a.b (b may be a submodule or a name); relative imports are resolved."""
    names: set[str] = set()
    package = module.split(".") if module == "kindex_olap" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def imported_modules(module: str, source: str, modules: set[str]) -> set[str]:
    """The modules of `modules` that `module` imports anywhere in its body: `from a import b`
    gives a.b when that is a module, else a; `import a.b.c` gives the longest module of a.b.c.
    A package's __init__ that Python runs on the way counts only when it is named."""
    found: set[str] = set()
    is_package = any(other.startswith(f"{module}.") for other in modules)
    package = module.split(".") if is_package else module.split(".")[:-1]

    def longest(name: str) -> None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                longest(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                longest(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return found - {module}


def cycles(sources: dict[str, str]) -> list[list[str]]:
    """The import cycles among `sources`: each strongly connected group of two or more modules
    (Tarjan's algorithm), sorted."""
    modules = set(sources)
    graph = {m: sorted(imported_modules(m, s, modules)) for m, s in sorted(sources.items())}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph[module]:
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            group = [stack.pop()]
            while group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for module in graph:
        if module not in order:
            visit(module)
    return sorted(found)


def under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def violations(sources: dict[str, str]) -> set[tuple[str, str]]:
    """(module, imported name) pairs that break a rule; query/ and doors/ calling a
    `.transaction()` count as importing the lake's Transaction."""
    found = set()
    for module, source in sources.items():
        names = imported_names(module, source)
        if under(module, READERS) and "transaction" in {
            node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)
        }:
            names.add("kindex_olap.lake.transaction.Transaction")
        for scope, forbidden, _ in RULES:
            if under(module, scope):
                found.update((module, name) for name in names if under(name, forbidden))
        if under(module, ("kindex_olap.model",)):
            found.update(
                (module, name)
                for name in names
                if under(name, ("kindex_olap",))
                and name != "kindex_olap"
                and not under(name, MODEL_MAY_IMPORT)
            )
    return found


def why(module: str, name: str) -> str:
    """The rule that (module, name) breaks."""
    for scope, forbidden, reason in RULES:
        if under(module, scope) and under(name, forbidden):
            return reason
    return MODEL_RULE


def test_the_import_contract_holds() -> None:
    found = violations(module_sources())
    assert found - KNOWN == set(), "\n".join(
        f"{module} imports {name}: {why(module, name)}" for module, name in sorted(found - KNOWN)
    )
    assert KNOWN - found == set(), f"no longer needed, remove from KNOWN: {KNOWN - found}"


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("kindex_olap.model.x", "def f():\n    import typer\n"),
        ("kindex_olap.lake.x", "from rich.console import Console\n"),
        ("kindex_olap.query.x", "from kindex_olap.cli import edge\n"),
        ("kindex_olap.ingestion.x", "from ..cli.output import show\n"),
        ("kindex_olap.importers.liger.x", "from kindex_olap.ingestion.writer import BatchWriter\n"),
        ("kindex_olap.importers.x", "from kindex_olap.lake import store\n"),
        ("kindex_olap.doors.x", "from kindex_olap.ingestion.pipeline import ingest\n"),
        ("kindex_olap.query.x", "from kindex_olap.lake.store import Lake\nLake(p).transaction()\n"),
        ("kindex_olap.query.x", "from kindex_olap.lake.transaction import transaction\n"),
        ("kindex_olap.doors.x", "from kindex_olap.lake.recovery import lock\n"),
        ("kindex_olap.doors.x", "from kindex_olap.lake.compact import compact\n"),
        ("kindex_olap.model.x", "from kindex_olap.ingestion.sources import Document\n"),
        (
            "kindex_olap.model.x",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from kindex_olap.query.engine import connect\n",
        ),
        ("kindex_olap.model.x", "def f():\n    from kindex_olap.importers import files\n"),
        ("kindex_olap.model.x", "from ..schema import TABLES\n"),
    ],
)
def test_the_contract_catches(module: str, source: str) -> None:
    assert violations({module: source})


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(module_sources()) == []


def test_a_cycle_in_the_import_graph_is_found() -> None:
    found = cycles(
        {
            "kindex_olap.importers.x.runs": "from kindex_olap.importers.x.serving import row\n",
            "kindex_olap.importers.x.serving": "from kindex_olap.importers.x import write\n",
            "kindex_olap.importers.x.write": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from .runs import Converter\n"
            ),
            "kindex_olap.importers.x.convert": "from kindex_olap.importers.x.runs import run\n",
        }
    )
    assert found == [
        [
            "kindex_olap.importers.x.runs",
            "kindex_olap.importers.x.serving",
            "kindex_olap.importers.x.write",
        ]
    ]
    assert cycles({"a.b": "import a.c.d\n", "a.c": "from a import b\n"}) == [["a.b", "a.c"]]


def test_the_contract_allows_what_the_layers_need() -> None:
    allowed = {
        "kindex_olap.query.x": "from kindex_olap.lake.store import Lake, Snapshot\n",
        "kindex_olap.importers.x": "def f():\n    from kindex_olap.ingestion.pipeline import ingest\n",
        "kindex_olap.cli.x": "import typer\nfrom kindex_olap.ingestion import pipeline\n",
        "kindex_olap.model.x": (
            "from kindex_olap.model.canonical import digest\nfrom kindex_olap import errors\n"
            "from kindex_olap.atomic import write_atomic\nimport msgspec\n"
        ),
    }
    assert violations(allowed) == set()


IMPORT_EACH = """
import importlib, json, sys
failed = {}
for name in json.loads(sys.argv[1]):
    for loaded in [m for m in sys.modules if m == ROOT or m.startswith(ROOT + ".")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as error:
        failed[name] = f"{type(error).__name__}: {error}"
print(json.dumps(failed))
"""


def import_each(modules: list[str], root: str, path: Path) -> dict[str, str]:
    """Import each module with nothing of `root` loaded before it; the failures by module."""
    done = subprocess.run(
        [sys.executable, "-c", f"ROOT = {root!r}\n" + IMPORT_EACH, json.dumps(modules)],
        capture_output=True,
        text=True,
        cwd=path,
        check=True,
    )
    return dict(json.loads(done.stdout))


@pytest.mark.slow
def test_every_module_imports_on_its_own() -> None:
    # __main__ runs the command line when imported
    modules = sorted(name for name in module_sources() if not name.endswith(".__main__"))
    assert len(modules) > 40
    assert import_each(modules, "kindex_olap", REPO) == {}


def test_a_cycle_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "cyclic"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic.b import B\nA = 1\n")
    (package / "b.py").write_text("from cyclic.a import A\nB = 2\n")
    failed = import_each(["cyclic.a", "cyclic.b"], "cyclic", tmp_path)
    assert set(failed) == {"cyclic.a", "cyclic.b"}
    assert "partially initialized" in failed["cyclic.a"]


def test_the_query_engine_loads_no_cli_or_dataframe_library() -> None:
    code = (
        "import sys, kindex_olap.query.engine\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'typer', 'rich', 'click', 'polars', 'pyarrow'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
