"""Python API of the `dataflow` dialect: constructors, helpers, verifiers, text round trip."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    IndexType,
    MemRefType,
    ModuleOp,
    TensorType,
    f16,
    f32,
    i32,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from tilesync.dialects import get_all_dialects
from tilesync.dialects.dataflow import (
    ENTRY_METADATA_BYTES,
    AcquireEmptyOp,
    AcquireFullOp,
    Dataflow,
    EntryOp,
    PipelineOp,
    QueueOp,
    QueueType,
    QueueWorkers,
    QueueWorkersError,
    ReleaseEmptyOp,
    ReleaseFullOp,
    Resource,
    ResourceAttr,
    StageOp,
    queue_workers,
)

TILE = TensorType(f16, [128, 64])


def _context() -> Context:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, Dataflow):
        ctx.load_dialect(dialect)
    return ctx


def _kernel(name: str, *arg_types) -> func.FuncOp:
    return func.FuncOp.external(name, list(arg_types), [])


def _gemm_softmax(max_ctas: int | None = 264, softmax_ctas: int = 32) -> ModuleOp:
    h = QueueType(4, TILE)
    pipeline = PipelineOp(
        "gemm_softmax",
        [
            QueueOp("h", h, pin_l2=True),
            StageOp("gemm", "gemm", Resource.TENSOR, 100, outputs=["h"]),
            StageOp("softmax", "softmax", Resource.SIMT, softmax_ctas, inputs=["h"]),
        ],
        max_ctas=max_ctas,
    )
    return ModuleOp([_kernel("gemm", h), _kernel("softmax", h), pipeline])


def test_dialect_is_registered_for_the_driver():
    assert get_all_dialects()["dataflow"]() is Dataflow
    assert Dataflow.name == "dataflow"


def test_queue_type_sizes():
    queue = QueueType(4, TILE)
    assert queue.num_entries == 4
    assert queue.payload_elements == 128 * 64
    assert queue.payload_bytes == 128 * 64 * 2
    # 16 KiB is already a multiple of the line; metadata adds one padded line per entry.
    assert queue.entry_bytes == 128 * 64 * 2 + ENTRY_METADATA_BYTES
    assert queue.ring_bytes == 4 * queue.entry_bytes

    odd = QueueType(2, MemRefType(f32, [3]))
    assert odd.payload_bytes == 12
    assert odd.entry_bytes == 128 + ENTRY_METADATA_BYTES


def test_queue_type_verifier():
    with pytest.raises(VerifyException, match="at least one entry, got 0"):
        QueueType(0, TILE)
    with pytest.raises(VerifyException, match="static shape"):
        QueueType(2, TensorType(f16, [DYNAMIC_INDEX, 64]))


def test_queue_type_text_round_trip():
    text = "!dataflow.queue<4 x tensor<128x64xf16>>"
    parsed = Parser(_context(), text).parse_type()
    assert parsed == QueueType(4, TILE)
    assert str(parsed) == text


def test_resource_attr_prints_as_enum():
    assert str(ResourceAttr(Resource.SIMT)) == "#dataflow.resource<simt>"
    assert ResourceAttr(Resource.TENSOR).data is Resource.TENSOR


def test_pipeline_builds_verifies_and_round_trips():
    module = _gemm_softmax()
    module.verify()

    pipeline = next(op for op in module.ops if isinstance(op, PipelineOp))
    assert [s.sym_name.data for s in pipeline.stages] == ["gemm", "softmax"]
    assert [q.sym_name.data for q in pipeline.queues] == ["h"]
    assert pipeline.queues[0].pin_l2 is not None
    assert pipeline.stages[0].num_ctas == 100
    assert pipeline.stages[0].resource == ResourceAttr(Resource.TENSOR)

    text = str(module)
    assert "dataflow.pipeline @gemm_softmax max_ctas(264) {" in text
    assert "dataflow.queue @h pin_l2 : !dataflow.queue<4 x tensor<128x64xf16>>" in text
    reparsed = Parser(_context(), text).parse_module()
    reparsed.verify()
    assert reparsed.is_structurally_equivalent(module)


def test_pipeline_over_max_ctas_is_rejected():
    with pytest.raises(VerifyException, match="needs 300 co-resident CTAs but max_ctas is 264"):
        _gemm_softmax(softmax_ctas=200).verify()
    # Without a bound the same pipeline verifies: co-residency is then the runtime's check.
    _gemm_softmax(max_ctas=None, softmax_ctas=200).verify()


def test_pipeline_cycle_is_rejected():
    q = QueueType(2, TensorType(f32, [64]))
    pipeline = PipelineOp(
        "loop",
        [
            QueueOp("ab", q),
            QueueOp("ba", q),
            StageOp("a", "k", Resource.SIMT, 1, inputs=["ba"], outputs=["ab"]),
            StageOp("b", "k", Resource.SIMT, 1, inputs=["ab"], outputs=["ba"]),
        ],
    )
    with pytest.raises(VerifyException, match=r"cycle: @a -> @b -> @a"):
        ModuleOp([_kernel("k", q, q), pipeline]).verify()


def test_queue_multicast_to_two_consumer_stages_is_allowed():
    q = QueueType(2, TensorType(f32, [64]))
    pipeline = PipelineOp(
        "multicast",
        [
            QueueOp("x", q),
            StageOp("producer", "k", Resource.TENSOR, 8, outputs=["x"]),
            StageOp("left", "k", Resource.SIMT, 4, inputs=["x"]),
            StageOp("right", "k", Resource.SIMT, 4, inputs=["x"]),
        ],
    )
    ModuleOp([_kernel("k", q), pipeline]).verify()


def test_stage_needs_positive_ctas():
    q = QueueType(2, TensorType(f32, [64]))
    pipeline = PipelineOp(
        "p",
        [
            QueueOp("x", q),
            StageOp("a", "k", Resource.TENSOR, 0, outputs=["x"]),
            StageOp("b", "k", Resource.SIMT, 1, inputs=["x"]),
        ],
    )
    with pytest.raises(VerifyException, match="positive CTA count, got 0"):
        ModuleOp([_kernel("k", q), pipeline]).verify()


def test_kernel_level_ops_build_and_verify():
    queue_type = QueueType(4, TILE)
    block = Block(arg_types=[queue_type, queue_type])
    produced, consumed = block.args
    acquire_empty = AcquireEmptyOp(produced)
    entry = EntryOp(produced, acquire_empty.slot)
    release_full = ReleaseFullOp(produced, acquire_empty.slot)
    acquire_full = AcquireFullOp(consumed)
    release_empty = ReleaseEmptyOp(consumed, acquire_full.slot)
    block.add_ops(
        [acquire_empty, entry, release_full, acquire_full, release_empty, func.ReturnOp()]
    )
    kernel = func.FuncOp("relay", ([queue_type, queue_type], []), Region(block))
    ModuleOp([kernel]).verify()

    assert acquire_empty.slot.type == IndexType()
    # The entry's memref is inferred from the payload: same shape and element type.
    assert entry.buffer.type == MemRefType(f16, [128, 64])
    assert (
        "%3 = dataflow.entry %0, %2 : !dataflow.queue<4 x tensor<128x64xf16>> -> memref<128x64xf16>"
        in str(kernel)
    )


def test_entry_with_wrong_shape_is_rejected():
    queue_type = QueueType(4, TILE)
    block = Block(arg_types=[queue_type])
    acquire = AcquireFullOp(block.args[0])
    entry = EntryOp(block.args[0], acquire.slot, MemRefType(f16, [64, 128]))
    block.add_ops([acquire, entry, func.ReturnOp()])
    kernel = func.FuncOp("bad", ([queue_type], []), Region(block))
    with pytest.raises(VerifyException, match="does not match the queue payload"):
        kernel.verify()


def _consumer(block: tuple[int, ...] | None, acquire_threads: int | None,
              release_threads: int | None) -> func.FuncOp:
    queue_type = QueueType(4, TILE)
    body = Block(arg_types=[queue_type])
    acquire = AcquireFullOp(body.args[0], threads=acquire_threads)
    body.add_ops([acquire, ReleaseEmptyOp(body.args[0], acquire.slot, threads=release_threads),
                  func.ReturnOp()])
    kernel = func.FuncOp("consume", ([queue_type], []), Region(body))
    if block is not None:
        kernel.attributes["gpu.known_block_size"] = DenseArrayBase.from_list(i32, list(block))
    return kernel


@pytest.mark.parametrize("block, threads, workers", [
    ((256, 1, 1), None, QueueWorkers()),  # the block is the one worker
    ((256, 1, 1), 128, QueueWorkers(128, 2)),  # two warpgroups
    ((416, 1, 1), 32, QueueWorkers(32, 13)),  # as many groups as named barriers are left
    (None, None, QueueWorkers()),  # block-wide ops need no block size
])
def test_queue_workers_per_cta(block, threads, workers):
    kernel = _consumer(block, threads, threads)
    kernel.verify()
    assert queue_workers(kernel) == workers


@pytest.mark.parametrize("block, acquire, release, message", [
    ((256, 1, 1), 128, None, "'dataflow.release_empty' is run by the block but "
     "'dataflow.acquire_full' by groups of 128 threads"),
    ((192, 1, 1), 128, 128, r"the block of @consume \(192 threads\) is not a whole number"),
    ((448, 1, 1), 32, 32, "makes 14 groups, more than the 13 named barriers"),
    ((128, 2, 1), 128, 128, "need a one-dimensional block, @consume has 128 x 2 x 1"),
    (None, 128, 128, "@consume declares no block size"),
])
def test_queue_workers_refuses_what_cannot_run(block, acquire, release, message):
    kernel = _consumer(block, acquire, release)
    with pytest.raises(QueueWorkersError, match=message) as refused:
        queue_workers(kernel)
    # the error is about an op of the kernel, where a pass reports it
    assert isinstance(refused.value.op, AcquireFullOp | ReleaseEmptyOp)


def test_ticket_ops_print_their_threads():
    kernel = _consumer((256, 1, 1), 128, 128)
    assert "dataflow.acquire_full %0 threads 128 : !dataflow.queue" in str(kernel)
    assert "dataflow.release_empty %0, %1 threads 128 : !dataflow.queue" in str(kernel)
