"""On a GPU: ordered tiles hand every tile out exactly once per launch, and a timed-out wait in a
debug build tells the host which semaphore it waited on. Skipped without a GPU (conftest.py)."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilesync
from tilesync.contract import DEBUG_RECORD_FIELDS, SPIN_SITE_SEMAPHORE, TILE_COUNTER

pytestmark = pytest.mark.gpu

ORDERED = """
gpu.module @k {
  gpu.func @mark(%out: memref<?xi32>, %g1: index) kernel {
    %x, %y = sync.tile order #sync.order<ORDER> : index, index
    %row = arith.muli %x, %g1 : index
    %i = arith.addi %row, %y : index
    %one = arith.constant 1 : i32
    %old = memref.load %out[%i] : memref<?xi32>
    %new = arith.addi %old, %one : i32
    memref.store %new, %out[%i] : memref<?xi32>
    gpu.return
  }
}
"""


@pytest.mark.parametrize("order", ["row_major", "column_major", "table<5, 0, 3, 1, 4, 2>"])
def test_ordered_tiles_cover_the_grid_once_per_launch(order):
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.device import synchronize
    from tilesync.runtime.launch import launch
    from tilesync.runtime.module import load_ptx

    grid = (2, 3) if order.startswith("table") else (37, 11)
    program = tilesync.compile(ORDERED.replace("ORDER", order))
    sig = program.kernels["mark"]
    assert sig.sync_args[0] == TILE_COUNTER
    kernel = load_ptx(program.ptx, "ordered").function("mark", sig.params)
    out = DeviceBuffer.zeros(grid[0] * grid[1], np.int32)
    counter = DeviceBuffer.zeros(1, np.int32)
    extra = [counter]
    if order.startswith("table"):
        extra.append(DeviceBuffer.from_numpy(np.asarray(sig.order_table, dtype=np.int32)))
    for launch_no in range(1, 4):  # the counter is never reset
        launch(kernel, grid, 32, [out, grid[1], *extra])
        synchronize()
        assert np.all(out.to_numpy() == launch_no), f"launch {launch_no}"
    assert counter.to_numpy()[0] == 3 * grid[0] * grid[1]


SCRIPT = textwrap.dedent("""
    import numpy as np, tilesync
    from tilesync.runtime.buffers import DeviceBuffer, HostMappedBuffer
    from tilesync.runtime.device import synchronize
    from tilesync.runtime.errors import TilesyncRuntimeError
    from tilesync.runtime.launch import launch
    from tilesync.runtime.module import load_ptx
    from tilesync.contract import DEBUG_RECORD, DEBUG_RECORD_WORDS, kernel_tag
    text = '''
    gpu.module @k {
      gpu.func @consumer(%sems: memref<?xi32>, %epoch: i32) kernel {
        %t = sync.tile : index
        sync.wait %sems[%t] epoch %epoch
            policy #sync.policy<TileSync (d0) -> (d0), posts = 1> : memref<?xi32>
        gpu.return
      }
    }'''
    program = tilesync.compile(text, debug=True, timeout_ns=100_000_000)
    sig = program.kernels["consumer"]
    assert sig.sync_args == (DEBUG_RECORD,), sig.sync_args
    kernel = load_ptx(program.ptx, "timeout").function("consumer", sig.params)
    sems = DeviceBuffer.from_numpy(np.array(SEMS, dtype=np.int32))
    record = HostMappedBuffer(DEBUG_RECORD_WORDS)
    launch(kernel, 4, 64, [sems, EPOCH, record.ptr])
    try:
        synchronize()
        print("NO ERROR")
    except TilesyncRuntimeError as err:
        words = [int(w) for w in record.read()]
        print("RECORD", words, words[1] == kernel_tag("consumer"))
""")


@pytest.mark.parametrize(
    "epoch, sems, expected_index",
    [
        (1, [1, 1, 0, 1], 2),  # a dropped post: tile 2's semaphore never reaches epoch 1
        (2, [1, 1, 1, 1], None),  # a wrong expected value: every wait expects 2, sees 1
    ],
)
def test_debug_build_names_the_timed_out_wait(epoch, sems, expected_index):
    script = SCRIPT.replace("SEMS", repr(sems)).replace("EPOCH", str(epoch))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RECORD")), None)
    assert line is not None, proc.stdout + proc.stderr
    words = [int(w) for w in line[line.index("[") + 1:line.index("]")].split(",")]
    r = dict(zip(DEBUG_RECORD_FIELDS, words, strict=True))
    assert line.endswith("True")  # the record names the kernel that timed out
    assert r["claimed"] == 1 and r["param"] == 0 and (r["block_y"], r["block_z"]) == (0, 0)
    assert r["site"] == SPIN_SITE_SEMAPHORE
    assert r["expected"] == epoch and r["seen"] == sems[r["index"]]
    assert r["block_x"] == r["index"]
    if expected_index is not None:
        assert r["index"] == expected_index
