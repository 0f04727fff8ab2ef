"""kindex_olap/arrow_numpy.py gives what pyarrow's own conversions give (which import pandas):
NULLs, sliced arrays (an offset into their buffers), empty columns, text and timestamps."""

from __future__ import annotations

import datetime
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from kindex_olap import arrow_numpy as an

TABLE = duckdb.sql(
    "SELECT CASE WHEN range = 2 THEN NULL ELSE range::BIGINT END AS i, range::BIGINT AS j, "
    "CASE WHEN range = 3 THEN NULL ELSE range / 4 END AS d, "
    "CASE WHEN range = 1 THEN NULL ELSE 'k' || (range % 3) END AS s, "
    "CASE WHEN range = 4 THEN NULL ELSE range % 2 = 0 END AS b, "
    "CASE WHEN range = 0 THEN NULL "
    "ELSE TIMESTAMP '2020-01-01 00:00:00.123456' + INTERVAL (range) DAY END AS ts "
    "FROM range(21)"
).to_arrow_table()


def same(got: Any, want: list[Any]) -> bool:
    listed = got.tolist() if isinstance(got, np.ndarray) else list(got)
    return len(listed) == len(want) and all(
        a == b or (a != a and b != b) for a, b in zip(listed, want, strict=True)
    )


@pytest.mark.parametrize("table", [TABLE, TABLE.slice(3, 13), TABLE.slice(0, 0)])
def test_columns_read_as_pyarrow_reads_them(table: pa.Table) -> None:
    def values(name: str) -> list[Any]:
        return table.column(name).to_pylist()

    nan = float("nan")
    assert same(an.numbers(table.column("i")), [nan if v is None else v for v in values("i")])
    assert same(an.numbers(table.column("d")), [nan if v is None else v for v in values("d")])
    assert same(an.integers(table.column("j")), values("j"))
    assert same(an.flags(table.column("b")), [bool(v) for v in values("b")])
    assert same(an.objects(table.column("s")), values("s"))
    assert same(an.times(table.column("ts")), values("ts"))
    assert same(an.valid(table.column("s")), [v is not None for v in values("s")])


def test_an_integer_column_with_nulls_is_refused_not_read_as_its_slots() -> None:
    with pytest.raises(ValueError, match="NULLs"):
        an.integers(TABLE.column("i"))


def test_arrays_are_built_as_pyarrow_builds_them() -> None:
    cases: list[tuple[Any, list[Any]]] = [
        (np.array([1.5, np.nan, 3.0]), [1.5, None, 3.0]),  # NaN as NULL
        (np.array([1, 2**63], dtype=np.uint64), [1, 2**63]),
        (np.array([True, False] * 9), [True, False] * 9),
        (np.array(["a", None, "é"], dtype=object), ["a", None, "é"]),
        ([1.0, None, 2.5], [1.0, None, 2.5]),
        ([datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None], None),
        (np.array(["2024-01-01T00:00:00.000001", "NaT"], dtype="datetime64[us]"), None),
        ([None, None], [None, None]),
        ([], []),
    ]
    for values, want in cases:
        expected = want if want is not None else pa.array(values).to_pylist()
        assert an.array(values).to_pylist() == expected, values
    assert an.strings(["a", None, ""]).to_pylist() == ["a", None, ""]
    # text joined at once when ASCII, value by value otherwise (other scripts, numbers)
    for texts in (["kernel", "b200", None], ["日本", "a", None], [np.str_("x"), "y"]):
        assert an.strings(texts).to_pylist() == texts
    assert an.strings([1, "a", None]).to_pylist() == ["1", "a", None]  # type: ignore[list-item]
    # an object column of datetimes (fetchnumpy's, where a NULL is among them) stays timestamps
    stamps = np.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None], dtype=object)
    assert an.array(stamps).to_pylist() == [datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None]
    assert an.whole_numbers([1, None, 2**62 + 1]).to_pylist() == [1, None, 2**62 + 1]
    assert TABLE.take(an.indices(np.array([3, 1]))).column("j").to_pylist() == [3, 1]
