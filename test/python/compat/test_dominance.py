"""compat.dominance: a use its definition does not dominate is found, as MLIR's verifier does;
every program of the repository passes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.parser import Parser

from tilesync.api import make_context, parse
from tilesync.compat.dominance import dominance_error
from tilesync.compat.scf_yields import if_yield_error
from tilesync.contract import CompileError

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = sorted([*ROOT.glob("examples/*.mlir"), *ROOT.glob("test/filecheck/**/*.mlir")])


def _func(body: str) -> str:
    return f"func.func @f(%a: index, %b: index, %c: i1) {{\n{body}  func.return\n}}\n"


def test_the_repository_passes():
    """Every program of the repository passes the parse-time checks: dominance and the
    yields of scf.if (compat/scf_yields.py)."""
    for path in PROGRAMS:
        for chunk in re.split(r"^// -----.*$", path.read_text(), flags=re.M):
            try:
                module = Parser(make_context(), chunk).parse_module()
            except Exception:
                continue  # a parse error test
            assert dominance_error(module) is None, path
            assert if_yield_error(module) is None, path


def _module(text: str):
    return Parser(make_context(), text).parse_module()


@pytest.mark.parametrize("body, message", [
    ("  %x = arith.addi %y, %y : i32\n  %y = arith.constant 1 : i32\n",
     "operand #0 of 'arith.addi' is used before its definition"),
    ("  %s = scf.for %i = %a to %b step %a iter_args(%t = %s) -> (index) {\n"
     "    scf.yield %t : index\n  }\n", "operand #3 of 'scf.for' is used before its definition"),
    ("  cf.cond_br %c, ^bb1, ^bb2\n^bb1:\n  %v = arith.constant 1 : i32\n  cf.br ^bb3\n"
     "^bb2:\n  cf.br ^bb3\n^bb3:\n  %w = arith.addi %v, %v : i32\n",
     "operand #0 of 'arith.addi' is defined in a block that does not dominate this use"),
])
def test_a_use_not_dominated_is_found(body, message):
    text = _func(body) if "cf.br" not in body else \
        f"func.func @f(%c: i1) {{\n{body}  func.return\n}}\n"
    op, found = dominance_error(_module(text))
    assert found == message and op.name == message.split("'")[1]
    with pytest.raises(CompileError, match=re.escape(message)):
        parse(text)


@pytest.mark.parametrize("text", [
    _func("  %x = arith.addi %a, %b : index\n  scf.if %c {\n    %y = arith.addi %x, %a : index"
          "\n  }\n"),
    "func.func @f(%c: i1) {\n  cf.cond_br %c, ^bb1, ^bb2\n^bb1:\n  %v = arith.constant 1 : i32"
    "\n  cf.br ^bb2\n^bb2:\n  func.return\n^bb3:\n  %u = arith.addi %v, %v : i32\n"
    "  cf.br ^bb3\n}\n",  # a use in an unreachable block
    'builtin.module {\n  "test.op"(%later) : (i32) -> ()\n  %later = "test.op"() : () -> i32\n}\n',
])
def test_dominated_uses_and_graph_regions_pass(text):
    assert dominance_error(_module(text)) is None
