"""kernels/queue_bench.py: the queue-bandwidth benchmark's modules, built as IR.

CPU only, without lowering (test/python/runtime/test_dataflow_cpu.py compiles and
test_dataflow_gpu.py runs them): every form builds a verified pipeline of a producer and a
consumer kernel, each thread moving `block_unroll` words an iteration, loads cached at L2 only
where no acquire precedes them.
"""

from __future__ import annotations

import pytest
from xdsl.dialects import gpu, memref

from tilesync.dialects import dataflow
from tilesync.dialects import tile as tl
from tilesync.kernels.queue_bench import QueueBenchConfig, queue_bench_module

FORMS = [
    {},
    {"synchronized": False},
    {"threads": 128, "workers": 2, "draw_ahead": True},
    {"threads": 128, "workers": 4, "synchronized": False},
    {"transport": "bulk"},
    {"transport": "bulk", "synchronized": False},
    {"transport": "cluster", "pin_l2": False, "depth": 3},
    {"transport": "cluster", "pin_l2": False, "depth": 3, "synchronized": False},
]


def _kernels(cfg: QueueBenchConfig) -> dict[str, gpu.FuncOp]:
    module = queue_bench_module(cfg)
    module.verify()
    return {op.sym_name.data: op for op in module.walk() if isinstance(op, gpu.FuncOp)}


@pytest.mark.parametrize("form", FORMS, ids=lambda form: str(form) if form else "default")
def test_every_form_is_a_verified_pipeline_of_a_producer_and_a_consumer(form):
    cfg = QueueBenchConfig(16 << 10, pairs=8, **form)
    module = queue_bench_module(cfg)
    module.verify()
    kernels = [op for op in module.walk() if isinstance(op, gpu.FuncOp)]
    assert [k.sym_name.data for k in kernels] == ["producer", "consumer"]
    assert all(tuple(k.known_block_size.get_values()) == (cfg.block_threads, 1, 1)
               for k in kernels)
    pipeline = next(op for op in module.walk() if isinstance(op, dataflow.PipelineOp))
    assert [(s.sym_name.data, s.num_ctas) for s in pipeline.stages] == [("produce", 8),
                                                                         ("consume", 8)]
    assert len(pipeline.queues) == cfg.synchronized
    assert pipeline.clustered == (cfg.transport == "cluster")


@pytest.mark.parametrize("form", FORMS[:4], ids=str)
def test_a_thread_moves_its_unrolled_words_an_iteration(form):
    cfg = QueueBenchConfig(64 << 10, pairs=8, unroll=4, **form)
    kernels = _kernels(cfg)
    stores = [op for op in kernels["producer"].walk() if isinstance(op, memref.StoreOp)]
    loads = [op for op in kernels["consumer"].walk()
             if isinstance(op, memref.LoadOp | tl.LoadL2Op)]
    assert cfg.block_unroll == 4 and len(stores) == len(loads) == 4


def test_only_loads_after_no_acquire_are_cached_at_l2_only():
    """An unsynchronized consumer reads its ring by tile.load_l2 (a line of the slot's last
    round in its L1 would answer a plain load); a synchronized one after its acquire, and a
    cluster twin's from its own shared memory, by plain loads."""
    for form, at_l2 in ((FORMS[0], False), (FORMS[1], True), (FORMS[7], False)):
        consumer = _kernels(QueueBenchConfig(16 << 10, pairs=8, **form))["consumer"]
        kinds = {type(op) for op in consumer.walk()}
        assert (tl.LoadL2Op in kinds, memref.LoadOp in kinds) == (at_l2, not at_l2), form
