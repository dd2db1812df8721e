"""compat.parser: what xDSL's Parser crashes on (or wrongly accepts) is a parse error at the
offending text; every program of the repository parses exactly as with xDSL's Parser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError

from tilesync.api import make_context, parse
from tilesync.compat.parser import CheckedParser
from tilesync.contract import CompileError

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = sorted([*ROOT.glob("examples/*.mlir"), *ROOT.glob("test/filecheck/**/*.mlir")])


def _chunks() -> list:
    return [pytest.param(chunk, id=f"{path.relative_to(ROOT)}#{number}")
            for path in PROGRAMS
            for number, chunk in enumerate(re.split(r"^// -----.*$", path.read_text(),
                                                    flags=re.M))]


def _parsed(parser_class, text: str) -> str | None:
    try:
        return str(parser_class(make_context(), text).parse_module())
    except Exception:
        return None


@pytest.mark.parametrize("text", _chunks())
def test_the_repository_parses_as_with_xdsl(text):
    theirs = _parsed(Parser, text)
    if theirs is not None:
        assert _parsed(CheckedParser, text) == theirs


def _func(body: str) -> str:
    return f"func.func @f(%a: index, %b: index, %c: i1) {{\n{body}  func.return\n}}\n"


# (program, xDSL's builtin exception or None where xDSL accepts it, our message, line:col)
CASES = [
    (_func("  %0 = affine.apply affine_map<(d0, d1) -> (d0 * d1)>(%a, %b)\n"),
     NotImplementedError, "semi-affine expression: a product needs a constant factor, and "
     "floordiv, ceildiv and mod a constant divisor", "2:32"),
    (_func("  %0 = affine.apply affine_map<(d0)[s0] -> (d0 mod s0)>(%a)[%b]\n"),
     NotImplementedError, None, "2:32"),
    (_func("  %0 = affine.apply affine_map<(d0) -> (4 floordiv 0)>(%a)\n"),
     ZeroDivisionError, "division by zero in an affine expression", "2:32"),
    ('"test.op"() {a = array<i69: 7>} : () -> ()\n', NotImplementedError,
     "dense attributes hold integers of 1 to 64 bits", "1:23"),
    ('"test.op"() {a = dense<1> : tensor<4xi128>} : () -> ()\n', NotImplementedError,
     "dense attributes hold integers of 1 to 64 bits", "1:23"),
    ('"test.op"() {a = array<i0: 0>} : () -> ()\n', ZeroDivisionError,
     "dense attributes hold integers of 1 to 64 bits", "1:23"),
    ("func.func @f() {\n  cf.br ^bb1\n^bb1:\n  cf.br ^bb1\n^bb1:\n  func.return\n}\n",
     KeyError, "re-declaration of block 'bb1'", "5:1"),
    (_func("  %x = arith.addi %y, %y : i32\n  scf.if %c {\n    %y = arith.constant 1 : i32\n"
           "  }\n"), None, "%y is used outside this region, before this definition: a value "
     "defined in a region is visible only inside it", "4:5"),
    (_func("  scf.for %i = %a to %n step %b {\n    %n = arith.constant 4 : index\n  }\n"),
     None, "%n is used outside this region, before this definition: a value defined in a "
     "region is visible only inside it", "3:5"),
]


@pytest.mark.parametrize("text, xdsl_error, message, where", CASES)
def test_bad_input_is_a_parse_error(text, xdsl_error, message, where):
    if xdsl_error is None:
        Parser(make_context(), text).parse_module()  # accepted, wrongly
    else:
        with pytest.raises(xdsl_error):
            Parser(make_context(), text).parse_module()
    with pytest.raises(ParseError):
        CheckedParser(make_context(), text).parse_module()
    with pytest.raises(CompileError) as info:
        parse(text, name="bad.mlir")
    assert str(info.value.location) == f"bad.mlir:{where}"
    if message is not None:
        assert info.value.message == message
