"""kindex's DuckDB macros, read from sql/ and inlined: Spark has no `CREATE MACRO`.

A scalar macro call becomes its body (in parentheses) with the arguments in place of the
parameters; a table macro call becomes a subquery. Named arguments (`unit_filter := x`) bind by
name, a parameter left out takes its default. A parameter bound to NULL or to a literal list
folds the filters it guards (`kernel_filter IS NULL OR ...`) at generation time: Spark cannot type
`array_contains(NULL, kernel)`, and the folded SQL is the SQL DuckDB's optimizer runs anyway.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB

from kindex_olap.spark.errors import GenerationError

_MACRO = re.compile(r"^CREATE OR REPLACE MACRO (\w+)\(([^)]*)\)\s+AS\s+(TABLE\s+)?(.*)$", re.S)
_VIEW = re.compile(r"^CREATE OR REPLACE VIEW (\w+) AS\s+(.*)$", re.S)
_NESTING = 40  # macros calling macros: deeper than kindex's SQL ever goes


@dataclass(frozen=True)
class Macro:
    """One `CREATE OR REPLACE MACRO`: its parameters (with defaults) and parsed body."""

    name: str
    params: tuple[str, ...]
    defaults: tuple[tuple[str, str], ...]
    body: exp.Expr
    table: bool


class KindexDuckDB(DuckDB):
    """DuckDB as kindex's SQL is read: list indexes kept as written (1-based). DuckDB's own
    dialect shifts them to 0-based while parsing, literals always and other indexes only where
    it infers a list type (`min(x, K)[i]` became `[i + -1]`, `l[i]` stayed `[i]`): the rule
    rules.list_index then cannot tell which were shifted."""

    INDEX_OFFSET = 0


def parse_duckdb(sql: str) -> exp.Expr:
    """One DuckDB statement or expression as a sqlglot tree; a parse error is a GenerationError."""
    try:
        tree = sqlglot.parse_one(sql, read=KindexDuckDB)
    except sqlglot.errors.SqlglotError as e:
        raise GenerationError(f"sqlglot cannot parse kindex's SQL: {e}", sql) from e
    return tree


def parse_macro(statement: str) -> Macro | None:
    """The macro a statement defines, else None."""
    match = _MACRO.match(statement)
    if not match:
        return None
    name, params, is_table, body = match.groups()
    names, defaults = [], []
    for param in (p.strip() for p in params.split(",") if p.strip()):
        if ":=" in param:
            param, default = (part.strip() for part in param.split(":=", 1))
            defaults.append((param.lower(), default))
        names.append(param.lower())
    return Macro(name.lower(), tuple(names), tuple(defaults), parse_duckdb(body), bool(is_table))


def parse_view(statement: str) -> tuple[str, str] | None:
    """(name, SELECT) of a `CREATE OR REPLACE VIEW` statement, else None."""
    match = _VIEW.match(statement)
    return (match.group(1).lower(), match.group(2)) if match else None


class Macros:
    """The macros of some statements, by name, and their inlining."""

    def __init__(self, macros: list[Macro]) -> None:
        self.scalar = {m.name: m for m in macros if not m.table}
        self.table = {m.name: m for m in macros if m.table}

    def expand(self, tree: exp.Expr) -> exp.Expr:
        """`tree` with every macro call inlined (macros calling macros too)."""
        for _ in range(_NESTING):
            changed = False

            def inline(node: exp.Expr) -> exp.Expr:
                nonlocal changed
                replaced = self._inline(node)
                if replaced is not node:
                    changed = True
                return replaced

            tree = tree.transform(inline)
            if not changed:
                return fold(tree)
        raise GenerationError("macro expansion does not end (a macro calls itself?)", tree.sql())

    def _inline(self, node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous):
            macro = self.table.get(node.this.name.lower())
            if macro is None:
                return node
            query = bind(macro, node.this.expressions)
            alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(macro.name))
            return exp.Subquery(this=query, alias=alias)
        if isinstance(node, exp.Anonymous) and node.name.lower() in self.scalar:
            return exp.Paren(this=bind(self.scalar[node.name.lower()], node.expressions))
        return node


def bind(macro: Macro, args: list[exp.Expr]) -> exp.Expr:
    """The macro's body with `args` in place of its parameters."""
    values: dict[str, exp.Expr] = {}
    for position, arg in enumerate(args):
        if isinstance(arg, (exp.PropertyEQ, exp.Kwarg)):
            values[arg.this.name.lower()] = arg.expression
        elif position < len(macro.params):
            values[macro.params[position]] = arg
        else:
            raise GenerationError(f"{macro.name} takes {len(macro.params)} arguments", str(args))
    for name, default in macro.defaults:
        values.setdefault(name, parse_duckdb(default))
    missing = [p for p in macro.params if p not in values]
    if missing:
        raise GenerationError(f"{macro.name} called without {', '.join(missing)}", macro.name)

    def substitute(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in values:
            value = values[node.name.lower()].copy()
            return value if _atomic(value) else exp.Paren(this=value)
        return node

    return macro.body.copy().transform(substitute)


def _atomic(node: exp.Expr) -> bool:
    return isinstance(node, (exp.Literal, exp.Null, exp.Boolean, exp.Array, exp.Column, exp.Paren))


def _constant(node: exp.Expr) -> bool | None:
    """True/False for a boolean literal (in parentheses or not), else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    return bool(node.this) if isinstance(node, exp.Boolean) else None


def _null_test(node: exp.Expr) -> bool | None:
    """The value of `literal IS [NOT] NULL` where the operand is a NULL or a literal list."""
    negated = isinstance(node, exp.Not) and isinstance(node.this, exp.Is)
    test = node.this if negated else node
    if not isinstance(test, exp.Is) or not isinstance(test.expression, exp.Null):
        return None
    operand = test.this
    while isinstance(operand, exp.Paren):
        operand = operand.this
    if isinstance(operand, exp.Null):
        return not negated
    if isinstance(operand, exp.Array):
        return negated
    return None


def fold(tree: exp.Expr) -> exp.Expr:
    """Fold `NULL IS NULL`, `[..] IS NULL` and AND/OR/NOT over boolean literals (bottom-up)."""

    def step(node: exp.Expr) -> exp.Expr:
        known = _null_test(node)
        if known is not None:
            return exp.Boolean(this=known)
        if isinstance(node, (exp.And, exp.Or)):
            left, right = _constant(node.this), _constant(node.expression)
            absorbing = isinstance(node, exp.Or)  # TRUE absorbs OR, FALSE absorbs AND
            if absorbing in (left, right):
                return exp.Boolean(this=absorbing)
            if left is not None:
                kept: exp.Expr = node.expression
                return kept
            if right is not None:
                kept = node.this
                return kept
        if isinstance(node, exp.Not) and (value := _constant(node.this)) is not None:
            return exp.Boolean(this=not value)
        if isinstance(node, exp.Paren) and isinstance(node.this, exp.Boolean):
            return node.this
        return node

    return bottom_up(tree, step)


def bottom_up(node: exp.Expr, step: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """`step` applied to every node of `node`, children first (sqlglot's transform visits a
    parent first, before its children are folded)."""
    for key, value in list(node.args.items()):
        if isinstance(value, exp.Expr):
            node.set(key, bottom_up(value, step))
        elif isinstance(value, list):
            node.set(key, [bottom_up(v, step) if isinstance(v, exp.Expr) else v for v in value])
    return step(node)
