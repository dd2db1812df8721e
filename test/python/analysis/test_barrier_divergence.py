"""Which values differ between the threads of a block (or of a queue worker's group), and
which barriers control flow on them splits."""

from __future__ import annotations

import pytest
from xdsl.dialects import gpu

from tilesync.analysis.barrier_divergence import divergent_barrier, thread_dependent
from tilesync.api import parse

KERNEL = """
gpu.module @k {
  gpu.func @f(%n: index, %m: memref<?xi32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c96 = arith.constant 96 : index
    %tid = gpu.thread_id x
    %bid = gpu.block_id x
    %group = arith.divui %tid, %c128 : index
    %third = arith.divui %tid, %c96 : index
    %mixed = arith.addi %bid, %n : index
    %through_loop = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (index) {
      %s = arith.addi %a, %tid : index
      scf.yield %s : index
    }
    %uniform_loop = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (index) {
      %s = arith.addi %a, %bid : index
      scf.yield %s : index
    }
    %one = arith.constant 1 : i32
    %old = "memref.atomic_rmw"(%one, %m, %c0) <{kind = 0 : i64}>
        : (i32, memref<?xi32>, index) -> i32
    gpu.return
  }
}
"""


def _values():
    module = parse(KERNEL)
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    names = ["c0", "c1", "c128", "c96", "tid", "bid", "group", "third", "mixed",
             "through_loop", "uniform_loop", "one", "old"]
    results = [op.results[0] for op in kernel.body.block.ops if op.results]
    return dict(zip(names, results, strict=True))


@pytest.mark.parametrize(("name", "block", "group", "differs"), [
    ("tid", (256, 1, 1), 0, True),
    ("bid", (256, 1, 1), 0, False),
    ("mixed", (256, 1, 1), 0, False),  # a block index and a kernel argument
    ("through_loop", (256, 1, 1), 0, True),  # the thread index carried by a loop
    ("uniform_loop", (256, 1, 1), 0, False),
    ("old", (256, 1, 1), 0, True),  # an atomic's result: each thread its own
    ("group", (256, 1, 1), 0, True),  # two values in the block
    ("group", (256, 1, 1), 128, False),  # one a worker of 128 threads
    ("group", (256, 1, 1), 64, False),  # and of 64
    ("third", (256, 1, 1), 128, True),  # 96 is no multiple of 128
    ("group", (192, 2, 1), 128, True),  # rows of 192: a worker straddles two of them
    ("group", (256, 2, 1), 128, False),
    ("group", None, 128, True),  # the block unknown
])
def test_what_differs_between_threads(name, block, group, differs):
    assert thread_dependent(_values()[name], group, block) is differs


def test_a_barrier_every_thread_reaches_is_not_divergent():
    module = parse(KERNEL.replace("gpu.return", "gpu.barrier\n    gpu.return"))
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    assert divergent_barrier(kernel, (256, 1, 1)) is None


WARP_BRANCH = """
gpu.module @k {
  gpu.func @f() kernel {
    %c32 = arith.constant 32 : index
    %cN = arith.constant N : index
    %tid = gpu.thread_id x
    %warp = arith.divui %tid, %c32 : index
    %role = arith.cmpi ult, %warp, %cN : index
    scf.if %role {
      gpu.barrier
    }
    gpu.return
  }
}
"""


@pytest.mark.parametrize(("warps", "split"), [(4, False), (8, False), (2, True), (0, False)])
def test_a_branch_computed_from_the_thread_index_is_split_only_where_it_splits(warps, split):
    """A warp index compared with a constant: in a block of 4 warps `warp < 4` (or 8) is
    every thread, `warp < 0` none, `warp < 2` half of them."""
    module = parse(WARP_BRANCH.replace("%cN = arith.constant N", f"%cN = arith.constant {warps}"))
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    found = divergent_barrier(kernel, (128, 1, 1))
    assert (found is not None) is split
    if split:
        assert "the branch on a condition on the thread index around it splits threads " \
               "0..127" in found[1]
    unknown = divergent_barrier(kernel, None)  # the block's size unknown: cannot tell
    assert unknown is not None and "depends on the thread index" in unknown[1]


@pytest.mark.parametrize(("bound", "split"), [(128, False), (256, False), (64, True)])
def test_a_warpgroups_aligned_ops_need_all_of_its_threads(bound, split):
    """setmaxnreg (like wgmma) is executed by a warpgroup's 128 threads together: a role
    branch of whole warpgroups is fine, one of half a warpgroup is not."""
    module = parse(f"""
gpu.module @k {{
  gpu.func @f() kernel {{
    %c = arith.constant {bound} : index
    %tid = gpu.thread_id x
    %role = arith.cmpi ult, %tid, %c : index
    scf.if %role {{
      tile.setmaxnreg inc 232
    }}
    gpu.return
  }}
}}
""")
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    found = divergent_barrier(kernel, (384, 1, 1))
    assert (found is not None) is split
    if split:
        assert found[1].startswith("'tile.setmaxnreg' waits for each group of 128 threads, "
                                   "but the branch on `thread_id.x ult 64`")


def test_a_block_wide_wait_in_a_role_branch_is_left_to_sync_verify_only_where_it_asks():
    """sync-verify's kernel_eval says which threads of a role reach a sync.wait; any other
    caller (dataflow-verify) gets the split from here."""
    policy = "#sync.policy<TileSync (d0, d1) -> (d0 * 4 + d1), posts = 1>"
    module = parse(f"""
gpu.module @k {{
  gpu.func @f(%sems: memref<?xi32>, %epoch: i32) kernel {{
    %c0 = arith.constant 0 : index
    %c64 = arith.constant 64 : index
    %tid = gpu.thread_id x
    %few = arith.cmpi ult, %tid, %c64 : index
    scf.if %few {{
      sync.wait %sems[%c0, %c0] epoch %epoch policy {policy} : memref<?xi32>
    }}
    gpu.return
  }}
}}
""")
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    assert divergent_barrier(kernel, (128, 1, 1), roles_of_sync_ops=True) is None
    found = divergent_barrier(kernel, (128, 1, 1))
    assert found is not None and found[0].name == "sync.wait" and "splits threads 0..127" \
        in found[1]
