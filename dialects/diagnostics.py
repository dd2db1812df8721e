"""Diagnostics that point at an op: its source location, or its first printed line.

Passes and conversions raise these for bad input, so that the driver prints one message with a
location instead of a traceback.
"""

from __future__ import annotations

from xdsl.dialects.builtin import UnknownLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


def describe_location(op: Operation) -> str:
    """The op's source location, or its first printed line where the parser recorded none."""
    if not isinstance(op.location, UnknownLoc):
        return str(op.location)
    # Print a detached copy: regions would make the text long, operands print as %N.
    text = str(op).splitlines()[0].strip()
    return text if len(text) <= 160 else text[:157] + "..."


def diagnostic(pass_name: str, op: Operation, message: str) -> DiagnosticException:
    """An error naming the pass and the op it is about, with the op's location."""
    return DiagnosticException(f"{pass_name}: {message}\n  at: {describe_location(op)}")
