"""The console script's entry: `kindex query TEXT` with the common options answers without
building the Typer application or importing Typer, everything else goes to it
(kindex_olap.cli.app).

Typer turns each option into a validated parameter through its adapters on every call: about a
quarter of a second, more than the answer itself once the lake's layers hold the verdicts
(issue 21; docs/performance.md). The fast path takes only what it can read unambiguously, and
the same answer (kindex_olap.cli.answer) and error edge run either way: anything else (help,
another command, an option it does not know, a repeated option) is Typer's to parse, with its
usage errors.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# option -> (keyword of cli.query.query, takes a value)
_OPTIONS = {
    "--lake": ("lake", True),
    "--format": ("fmt", True),
    "-f": ("fmt", True),
    "--as-of": ("as_of", True),
    "--wide": ("wide", False),
    "--show-sql": ("show_sql", False),
}


def main() -> None:
    """`kindex`: the fast path for a plain query, else the Typer application."""
    arguments = query_arguments(sys.argv[1:])
    if arguments is None:
        from kindex_olap.cli.app import app

        app()
        return
    from kindex_olap.cli.answer import answer
    from kindex_olap.cli.edge import leave

    try:
        answer(**arguments)
    except SystemExit:
        raise
    except BaseException as error:
        leave(error)  # one line on stderr, then the documented exit code


def query_arguments(argv: list[str]) -> dict[str, Any] | None:
    """query()'s keyword arguments for `query TEXT... [options]` (the words joined), or None: not
    for the fast path."""
    if len(argv) < 2 or argv[0] != "query":
        return None
    from kindex_olap.cli.output import Format

    found: dict[str, Any] = {}
    text = None
    rest = iter(argv[1:])
    for word in rest:
        if word.startswith("-"):
            name, _, inline = word.partition("=")
            if name not in _OPTIONS:
                return None
            keyword, takes_value = _OPTIONS[name]
            if keyword in found or (takes_value and not inline and word != name):
                return None
            if not takes_value:
                if inline:
                    return None
                found[keyword] = True
                continue
            value = inline or next(rest, None)
            if value is None or (not inline and value.startswith("-")):
                return None
            found[keyword] = value
        else:  # the words of the shorthand, quoted as one or not (`kindex query speedup jsd`)
            text = word if text is None else f"{text} {word}"
    if text is None:
        return None
    if "fmt" in found:
        if found["fmt"].lower() not in Format.__members__:
            return None  # Typer names the choices
        found["fmt"] = Format(found["fmt"].lower())
    if "lake" in found:
        found["lake"] = Path(found["lake"])
    return {"text": text, **found}
