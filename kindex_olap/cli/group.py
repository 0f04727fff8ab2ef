"""The Typer command group whose commands' errors go through the edge (kindex_olap.cli.edge).

Apart from the edge so that the edge imports no Typer: the query fast path (kindex_olap.cli.fast)
answers without it.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer
from typer.core import TyperGroup

from kindex_olap.cli.edge import translate


class KindexGroup(TyperGroup):
    """The top-level command group: runs a command and translates whatever it raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _reflow(self)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BaseException as error:
            if _is_command_line_control(error):
                raise  # usage errors, --help, typer.Exit: Typer prints and exits as usual
            translate(error)


def _is_command_line_control(error: BaseException) -> bool:
    # typer.Exit and typer.Abort derive from RuntimeError, so they are recognised by their
    # module (typer, or click before typer vendored it), as is every usage error.
    if isinstance(error, SystemExit | typer.Exit | typer.Abort):
        return True
    return any(cls.__module__.split(".")[0] in {"typer", "click"} for cls in type(error).__mro__)


def _reflow(command: Any) -> None:
    """Join the lines of each paragraph of `command`'s help and its subcommands' (docstrings
    wrap at 96 columns; Typer keeps their line breaks and wraps again at the terminal's width,
    so at 80 columns every line broke twice). A paragraph with an indented line (an example)
    or Click's no-rewrap mark is kept as written."""
    if command.help:
        paragraphs = inspect.cleandoc(command.help).split("\n\n")
        command.help = "\n\n".join(
            p if p.startswith("\b") or any(line[:1].isspace() for line in p.splitlines())
            else " ".join(line.strip() for line in p.splitlines())
            for p in paragraphs
        )  # fmt: skip
    for sub in getattr(command, "commands", {}).values():
        _reflow(sub)
