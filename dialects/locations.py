"""Where an op came from, so that every diagnostic names a file, line and column.

xDSL's parser keeps an op's source position only while parsing (for parse errors); MLIR keeps
it on the op as its location. `LocatingParser` does what MLIR does: each parsed op without an
explicit `loc(...)` gets `loc("file":line:col)` of its first token (printed only with
`--print-debuginfo`, invisible otherwise). A leading UTF-8 byte order mark is skipped, and an
error that an op's own parser or an attribute's verifier raises while parsing becomes a parse
error at that op, not an exception without a location.

`location_of(op)` is the op's location, or its nearest ancestor's (ops that passes create have
none); `OpDiagnostic` is the error a pass raises about an op, prefixed with that location;
`failing_op` finds the op that makes a verification fail.
"""

from __future__ import annotations

import struct
import traceback

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span

from tilesync.compat.dominance import dominance_error
from tilesync.compat.parser import CheckedParser
from tilesync.compat.scf_yields import if_yield_error
from tilesync.contract import CompileError, SourceLocation

BYTE_ORDER_MARK = "\ufeff"


class LocatingParser(CheckedParser):
    """xDSL's Parser that records `loc("name":line:col)` on every op it parses (with
    `compat.parser`'s checks, and a module that parsed checked for dominance)."""

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<input>",
                 line_offset: int = 0) -> None:
        text = input.decode("utf-8") if isinstance(input, bytes) else input
        super().__init__(ctx, text.removeprefix(BYTE_ORDER_MARK), name)
        self._file = StringAttr(name)
        self._line_offset = line_offset
        # Ops are parsed in source order: count lines incrementally, linear in the input.
        self._counted_to = 0
        self._line = 1
        self._line_start = 0

    def _line_and_column(self, position: int) -> tuple[int, int]:
        content = self.lexer.input.content
        if position >= self._counted_to:
            newlines = content.count("\n", self._counted_to, position)
            if newlines:
                self._line += newlines
                self._line_start = content.rfind("\n", self._counted_to, position) + 1
            self._counted_to = position
            return self._line, position - self._line_start + 1
        start = content.rfind("\n", 0, position) + 1  # not reached: positions only grow
        return content.count("\n", 0, start) + 1, position - start + 1

    def parse_operation(self) -> Operation:
        token = self._current_token.span
        try:
            op = super().parse_operation()
        except (ParseError, KeyboardInterrupt):
            raise
        except OverflowError as err:  # xDSL packs a float attribute of its type with struct
            raise ParseError(Span(token.start, token.end, token.input),
                             f"a number does not fit its type ({err})") from None
        except struct.error as err:  # xDSL packs a dense array's integers with struct
            raise ParseError(Span(token.start, token.end, token.input),
                             f"an integer does not fit its array's element type ({err})"
                             ) from None
        except NotImplementedError as err:
            if "Format not implemented" not in str(err):
                raise
            # xDSL packs an integer array (cf.switch's case values) in at most 64 bits
            raise ParseError(Span(token.start, token.end, token.input),
                             f"an array of integers wider than 64 bits cannot be stored ({err})"
                             ) from None
        except AssertionError as err:
            known = _parser_assertion(err)
            if known is None:
                raise
            raise ParseError(Span(token.start, token.end, token.input), known) from None
        except Exception as err:  # an op's parser or an attribute's verifier refused it
            text = str(err).strip().splitlines()
            message = text[0] if text and isinstance(err, DiagnosticException | ValueError) \
                else f"{type(err).__name__}: {' '.join(text)}".rstrip(": ")
            raise ParseError(Span(token.start, token.end, token.input), message) from err
        if isinstance(op.location, UnknownLoc):
            line, column = self._line_and_column(token.start)
            op.location = FileLineColLoc(self._file, IntAttr(line + self._line_offset),
                                         IntAttr(column))
        return op

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        module = super().parse_module(allow_implicit_module)
        error = dominance_error(module) or if_yield_error(module)
        if error is not None:
            raise OpDiagnostic(error[1], error[0])
        return module


_PARSER_ASSERTIONS = {
    # xDSL's cf.switch format asserts its flag's type before parsing the cases
    ("cf.py", "assert isa(flag_type, IntegerType | IndexType)"):
        "cf.switch: the flag must be an integer or an index",
}
"""Assertions of xDSL's op parsers about the input, and the diagnostic each one means."""


def _parser_assertion(err: AssertionError) -> str | None:
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return None
    innermost = frames[-1]
    key = (innermost.filename.replace("\\", "/").rsplit("/", 1)[-1],
           (innermost.line or "").strip())
    return _PARSER_ASSERTIONS.get(key)


def parse_error_location(err: ParseError) -> SourceLocation:
    where = err.span.get_location()
    return SourceLocation(where.file, where.line, where.col)


def parse_error_message(err: ParseError) -> str:
    """xDSL's message of a parse error on one line (without the source line and caret)."""
    return " ".join(str(err.msg).split())


def location_of(op: Operation | None) -> SourceLocation | None:
    """The source location of `op`, else of its nearest ancestor that has one."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None


def _first_line(op: Operation) -> str:
    text = str(op).splitlines()[0].strip() if op.regions else str(op).strip()
    return text if len(text) <= 120 else text[:117] + "..."


class OpDiagnostic(DiagnosticException):
    """An error about one op: `message` (one line), the `op`, its source `location`, and the
    `kind` of CompileError it is for the user.

    Reads "file:line:col: message"; an op built in Python, with no location anywhere above
    it, is quoted instead."""

    def __init__(self, message: str, op: Operation, kind: type[CompileError] = CompileError):
        self.message = message
        self.op = op
        self.kind = kind
        self.location = location_of(op)
        where = f"{self.location}: " if self.location is not None else ""
        quoted = "" if self.location is not None else f" (at '{_first_line(op)}')"
        super().__init__(f"{where}{message}{quoted}")


def failing_op(root: Operation, error: VerifyException) -> Operation | None:
    """The op whose own verification raises `error`'s message (for an error in a block's
    structure, the innermost op holding the block; None if none does).

    Called after `root.verify()` failed, to say where: each op is verified without its
    nested ops, innermost first, as xDSL reports."""
    wanted = str(error).split("\n")[0]
    candidates: list[Operation] = []
    unlocated: Operation | None = None  # the module, reporting a nested op's block structure
    for op in root.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except Exception as err:  # any failure marks a candidate
            if str(err).split("\n")[0] == wanted:
                found = _redefinition(op, wanted) or op
                if not isinstance(found.location, UnknownLoc):
                    return found
                unlocated = unlocated or found
                continue
            candidates.append(op)
    # What a block's structure breaks (an empty block where a terminator is needed) is raised
    # while verifying the op that holds the block: the innermost op whose verification fails.
    for op in root.walk(region_first=True):
        if op.regions:
            try:
                op.verify()
            except Exception as err:
                if str(err).split("\n")[0] == wanted:
                    return op
    return candidates[0] if candidates else unlocated


def _redefinition(table: Operation, message: str) -> Operation | None:
    """The second definition of the symbol a symbol table's "Redefinition of symbol" error
    names (the table itself says nothing of where)."""
    prefix = 'Redefinition of symbol "'
    if not message.startswith(prefix):
        return None
    name = message[len(prefix):].rstrip('"')
    seen = 0
    for region in table.regions:
        for block in region.blocks:
            for op in block.ops:
                symbol = op.properties.get("sym_name") or op.attributes.get("sym_name")
                if isinstance(symbol, StringAttr) and symbol.data == name:
                    seen += 1
                    if seen == 2:
                        return op
    return None


def diagnostic(pass_name: str, op: Operation, message: str,
               kind: type[CompileError] = CompileError) -> OpDiagnostic:
    """An error naming the pass and the op it is about, at the op's location."""
    return OpDiagnostic(f"{pass_name}: {message}", op, kind)
