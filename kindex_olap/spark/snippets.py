"""Spark SQL snippets the rewrite rules write (spark/rules.py, spark/folds.py): templates
parsed as trees with the rewritten arguments spliced in, and sorted lists of structs (Spark's
form of DuckDB's ordered aggregates)."""

from __future__ import annotations

from sqlglot import exp

_ARG = "__kindex_arg_{}"
EMITTED = "kindex_rule"  # meta key of the function nodes a rule's snippet wrote


def spark(template: str, *args: exp.Expr) -> exp.Expr:
    """A Spark SQL snippet as a tree, `{0}`, `{1}`.. standing for `args` (spliced in as trees,
    not as text). Its own functions are marked as a rule's (check_functions lets them pass);
    those inside `args` are checked like any other."""
    text = template.format(*(_ARG.format(i) for i in range(len(args))))
    tree: exp.Expr = exp.maybe_parse(text, dialect="spark")
    for node in tree.walk():
        if isinstance(node, exp.Func):
            node.meta[EMITTED] = True
    nodes = {_ARG.format(i): arg for i, arg in enumerate(args)}

    def splice(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name in nodes:
            return nodes[node.name].copy()
        return node

    spliced: exp.Expr = tree.transform(splice)
    return spliced


def _comparator(keys: list[exp.Ordered]) -> str:
    """(l, r) -> -1/0/1 over struct fields k0.., each key's direction and NULL order (DuckDB's
    default: NULLS LAST, ascending or descending)."""
    cases = []
    for i, key in enumerate(keys):
        a, b = f"l.k{i}", f"r.k{i}"
        null_first = bool(key.args.get("nulls_first"))
        null_a, null_b = ("-1", "1") if null_first else ("1", "-1")
        less, more = ("1", "-1") if key.args.get("desc") else ("-1", "1")
        cases.append(
            f"WHEN {a} IS NULL AND {b} IS NULL THEN 0 WHEN {a} IS NULL THEN {null_a} "
            f"WHEN {b} IS NULL THEN {null_b} WHEN {a} < {b} THEN {less} WHEN {a} > {b} THEN {more}"
        )
    # one CASE per key, the next key deciding a tie
    comparator = "0"
    for case in reversed(cases):
        comparator = f"CASE {case} ELSE {comparator} END"
    return f"(l, r) -> {comparator}"


def _sorted_structs(keys: list[exp.Ordered]) -> str:
    """The template of a sorted list of structs: {0} the value, {1}.. the keys."""
    fields = ["{0} AS v"] + [f"{{{i + 1}}} AS k{i}" for i in range(len(keys))]
    comparator = _comparator(keys).replace("{", "{{").replace("}", "}}")
    return f"array_sort(collect_list(struct({', '.join(fields)})), {comparator})"
