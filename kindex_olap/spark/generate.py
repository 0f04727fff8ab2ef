"""Spark SQL generated from kindex's one SQL source (sql/views/views.sql and the files it
includes) at run time: sqlglot parses the DuckDB SQL, kindex's macros are inlined
(spark/macros.py), kindex's rules rewrite what sqlglot gets wrong (spark/rules.py), and sqlglot
writes Spark SQL. Anything without a rule is a GenerationError here, not an answer in Spark.

sqlglot is pinned (pyproject.toml): its trees are what the rules match, and a new version may
change a translation the rules rely on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import sqlglot
from sqlglot import TokenType, exp
from sqlglot.errors import ErrorLevel, SqlglotError

from kindex_olap.spark.errors import GenerationError
from kindex_olap.spark.macros import Macros, parse_duckdb, parse_macro, parse_view
from kindex_olap.spark.rules import apply_rules, check_functions
from kindex_olap.sqlfiles import read_sql

VIEWS_FILE = "views/views.sql"
# history's points: macros DuckDB defines per connection, once the table they read exists
HISTORY_POINTS_FILE = "views/history_points.sql"
_PARAM = "__kindex_param_{}"


@dataclass(frozen=True)
class Definitions:
    """The macros and views (in order) of some kindex SQL text."""

    macros: Macros
    views: tuple[tuple[str, str], ...]


def split(text: str) -> list[str]:
    """kindex's statements (sqlfiles.statements' split, for any text)."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [part.strip() for part in body.split(";\n") if part.strip().strip(";")]


def definitions(text: str) -> Definitions:
    """Every macro and view the statements of `text` define; any other statement is refused."""
    macros, views = [], []
    for statement in split(text):
        macro = parse_macro(statement)
        view = parse_view(statement) if macro is None else None
        if macro is not None:
            macros.append(macro)
        elif view is not None:
            views.append(view)
        else:
            raise GenerationError("only CREATE OR REPLACE MACRO / VIEW are generated", statement)
    return Definitions(Macros(macros), tuple(views))


@cache
def kindex_definitions() -> Definitions:
    """The definitions of sql/views/views.sql (noise.sql and history.sql included)."""
    return definitions(read_sql(VIEWS_FILE))


@cache
def history_macros() -> Macros:
    """views.sql's macros and history_points.sql's (which read the temporary view
    history_selected: spark/history.py)."""
    both = [kindex_definitions().macros, definitions(read_sql(HISTORY_POINTS_FILE)).macros]
    return Macros([m for ms in both for m in (*ms.scalar.values(), *ms.table.values())])


def to_spark(sql: str, macros: Macros, params: Sequence[Any] = ()) -> str:
    """Spark SQL for one DuckDB query of kindex's (over its views and macros), with `params`
    bound to its `?` markers as literals in the tree (sqlglot quotes them)."""
    tree = parse_duckdb(_named_markers(sql, len(params)))
    tree = _bind_params(tree, params)
    tree = apply_rules(macros.expand(tree))
    check_functions(tree)
    try:
        return tree.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as e:
        raise GenerationError(f"sqlglot cannot write it as Spark SQL: {e}", sql) from e


def spark_views(definitions: Definitions | None = None) -> list[tuple[str, str]]:
    """(name, Spark SELECT) of every view, in the order they are defined (kindex's own views
    by default, generated once per process)."""
    if definitions is None:
        return list(_kindex_views())
    return [(name, to_spark(select, definitions.macros)) for name, select in definitions.views]


@cache
def _kindex_views() -> tuple[tuple[str, str], ...]:
    return tuple(spark_views(kindex_definitions()))


def _named_markers(sql: str, count: int) -> str:
    """`sql` with its `?` markers (found by sqlglot's tokenizer, never inside a string) replaced
    by placeholder columns, numbered in text order."""
    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    marks = [t for t in tokens if t.token_type == TokenType.PLACEHOLDER and t.text == "?"]
    if len(marks) != count:
        raise GenerationError(f"{len(marks)} `?` markers for {count} parameters", sql)
    for number, token in reversed(list(enumerate(marks))):
        sql = sql[: token.start] + _PARAM.format(number) + sql[token.end + 1 :]
    return sql


def _bind_params(tree: exp.Expr, params: Sequence[Any]) -> exp.Expr:
    values = {_PARAM.format(i): literal(v) for i, v in enumerate(params)}

    def bind(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name in values:
            return values[node.name].copy()
        return node

    return tree.transform(bind) if values else tree


def literal(value: Any) -> exp.Expr:
    """A bound parameter as a literal node: NULL, a boolean, a number, a string, a list."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(v) for v in value])
    raise GenerationError(f"a parameter of type {type(value).__name__}", repr(value))
