"""The abstract run's integer values at their types' widths (analysis.kernel_eval): what the
counts of dataflow-verify and the coverage of sync-verify read."""

import pytest

from tilesync.analysis.kernel_eval import point, truncdiv
from tilesync.analysis.queue_tickets import tickets_per_launch
from tilesync.api import parse

_QUEUE = "!dataflow.queue<2 x memref<64xf32>>"


def _tickets(bound: str, ctas: int = 2) -> int | None:
    """Tickets the CTAs take a launch, each looping `bound` times (an SSA value named %ub
    defined by the lines `bound`, from %bid, %c0..%c3); None where they cannot be counted."""
    from xdsl.dialects import gpu

    from tilesync.analysis.kernel_eval import Unproven

    module = parse(f"""
builtin.module {{
  gpu.module @k {{
    gpu.func @f(%q: {_QUEUE}) kernel attributes {{gpu.known_block_size = array<i32: 128, 1, 1>}} {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %bid = gpu.block_id x
{bound}
      scf.for %i = %c0 to %ub step %c1 {{
        %tk = dataflow.acquire_full %q : {_QUEUE}
        dataflow.release_empty %q, %tk : {_QUEUE}
      }}
      gpu.return
    }}
  }}
}}""")
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    try:
        return tickets_per_launch(kernel, ctas, 1, None).acquired.get(
            kernel.body.block.args[0], 0)
    except Unproven:
        return None


def test_an_i1_true_sign_extends_to_minus_one():
    """1 + index_cast(bid == 0): CTA 0 loops 0 times (true is -1), CTA 1 once."""
    first = """      %z = arith.cmpi eq, %bid, %c0 : index
{cast}
      %ub = arith.addi %c1, %e : index"""
    assert _tickets(first.format(cast="      %e = arith.index_cast %z : i1 to index")) == 1
    extended = """      %w = arith.{kind} %z : i1 to i64
      %e = arith.index_cast %w : i64 to index"""
    assert _tickets(first.format(cast=extended.format(kind="extsi"))) == 1
    assert _tickets(first.format(cast=extended.format(kind="extui"))) == 3  # 2 + 1


def test_a_signed_comparison_of_i1_reads_true_as_minus_one():
    """(bid == 0) <s false: true is -1, so CTA 0 loops 3 times; CTA 1 (false) twice."""
    program = """      %z = arith.cmpi eq, %bid, %c0 : index
      %f = arith.constant false
      %less = arith.cmpi slt, %z, %f : i1
      %ub = arith.select %less, %c3, %c2 : index"""
    assert _tickets(program) == 3 + 2


def test_arithmetic_that_wraps_its_width_is_unknown():
    i1_sum = """      %z = arith.cmpi eq, %bid, %c0 : index
      %t = arith.constant true
      %s = arith.addi %z, %t : i1
      %ub = arith.select %s, %c3, %c1 : index"""
    assert _tickets(i1_sum) is None  # true + true is false in i1, not 2
    i32_sum = """      %b32 = arith.index_cast %bid : index to i32
      %big = arith.constant 2147483647 : i32
      %s = arith.addi %b32, %big : i32
      %ub = arith.index_cast %s : i32 to index"""
    assert _tickets(i32_sum) is None  # CTA 1's sum wraps negative
    in_range = """      %b32 = arith.index_cast %bid : index to i32
      %two = arith.constant 2 : i32
      %s = arith.addi %b32, %two : i32
      %ub = arith.index_cast %s : i32 to index"""
    assert _tickets(in_range) == 2 + 3


def test_unsigned_ops_of_a_negative_value_are_unknown():
    program = """      %m = arith.subi %bid, %c1 : index
      %ub = arith.minui %m, %c3 : index"""
    assert _tickets(program) is None  # minui(-1, 3) is 3 (huge -1), not -1
    assert _tickets(program.replace("arith.subi %bid, %c1", "arith.addi %bid, %c1")) == 1 + 2


@pytest.mark.parametrize("a, b, quotient", [(3, -2, -1), (-3, 2, -1), (-3, -2, 1), (7, 2, 3)])
def test_a_signed_division_truncates_toward_zero(a, b, quotient):
    assert truncdiv(point(a), point(b))[0] == quotient


def test_i1_logic_is_decided_per_cta_where_one_side_decides_it():
    """z = (bid == 0) joined with a thread's flag (t < 64, unknown): `z and flag` is false
    for CTA 1 whatever the flag, so `(z and flag) or z` is z for both CTAs; an xor of two
    decided sides is decided. CTA 0 loops 3 times, CTA 1 once; then 2 more each."""
    program = """      %z = arith.cmpi eq, %bid, %c0 : index
      %t = gpu.thread_id x
      %c64 = arith.constant 64 : index
      %flag = arith.cmpi ult, %t, %c64 : index
      %j = arith.andi %z, %flag : i1
      %k = arith.ori %j, %z : i1
      %n = arith.xori %k, %z : i1
      %u = arith.select %k, %c3, %c1 : index
      %v = arith.select %n, %c0, %c2 : index
      %ub = arith.addi %u, %v : index"""
    assert _tickets(program) == (3 + 2) + (1 + 2)
    assert _tickets(program.replace("%k = arith.ori %j, %z", "%k = arith.ori %j, %flag")) \
        is None  # CTA 1: false or the flag, unknown
