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
from kindex_olap.errors import ConfigError


class KindexGroup(TyperGroup):
    """The top-level command group: runs a command and translates whatever it raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _reflow(self)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BaseException as error:
            if _is_usage_error(error):
                translate(_as_config_error(error))
            if _is_command_line_control(error):
                raise  # --help, typer.Exit: Typer prints and exits as usual
            translate(error)


def _is_usage_error(error: BaseException) -> bool:
    """A command's bad option or argument (a value not among the choices, an option it does
    not know, a missing argument): Click's UsageError, as Typer vendors it."""
    return any(
        cls.__name__ == "UsageError" and cls.__module__.split(".")[0] in {"typer", "click"}
        for cls in type(error).__mro__
    )


def _as_config_error(error: Any) -> ConfigError:
    """A usage error as one line and a hint (exit 2): Typer drew a box of five lines at least,
    under a usage line, for "'xml' is not one of 'table', 'csv', 'json', 'markdown'"."""
    message = str(error.format_message()).replace("Value error, ", "")
    ctx = getattr(error, "ctx", None)
    command = getattr(ctx, "command_path", None) or "kindex"
    lists = "commands" if hasattr(getattr(ctx, "command", None), "commands") else "options"
    return ConfigError(message, hint=f"`{command} --help` lists its {lists}")


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
