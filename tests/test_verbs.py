"""The verb registry (query/verbs.py) is the one list of verbs: no module keeps its own, each verb
has what its family needs, and query/ keeps its modules small."""

from __future__ import annotations

import ast

from conftest import REPO

from kindex_olap.doors import charts
from kindex_olap.query.verbs import NAMES, REGISTRY

PACKAGE = REPO / "kindex_olap"
REGISTRY_FILE = PACKAGE / "query" / "verbs.py"
MOST_LINES = 450  # issue 21: no file of query/ over this


def verb_lists(source: str) -> list[tuple[int, list[str]]]:
    """Literal tuples, lists and sets of three or more strings, all verb names, and dicts with
    three or more verb-name keys: a list of verbs kept by hand."""
    found = []
    for node in ast.walk(ast.parse(source)):
        items: list[ast.expr | None] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        words = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
        if len(words) >= 3 and len(words) == len(items) and all(w in REGISTRY for w in words):
            found.append((node.lineno, words))
    return found


def test_the_detector_finds_a_list_of_verbs() -> None:
    assert verb_lists('PLOT = ("speedup", "latency", "memory")\n') == [
        (1, ["speedup", "latency", "memory"])
    ]
    assert verb_lists('BUILD = {"speedup": 1, "summary": 2, "history": 3}\n')
    assert not verb_lists('COLUMNS = ("speedup", "speedup_lo", "speedup_hi")\n')


def test_no_list_of_verbs_outside_the_registry() -> None:
    kept = {
        str(path.relative_to(REPO)): lists
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != REGISTRY_FILE and (lists := verb_lists(path.read_text(encoding="utf-8")))
    }
    assert kept == {}, "read the verbs from kindex_olap.query.verbs instead"


def test_every_verb_has_what_its_family_needs() -> None:
    assert len(NAMES) == len(set(NAMES)) >= 12
    for verb in REGISTRY.values():
        assert verb.family in ("pairs", "runs", "noise", "history"), verb.name
        assert (verb.sql is None) == (verb.family == "history"), verb.name
        assert verb.columns is not None, verb.name
        assert set(verb.columns.answer) <= set(verb.columns.show), verb.name
        if verb.chart is not None:
            assert callable(getattr(charts, verb.chart)), verb.name


def test_query_modules_stay_small() -> None:
    sizes = {
        path.name: len(path.read_text(encoding="utf-8").splitlines())
        for path in (PACKAGE / "query").glob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > MOST_LINES} == {}
