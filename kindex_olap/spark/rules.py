"""kindex's own rewrite rules: DuckDB constructs that sqlglot's Spark generator gets wrong.

Each rule names the silent error it prevents (Spark accepts sqlglot's output and answers
differently) or the loud one (Spark rejects it); tests/test_spark_generate.py has a test per rule
that fails without it. After the rules, `check_functions` refuses any function that is neither
vetted here (VETTED, SPARK_NAMES) nor rewritten: an unknown function is an error when the SQL
is generated, never passed through for Spark to read its own way.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from kindex_olap.spark.errors import GenerationError
from kindex_olap.spark.folds import ordered_float_aggregate
from kindex_olap.spark.macros import bottom_up
from kindex_olap.spark.snippets import EMITTED, _sorted_structs, spark

Rule = Callable[[exp.Expr], exp.Expr | None]


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect="spark")


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=[a.copy() for a in args])


def _double(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Cast) and node.to.is_type("double"):
        return node
    return exp.Cast(this=node.copy(), to=exp.DataType.build("DOUBLE"))


# -- lists --------------------------------------------------------------------------------------


def list_index(node: exp.Expr) -> exp.Expr | None:
    """`l[i]`: DuckDB lists are 1-based and NULL past the end. sqlglot's DuckDB parser shifts
    literal indexes to Spark's 0-based `[]` (`l[-1]` to `l[-2]`) and others only where it
    infers a list type, so kindex parses them unshifted (macros.KindexDuckDB); Spark's `[]`
    also fails past the end under ANSI -> try_element_at(l, i), 1-based, NULL past the end,
    the index an INT as Spark requires; a string key reads a map the same way (NULL for a
    missing key, as DuckDB)."""
    if not isinstance(node, exp.Bracket) or len(node.expressions) != 1:
        return None
    index = node.expressions[0]
    if isinstance(index, exp.Slice):
        return _slice(node.this, index)
    if _int_literal(index) is None and not (isinstance(index, exp.Literal) and index.is_string):
        index = exp.Cast(this=index.copy(), to=exp.DataType.build("INT"))
    return _call("try_element_at", node.this, index)


def _int_literal(node: exp.Expr) -> int | None:
    negative = isinstance(node, exp.Neg)
    literal = node.this if negative else node
    if isinstance(literal, exp.Literal) and not literal.is_string:
        return -int(literal.this) if negative else int(literal.this)
    return None


def _slice(array: exp.Expr, bounds: exp.Slice) -> exp.Expr:
    """`l[a:b]` (1-based, both ends included) -> slice(l, a, b - a + 1)."""
    start, end = bounds.this, bounds.expression
    if start is None or end is None:
        raise GenerationError("a list slice needs both bounds", _sql(bounds))
    return spark("slice({0}, {1}, ({2}) - ({1}) + 1)", array, start, end)


def list_length(node: exp.Expr) -> exp.Expr | None:
    """`len(list)`: sqlglot emits LENGTH, which Spark reads as a string's length (loud for a
    list, silent for a string). kindex calls len() on lists only -> size()."""
    if isinstance(node, exp.Length):
        return _call("size", node.this)
    return None


def list_position(node: exp.Expr) -> exp.Expr | None:
    """`list_position(l, x)`: NULL when x is absent in DuckDB, 0 from Spark's array_position
    (a provider outside the reference list would rank 0, ahead of torch)
    -> nullif(array_position(l, x), 0)."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "list_position":
        values, x = node.expressions
        position = _call("array_position", values, x)
        return exp.Nullif(this=position, expression=exp.Literal.number(0))
    return None


def ordered_aggregate(node: exp.Expr) -> exp.Expr | None:
    """`list(x ORDER BY k)` and `first(x ORDER BY k)`: sqlglot emits COLLECT_LIST(x) with the
    ORDER BY dropped (Spark has no ordered aggregate): the lists come out in any order, and the
    pairing's newest run is any run (comparable_pairs: 14,198 rows instead of 21,728, no error).
    -> array_sort(collect_list(struct(x AS v, k AS k0, ..)), comparator); the struct also keeps
    a NULL x, which collect_list alone drops and DuckDB's list keeps."""
    if not isinstance(node, (exp.ArrayAgg, exp.First)) or not isinstance(node.this, exp.Order):
        return None
    value, keys = node.this.this, list(node.this.expressions)
    if isinstance(value, exp.Distinct):
        raise GenerationError("an ordered DISTINCT list aggregate has no rule", _sql(node))
    ordered, parts = _sorted_structs(keys), [value, *(k.this for k in keys)]
    if isinstance(node, exp.ArrayAgg):
        return spark(f"transform({ordered}, s -> s.v)", *parts)
    return spark(f"element_at({ordered}, 1).v", *parts)


def unordered_list(node: exp.Expr) -> exp.Expr | None:
    """`list(x)` without ORDER BY keeps NULLs in DuckDB; collect_list drops them. kindex's SQL
    orders every list it reads by position, so an unordered one is refused."""
    if isinstance(node, exp.ArrayAgg) and not isinstance(node.this, exp.Order):
        raise GenerationError("list() without ORDER BY: give it an order", _sql(node))
    return None


def tuple_key(node: exp.Expr) -> exp.Expr | None:
    """`arg_min(x, (a, b))`: a row key, which Spark reads as a parenthesised list (a syntax
    error) -> min_by(x, struct(a, b)), compared field by field as DuckDB compares the row."""
    if isinstance(node, (exp.ArgMin, exp.ArgMax)) and isinstance(node.expression, exp.Tuple):
        key = exp.Struct(expressions=[e.copy() for e in node.expression.expressions])
        return node.__class__(this=node.this.copy(), expression=key)
    return None


def range_table(node: exp.Expr) -> exp.Expr | None:
    """`FROM range(a, b) AS r(x)`: sqlglot writes `EXPLODE(SEQUENCE(a, b - 1), _u(r))`, a call
    of an unknown routine `_u`, and loses the column name -> a subquery exploding the same
    sequence (b excluded, as DuckDB's range) under that name."""
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.GenerateSeries):
        return None
    series, alias = node.this, node.args.get("alias")
    columns = alias.columns if alias is not None else []
    if not series.args.get("is_end_exclusive") or series.args.get("step") or len(columns) != 1:
        raise GenerationError("a table of numbers needs range(a, b) AS name(column)", _sql(node))
    select = spark(
        f"SELECT explode(sequence({{0}}, ({{1}}) - 1)) AS {columns[0].sql(dialect='spark')}",
        series.args["start"], series.args["end"],
    )  # fmt: skip
    assert alias is not None  # one column was named
    return exp.Subquery(this=select, alias=exp.TableAlias(this=alias.this.copy()))


def unordered_numbering(node: exp.Expr) -> exp.Expr | None:
    """`row_number() OVER ()`: any numbering in DuckDB, refused by Spark (a window must be
    ordered). Ordered by a constant, Spark's numbering could differ between the two reads of
    one CTE, joining rows to the wrong group -> ordered by the whole row (struct(*)): the same
    numbering each time a query computes it, for rows that are distinct (kindex numbers groups,
    unique by their keys)."""
    if (
        isinstance(node, exp.Window)
        and isinstance(node.this, exp.RowNumber)
        and not node.args.get("partition_by")
        and not node.args.get("order")
    ):
        order = exp.Order(expressions=[exp.Ordered(this=spark("struct(*)"))])
        return exp.Window(this=node.this.copy(), order=order)
    return None


def list_arithmetic(node: exp.Expr) -> exp.Expr | None:
    """DuckDB's list_sum, list_avg and list_dot_product, passed through verbatim by sqlglot
    (unknown to Spark) -> aggregate() folds, left to right as DuckDB sums a list."""
    if not isinstance(node, exp.Anonymous):
        return None
    name, args = node.name.lower(), node.expressions
    fold = "aggregate({}, CAST(0 AS DOUBLE), (acc, x) -> acc + x)"
    if name == "list_sum":
        return spark(fold.format("{0}"), *args)
    if name == "list_avg":
        return spark(f"({fold.format('{0}')}) / size({{0}})", *args)
    if name == "list_dot_product":
        return spark(fold.format("zip_with({0}, {1}, (a, b) -> a * b)"), *args)
    return None


def top_k(node: exp.Expr) -> exp.Expr | None:
    """`min(x, K)` / `max(x, K)`: DuckDB's K smallest (ascending) or largest (descending) as a
    list; sqlglot cannot generate it -> slice(array_sort(collect_list(x)), 1, K)."""
    count = node.args.get("count") if isinstance(node, (exp.Min, exp.Max)) else None
    if count is not None:
        if isinstance(node, exp.Min):
            return spark("slice(array_sort(collect_list({0})), 1, {1})", node.this, count)
        return spark("slice(sort_array(collect_list({0}), false), 1, {1})", node.this, count)
    return None


# -- aggregates and numbers ---------------------------------------------------------------------


def double_average(node: exp.Expr) -> exp.Expr | None:
    """`avg(x)`: DOUBLE in DuckDB; Spark keeps a DECIMAL's scale (avg(CASE .. THEN 1.0 ..) is
    rounded to 5 digits: share_faster 8e-5 off) -> avg(CAST(x AS DOUBLE))."""
    if isinstance(node, exp.Avg) and not (
        isinstance(node.this, exp.Cast) and node.this.to.is_type("double")
    ):
        return exp.Avg(this=_double(node.this))
    return None


def double_division(node: exp.Expr) -> exp.Expr | None:
    """`a / b`: DOUBLE in DuckDB whatever the operands; Spark divides DECIMALs as DECIMAL
    (`x / 2147483647.0` is DECIMAL(33,12): the bootstrap's uniforms rounded to 12 digits)
    -> CAST(a AS DOUBLE) / b."""
    if isinstance(node, exp.Div) and not (
        isinstance(node.this, exp.Cast) and node.this.to.is_type("double")
    ):
        return exp.Div(this=_double(node.this), expression=node.expression.copy())
    return None


def geomean(node: exp.Expr) -> exp.Expr | None:
    """`geomean(x)`: unknown to Spark -> exp(avg(ln(x))) (DuckDB's definition; ln is a
    DOUBLE, so the average is one)."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "geomean":
        return exp.Exp(this=exp.Avg(this=exp.Ln(this=node.expressions[0].copy())))
    return None


def quantile(node: exp.Expr) -> exp.Expr | None:
    """`quantile_cont(x, q)`: sqlglot emits percentile_cont(x, q), the wrong arity in Spark
    -> percentile(x, q), the same linear interpolation between the closest ranks."""
    if isinstance(node, exp.PercentileCont) and node.args.get("expression") is not None:
        return _call("percentile", node.this, node.expression)
    return None


def any_value(node: exp.Expr) -> exp.Expr | None:
    """`any_value(x)` skips NULLs in DuckDB; Spark's any_value(x) may return a NULL, and
    sqlglot's `ANY_VALUE(x) IGNORE NULLS FILTER (..)` is a Spark syntax error
    -> any_value(x, true)."""
    if isinstance(node, exp.AnyValue):
        return _call("any_value", node.this, exp.true())
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, exp.Anonymous):
        return node.this if node.this.name == "any_value" else None  # already rewritten
    return None


def hash64(node: exp.Expr) -> exp.Expr | None:
    """`hash(a, b, ..)`: DuckDB's is 64-bit; sqlglot keeps HASH, Spark's 32-bit Murmur3 (cell
    and series keys collide 2^32 times sooner) -> xxhash64(a, b, .., null mask). Spark's hashes
    skip NULL arguments, so (NULL, 'x') and ('x', NULL) would share a key: the mask keeps them
    apart. The values differ from DuckDB's; only their equality is used."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "hash":
        args = node.expressions
        mask = " || ".join(
            f"CASE WHEN {{{i}}} IS NULL THEN '1' ELSE '0' END" for i in range(len(args))
        )
        return _call("xxhash64", *args, spark(mask, *args))
    return None


# -- strings and time ---------------------------------------------------------------------------


def distinct_string_agg(node: exp.Expr) -> exp.Expr | None:
    """`string_agg(DISTINCT x, sep ORDER BY x)` -> array_join(array_sort(collect_set(x)), sep),
    NULL (as DuckDB) when x is NULL on every row."""
    if not isinstance(node, exp.GroupConcat):
        return None
    inner = node.this
    keys = inner.expressions if isinstance(inner, exp.Order) else []
    value = inner.this if isinstance(inner, exp.Order) else inner
    if not isinstance(value, exp.Distinct) or len(value.expressions) != 1:
        raise GenerationError("string_agg has a rule only for DISTINCT x ORDER BY x", _sql(node))
    column = value.expressions[0]
    if len(keys) != 1 or keys[0].this != column or keys[0].args.get("desc"):
        raise GenerationError("string_agg(DISTINCT x ORDER BY x) only", _sql(node))
    separator = node.args.get("separator") or exp.Literal.string(",")
    return spark(
        "CASE WHEN count({0}) > 0 THEN array_join(array_sort(collect_set({0})), {1}) END",
        column, separator,
    )  # fmt: skip


def regexp_all_flag(node: exp.Expr) -> exp.Expr | None:
    """`regexp_replace(s, p, r, 'g')`: Spark always replaces every match; any other DuckDB
    option (i, c, ...) has no Spark form and is refused."""
    if isinstance(node, exp.RegexpReplace):
        modifiers = node.args.get("modifiers")
        if modifiers is not None and modifiers.name != "g":
            raise GenerationError("regexp_replace with options other than 'g'", _sql(node))
        if modifiers is None:
            raise GenerationError(
                "regexp_replace without 'g' replaces the first match in DuckDB, every match in "
                "Spark",
                _sql(node),
            )
        return exp.RegexpReplace(
            this=node.this.copy(),
            expression=node.expression.copy(),
            replacement=node.args["replacement"].copy(),
        )
    return None


_EPOCH = "timestampdiff(MICROSECOND, TIMESTAMP_NTZ '1970-01-01 00:00:00', {0}) / 1e6"


def epoch_seconds(node: exp.Expr) -> exp.Expr | None:
    """`epoch(t)`: seconds with their fraction in DuckDB; sqlglot emits unix_timestamp(t), whole
    seconds (two runs 0.4 s apart are 0 or 1 s apart) -> microseconds since 1970 / 1e6, from a
    TIMESTAMP_NTZ with no time zone involved."""
    if isinstance(node, exp.TimeToUnix):
        return spark(_EPOCH, node.this)
    return None


def seconds_interval(node: exp.Expr) -> exp.Expr | None:
    """`to_seconds(n)`: unknown to Spark -> make_dt_interval(0, 0, 0, n)."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "to_seconds":
        zero = exp.Literal.number(0)
        return _call("make_dt_interval", zero, zero, zero, node.expressions[0])
    return None


# Applied to every node, children first; each returns a replacement or None.
RULES: tuple[Rule, ...] = (
    list_index,
    list_length,
    list_position,
    ordered_aggregate,
    unordered_list,
    tuple_key,
    range_table,
    unordered_numbering,
    list_arithmetic,
    top_k,
    ordered_float_aggregate,
    double_average,
    double_division,
    geomean,
    quantile,
    any_value,
    hash64,
    distinct_string_agg,
    regexp_all_flag,
    epoch_seconds,
    seconds_interval,
)


def apply_rules(tree: exp.Expr) -> exp.Expr:
    """`tree` with every rule applied once to each node, children first (a rule's output is not
    visited again)."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        for rule in RULES:
            replaced = rule(node)
            if replaced is not None:
                return replaced
        return node

    return bottom_up(tree, rewrite)


# sqlglot function nodes whose Spark form has DuckDB's meaning for the argument types kindex
# passes (checked by the row-for-row test); anything else must be rewritten by a rule above.
VETTED: tuple[type[exp.Func], ...] = (
    exp.Abs, exp.And, exp.ArgMax, exp.ArgMin, exp.ArrayContains, exp.ArrayFilter,
    exp.ArrayMax, exp.ArrayMin, exp.Avg, exp.Case, exp.Cast, exp.Ceil, exp.Coalesce,
    exp.ConcatWs, exp.Count, exp.CountIf, exp.Exp, exp.Explode, exp.Floor, exp.GenerateSeries,
    exp.Greatest, exp.If, exp.Least, exp.Left, exp.Ln, exp.LogicalAnd, exp.LogicalOr, exp.Max,
    exp.Median, exp.Min, exp.Nullif, exp.Or, exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue,
    exp.RegexpExtractAll, exp.RegexpReplace, exp.RowNumber, exp.Sqrt, exp.StartsWith, exp.Struct,
    exp.StddevSamp, exp.Sum, exp.Transform, exp.TryCast, exp.Array, exp.Lower, exp.Upper,
    exp.Round, exp.Xor, exp.StrPosition, exp.Substring,
    exp.Concat, exp.ArrayAgg, exp.First, exp.Map, exp.MapKeys, exp.Unnest, exp.EndsWith,
    exp.SplitPart,  # a literal delimiter, a 1-based index past the end: '' in both
)  # fmt: skip
# the functions the rules call by name (_call): Spark's, with the meaning each rule says
SPARK_NAMES = frozenset(
    {"try_element_at", "slice", "size", "array_position", "any_value", "xxhash64",
     "percentile", "make_dt_interval"}
)  # fmt: skip


def check_functions(tree: exp.Expr) -> None:
    """Refuse any function not vetted above: sqlglot passes an unknown one through verbatim."""
    for node in tree.walk():
        if node.meta.get(EMITTED):
            continue
        if isinstance(node, exp.Anonymous):
            if node.name.lower() not in SPARK_NAMES:
                raise GenerationError(f"no Spark rule for the function {node.name}()", _sql(node))
        elif isinstance(node, exp.Func) and not isinstance(node, VETTED):
            raise GenerationError(
                f"no Spark rule for {node.key} ({type(node).__name__})", _sql(node)
            )
