"""The warp-specialized TMA GEMM as the consumer of a stage program: its producer thread waits
for each k-tile of A (spinning alone, then `fence.proxy.async.global`: the copy engine does
not see the generic proxy's acquire) before it issues the copy; its consumer warpgroups post
stored tiles after a named barrier of their own. Without dependencies the hooks leave no
trace. On a GPU, a deliberately slow producer writes A's k-tiles last-first while the GEMM
already runs: a stale (poisoned) tile read by any copy fails the check. As a producer with
the TMA-store epilogue, the GEMM posts a tile only once its copies' writes have landed."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir.affine import AffineExpr, AffineMap

import tilesync
from tilesync.api import default_pipeline, parse
from tilesync.dialects import sync
from tilesync.harness.compile import compile_kernel
from tilesync.kernels.config import gemm_config, tma_ws_config
from tilesync.kernels.gemm import gemm_module

M, N, K = 256, 384, 512
BM, BN, BK = 128, 128, 64
KT = K // BK
CONSUMER = tma_ws_config(M, N, K, tile=(BM, BN, BK), stages=3, sync_hooks=True)
# TileSync: k-step s waits for producer tile (d0, s) alone, the strictest test of each copy
SYNC_PASSES = ("sync-select-policy{policy=tile}", "sync-insert-post-wait")

PRODUCER = f"""
builtin.module {{
  gpu.module @producer_module {{
    gpu.func @producer(%src: memref<{M}x{K}xf16>, %dst: memref<{M}x{K}xf16>, %delay: i64)
        kernel attributes {{gpu.known_block_size = array<i32: 128, 1, 1>}} {{
      %x, %y = sync.tile : index, index
      %last = arith.constant {KT - 1} : index
      %rev = arith.subi %last, %y : index
      %rev64 = arith.index_cast %rev : index to i64
      %wait = arith.muli %rev64, %delay : i64
      %start = nvvm.read.ptx.sreg.globaltimer : i64
      scf.while () : () -> () {{
        %now = nvvm.read.ptx.sreg.globaltimer : i64
        %elapsed = arith.subi %now, %start : i64
        %early = arith.cmpi slt, %elapsed, %wait : i64
        scf.condition(%early)
      }} do {{
        %nap = arith.constant 1000 : i32
        nvvm.nanosleep %nap : i32
        scf.yield
      }}
      %tid = gpu.thread_id x
      %bm = arith.constant {BM} : index
      %bk = arith.constant {BK} : index
      %r0 = arith.muli %x, %bm : index
      %c0 = arith.muli %y, %bk : index
      %n = arith.constant {BM * BK} : index
      %step = arith.constant 128 : index
      scf.for %i = %tid to %n step %step {{
        %ri = arith.divui %i, %bk : index
        %ci = arith.remui %i, %bk : index
        %r = arith.addi %r0, %ri : index
        %c = arith.addi %c0, %ci : index
        %v = memref.load %src[%r, %c] : memref<{M}x{K}xf16>
        memref.store %v, %dst[%r, %c] : memref<{M}x{K}xf16>
      }}
      sync.store_point [%x, %y]
      gpu.return
    }}
  }}
}}
"""


def _feeding_the_gemm(producer_ops: list, producer: sync.StageOp, column,
                      consumer=CONSUMER) -> ModuleOp:
    """The producer's module and stage, the consumer GEMM, the dependency of its k-step s0 on
    producer tile (d0, column(s0)), the producer launched first on its own stream."""
    name = producer.sym_name.data
    d0, s0 = AffineExpr.dimension(0), AffineExpr.symbol(0)
    ops = [*producer_ops, *(op.clone() for op in gemm_module(0, 0, 0, config=consumer).ops)]
    ops += [
        producer,
        sync.StageOp("gemm", [f"{consumer.name}_module", consumer.name], consumer.tile_grid,
                     list(consumer.block), [BM, BN]),
        sync.DependencyOp(name, "gemm", 0, AffineMap(2, 1, (d0, column(s0))), [(0, KT)]),
        sync.LaunchOp(name, stream=0), sync.LaunchOp("gemm", stream=1),
    ]
    module = ModuleOp(ops)
    module.attributes["gpu.container_module"] = UnitAttr()
    return module


def _compile(module: ModuleOp, passes=SYNC_PASSES):
    return tilesync.compile(module, pipeline=default_pipeline(before=passes),
                            target="sm_90a", validate=True)


def stage_program(consumer=CONSUMER) -> ModuleOp:
    """The slow producer of A's (BM x BK) tiles and the GEMM reading them k-tile by k-tile:
    GEMM tile (d0, d1) at k-step s0 reads producer tile (d0, s0)."""
    return _feeding_the_gemm(
        [op.clone() for op in parse(PRODUCER).ops],
        sync.StageOp("producer", ["producer_module", "producer"], [M // BM, KT], [128],
                     [BM, BK]),
        lambda s0: s0, consumer)


def compiled(consumer=CONSUMER, passes=SYNC_PASSES):
    return _compile(stage_program(consumer), passes)


def test_waits_spin_in_the_producer_thread_then_fence_the_async_proxy():
    module = stage_program()
    for name in SYNC_PASSES:
        from tilesync.lowering.pipeline import build_pipeline

        build_pipeline([name]).apply(tilesync.api.make_context(), module)
    waits = [op for op in module.walk() if isinstance(op, sync.WaitOp)]
    assert waits and all(w.single_thread is not None and w.async_proxy is not None
                         for w in waits)
    posts = [op for op in module.walk() if isinstance(op, sync.PostOp)]
    assert [p.threads for p in posts] == [None]  # the producer posts after its block barrier
    program = tilesync.compile(stage_program(), pipeline=default_pipeline(before=SYNC_PASSES),
                               target="sm_90a", keep_ir=True, validate=True)
    lowered = program.ir_after["convert-sync-to-nvvm"]
    # in the producer's k-loop: the buffer's barrier expects both copies' bytes, then the spin
    # on the acquire load (its timed loop after a first load that failed), the proxy fence,
    # A's copy (B's copy after its own hook, which waits on nothing)
    waits = re.findall(r"scf\.while \(\) : \(\) -> \(\) \{\s+%\d+ = nvvm\.ld acquire, gpu"
                       r"[^}]*\}[^}]*\} do \{[^}]*\}\s+\}\s+nvvm\.fence\.proxy\.async global\s+"
                       r"tile\.tma_load %A", lowered)
    assert len(waits) == 1, lowered
    step = lowered[lowered.rindex("expect_tx", 0, lowered.index("nvvm.ld acquire")):]
    assert step.index("nvvm.ld acquire") < step.index("tile.tma_load %A") < \
        step.index("tile.tma_load %B")
    assert "gpu.barrier" not in lowered.split("nvvm.ld acquire")[1].split("tile.tma_load")[0]
    assert program.kernels[CONSUMER.name].params[:3] == ("tmap", "tmap", "ptr")
    assert "fence.proxy.async.global;" in program.ptx_by_module[f"{CONSUMER.name}_module"]


def test_mbarrier_waits_outlast_the_semaphore_waits():
    """One timeout option for every spin: the semaphore waits of the producer thread trap
    after it, the GEMM's mbarrier waits (whose phase that thread completes only after its
    semaphore wait) after twice it, so a missing post is named as the semaphore it is."""
    from tilesync.lowering.sync_to_nvvm import mbarrier_timeout_ns

    timeout = 123_456_789
    pipeline = default_pipeline(timeout_ns=timeout, before=SYNC_PASSES)
    assert "convert-tile-to-nvvm{default_timeout_ns=123456789}" in pipeline
    program = tilesync.compile(stage_program(), pipeline=pipeline, target="sm_90a",
                               keep_ir=True)
    after_sync = program.ir_after["convert-sync-to-nvvm"]
    after_tile = program.ir_after["convert-tile-to-nvvm"]
    assert mbarrier_timeout_ns(timeout) == 2 * timeout
    assert f"arith.constant {timeout} : i64" in after_sync
    assert f"arith.constant {2 * timeout} : i64" not in after_sync
    # the producer's wait on `empty`, the consumers' on `full`; the latter wait for the
    # wgmma group they leave in flight before they trap
    assert after_tile.count(f"arith.constant {2 * timeout} : i64") == 2
    assert len(re.findall(r"nvvm\.wgmma\.wait\.group\.sync\.aligned 0\s+nvvm\.trap",
                          after_tile)) == 1


def test_a_consumer_tile_posts_after_a_barrier_of_the_consumer_warpgroups():
    """The same GEMM as a producer: its store point becomes bar.sync 1, 256 + one release."""
    cfg = tma_ws_config(M, N, K, tile=(BM, BN, BK), stages=3, sync_hooks=True)
    module = gemm_module(0, 0, 0, config=cfg)
    (point,) = [op for op in module.walk() if isinstance(op, sync.StorePointOp)]
    assert point.threads.value.data == cfg.consumer_threads == 256


def test_without_dependencies_the_hooks_leave_no_trace():
    """A kernel with hooks takes one tile a block (its sync.tile); without a dependency it is
    the same kernel as one without hooks on the tile grid."""
    plain = tma_ws_config(M, N, K, tile=(BM, BN, BK), stages=3, persistent=False)
    assert CONSUMER.grid == plain.grid == (M // BM, N // BN, 1)
    assert compile_kernel(CONSUMER).ptx == compile_kernel(plain).ptx


def _loaded(program, name: str):
    """The kernel `name` of a compiled program loaded on the GPU, with its signature."""
    from tilesync.runtime import load_ptx

    sig = program.kernels[name]
    module = load_ptx(program.ptx_by_module[sig.module], sig.module)
    return module.function(name, sig.params), sig


@pytest.mark.gpu
@pytest.mark.parametrize("delay_us", [0, 200])
def test_gpu_slow_producer_never_yields_a_stale_tile(delay_us):
    from tilesync.runtime.device import get_device

    if get_device().arch != "sm_90":
        pytest.skip("TMA needs an sm_90 GPU")
    _run_behind_the_slow_producer(CONSUMER, delay_us)


def _run_behind_the_slow_producer(consumer, delay_us: int, passes=SYNC_PASSES) -> None:
    """The consumer GEMM launched first, then the producer writing A's tiles last-first
    `delay_us` apart; no tile of C may come from a stale (NaN) tile of A."""
    from tilesync.contract import EPOCH, Role
    from tilesync.harness.runner import gemm_tensor_maps
    from tilesync.kernels.reference import host_array, host_values
    from tilesync.runtime import DeviceBuffer, Stream, launch, synchronize

    program = compiled(consumer, passes)
    rng = np.random.default_rng(delay_us)
    src = host_array(rng.standard_normal((M, K)) / np.sqrt(K), "f16")
    b = host_array(rng.standard_normal((N, K)), "f16")
    src_d, b_d = DeviceBuffer.from_numpy(src), DeviceBuffer.from_numpy(b)
    a_d = DeviceBuffer.from_numpy(np.full((M, K), np.nan, np.float16))  # stale: NaN
    c_d = DeviceBuffer.from_numpy(np.full((M, N), np.nan, np.float16))
    sems = DeviceBuffer.zeros(((M // BM) * KT,), np.int32)

    gemm, gemm_sig = _loaded(program, consumer.name)
    producer, producer_sig = _loaded(program, "producer")
    bound = {Role.semaphores("producer"): sems, EPOCH: 1}
    consumer_stream, producer_stream = Stream(), Stream()
    operands = [a_d, b_d]
    if consumer.warp_specialized:  # A and B as tensor maps
        operands = list(gemm_tensor_maps(consumer, operands))
    # The GEMM first: its waits spin on tiles nobody has written yet.
    launch(gemm, consumer.grid, consumer.block,
           [*operands, c_d, *(bound[r] for r in gemm_sig.sync_args)],
           stream=consumer_stream, shared_mem=consumer.dynamic_shared_bytes)
    launch(producer, (M // BM, KT, 1), 128,
           [src_d, a_d, delay_us * 1000, *(bound[r] for r in producer_sig.sync_args)],
           stream=producer_stream)
    synchronize()
    got = host_values(c_d.to_numpy(), "f16")
    assert np.isfinite(got).all(), "a copy read a tile before the producer wrote it"
    ref = host_values(src, "f16") @ host_values(b, "f16").T
    error = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert error < 3e-3


ONE_LAUNCH_PASSES = (*SYNC_PASSES, "sync-one-launch{mixed_blocks=true}", "sync-verify")


def test_the_slow_producer_and_the_gemm_run_as_one_kernel():
    """cuSync in one launch: the 128-thread producer and the warp-specialized GEMM (two
    consumer warpgroups and a producer warp: 288 threads) as one kernel of the GEMM's blocks
    (the producer's code in the first 128 threads), the producer's 16 tiles taking the first
    tickets; proved, and nvJitLink accepts it."""
    program = compiled(CONSUMER, ONE_LAUNCH_PASSES)
    sig = program.kernels["producer_launch"]
    assert sig.user_params == ("ptr", "ptr", "i64", "tmap", "tmap", "ptr")
    ptx = program.ptx_by_module[sig.module]
    assert CONSUMER.threads == 288 and ".maxntid 288, 1, 1" in ptx
    assert "atom.relaxed.gpu.global.add.u64" in ptx  # the ticket (64-bit: it never wraps)
    host = str(program.module)
    assert "one launch, the producer's tickets first" in host


@pytest.mark.gpu
@pytest.mark.parametrize("delay_us", [0, 200])
def test_gpu_one_launch_behind_a_slow_producer_never_yields_a_stale_tile(delay_us):
    """The one kernel of both stages, run three times without a memset: the producer writes
    A's tiles last-first `delay_us` apart while GEMM blocks of the same grid wait for them; A
    and C are poisoned before every run, so a copy of a stale tile fails the check."""
    from tilesync.harness.runner import gemm_tensor_maps
    from tilesync.kernels.reference import host_array, host_values
    from tilesync.runtime import DeviceBuffer
    from tilesync.runtime.device import get_device
    from tilesync.runtime.program import StageProgram

    if get_device().arch != "sm_90":
        pytest.skip("TMA needs an sm_90 GPU")
    program = StageProgram(compiled(CONSUMER, ONE_LAUNCH_PASSES))
    rng = np.random.default_rng(delay_us)
    src = host_array(rng.standard_normal((M, K)) / np.sqrt(K), "f16")
    b = host_array(rng.standard_normal((N, K)), "f16")
    src_d, b_d = DeviceBuffer.from_numpy(src), DeviceBuffer.from_numpy(b)
    a_d = DeviceBuffer.from_numpy(np.zeros((M, K), np.float16))
    c_d = DeviceBuffer.from_numpy(np.zeros((M, N), np.float16))
    maps = list(gemm_tensor_maps(CONSUMER, [a_d, b_d]))
    ref = host_values(src, "f16") @ host_values(b, "f16").T
    for run in range(3):
        a_d.fill_bytes(0xFF)  # NaN: stale
        c_d.fill_bytes(0xFF)
        program.run({"producer": [src_d, a_d, delay_us * 1000], "gemm": [*maps, c_d]})
        program.synchronize()  # a timed-out wait raises SpinTimeoutError naming it
        got = host_values(c_d.to_numpy(), "f16")
        assert np.isfinite(got).all(), f"run {run}: a copy read a tile before it was written"
        assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 3e-3, f"run {run}"
    assert program.epoch == 3


# --------------------------------------------------------------------------------------------
# A cp.async wgmma GEMM as the consumer: one probe of its row, then the waits it may skip
# --------------------------------------------------------------------------------------------

PROBING = gemm_config(M, N, K, (BM, BN, BK), (BM // 16, 1), 3, sync_hooks=True, mma="wgmma",
                      b_layout="col", name="probing")


def test_a_block_wide_consumer_probes_its_row_once():
    """Its hooks are the whole block's, and its k-steps each read a new producer tile: one
    sync.probe of the row's KT semaphores in front of the k-loop, every wait `unless` it."""
    program = tilesync.compile(stage_program(PROBING),
                               pipeline=default_pipeline(before=SYNC_PASSES),
                               target="sm_90a", keep_ir=True, validate=True)
    filled = program.ir_after["sync-insert-post-wait"]
    probes = re.findall(r"(%\w+) = sync\.probe %sems_producer\[[^\]]*\] epoch %epoch policy "
                        r"#sync\.policy<TileSync [^\n]*reads \[affine_map<\(d0, d1\)\[s0\] -> "
                        rf"\(d0, s0\)>\] over \[array<i64: 0, {KT}, 1>\]", filled)
    assert len(probes) == 1, filled
    waits = re.findall(r"sync\.wait [^\n]*", filled)
    assert waits and all(f"unless {probes[0]}" in w for w in waits), waits
    assert "bar.red.or" in program.ptx_by_module[f"{PROBING.name}_module"]


@pytest.mark.gpu
@pytest.mark.parametrize("delay_us", [0, 200])
def test_gpu_a_probing_consumer_never_yields_a_stale_tile(delay_us):
    """With 200 us between the producer's tiles every probe fails and the waits run; with none
    some pass: either way no copy reads a tile before its post."""
    from tilesync.runtime.device import get_device

    if get_device().arch != "sm_90":
        pytest.skip("wgmma needs an sm_90 GPU")
    _run_behind_the_slow_producer(PROBING, delay_us)


UNTIL_READY_PASSES = ("sync-select-policy{policy=tile}",
                      "sync-insert-post-wait{probe_until_ready=true}")


def test_a_probe_until_ready_waits_for_the_row_before_the_k_loop():
    """With `probe_until_ready` the same probe waits: every thread spins on its share of the
    row's KT semaphores, a block barrier follows, and the waits it guards fold away."""
    program = tilesync.compile(stage_program(PROBING),
                               pipeline=default_pipeline(before=UNTIL_READY_PASSES),
                               target="sm_90a", keep_ir=True, validate=True)
    filled = program.ir_after["sync-insert-post-wait"]
    probes = re.findall(r"(%\w+) = sync\.probe %sems_producer\[[^\n]*over \[array<i64: 0, "
                        rf"{KT}, 1>\] until_ready", filled)
    assert len(probes) == 1, filled
    ptx = program.ptx_by_module[f"{PROBING.name}_module"]
    assert "bar.red.or" not in ptx  # nothing tested: the answer is known
    assert "nanosleep" in ptx and "ld.acquire.gpu" in ptx
    # the guarded waits, skipped by a constant, are gone: no acquire in the k-loop
    assert ptx.rindex("ld.acquire.gpu") < ptx.index("wgmma.mma_async"), ptx


@pytest.mark.gpu
@pytest.mark.parametrize("delay_us", [0, 200])
def test_gpu_a_consumer_waiting_at_its_probe_never_yields_a_stale_tile(delay_us):
    """The block waits for its whole row of A at once, the producer's tiles arriving
    last-first: no copy reads a tile before its post."""
    from tilesync.runtime.device import get_device

    if get_device().arch != "sm_90":
        pytest.skip("wgmma needs an sm_90 GPU")
    _run_behind_the_slow_producer(PROBING, delay_us, UNTIL_READY_PASSES)


# --------------------------------------------------------------------------------------------
# A TMA-store GEMM as the producer: its posts wait for the copies' writes
# --------------------------------------------------------------------------------------------

K1 = 384  # GEMM1: X (M x K1) . W1^T -> H (M x K), H being the consumer GEMM's A
STORER = tma_ws_config(M, K, K1, tile=(BM, 128, BK), stages=3, sync_hooks=True,
                       tma_store=True, name="gemm1")


def chain_program() -> ModuleOp:
    """GEMM1 stores H with TMA copies and posts its tiles; the consumer GEMM's k-step s0 reads
    H tile (d0, s0 floordiv 2) (128 H columns a GEMM1 tile, 64 a k-step)."""
    return _feeding_the_gemm(
        [op.clone() for op in gemm_module(0, 0, 0, config=STORER).ops],
        sync.StageOp("gemm1", [f"{STORER.name}_module", STORER.name], STORER.tile_grid,
                     list(STORER.block), [BM, 128]),
        lambda s0: s0 // 2)


def compiled_chain():
    return _compile(chain_program())


def test_a_tma_store_tile_is_posted_after_its_writes():
    """Each leader waits for its copies' writes and fences the proxies before the named
    barrier after which one consumer thread releases the tile."""
    program = compiled_chain()
    ptx = program.ptx_by_module[f"{STORER.name}_module"]
    store = ptx.index("cp.async.bulk.tensor.2d.global.shared::cta")
    done = ptx.index("cp.async.bulk.wait_group 0;", store)
    fence = ptx.index("fence.proxy.async.global;", done)
    barrier = ptx.index("bar.sync \t1, 256;", fence)
    assert "red.relaxed.gpu.global.add" in ptx[barrier:]
    # without a dependency the store point leaves nothing
    plain = replace(STORER, sync_hooks=False)
    assert compile_kernel(STORER).ptx == compile_kernel(plain).ptx


@pytest.mark.gpu
@pytest.mark.parametrize("round_", range(3))
def test_gpu_a_consumer_never_reads_a_tile_before_its_tma_stores_landed(round_):
    from tilesync.contract import EPOCH, Role
    from tilesync.harness.runner import gemm_tensor_maps
    from tilesync.kernels.reference import host_array, host_values
    from tilesync.runtime import DeviceBuffer, Stream, launch, synchronize
    from tilesync.runtime.device import get_device

    if get_device().arch != "sm_90":
        pytest.skip("TMA needs an sm_90 GPU")
    program = compiled_chain()
    rng = np.random.default_rng(round_)
    x = host_array(rng.standard_normal((M, K1)) / np.sqrt(K1), "f16")
    w1 = host_array(rng.standard_normal((K, K1)), "f16")
    b = host_array(rng.standard_normal((N, K)), "f16")
    x_d, w1_d, b_d = (DeviceBuffer.from_numpy(v) for v in (x, w1, b))
    h_d = DeviceBuffer.from_numpy(np.full((M, K), np.nan, np.float16))  # stale: NaN
    c_d = DeviceBuffer.from_numpy(np.full((M, N), np.nan, np.float16))
    sems = DeviceBuffer.zeros((STORER.tiles,), np.int32)

    gemm, gemm_sig = _loaded(program, CONSUMER.name)
    storer, storer_sig = _loaded(program, STORER.name)
    bound = {Role.semaphores("gemm1"): sems, EPOCH: 1}
    # The consumer first: its producer thread spins on tiles GEMM1 has not stored yet.
    launch(gemm, CONSUMER.grid, CONSUMER.block,
           [*gemm_tensor_maps(CONSUMER, [h_d, b_d]), c_d,
            *(bound[r] for r in gemm_sig.sync_args)],
           stream=Stream(), shared_mem=CONSUMER.dynamic_shared_bytes)
    launch(storer, STORER.grid, STORER.block,
           [*gemm_tensor_maps(STORER, [x_d, w1_d, h_d]),
            *(bound[r] for r in storer_sig.sync_args)],
           stream=Stream(), shared_mem=STORER.dynamic_shared_bytes)
    synchronize()
    got = host_values(c_d.to_numpy(), "f16")
    assert np.isfinite(got).all(), "a copy read an H tile before its TMA stores landed"
    h = host_values(host_array(host_values(x, "f16") @ host_values(w1, "f16").T, "f16"), "f16")
    ref = h @ host_values(b, "f16").T
    error = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert error < 3e-3
