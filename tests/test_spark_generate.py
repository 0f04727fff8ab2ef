"""The Spark SQL generator without Spark (sqlglot only: these run everywhere, fast).

Each rewrite rule of kindex_olap/spark/rules.py has a test here that fails without it: the
silent errors (Spark accepts sqlglot's output and answers differently) by the Spark SQL they
would produce, the loud ones by the construct. What Spark then answers is checked row for row
against DuckDB in tests/test_spark_views.py.
"""

from __future__ import annotations

import re

import pytest

from kindex_olap.spark.errors import GenerationError
from kindex_olap.spark.generate import definitions, kindex_definitions, spark_views, to_spark
from kindex_olap.spark.macros import Macros
from kindex_olap.sqlfiles import read_sql

NO_MACROS = Macros([])


def spark_sql(sql: str, params: tuple[object, ...] = ()) -> str:
    return to_spark(sql, NO_MACROS, params)


def expression(text: str) -> str:
    """The Spark form of one DuckDB expression (as `SELECT expr FROM t`)."""
    out = spark_sql(f"SELECT {text} FROM t")
    return out.removeprefix("SELECT ").removesuffix(" FROM t")


# -- silent errors ------------------------------------------------------------------------------


def test_an_ordered_list_keeps_its_order() -> None:
    # sqlglot alone: COLLECT_LIST(x), the ORDER BY dropped
    out = expression("list(x ORDER BY k DESC, j)")
    assert out.startswith("TRANSFORM(ARRAY_SORT(COLLECT_LIST(STRUCT(x AS v, k AS k0, j AS k1))")
    # k descending (a smaller k sorts after), then j ascending, NULLs last for both
    assert "WHEN l.k0 < r.k0 THEN 1 WHEN l.k0 > r.k0 THEN -1" in out
    assert "WHEN l.k1 < r.k1 THEN -1 WHEN l.k1 > r.k1 THEN 1" in out
    assert "WHEN l.k0 IS NULL THEN 1 WHEN r.k0 IS NULL THEN -1" in out


def test_first_with_order_takes_the_first_of_that_order() -> None:
    out = expression("first(run_id ORDER BY observed_at DESC, run_id)")
    assert out.startswith("ELEMENT_AT(ARRAY_SORT(COLLECT_LIST(STRUCT(run_id AS v, observed_at")
    assert out.endswith(", 1).v")


def test_an_ordered_average_folds_in_that_order() -> None:
    # sqlglot alone: AVG(CAST(LN(x) ORDER BY k AS DOUBLE)), which Spark cannot parse; Spark's
    # own AVG would sum in its partitions' order (history.sql orders the sums: the same bits
    # however the runs were ingested)
    out = expression("avg(ln(x) ORDER BY k)")
    assert out.startswith("AGGREGATE(FILTER(TRANSFORM(ARRAY_SORT(COLLECT_LIST(STRUCT(LN(x) AS v")
    assert "acc.total / acc.n" in out
    # Welford's update, as DuckDB's stddev_samp
    out = expression("stddev_samp(x ORDER BY k)")
    assert "acc.mean + (x - acc.mean) / (acc.n + 1) AS mean" in out
    assert "SQRT(acc.m2 / (acc.n - 1))" in out


def test_an_ordered_aggregate_without_a_rule_is_refused() -> None:
    with pytest.raises(GenerationError, match="ordered sum"):
        expression("sum(x ORDER BY k)")


def test_every_history_macro_generates() -> None:
    from kindex_olap.spark.generate import history_macros
    from kindex_olap.spark.history import POINTS_SQL, points_sql

    assert "AGGREGATE(" in points_sql(all_branches=False)
    assert "ROW_NUMBER() OVER (PARTITION BY series_key" in to_spark(
        POINTS_SQL, history_macros(), [["0.1", "0.2"], False]
    )
    assert "history_record_runs" in to_spark("SELECT * FROM history_records()", history_macros())


def test_no_view_collects_a_list_without_sorting_it() -> None:
    for name, sql in spark_views():
        bare = [m.start() for m in re.finditer(r"COLLECT_LIST\(", sql)]
        sorted_ = [m.end() for m in re.finditer(r"(?:ARRAY_SORT|SORT_ARRAY)\(", sql)]
        assert all(start in sorted_ for start in bare), name


def test_an_unordered_list_is_refused() -> None:
    with pytest.raises(GenerationError, match="without ORDER BY"):
        expression("list(x)")


def test_list_indexes_stay_one_based() -> None:
    # sqlglot alone: l[0] for l[1], l[-2] for l[-1], l[i] unshifted (Spark's [] is 0-based)
    assert expression("l[1]") == "TRY_ELEMENT_AT(l, 1)"
    assert expression("l[-1]") == "TRY_ELEMENT_AT(l, -1)"
    assert expression("l[i]") == "TRY_ELEMENT_AT(l, CAST(i AS INT))"
    assert expression("l[i + 1]") == "TRY_ELEMENT_AT(l, CAST(i + 1 AS INT))"
    # where sqlglot infers a list it shifts a column index too: `[k + -1]`
    assert expression("min(x, 25)[k]") == (
        "TRY_ELEMENT_AT(SLICE(ARRAY_SORT(COLLECT_LIST(x)), 1, 25), CAST(k AS INT))"
    )
    assert expression("labels['kindex_code']") == "TRY_ELEMENT_AT(labels, 'kindex_code')"


def test_a_slice_keeps_both_ends() -> None:
    assert expression("ws[1:n]") == "SLICE(ws, 1, (n) - (1) + 1)"


def test_list_position_is_null_when_absent() -> None:
    # Spark's array_position says 0: a provider outside the list would rank before torch
    assert expression("list_position(['a', 'b'], p)") == (
        "NULLIF(ARRAY_POSITION(ARRAY('a', 'b'), p), 0)"
    )


def test_averages_are_doubles() -> None:
    # Spark keeps a DECIMAL's scale: avg(CASE .. 1.0 ..) was 8e-5 off
    assert expression("avg(CASE WHEN v THEN 1.0 ELSE 0.0 END)") == (
        "AVG(CAST(CASE WHEN v THEN 1.0 ELSE 0.0 END AS DOUBLE))"
    )


def test_division_is_double() -> None:
    # Spark divides DECIMALs as DECIMAL(33,12): the bootstrap's uniforms rounded
    assert expression("x / 2147483647.0") == "CAST(x AS DOUBLE) / 2147483647.0"


def test_hash_is_64_bit_and_tells_nulls_apart() -> None:
    out = expression("hash(a, b)")
    assert out.startswith("XXHASH64(a, b, ")  # not Spark's 32-bit HASH
    assert "CASE WHEN a IS NULL THEN '1' ELSE '0' END" in out
    assert "HASH(" not in out.replace("XXHASH64(", "")


def test_any_value_skips_nulls_and_keeps_its_filter() -> None:
    out = expression("any_value(value) FILTER (WHERE statistic = 'p20')")
    assert out == "ANY_VALUE(value, TRUE) FILTER(WHERE statistic = 'p20')"


def test_epoch_keeps_fractions_of_a_second() -> None:
    # sqlglot alone: UNIX_TIMESTAMP(t), whole seconds
    out = expression("epoch(t)")
    assert out.startswith("TIMESTAMPDIFF(MICROSECOND, CAST('1970-01-01 00:00:00' AS TIMESTAMP_NTZ)")
    assert out.endswith("/ 1e6")


def test_distinct_string_agg_is_sorted_and_null_when_empty() -> None:
    out = expression("string_agg(DISTINCT r, ', ' ORDER BY r)")
    assert out == ("CASE WHEN COUNT(r) > 0 THEN ARRAY_JOIN(ARRAY_SORT(COLLECT_SET(r)), ', ') END")


def test_top_k_keeps_the_k_smallest_and_largest() -> None:
    assert expression("min(x, 25)") == "SLICE(ARRAY_SORT(COLLECT_LIST(x)), 1, 25)"
    assert expression("max(x, 25)") == "SLICE(SORT_ARRAY(COLLECT_LIST(x), FALSE), 1, 25)"


def test_a_table_of_numbers_keeps_its_column() -> None:
    # sqlglot alone: FROM EXPLODE(SEQUENCE(1, 1000), _u(r)), an unknown routine, b lost
    out = spark_sql("SELECT b FROM range(1, 1001) AS r(b)")
    assert out == "SELECT b FROM (SELECT EXPLODE(SEQUENCE(1, (1001) - 1)) AS b) AS r"


def test_an_unordered_numbering_is_the_same_on_every_read() -> None:
    # Spark refuses row_number() OVER (); ordered by a constant it may number differently
    # on each read of a CTE
    out = spark_sql("SELECT *, row_number() OVER () AS group_id FROM groups")
    assert (
        out == "SELECT *, ROW_NUMBER() OVER (ORDER BY STRUCT(*) NULLS LAST) AS group_id FROM groups"
    )


def test_list_arithmetic_folds_left_to_right() -> None:
    assert expression("list_sum(l)") == "AGGREGATE(l, CAST(0 AS DOUBLE), (acc, x) -> acc + x)"
    assert expression("list_dot_product(a, b)") == (
        "AGGREGATE(ZIP_WITH(a, b, (a, b) -> a * b), CAST(0 AS DOUBLE), (acc, x) -> acc + x)"
    )


# -- loud errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("duckdb", "spark"),
    [
        ("len(l)", "SIZE(l)"),  # LENGTH is a string's length in Spark
        ("quantile_cont(x, 0.95)", "PERCENTILE(x, 0.95)"),  # percentile_cont(x, q): arity
        ("geomean(x)", "EXP(AVG(LN(x)))"),
        ("arg_min(a, (r, a))", "MIN_BY(a, STRUCT(r, a))"),
        ("to_seconds(600)", "MAKE_DT_INTERVAL(0, 0, 0, 600)"),
        ("regexp_replace(s, '[0-9]+', '#', 'g')", "REGEXP_REPLACE(s, '[0-9]+', '#')"),
        ("ends_with(gpu, ' ' || form_factor)", "ENDSWITH(gpu, ' ' || form_factor)"),  # vetted
    ],
)
def test_rewritten_for_spark(duckdb: str, spark: str) -> None:
    assert expression(duckdb) == spark


def test_regexp_replace_of_the_first_match_only_is_refused() -> None:
    with pytest.raises(GenerationError, match="first match"):
        expression("regexp_replace(s, 'a', 'b')")


@pytest.mark.parametrize(
    "duckdb", ["list_reverse(l)", "some_new_function(x)", "list_sort(l)", "strftime(t, '%Y')"]
)
def test_an_unknown_function_is_an_error_not_passed_through(duckdb: str) -> None:
    with pytest.raises(GenerationError, match="no Spark rule"):
        expression(duckdb)


def test_a_statement_other_than_a_macro_or_view_is_refused() -> None:
    with pytest.raises(GenerationError, match="MACRO / VIEW"):
        definitions("DELETE FROM runs USING x WHERE runs.id = x.id;\n")


# -- macros and parameters ----------------------------------------------------------------------

MACROS = """
CREATE OR REPLACE MACRO twice(x) AS x * 2;
CREATE OR REPLACE MACRO rows_for(kernel_filter, unit_filter := NULL) AS TABLE
SELECT twice(value) AS v FROM runs
WHERE (kernel_filter IS NULL OR list_contains(kernel_filter, kernel))
  AND (unit_filter IS NULL OR list_contains(unit_filter, unit));
CREATE OR REPLACE VIEW all_rows AS SELECT * FROM rows_for(NULL);
"""


def test_macros_are_inlined_and_null_filters_folded() -> None:
    found = definitions(MACROS)
    (name, select), = found.views  # fmt: skip
    out = to_spark(select, found.macros)
    assert name == "all_rows"
    assert "(value * 2) AS v" in out
    assert "ARRAY_CONTAINS" not in out  # Spark cannot type array_contains(NULL, kernel)


def test_named_arguments_and_bound_lists() -> None:
    found = definitions(MACROS)
    out = to_spark("SELECT * FROM rows_for(?, unit_filter := ?)", found.macros, (["jsd"], None))
    assert "ARRAY_CONTAINS(ARRAY('jsd'), kernel)" in out
    assert "unit" not in out.split("WHERE")[1].replace("ARRAY_CONTAINS(ARRAY('jsd'), kernel)", "")


def test_parameters_are_quoted_by_sqlglot_and_markers_in_strings_are_text() -> None:
    out = spark_sql("SELECT '?' AS mark FROM t WHERE name = ?", ("it's \\ odd",))
    assert out == "SELECT '?' AS mark FROM t WHERE name = 'it\\'s \\\\ odd'"
    with pytest.raises(GenerationError, match="markers"):
        spark_sql("SELECT ? FROM t", ())


def test_every_view_of_kindex_generates() -> None:
    names = [name for name, _ in spark_views()]
    assert {"noise_model", "speedups", "memory_ratios", "history_runs"} <= set(names)
    assert len(names) == len(kindex_definitions().views)


def test_a_duckdb_only_construct_planted_in_a_copy_of_views_sql_fails_generation() -> None:
    planted = read_sql("views/views.sql").replace(
        "bool_and(baseline_is_reference)", "list_reverse(list(baseline_is_reference))[1]", 1
    )
    assert planted != read_sql("views/views.sql")
    found = definitions(planted)
    with pytest.raises(GenerationError):
        spark_views(found)


def test_a_question_creates_only_the_views_it_reads() -> None:
    from kindex_olap.spark.session import read_by

    views = spark_views()
    names = [name for name, _ in read_by(views, "SELECT * FROM noise_floors")]
    assert {"replicate_pairs", "noise_model", "noise_floors"} <= set(names)
    assert names.index("noise_model") < names.index("noise_floors")  # defining order
    assert "speedups" not in names
    every = [name for name, _ in read_by(views, "SELECT * FROM speedup_summary")]
    assert {"speedups", "noise_floors", "replicate_spread", "speedup_summary"} <= set(every)
    assert "history_runs" not in every
