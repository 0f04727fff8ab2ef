"""One error hierarchy for kindex; the CLI translates it into a message and an exit code."""

from __future__ import annotations

import re


class KindexError(Exception):
    """Base error: a message for the user and an optional hint on how to fix it."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class ConfigError(KindexError):
    """Bad settings or arguments: a lake path, an option value."""

    exit_code = 2


class LakeError(KindexError):
    """The lake cannot be read or written: wrong format version, lock held, broken snapshot."""

    exit_code = 3


class IngestError(KindexError):
    """A bundle or input file cannot be ingested."""

    exit_code = 4


class QueryError(KindexError):
    """A query cannot be compiled or run."""

    exit_code = 5


class SourceError(KindexError):
    """An importer's source (a CSV, an export, the package index) cannot be read."""

    exit_code = 6


# What to do about a lake file that cannot be read: kindex never rewrites a damaged file in place
# (compaction reads every file, so it fails on the same one).
DAMAGED_LAKE_HINT = (
    "a lake file is damaged or missing: restore it from a backup, or ingest the bundles again "
    "into a new lake (`kindex ingest BUNDLES --lake NEW_DIR`)"
)

# a lake file's absolute path, as DuckDB quotes one it cannot read ('...') or find ("...")
_LAKE_FILE = re.compile(r"""['"](/[^'"]+\.parquet)['"]""")


SHOWN = 60  # characters of the user's text an error quotes


def quoted(text: str) -> str:
    """The user's `text` as an error quotes it, at most SHOWN characters: an error is one line
    (a word of 100k characters made a 100k-character one)."""
    return repr(text if len(text) <= SHOWN else text[: SHOWN - 3] + "...")


def from_duckdb(error: Exception, doing: str) -> KindexError:
    """A DuckDB error as a KindexError: one that names a Parquet file it could not read is a
    damaged lake (a LakeError naming the file); any other is a QueryError about `doing`."""
    text = str(error)
    # a path the user's SQL names outside the lake (`kindex sql`'s lock-down) is theirs
    if _LAKE_FILE.search(text) and not text.startswith("Permission Error"):
        first_line = text.splitlines()[0]
        return LakeError(f"{doing}: {first_line}", hint=DAMAGED_LAKE_HINT)
    return QueryError(f"{doing}: {text}")
