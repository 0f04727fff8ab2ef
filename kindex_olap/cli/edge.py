"""The one place where errors become messages and exit codes.

Every command raises; this edge turns a `KindexError`, an `OSError` (a bad path, a permission,
a full disk) or a DuckDB error (a damaged lake file) into one line on stderr, a hint where one
helps, and a documented exit code. No traceback reaches a user. A closed pipe
(`kindex query ... | head -1`) ends quietly.

Exit codes: 0 success; 1 ingest finished but kept documents aside (see `kindex rejects`);
2 bad arguments or settings (a path that does not exist or cannot be written); 3 lake error (a
damaged lake file, a full disk, out of memory, the lock held); 4 ingest error (an input folder
with no bundle files); 5 query error; 6 source error; 130 interrupted.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from typing import NoReturn

from kindex_olap.errors import DAMAGED_LAKE_HINT, ConfigError, KindexError, LakeError

INTERRUPTED = 130
OUT_OF_MEMORY_HINT = (
    "free memory (other programs, a container's limit) and run it again; an ingest commits all "
    "or nothing, so the lake is as last committed"
)
_DUCKDB_ERRNO = re.compile(r'"errno":"(\d+)"')
_DUCKDB_FILE = re.compile(r'file \\?"(.+?)\\?"')


def translate(error: BaseException) -> NoReturn:
    """Print `error` as one line (and a hint) on stderr and exit with its code through Typer
    (typer.Exit, which Typer's application turns into the exit), or re-raise it when it is a
    programming error that no user input should cause."""
    import typer

    message, code = outcome(error)
    if message is not None:
        typer.echo(message, err=True)
    raise typer.Exit(code)


def leave(error: BaseException) -> NoReturn:
    """translate() without Typer, for the query fast path (kindex_olap.cli.fast), which answers
    without importing it: the same line on stderr, the same exit code."""
    message, code = outcome(error)
    if message is not None:
        print(message, file=sys.stderr, flush=True)
    sys.exit(code)


def outcome(error: BaseException) -> tuple[str | None, int]:
    """The line (None: nothing to print) and the exit code for `error`; re-raises a
    programming error that no user input should cause."""
    if isinstance(error, BrokenPipeError) or getattr(error, "errno", None) == errno.EPIPE:
        _quiet_closed_pipe()
        return None, 0
    if isinstance(error, KeyboardInterrupt) or _is_duckdb_interrupt(error):
        return (
            "interrupted: an ingest commits all or nothing; the lake is as last committed",
            INTERRUPTED,
        )
    if isinstance(error, KindexError):
        return f"error: {error}", error.exit_code
    if isinstance(error, OSError):
        return f"error: {_describe_os_error(error)}", _os_error_code(error)
    if isinstance(error, MemoryError) or (
        _is_duckdb_error(error) and type(error).__name__ == "OutOfMemoryException"
    ):  # not a damaged lake: the machine ran out of memory
        return (
            f"error: out of memory ({_first_line(error)})\nhint: {OUT_OF_MEMORY_HINT}",
            LakeError.exit_code,
        )
    if _is_duckdb_error(error) and (os_error := _duckdb_os_error(error)):
        return f"error: {_describe_os_error(os_error)}", _os_error_code(os_error)
    if _is_duckdb_error(error):
        return (
            f"error: the lake could not be read: {_first_line(error)}\nhint: {DAMAGED_LAKE_HINT}",
            LakeError.exit_code,
        )
    raise error


def _first_line(error: BaseException) -> str:
    """The error's first line (DuckDB's next lines are context or tuning advice), else its
    class name."""
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _describe_os_error(error: OSError) -> str:
    where = f" {error.filename}" if error.filename else ""
    reason = error.strerror or str(error)
    if error.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
        return f"cannot write{where}: {reason} (the disk or a file-size limit is full; nothing was committed: free some space and run it again)"
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            f"permission denied:{where} ({reason}); choose a folder you can write, e.g. --lake DIR"
        )
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return (
            f"{reason}:{where} (check the path: it, or the folder it is written into, must exist)"
        )
    return f"{reason}:{where}" if where else reason


def _os_error_code(error: OSError) -> int:
    # A path that does not exist or cannot be written is a setting the user can fix (2); the
    # lake's own files failing to be written is a lake error (3).
    if error.errno in (
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
    ):
        return ConfigError.exit_code
    return LakeError.exit_code


def _is_duckdb_error(error: BaseException) -> bool:
    # Checked by module name so that the edge does not import duckdb (`kindex --help` stays fast);
    # DuckDB's exceptions live in its C extension module `_duckdb`.
    return any(cls.__module__.lstrip("_").startswith("duckdb") for cls in type(error).__mro__)


def _duckdb_os_error(error: BaseException) -> OSError | None:
    # DuckDB reports a failed file write as an IO error whose text holds the errno and the file
    # (`Could not write file \"PATH\": File too large ... "errno":"27"`).
    text = str(error)
    number = _DUCKDB_ERRNO.search(text)
    if number is None:
        return None
    file = _DUCKDB_FILE.search(text)
    code = int(number.group(1))
    return OSError(code, os.strerror(code), file.group(1) if file else None)


def _is_duckdb_interrupt(error: BaseException) -> bool:
    # Ctrl-C inside a DuckDB query arrives as its "Query interrupted" error, not KeyboardInterrupt.
    return str(error) == "Query interrupted" and (
        _is_duckdb_error(error) or type(error) is RuntimeError
    )


def _quiet_closed_pipe() -> None:
    # The reader went away: nothing more can be printed; point stdout at /dev/null so that the
    # interpreter's final flush does not raise again (the caller exits without a message).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
