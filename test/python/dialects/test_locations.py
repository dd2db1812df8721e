"""dialects/locations.py: the parser that records where each op came from."""

from pathlib import Path

import pytest
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError

from tilesync.api import make_context
from tilesync.dialects.locations import LocatingParser, OpDiagnostic, location_of

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_same_ir_as_xdsls_parser(path):
    text = path.read_text()
    ours = LocatingParser(make_context(), text, path.name).parse_module()
    theirs = Parser(make_context(), text, path.name).parse_module()
    assert str(ours) == str(theirs)  # locations print only with --print-debuginfo
    # implicit terminators (an scf.for's yield) have no text of their own: their parent's
    assert all(isinstance(op.location, FileLineColLoc) or op.name.endswith("yield")
               for op in ours.walk())
    assert all(location_of(op) is not None for op in ours.walk())


def test_every_op_has_its_line_and_column():
    text = "builtin.module {\n  func.func @f() {\n    %c = arith.constant 1 : i32\n" \
           "    func.return\n  }\n}\n"
    module = LocatingParser(make_context(), text, "f.mlir", line_offset=10).parse_module()
    found = {op.name: str(location_of(op)) for op in module.walk()}
    assert found == {"builtin.module": "f.mlir:11:1", "func.func": "f.mlir:12:3",
                     "arith.constant": "f.mlir:13:5", "func.return": "f.mlir:14:5"}


def test_explicit_locations_win_and_ops_without_one_use_their_parents():
    text = 'builtin.module {\n  %c = arith.constant 1 : i32 loc("a.py":7:2)\n}\n'
    module = LocatingParser(make_context(), text, "f.mlir").parse_module()
    constant = next(op for op in module.walk() if op.name == "arith.constant")
    assert str(location_of(constant)) == "a.py:7:2"
    detached = constant.clone()
    assert location_of(detached) is not None  # clones keep their location
    assert str(OpDiagnostic("bad", constant)) == "a.py:7:2: bad"


def test_byte_order_mark_and_errors_inside_an_op_are_located():
    module = LocatingParser(make_context(), "\ufeffbuiltin.module {}\n", "f.mlir").parse_module()
    assert str(location_of(module)) == "f.mlir:1:1"
    text = 'builtin.module {\n  "test.op"() {p = #sync.policy<TileSync (d0) -> (d0), posts = 0>}' \
           ' : () -> ()\n}\n'
    with pytest.raises(ParseError) as info:
        LocatingParser(make_context(), text, "f.mlir").parse_module()
    assert info.value.span.get_location()[1:] == (2, 3)
    assert "posts must be positive" in info.value.msg
