"""How the command-line tools report an error: one line on stderr, exit status 1.

A located error reads like a compiler's, "file:line:col: error: message"; one without a source
(a bad argument) reads "tool: error: message". TILESYNC_TRACEBACK=1 re-raises instead, for
debugging tilesync itself. Ctrl-C is one line too, "tool: interrupted", and exit status 130
(128 + SIGINT, what a shell reports for a job Ctrl-C stopped). Output whose reader went away
(`| head -1`) ends the run silently with exit status 141 (128 + SIGPIPE), as a C tool's would.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from tilesync.contract import CompileError, TilesyncError, env_flag

TRACEBACK_ENV = "TILESYNC_TRACEBACK"
INTERRUPTED_STATUS = 130
OUTPUT_CLOSED_STATUS = 128 + signal.SIGPIPE
STANDARD_STREAM = "-"  # as the input path, standard input; as `-o`, standard output
STDIN_NAME = "stdin"  # what diagnostics call standard input, as xDSL's driver does


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


def flushed(status: int) -> int:
    """`status`, once what the tool wrote is out: where stdout is buffered (no
    PYTHONUNBUFFERED), a reader gone away shows only at this flush, which at exit would print
    "Exception ignored ... BrokenPipeError" and end with status 120."""
    sys.stdout.flush()
    return status


def output_closed(err: BrokenPipeError) -> int:
    """The reader of standard output went away (`| head -1`): nothing to report, exit status
    141. Python would print the error again when it flushes stdout at exit, so stdout goes to
    /dev/null first."""
    if _traceback_wanted():
        raise err
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a descriptor (a test's StringIO)
        pass
    finally:
        os.close(devnull)
    return OUTPUT_CLOSED_STATUS


def source_name(path: str) -> str:
    """How diagnostics name the input `path` (`-` is standard input)."""
    return STDIN_NAME if path == STANDARD_STREAM else path


def _number_type(convert, accepts, expected: str, name: str):
    """An argparse type: `convert(text)` where `accepts` it, else argparse's one-line usage
    error "expected <expected>, got <text>"."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text}")
        return value

    parse.__name__ = name
    return parse


positive_int = _number_type(int, lambda value: value >= 1, "a positive integer", "positive_int")
non_negative_int = _number_type(int, lambda value: value >= 0, "an integer >= 0",
                                "non_negative_int")
positive_float = _number_type(float, lambda value: 0 < value < float("inf"),
                              "a positive number", "positive_float")
