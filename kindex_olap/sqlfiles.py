"""Access to the SQL kept in the repository's sql/ folder (installed as kindex_olap/sql).

The files sit in one folder per role, and are named by their path under sql/:

- schema/   the lake's tables (`tables.sql`): read by `schema.py`, the lake and the ingest;
- ingest/   the ingest's work table and the steps that flatten staged runs into lake rows:
            loaded by `ingestion/writer.py`;
- views/    the views over a lake commit (`views.sql`, which includes `noise.sql` and
            `history.sql`), loaded at connect by `query/engine.py`; `history_points.sql`,
            loaded by `query/history.py`;
- queries/  query templates: `summary.sql` (`query/compile.py`), `report_sources.sql`
            (`doors/report.py`), `export_runs.sql` (`doors/export.py`).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path

_REPO_SQL = Path(__file__).resolve().parent.parent / "sql"
# A line `-- @include FOLDER/NAME.sql` stands for that file's text, named like read_sql's
# argument (views/views.sql includes views/noise.sql and views/history.sql); a query template's
# braced word may be given its SQL on the line: `-- @include queries/summary.sql {cases} = SELECT
# ...` (views.sql's speedup_summary is the summary verb's query over every newest pair).
_INCLUDE = re.compile(
    r"^-- @include ((?:[a-z_]+/)*[a-z_]+\.sql)(?: \{([a-z_]+)\} = (.+))?$", re.MULTILINE
)


@cache
def read_sql(name: str) -> str:
    """The text of sql/NAME (e.g. "views/views.sql"), its `-- @include` lines replaced by the
    files they name."""
    parts = name.split("/")
    local = _REPO_SQL.joinpath(*parts)
    if local.is_file():
        text = local.read_text()
    else:
        installed = resources.files("kindex_olap.sql")
        for part in parts:  # one at a time: a namespace package's joinpath takes one name
            installed = installed.joinpath(part)
        text = installed.read_text()
    return _INCLUDE.sub(_included, text)


def _included(match: re.Match[str]) -> str:
    text = read_sql(match.group(1))
    if match.group(2) is None:
        return text
    word = "{" + match.group(2) + "}"
    if word not in text:
        raise ValueError(f"sql/{match.group(1)} has no {word} to fill")
    return text.replace(word, match.group(3))


def statements(name: str) -> list[str]:
    """The statements of sql/NAME, split on ';' at line ends (the files keep one per block)."""
    text = "\n".join(
        line for line in read_sql(name).splitlines() if not line.lstrip().startswith("--")
    )
    return [part.strip() for part in text.split(";\n") if part.strip().strip(";")]
