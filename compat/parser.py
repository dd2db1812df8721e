"""xDSL 0.74's Parser raises a builtin exception, or accepts the program, where bad input
deserves a parse error; `CheckedParser` is that Parser with each case made a ParseError at
the offending text:

* an affine expression xDSL cannot build (`d0 * d1`, `d0 mod s0`: semi-affine) raises
  NotImplementedError, and a constant one dividing by zero (`4 floordiv 0`) ZeroDivisionError;
* a dense array or dense elements attribute of integers wider than 64 bits
  (`array<i69: 7>`) raises NotImplementedError from the element type's `format`, of i0
  ZeroDivisionError;
* a block label declared twice, when a branch referred to it before its first declaration,
  raises KeyError (the first declaration is recorded without its position, so the second is
  taken for the first);
* a value used before its definition is resolved to a definition in a nested region, which
  it cannot see (forward references are not scoped by region), so the program parses: an
  operand defined inside a later region, or a loop bound defined in the loop's own body.

Everything that parses without these errors parses exactly as with xDSL's Parser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue
from xdsl.ir.affine import AffineMap, AffineSet
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

T = TypeVar("T")

SEMI_AFFINE = ("semi-affine expression: a product needs a constant factor, and floordiv, "
               "ceildiv and mod a constant divisor")
WIDE_INTEGERS = "dense attributes hold integers of 1 to 64 bits"


class CheckedParser(Parser):
    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>") -> None:
        super().__init__(ctx, input, name)
        # Per enclosing region (innermost last): the values referenced before any definition
        # when the region began; a definition inside the region cannot be theirs.
        self._outer_forward_references: list[set[str]] = []

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """An input of nothing but whitespace and comments is an empty module, as MLIR reads
        it (xDSL refuses it: "Could not parse entire input!")."""
        if allow_implicit_module and self._current_token.kind == MLIRTokenKind.EOF:
            return ModuleOp([])
        return super().parse_module(allow_implicit_module)

    # -- affine expressions ------------------------------------------------------------------
    def _affine(self, parse: Callable[[], T]) -> T:
        start = self.pos
        try:
            return parse()
        except NotImplementedError:
            self.raise_error(SEMI_AFFINE, start, self.pos)
        except ZeroDivisionError:
            self.raise_error("division by zero in an affine expression", start, self.pos)

    def parse_affine_map(self) -> AffineMap:
        return self._affine(super().parse_affine_map)

    def parse_affine_set(self) -> AffineSet:
        return self._affine(super().parse_affine_set)

    def parse_affine_map_of_ssa_ids(self) -> tuple[AffineMap, list[SSAValue]]:
        return self._affine(super().parse_affine_map_of_ssa_ids)  # type: ignore[return-value]

    # -- dense attributes --------------------------------------------------------------------
    def _parse_builtin_densearray_attr(self):
        start = self.pos
        try:
            return super()._parse_builtin_densearray_attr()
        except (NotImplementedError, ZeroDivisionError):  # no struct format for the width
            self.raise_error(WIDE_INTEGERS, start, self.pos)

    def parse_dense_int_or_fp_elements_attr(self, type):
        start = self.pos
        try:
            return super().parse_dense_int_or_fp_elements_attr(type)
        except (NotImplementedError, ZeroDivisionError):
            self.raise_error(WIDE_INTEGERS, start, self.pos)

    # -- blocks and values -------------------------------------------------------------------
    def _parse_block(self) -> Block:
        # xDSL records a label's position only when no branch referred to it before: record
        # it always, so that a second declaration is reported as one.
        token = self._current_token
        block = super()._parse_block()
        if token.kind == MLIRTokenKind.CARET_IDENT:
            self.blocks[token.text[1:]] = (block, token.span)
        return block

    def parse_optional_region(self, arguments=None):
        self._outer_forward_references.append(set(self.forward_ssa_references))
        try:
            return super().parse_optional_region(arguments)
        finally:
            self._outer_forward_references.pop()

    def _register_ssa_definition(self, name: str, values, span: Span) -> None:
        if self._outer_forward_references and name in self._outer_forward_references[-1] \
                and name in self.forward_ssa_references:
            raise ParseError(span, f"%{name} is used outside this region, before this "
                                   "definition: a value defined in a region is visible only "
                                   "inside it")
        super()._register_ssa_definition(name, values, span)
