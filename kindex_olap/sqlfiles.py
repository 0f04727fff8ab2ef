"""Access to the SQL kept in the repository's sql/ folder (installed as kindex_olap/sql)."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path

_REPO_SQL = Path(__file__).resolve().parent.parent / "sql"
# A line `-- @include other.sql` stands for that file's text (views.sql includes noise.sql).
_INCLUDE = re.compile(r"^-- @include ([a-z_]+\.sql)$", re.MULTILINE)


@cache
def read_sql(name: str) -> str:
    """The text of sql/NAME, its `-- @include` lines replaced by the files they name."""
    if (_REPO_SQL / name).is_file():
        text = (_REPO_SQL / name).read_text()
    else:
        text = resources.files("kindex_olap.sql").joinpath(name).read_text()
    return _INCLUDE.sub(lambda m: read_sql(m.group(1)), text)


def statements(name: str) -> list[str]:
    """The statements of sql/NAME, split on ';' at line ends (the files keep one per block)."""
    text = "\n".join(
        line for line in read_sql(name).splitlines() if not line.lstrip().startswith("--")
    )
    return [part.strip() for part in text.split(";\n") if part.strip().strip(";")]
