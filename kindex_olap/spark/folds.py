"""Ordered floating-point aggregates: `avg(x ORDER BY k)` and `stddev_samp(x ORDER BY k)`.

kindex orders these sums (history.sql's points: `avg(ln(value_ns) ORDER BY run_id)`) so that a
point's mean is the same to the last bit however its runs were ingested. sqlglot writes the
ORDER BY inside Spark's AVG (`AVG(CAST(LN(x) ORDER BY k AS DOUBLE))`, a syntax error), and
Spark's own AVG sums in its partitions' order (not deterministic). So the values are sorted as
rules.ordered_aggregate sorts a list, and folded left to right as DuckDB's aggregates run: the
sum then a division for avg, Welford's update for stddev_samp; NULLs are skipped, as there.
"""

from __future__ import annotations

from sqlglot import exp

from kindex_olap.spark.errors import GenerationError
from kindex_olap.spark.snippets import _sorted_structs, spark

# the values in order, NULLs left out: {sorted} is rules._sorted_structs' array of (v, k0..)
_VALUES = "filter(transform({sorted}, s -> CAST(s.v AS DOUBLE)), x -> x IS NOT NULL)"
_AVG = (
    "aggregate({values}, struct(CAST(0 AS BIGINT) AS n, CAST(0 AS DOUBLE) AS total), "
    "(acc, x) -> struct(acc.n + 1 AS n, acc.total + x AS total), "
    "acc -> CASE WHEN acc.n > 0 THEN acc.total / acc.n END)"
)
# DuckDB's STDDevBaseOperation: mean += (x - mean) / n; m2 += (x - new mean) * (x - old mean)
_STDDEV = (
    "aggregate({values}, "
    "struct(CAST(0 AS BIGINT) AS n, CAST(0 AS DOUBLE) AS mean, CAST(0 AS DOUBLE) AS m2), "
    "(acc, x) -> struct(acc.n + 1 AS n, acc.mean + (x - acc.mean) / (acc.n + 1) AS mean, "
    "acc.m2 + (x - (acc.mean + (x - acc.mean) / (acc.n + 1))) * (x - acc.mean) AS m2), "
    "acc -> CASE WHEN acc.n > 1 THEN sqrt(acc.m2 / (acc.n - 1)) END)"
)


def ordered_float_aggregate(node: exp.Expr) -> exp.Expr | None:
    """`avg(x ORDER BY k)`, `stddev_samp(x ORDER BY k)` -> a fold over the sorted values;
    any other aggregate with an ORDER BY inside but list/first/string_agg is refused."""
    inner = node.args.get("this")
    if not isinstance(node, exp.AggFunc) or not isinstance(inner, exp.Order):
        return None
    if isinstance(node, (exp.ArrayAgg, exp.First, exp.GroupConcat)):
        return None  # rules.ordered_aggregate, rules.distinct_string_agg
    template = {exp.Avg: _AVG, exp.StddevSamp: _STDDEV}.get(type(node))
    if template is None:
        raise GenerationError(f"no Spark rule for an ordered {node.key}", node.sql())
    keys = list(inner.expressions)
    values = _VALUES.format(sorted=_sorted_structs(keys))
    return spark(template.format(values=values), inner.this, *(k.this for k in keys))
