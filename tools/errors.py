"""How the command-line tools report an error: one line on stderr, exit status 1.

A located error reads like a compiler's, "file:line:col: error: message"; one without a source
(a bad argument) reads "tool: error: message". TILESYNC_TRACEBACK=1 re-raises instead, for
debugging tilesync itself.
"""

from __future__ import annotations

import os
import sys

from tilesync.contract import CompileError, TilesyncError


def error_line(tool: str, err: BaseException) -> str:
    """The one line `tool` prints for `err` (a TilesyncError, or anything translated to one)."""
    if not isinstance(err, TilesyncError):
        from tilesync.api import compile_error

        err = compile_error(err)
    if isinstance(err, CompileError) and err.location is not None:
        return f"{err.location}: error: {err.message}"
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{tool}: error: {text}"


def report(tool: str, err: BaseException) -> int:
    """Print `err` as one line for `tool` and return the exit status 1 (re-raise it when
    TILESYNC_TRACEBACK is set)."""
    if os.environ.get("TILESYNC_TRACEBACK"):
        raise err
    print(error_line(tool, err), file=sys.stderr)
    return 1
