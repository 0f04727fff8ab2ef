"""Arrow columns as numpy arrays, and numpy arrays as Arrow, without pyarrow's pandas bridge.

pyarrow converts between Arrow and numpy or Python values (Array.to_numpy, pa.array, a Python
scalar in a compute function) through its pandas compatibility code, which imports pandas
wherever pandas is installed: 0.33 s (python -X importtime, pandas 3.1, pyarrow 26), paid by a
cold `kindex check`, every cold step verb and every ingest that updates the layers, for a
package kindex does not use. These functions read and build the buffers themselves (a numpy
view of an Arrow buffer is microseconds; DuckDB's fetchnumpy over the same Arrow table cost
1 ms of a 12 ms warm check). tests/test_pandas_free.py holds the commands to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import pyarrow as pa


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks()
    return column


def _bits(buffer: pa.Buffer, offset: int, length: int) -> NDArray[np.bool_]:
    """A bit-packed Arrow buffer (validity or boolean values: least significant bit first)."""
    packed = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little")[offset : offset + length].astype(bool)


def valid(column: pa.Array | pa.ChunkedArray) -> NDArray[np.bool_]:
    """Where `column` holds a value (not NULL)."""
    array = _array(column)
    buffer = array.buffers()[0]
    if array.null_count == 0 or buffer is None:
        return np.ones(len(array), dtype=bool)
    return _bits(buffer, array.offset, len(array))


def _values(array: pa.Array, dtype: type[np.generic]) -> NDArray[Any]:
    """The value buffer of a fixed-width `array` as numpy (NULL slots hold whatever is there)."""
    buffer = array.buffers()[1]
    if len(array) == 0 or buffer is None:
        return np.empty(0, dtype=dtype)
    return np.frombuffer(buffer, dtype=dtype, count=array.offset + len(array))[array.offset :]


def numbers(column: pa.Array | pa.ChunkedArray) -> NDArray[np.float64]:
    """A numeric or boolean column as floats, NULL as NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _array(column)
    if pa.types.is_boolean(array.type):
        out = flags(array).astype(np.float64)
    else:
        out = _values(pc.cast(array, pa.float64()), np.float64).copy()
    if array.null_count:
        out[~valid(array)] = np.nan
    return out


def integers(column: pa.Array | pa.ChunkedArray) -> NDArray[np.int64]:
    """An integer column without NULLs as int64 (a NULL would read as its slot's bytes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _array(column)
    if array.null_count:
        raise ValueError("an integer column with NULLs has no int64 form")
    return _values(pc.cast(array, pa.int64()), np.int64)


def flags(column: pa.Array | pa.ChunkedArray) -> NDArray[np.bool_]:
    """A boolean column, NULL as False."""
    array = _array(column)
    buffer = array.buffers()[1]
    if len(array) == 0 or buffer is None:
        return np.zeros(len(array), dtype=bool)
    out = _bits(buffer, array.offset, len(array))
    return out & valid(array) if array.null_count else out


def objects(column: pa.Array | pa.ChunkedArray) -> NDArray[np.object_]:
    """A column as an object array of Python values (None for NULL), each distinct value made a
    Python object once (a column of a few kernel names over thousands of rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _array(column)
    if not pa.types.is_dictionary(array.type):
        array = array.dictionary_encode()
    labels = np.array([*array.dictionary.to_pylist(), None], dtype=object)
    codes = array.indices
    out = _values(pc.cast(codes, pa.int64()), np.int64).astype(np.intp)
    if codes.null_count:
        out[~valid(codes)] = len(labels) - 1
    return labels[out]


def times(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """A timestamp column (microseconds, no zone) as Python datetimes, None for NULL (through
    numpy: pyarrow's to_pylist makes a datetime 20x slower)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _array(column)
    stamps = _values(pc.cast(array, pa.int64()), np.int64).astype("datetime64[us]")
    out: list[Any] = stamps.astype(object).tolist()
    if array.null_count:
        for i in np.flatnonzero(~valid(array)).tolist():
            out[i] = None
    return out


def indices(values: NDArray[Any]) -> pa.Array:
    """Row positions as an Arrow int64 array (for Table.take)."""
    import pyarrow as pa

    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def strings(values: Sequence[str | None]) -> pa.Array:
    """Python strings (None for NULL) as an Arrow string array."""
    return _texts(np.array(values, dtype=object))


def array(values: NDArray[Any] | list[Any]) -> pa.Array:
    """numpy values, or Python values of one kind (text, numbers, datetimes, booleans; None
    for NULL, in a list or an object array), as an Arrow array; NaN and NaT as NULL (what
    pa.array(..., from_pandas=True) makes of them)."""
    import pyarrow as pa

    data = values if isinstance(values, np.ndarray) else _typed(values)
    kind = data.dtype.kind
    if kind == "O":
        first = next((v for v in data.flat if v is not None), None)
        if first is None or isinstance(first, str):
            return _texts(data)
        typed = _typed(data.tolist())  # datetimes where a NULL made fetchnumpy's column objects
        return _texts(data) if typed.dtype.kind == "O" else array(typed)
    if kind == "M":
        stamps = data.astype("datetime64[us]")
        missing = np.isnat(stamps)
        data, arrow_type = stamps.view(np.int64), pa.timestamp("us")
    elif kind == "f":
        missing, arrow_type = np.isnan(data), pa.float64()
        data = data.astype(np.float64)
    elif kind == "b":
        packed = np.packbits(data.astype(bool), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(data), [None, pa.py_buffer(packed)])
    elif kind in "iu":
        missing, arrow_type = np.zeros(len(data), dtype=bool), pa.from_numpy_dtype(data.dtype)
    else:
        raise TypeError(f"no Arrow form for numpy dtype {data.dtype}")
    data = np.ascontiguousarray(data)
    return pa.Array.from_buffers(
        arrow_type, len(data), [_validity(missing), pa.py_buffer(data)], int(missing.sum())
    )


def _typed(values: list[Any]) -> NDArray[Any]:
    """Python values as numpy, by the kind of the first one that is not None."""
    import datetime

    first = next((v for v in values if v is not None), None)
    if isinstance(first, bool):
        return np.array([bool(v) for v in values], dtype=bool)  # NULL as False
    if isinstance(first, (int, float)):
        return np.array(values, dtype=np.float64)  # None becomes NaN
    if isinstance(first, datetime.datetime):
        return np.array(values, dtype="datetime64[us]")  # None becomes NaT
    return np.array(values, dtype=object)


_NONE = np.array(None, dtype=object)


def _texts(values: NDArray[np.object_]) -> pa.Array:
    """An object array of strings (None for NULL) as an Arrow string array. Text that is all
    ASCII (names, digests, versions) is joined and encoded once, each value's length read by
    `len`: encoding each value on its own was 3.4x slower (40 against 12 ms for 200k values),
    0.7 s of the steps layer's update at 1M runs."""
    import pyarrow as pa

    listed = values.tolist()
    missing = np.equal(values, _NONE).astype(bool)  # elementwise `is None`, in C
    if missing.any():
        listed = ["" if v is None else v for v in listed]
    offsets = np.zeros(len(listed) + 1, dtype=np.int64)
    data = _ascii(listed)
    if data is None:  # other text, or values that are not text: one at a time
        encoded = [str(v).encode() for v in listed]
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        data = b"".join(encoded)
    else:
        np.cumsum(np.fromiter(map(len, listed), np.int64, len(listed)), out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_string(),
        len(listed),
        [_validity(missing), pa.py_buffer(offsets), pa.py_buffer(data)],
        int(missing.sum()),
    )


def _ascii(listed: list[Any]) -> bytes | None:
    """`listed` joined as bytes when every value is text and all of it ASCII (a character is
    then a byte, and `len` a value's length in bytes); else None."""
    try:
        text = "".join(listed)
    except TypeError:
        return None
    data = text.encode()
    return data if len(data) == len(text) else None


def whole_numbers(values: Sequence[int | None]) -> pa.Array:
    """Python integers (None for NULL) as an Arrow int64 array, exactly (through floats a
    nanosecond time would lose its last digits)."""
    import pyarrow as pa

    missing = np.array([v is None for v in values], dtype=bool)
    data = np.array([0 if v is None else v for v in values], dtype=np.int64)
    return pa.Array.from_buffers(
        pa.int64(), len(data), [_validity(missing), pa.py_buffer(data)], int(missing.sum())
    )


def _validity(missing: NDArray[np.bool_]) -> pa.Buffer | None:
    """An Arrow validity buffer (bit-packed, least significant bit first) where `missing` says
    which values are NULL; None where none is."""
    import pyarrow as pa

    if not missing.any():
        return None
    return pa.py_buffer(np.packbits(~missing, bitorder="little"))
