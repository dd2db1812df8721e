"""compat.scf_yields: an `scf.if` whose regions do not yield its results is refused at parse
time with its location (the fuzzer's input: a deleted yield fell through to LLVM lowering as an
internal error); test_dominance checks every program of the repository against both."""

from __future__ import annotations

import re

import pytest
from xdsl.parser import Parser

from tilesync.api import make_context, parse
from tilesync.compat.scf_yields import if_yield_error
from tilesync.contract import CompileError


def _func(body: str) -> str:
    return f"func.func @f(%a: index, %c: i1) {{\n{body}  func.return\n}}\n"


@pytest.mark.parametrize("body, message", [
    ("  %x = scf.if %c -> (index) {\n  } else {\n    scf.yield %a : index\n  }\n",
     "'scf.if' then region yields (), the op's results are (index)"),
    ("  %x = scf.if %c -> (index) {\n    scf.yield %a : index\n  }\n",
     "'scf.if' with results (index) needs an else region that yields them"),
    ("  %x = scf.if %c -> (index) {\n    scf.yield %a : index\n  } else {\n"
     "    %t = arith.constant true\n    scf.yield %t : i1\n  }\n",
     "'scf.if' else region yields (i1), the op's results are (index)"),
])
def test_an_if_that_does_not_yield_its_results_is_refused(body, message):
    text = _func(body)
    op, found = if_yield_error(Parser(make_context(), text).parse_module())
    assert found == message and op.name == "scf.if"
    with pytest.raises(CompileError, match=r":2:\d+: " + re.escape(message)):
        parse(text, name="f.mlir")


def test_an_if_that_yields_its_results_passes():
    text = _func("  %x = scf.if %c -> (index) {\n    scf.yield %a : index\n  } else {\n"
                 "    scf.yield %a : index\n  }\n  scf.if %c {\n  }\n")
    assert if_yield_error(Parser(make_context(), text).parse_module()) is None
    parse(text)
