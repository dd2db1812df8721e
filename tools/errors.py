"""How the command-line tools report an error: one line on stderr, exit status 1.

A located error reads like a compiler's, "file:line:col: error: message"; one without a source
(a bad argument) reads "tool: error: message". TILESYNC_TRACEBACK=1 re-raises instead, for
debugging tilesync itself. Ctrl-C is one line too, "tool: interrupted", and exit status 130
(128 + SIGINT, what a shell reports for a job Ctrl-C stopped).
"""

from __future__ import annotations

import argparse
import sys

from tilesync.contract import CompileError, TilesyncError, env_flag

TRACEBACK_ENV = "TILESYNC_TRACEBACK"
INTERRUPTED_STATUS = 130


def error_line(tool: str, err: BaseException) -> str:
    """The one line `tool` prints for `err` (a TilesyncError, or anything translated to one)."""
    if not isinstance(err, TilesyncError):
        from tilesync.api import compile_error

        err = compile_error(err)
    if isinstance(err, CompileError) and err.location is not None:
        return f"{err.location}: error: {err.message}"
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{tool}: error: {text}"


def _traceback_wanted() -> bool:
    """TILESYNC_TRACEBACK as a switch; a value that is not one reads as off (the reporter
    itself must not fail: `check_environment` refuses it up front)."""
    try:
        return env_flag(TRACEBACK_ENV)
    except TilesyncError:
        return False


def check_environment() -> None:
    """Refuse a TILESYNC_TRACEBACK that is not a switch before any work (a TilesyncError)."""
    env_flag(TRACEBACK_ENV)


def report(tool: str, err: BaseException) -> int:
    """Print `err` as one line for `tool` and return the exit status 1 (re-raise it when
    TILESYNC_TRACEBACK is on)."""
    if _traceback_wanted():
        raise err
    print(error_line(tool, err), file=sys.stderr)
    return 1


def interrupted(tool: str, err: KeyboardInterrupt) -> int:
    """Ctrl-C: one line and exit status 130, not the traceback of wherever Python was."""
    if _traceback_wanted():
        raise err
    print(f"{tool}: interrupted", file=sys.stderr)
    return INTERRUPTED_STATUS


def positive_int(text: str) -> int:
    """An argparse type: a positive integer, else argparse's one-line usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value
