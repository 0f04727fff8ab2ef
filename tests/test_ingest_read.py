"""Reading JSON Lines whole and split (sources._split_range) against reading it as a stream.

A byte range of a big file, or a small file already read, is split at newlines in memory; the
streaming reader (`_lines`, a readline and a budget check per line) is the reference. These
tests hold the two to the same documents and problems, line numbers included, on corner cases
and on the per-file budgets, and check that the split declines what only the stream can say.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kindex_olap.ingestion import sources
from kindex_olap.ingestion.sources import read_documents, read_line_range

BIG = sources.MAX_DOCUMENT_BYTES

CASES = {
    "empty": b"",
    "one line, no newline": b'{"a":1}',
    "one line": b'{"a":1}\n',
    "blank lines around": b'\n\n{"a":1}\n\n\n{"b":2}\n\n',
    "whitespace lines": b' \t\n{"a":1}\r\n\x0b\x0c\n  {"b":2}  \n',
    "carriage returns only": b'{"a":1}\r{"b":2}\r',
    "no final newline": b'{"a":1}\n{"b":2}',
    "only newlines": b"\n" * 50,
    "a line at the limit": b"x" * BIG + b"\n" + b'{"a":1}\n',
    "a line at the limit, last": b'{"a":1}\n' + b"x" * BIG,
    "a line over the limit": b'{"a":1}\n' + b"x" * (BIG + 1) + b"\n" + b'{"b":2}\n',
    "a line over the limit, last": b'{"a":1}\n' + b"y" * (BIG + 1),
}


def _streamed(name: str, data: bytes, first_line: int = 1) -> list[object]:
    return list(sources._lines(name, io.BytesIO(data), first_line))


@pytest.mark.parametrize("case", CASES)
def test_a_small_file_split_reads_as_the_stream(case: str) -> None:
    data = CASES[case]
    assert list(read_documents("f.jsonl", data)) == _streamed("f.jsonl", data)


@pytest.mark.parametrize("case", CASES)
def test_a_range_split_reads_as_the_stream(case: str, tmp_path: Path) -> None:
    data = b'{"before":0}\n' + CASES[case]
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    got = list(read_line_range(path, 13, len(data), 2))
    assert got == _streamed(str(path), data[13:], 2)


@pytest.mark.parametrize(
    ("env", "data"),
    [
        ({"KINDEX_MAX_BLANK_LINES": "3"}, b'{"a":1}\n\n\n\n\n{"b":2}\n'),
        ({"KINDEX_MAX_BLANK_LINES": "3"}, b'{"a":1}\n\n\n{"b":2}\n'),
        ({"KINDEX_MAX_FILE_BYTES": "20"}, b'{"a":1}\n{"b":2}\n{"c":3}\n'),
        ({"KINDEX_MAX_FILE_BYTES": "24"}, b'{"a":1}\n{"b":2}\n{"c":3}\n'),
        ({"KINDEX_MAX_SECONDS_WITHOUT_DOCUMENT": "0"}, b'\n{"a":1}\n{"b":2}\n'),
    ],
)
def test_the_budgets_stop_a_split_read_where_they_stop_the_stream(
    env: dict[str, str], data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert list(read_documents("f.jsonl", data)) == _streamed("f.jsonl", data)
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    assert list(read_line_range(path, 0, len(data), 1)) == _streamed(str(path), data)


def test_the_split_declines_what_only_the_stream_can_say(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sources._split_range(b"x" * (BIG + 1), BIG + 1) is None  # a line over the limit
    assert sources._split_range(b'{"a":1}\n', 100) is None  # fewer bytes than the range
    monkeypatch.setenv("KINDEX_MAX_BLANK_LINES", "2")
    assert sources._split_range(b"\n\n", 2) is None
    assert sources._split_range(b"\n", 1) == [b""]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.jsonl", ("lines", None)),
        ("a.NDJSON.zst", ("lines", "zst")),
        ("a.b.json.gz", ("json", "gz")),
        ("a.txt", ("text", None)),
        ("a.gz", ("text", "gz")),
        (".json", ("text", None)),
        ("..a.jsonl", ("lines", None)),
        ("a.jsonl.", ("text", None)),
        ("noext", ("text", None)),
        ("/d.jsonl/a", ("text", None)),
    ],
)
def test_format_of_names_with_a_shared_tail(name: str, expected: tuple[str, str | None]) -> None:
    # _format_of keeps its answer per tail (what follows the first dot): a name is still judged
    # by its own last two suffixes, the same tail twice gives the same answer.
    assert sources._format_of(name) == expected
    assert sources._format_of("/other/" + name.rsplit("/", 1)[-1]) == expected
