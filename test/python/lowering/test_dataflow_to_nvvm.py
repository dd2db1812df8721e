"""convert-dataflow-to-nvvm end to end: a queue pipeline compiles to PTX that nvJitLink accepts
(with queue workers of a warpgroup too), its kernels' queue parameters carry roles the runtime
binds, and the lowering leaves the semaphore waits of other programs alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tilesync
from tilesync.contract import DEBUG_RECORD, QueueLayout, Role
from tilesync.lowering.ptx import validate_ptx

INPUTS = Path(__file__).parent / "Inputs"


@pytest.fixture(scope="module")
def queue_copy():
    return tilesync.compile(INPUTS / "queue_copy.mlir", target="sm_90")


def test_queue_pipeline_compiles_to_ptx_nvjitlink_accepts(queue_copy):
    info = validate_ptx(queue_copy.ptx, "sm_90")
    assert set(info.registers) == {"producer", "consumer", "copy_persistent"}
    ptx = queue_copy.ptx
    # tickets drawn with 64-bit atomics, entries awaited with acquire loads, released with a
    # gpu-scope fence then a relaxed reduction, never through the non-coherent path
    assert "atom.relaxed.gpu.global.add.u64" in ptx
    assert ptx.count("ld.acquire.gpu.global") >= 2  # LLVM may peel the first spin load
    assert ptx.count("fence.acq_rel.gpu") >= 2
    assert "red.relaxed.gpu.global.add" in ptx
    assert "ld.global.nc" not in ptx
    assert "trap;" in ptx


def test_queues_of_two_warpgroups_compile_to_a_named_barrier_per_group():
    # each warpgroup of the 256-thread CTAs acquires and releases tickets of its own
    program = tilesync.compile(INPUTS / "queue_copy_groups.mlir", target="sm_90")
    info = validate_ptx(program.ptx, "sm_90")
    assert set(info.registers) == {"producer", "consumer", "copy_persistent"}
    ptx = program.ptx
    assert re.search(r"bar\.sync\s+%r\d+, 128;", ptx)  # id 3 + tid.x / 128, in a register
    assert not re.search(r"bar\.sync\s+0;", ptx)  # no block barrier: groups never wait
    assert re.search(r"\.shared .*__tilesync_queue_ticket_\d+\[16\];", ptx)  # a word each


def test_tickets_drawn_ahead_compile_and_validate():
    # the draw-ahead lit program: each kernel's draws are atom.adds of their own, before and
    # in the loop; the acquires that take them spin without one
    source = Path(__file__).parents[2] / "filecheck" / "lowering" / "dataflow_to_nvvm_draw.mlir"
    program = tilesync.compile(source, target="sm_90")
    info = validate_ptx(program.ptx, "sm_90")
    assert {"source", "relay", "sink"} <= set(info.registers)
    bodies = dict(re.findall(r"\.entry (\w+)\((.*?)\n}", program.ptx, re.S))
    # @source: two draws; @relay: two draws (its relay acquire draws nothing); @sink: one
    # acquire of its own
    assert [bodies[k].count("atom.relaxed.gpu.global.add.u64") for k in
            ("source", "relay", "sink")] == [2, 2, 1]


def test_queue_parameters_are_roles_the_runtime_binds(queue_copy):
    producer, consumer = queue_copy.kernels["producer"], queue_copy.kernels["consumer"]
    assert producer.sync_args == (Role.queue("q"), DEBUG_RECORD)
    assert consumer.sync_args == (Role.queue("q"), DEBUG_RECORD)
    # the user passes the kernel's own arguments only: (src, tiles) and (dst, tiles)
    assert producer.user_params == ("ptr", "i64")
    assert consumer.user_params == ("ptr", "i64")
    assert str(Role.parse("queue:@q")) == "queue:@q"


def test_timeout_option_reaches_the_queue_spins():
    program = tilesync.compile(INPUTS / "queue_copy.mlir", timeout_ns=123_456_789,
                               debug=True, keep_ir=True)
    assert "arith.constant 123456789 : i64" in program.ir_after["convert-dataflow-to-nvvm"]


def test_layout_counts_header_lines_and_padded_entries():
    layout = QueueLayout(entries=4, payload_bytes=1000, consumers=2)
    assert layout.header_bytes == 3 * 128
    assert layout.entry_bytes == 128 + 1024
    assert layout.entry_offset(3) == 384 + 3 * 1152
    assert layout.total_bytes == 384 + 4 * 1152
    assert QueueLayout.counter_offset(2) == 256


def test_programs_without_queues_are_untouched():
    text = (Path(tilesync.__file__).parent / "examples" / "copy_chain.mlir").read_text()
    with_pass = tilesync.compile(text)
    without = tilesync.compile(text, pipeline=list(tilesync.api.KERNEL_TO_LLVM[1:]))
    assert with_pass.ptx == without.ptx
