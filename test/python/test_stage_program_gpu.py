"""On a GPU: the GPT-3 MLP stage program (examples/gpt3_mlp_sync.mlir) with synchronization
generated from its declared dependency, under each policy, with and without the R reordering
and a generated tile order, made safe by the wait-kernel, by PDL or by one launch of both GEMMs
(their tickets of one counter never reset either), run 100 times without a memset between runs,
checked against numpy. Skipped without a GPU (conftest.py)."""

from importlib import resources

import numpy as np
import pytest

import tilesync
from tilesync.api import default_pipeline

pytestmark = pytest.mark.gpu

VARIANTS = {
    "row+wait-kernel": ["sync-generate-policies", "sync-insert-post-wait",
                        "sync-insert-wait-kernel"],
    "row+pdl": ["sync-generate-policies", "sync-insert-post-wait", "sync-use-pdl"],
    "tile+wait-kernel": ["sync-generate-policies", "sync-select-policy{policy=tile}",
                         "sync-insert-post-wait", "sync-insert-wait-kernel"],
    "tile+R+pdl": ["sync-generate-policies", "sync-select-policy{policy=tile}",
                   "sync-reorder-loads", "sync-insert-post-wait", "sync-use-pdl"],
    "row+order+wait-kernel": ["sync-generate-policies", "sync-tile-order{order=generated}",
                              "sync-insert-post-wait", "sync-insert-wait-kernel"],
    # cuSync in one launch: one grid of both GEMMs' blocks, tickets GEMM1's first
    "row+one-launch": ["sync-generate-policies", "sync-insert-post-wait", "sync-one-launch"],
    "tile+R+one-launch": ["sync-generate-policies", "sync-select-policy{policy=tile}",
                          "sync-reorder-loads", "sync-insert-post-wait", "sync-one-launch"],
}


def mlp_program(passes, seed: int):
    """The GPT-3 MLP example compiled with `passes` before the lowering, loaded, with random
    inputs on the device, empty H and Y, and the float64 reference for Y."""
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.program import StageProgram

    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    program = StageProgram(tilesync.compile(text, pipeline=default_pipeline(before=passes)))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((256, 512), dtype=np.float32)
    w1 = rng.standard_normal((512, 1536), dtype=np.float32) / 16
    w2 = rng.standard_normal((1536, 512), dtype=np.float32) / 32
    want = (x.astype(np.float64) @ w1) @ w2
    bx, bw1, bw2 = (DeviceBuffer.from_numpy(a) for a in (x, w1, w2))
    h, y = DeviceBuffer.empty((256, 1536), np.float32), DeviceBuffer.empty((256, 512), np.float32)
    return program, {"gemm1": [bx, bw1, h], "gemm2": [h, bw2, y]}, h, y, want


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gpt3_mlp_stage_program_100_runs(variant):
    program, args, h, y, want = mlp_program((*VARIANTS[variant], "sync-verify"), seed=7)
    for run in range(100):
        if run % 25 == 0:
            program.synchronize()  # the runs before still write H and Y
            h.fill_bytes(0xFF)
            y.fill_bytes(0xFF)  # NaN: anything not written this run fails the check
        program.run(args)
        if run % 25 == 0 or run == 99:
            program.synchronize()
            got = y.to_numpy()
            assert np.all(np.isfinite(got)), f"run {run}: unwritten outputs"
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            assert err < 1e-4, f"run {run}: relative error {err}"
    assert program.epoch == 100
    assert np.all(program.semaphores("gemm1").to_numpy() ==
                  100 * program.stages["gemm1"].posts_per_semaphore)


@pytest.mark.parametrize("progress", ["sync-use-pdl", "sync-insert-wait-kernel",
                                      "sync-one-launch"])
def test_graph_replays_100_times_without_memset(progress):
    """sync-epoch-in-memory: a CUDA graph of one run, replayed; the device bumps the epoch."""
    passes = ("sync-generate-policies", "sync-insert-post-wait", progress, "sync-verify",
              "sync-epoch-in-memory")
    program, args, _h, y, want = mlp_program(passes, seed=3)
    assert program.device_epoch
    graph = program.capture(args)
    for replay in range(100):
        if replay % 25 == 0:
            program.synchronize()
            y.fill_bytes(0xFF)
        graph.launch()
        if replay % 25 == 24:
            program.synchronize()
            got = y.to_numpy()
            assert np.all(np.isfinite(got)), f"replay {replay}: unwritten outputs"
            assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-4, f"replay {replay}"
    program.synchronize()
    assert program.epoch == 100
    assert np.all(program.semaphores("gemm1").to_numpy() ==
                  100 * program.stages["gemm1"].posts_per_semaphore)
    graph.close()


def test_static_shared_memory_matches_the_driver():
    """annotate_resources reads nvJitLink's report; the driver's own attribute must agree
    (up to the 1 KiB per block the system reserves), or occupancy would be off."""
    from tilesync.lowering.ptx import validate_ptx
    from tilesync.runtime.module import load_ptx

    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    passes = ("sync-generate-policies", "sync-insert-post-wait")
    compiled = tilesync.compile(text, pipeline=default_pipeline(before=passes))
    info = validate_ptx(compiled.ptx, "sm_90")
    kernel = load_ptx(compiled.ptx, "smem").function("gemm1", compiled.kernels["gemm1"].params)
    print("nvJitLink", info.shared_bytes["gemm1"], "driver", kernel.shared_size_bytes)
    assert info.shared_bytes["gemm1"] - kernel.shared_size_bytes in (0, 1024)
    assert info.registers["gemm1"] == kernel.num_regs


def test_w_drops_the_wait_kernel_only_when_legal_and_the_program_stays_correct():
    """Two stages of 0.3 waves each (measured occupancy): W removes the wait-kernel, sync-verify
    accepts the wave-model guarantee, and 100 runs are correct."""
    from tilesync.api import annotate_resources, lower
    from tilesync.bench.stages import chain_module
    from tilesync.dialects import sync
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.program import StageProgram

    rows = 10  # 80 tiles of 1024 threads: 0.3 waves at 2 blocks per SM on 132 SMs
    module = chain_module(2, rows, "tile")
    lower(module, ["sync-generate-policies", "sync-insert-post-wait", "sync-insert-wait-kernel"])
    annotate_resources(module)
    lower(module, ["sync-annotate-occupancy", "sync-drop-wait-kernel", "sync-verify{sms=132}"])
    assert not any(isinstance(op, sync.WaitKernelOp) for op in module.walk())
    program = StageProgram(tilesync.compile(module))
    n = rows * 8 * 1024
    src = DeviceBuffer.from_numpy(np.linspace(-1, 1, n, dtype=np.float32))
    mid, dst = DeviceBuffer.empty(n, np.float32), DeviceBuffer.empty(n, np.float32)
    trace = [DeviceBuffer.zeros(2 * rows * 8, np.int64) for _ in range(2)]
    for _ in range(100):
        program.run({"s1": [src, mid, 10, 1000, trace[0]], "s2": [mid, dst, 10, 1000, trace[1]]})
    program.synchronize()
    want = np.linspace(-1, 1, n, dtype=np.float32).astype(np.float64)
    for _ in range(20):
        want = 0.999 * want + 0.001
    got = dst.to_numpy()
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5


def test_a_wait_kernel_dropped_on_guessed_registers_is_refused_at_load():
    """W dropped the wait-kernel on the 32-register default (2 blocks per SM); the compiled
    kernels use more (1 block per SM, 2.9 waves): loading the program refuses it by name
    instead of running a program that can deadlock."""
    from tilesync.api import lower, parse
    from tilesync.runtime.program import NoProgressOnDeviceError, StageProgram

    module = parse(resources.files("tilesync").joinpath("examples",
                                                        "gpt3_mlp_sync.mlir").read_text())
    lower(module, ["sync-generate-policies", "sync-insert-post-wait", "sync-insert-wait-kernel",
                   "sync-annotate-occupancy", "sync-drop-wait-kernel", "sync-verify{sms=132}"])
    compiled = tilesync.compile(module)  # `lower` keeps the pass's 32-register default
    assert "sync.wait_kernel" not in str(compiled.module)
    with pytest.raises(NoProgressOnDeviceError, match="@gemm2 waiting on @gemm1"):
        StageProgram(compiled)


@pytest.mark.parametrize("order", ["generated", "ready"])
def test_two_operands_with_a_derived_tile_order_100_runs(order):
    """O = (X Wp)(Y Wv) (examples/two_operands.mlir): `generated` gives @v_proj, whose
    columns @pv reads one after the other, a column-major order (`ready` gives @pv a table,
    its tiles as @p_proj's rows and @v_proj's columns finish); the tiles handed out in that
    order, every run's O right, without a memset between runs."""
    from tilesync.analysis.stage_graph import StageGraph
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.program import StageProgram

    passes = ("sync-generate-policies", f"sync-tile-order{{order={order}}}",
              "sync-insert-post-wait", "sync-insert-wait-kernel", "sync-verify")
    text = resources.files("tilesync").joinpath("examples", "two_operands.mlir").read_text()
    compiled = tilesync.compile(text, pipeline=default_pipeline(before=passes))
    ordered, kind = ("v_proj", "column_major") if order == "generated" else ("pv", "table")
    assert StageGraph.of(compiled.module).stages[ordered].order.kind.data == kind
    program = StageProgram(compiled)
    rng = np.random.default_rng(11)
    x, wp = rng.standard_normal((128, 256)), rng.standard_normal((256, 256)) / 16
    yy, wv = rng.standard_normal((256, 256)), rng.standard_normal((256, 128)) / 16
    want = (x @ wp) @ (yy @ wv)
    bufs = [DeviceBuffer.from_numpy(a.astype(np.float32)) for a in (x, wp, yy, wv)]
    p, v = DeviceBuffer.empty((128, 256), np.float32), DeviceBuffer.empty((256, 128), np.float32)
    o = DeviceBuffer.empty((128, 128), np.float32)
    args = {"p_proj": [bufs[0], bufs[1], p], "v_proj": [bufs[2], bufs[3], v],
            "pv": [p, v, o]}
    for run in range(100):
        if run % 25 == 0:
            program.synchronize()
            for buf in (p, v, o):
                buf.fill_bytes(0xFF)
        program.run(args)
        if run % 25 == 0 or run == 99:
            program.synchronize()
            got = o.to_numpy()
            assert np.all(np.isfinite(got)), f"run {run}: unwritten outputs"
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            assert err < 1e-4, f"run {run}: relative error {err}"
    assert program.epoch == 100
