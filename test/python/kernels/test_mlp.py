"""The MLP stage programs (kernels/mlp.py) and their benchmark (bench/mlp.py), without a GPU.

Both models at M = 256 and 2048 go through the sync passes and verify (RowSync generated from
the floordiv dependency, PDL or the wait-kernel as the guarantee); two of them are compiled all
the way to PTX that nvJitLink accepts (one compile per model, to keep CI short). The GPU test is
test_mlp_gpu.py.
"""

from __future__ import annotations

import pytest

from tilesync.api import lower
from tilesync.bench import mlp as bench
from tilesync.contract import EPOCH, TILE_COUNTER, Role
from tilesync.dialects import sync
from tilesync.kernels.mlp import fit_ordered, mlp_spec, mlp_stage_module, output_tile


def _host(module) -> dict:
    stages = {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}
    deps = [op for op in module.walk() if isinstance(op, sync.DependencyOp)]
    launches = [op for op in module.walk() if isinstance(op, sync.LaunchOp)]
    return {"stages": stages, "deps": deps, "launches": launches}


@pytest.mark.parametrize(("model", "M", "mma", "grids", "dep"), [
    # wgmma: BN1 = 256 (SwiGLU: 128 columns of H), BK2 = 64
    ("gpt3", 256, "wgmma", ((2, 24), (2, 96)), "(d0, s0 floordiv 4) forall s0 in [0, 96)"),
    ("gpt3", 2048, "wgmma", ((16, 24), (16, 48)), "(d0, s0 floordiv 4) forall s0 in [0, 96)"),
    ("llama", 256, "wgmma", ((2, 22), (2, 64)), "(d0, s0 floordiv 2) forall s0 in [0, 44)"),
    ("llama", 2048, "wgmma", ((16, 22), (16, 32)), "(d0, s0 floordiv 2) forall s0 in [0, 44)"),
    # mma.sync: BK2 = 32
    ("gpt3", 256, "sync", ((2, 96), (2, 192)), "(d0, s0 floordiv 2) forall s0 in [0, 192)"),
    ("gpt3", 2048, "sync", ((16, 48), (16, 96)), "(d0, s0 floordiv 4) forall s0 in [0, 192)"),
    ("llama", 256, "sync", ((2, 88), (2, 128)), "(d0, s0) forall s0 in [0, 88)"),
    ("llama", 2048, "sync", ((16, 88), (16, 64)), "(d0, s0) forall s0 in [0, 88)"),
])
def test_stage_module_shape(model, M, mma, grids, dep):
    spec = mlp_spec(model, M, mma=mma)
    assert (spec.cfg1.b_layout, spec.cfg2.b_layout) == (("col",) * 2 if mma == "wgmma"
                                                        else ("row",) * 2)
    module = mlp_stage_module(model, M, mma=mma)
    module.verify()
    host = _host(module)
    assert [tuple(s.grid_shape) for s in host["stages"].values()] == list(grids)
    for stage, cfg in zip(host["stages"].values(), (spec.cfg1, spec.cfg2), strict=True):
        assert tuple(stage.block_shape) == cfg.block and tuple(stage.tile_shape) == output_tile(cfg)
    assert dep in str(host["deps"][0]) and "operand 0" in str(host["deps"][0])
    first, second = host["launches"]
    assert first.stage.root_reference.data == "gemm1" and first.priority.value.data < 0
    assert second.stream.value.data == 1
    gmods = [op.sym_name.data for op in module.ops if op.name == "gpu.module"]
    assert gmods == ["gemm1_module", "gemm2_module"]


@pytest.mark.parametrize(("model", "M"), [("gpt3", 256), ("llama", 2048)])
def test_sync_passes_verify(model, M):
    module = mlp_stage_module(model, M)
    lower(module, bench.mode_passes("row+pdl"))
    host = _host(module)
    producer, consumer = host["stages"]["gemm1"], host["stages"]["gemm2"]
    assert producer.policy.kind == "RowSync"
    assert producer.attributes["num_semaphores"].value.data == producer.grid_shape[0]
    assert "programmatic dependent launch" in consumer.attributes["sync.progress"].data
    assert consumer.attributes["sync.verified"].data == "proved"


@pytest.mark.parametrize(("model", "M", "mode", "policy", "progress"), [
    ("gpt3", 2048, "tile+order+pdl", "TileSync", "programmatic dependent launch"),
    ("llama", 256, "row+wait_kernel", "RowSync", "wait-kernel"),
])
def test_compiles_to_valid_ptx(model, M, mode, policy, progress):
    entry = bench.compile_job((model, M, mode, False), "sm_90")  # validates with nvJitLink
    assert entry["target"] == "sm_90a"  # the default configs multiply with wgmma
    assert set(entry["ptx_by_module"]) == {"gemm1_module", "gemm2_module"}
    producer, consumer = entry["ptx_by_module"]["gemm1_module"], entry["ptx_by_module"][
        "gemm2_module"]
    assert "wgmma.mma_async.sync.aligned.m64n256k16" in producer
    assert "wgmma.mma_async.sync.aligned" in consumer
    # post: fence then a relaxed add; wait: acquire loads with backoff and a timeout trap
    assert "fence.acq_rel.gpu" in producer and "red.relaxed.gpu.global.add.u32" in producer
    assert "ld.acquire.gpu" in consumer and "nanosleep" in consumer and "trap" in consumer
    assert ("griddepcontrol.launch_dependents" in producer) == mode.endswith("pdl")
    assert set(entry["resources"]) >= {"gemm1", "gemm2"}
    for registers, shared in entry["resources"].values():
        assert 0 < registers <= 255
        assert shared > 48 * 1024  # static + the dynamic stages
    host = entry["host"]
    assert f"#sync.policy<{policy}" in host and progress in host
    sigs = entry["kernels"]
    assert sigs["gemm1"].user_params == ("ptr",) * 3 and sigs["gemm2"].user_params == ("ptr",) * 3
    assert Role.semaphores("gemm1") in sigs["gemm2"].sync_args
    if "order" in mode:
        assert TILE_COUNTER in sigs["gemm2"].sync_args
        assert "#sync.order<row_major>" in host


def test_specs_and_ordered_fit():
    with pytest.raises(ValueError, match="BM2 a multiple of BM1"):
        mlp_spec("gpt3", 256, cfg2=((64, 128, 64), (4, 1), 4))
    spec = mlp_spec("gpt3", 512, mma="sync")
    assert spec.ratio == 2 and spec.k_steps == 192 and spec.hidden == 6144
    fitted = fit_ordered(spec)
    # 48 KB of stages leave no static room for the tile slot: the stages go dynamic
    assert fitted.cfg1.dynamic_shared and fitted.cfg1.stages == spec.cfg1.stages
    assert fitted.cfg1.dynamic_shared_bytes == spec.cfg1.shared_bytes + 112
    assert spec.cfg1.dynamic_shared_bytes == 0
    small = mlp_spec("llama", 64)
    assert small.cfg1.tile[0] == small.cfg2.tile[0] == 64
    roomy = mlp_spec("llama", 256, ((128, 64, 32), (2, 2), 3), ((128, 64, 32), (2, 2), 3),
                     mma="sync")
    assert fit_ordered(roomy) is roomy
    wgmma = mlp_spec("gpt3", 512)  # its stages are in dynamic shared memory already
    assert wgmma.cfg1.dynamic_shared_bytes > 0 and fit_ordered(wgmma) is wgmma
    assert "stream_sync@order_cfg" not in bench.modes_for("gpt3", 512)
    with pytest.raises(ValueError, match="mma must be one of"):
        mlp_spec("gpt3", 512, mma="tf32")


def test_wave_prediction_and_table():
    spec = mlp_spec("gpt3", 2048, mma="sync")
    pred = bench.wave_prediction(spec, {"gemm1": (241, 49152), "gemm2": (238, 49152)}, 132)
    assert [s["blocks"] for s in pred["stages"]] == [768, 1536]
    assert pred["stages"][0]["blocks_per_sm"] == 2  # 241 registers x 128 threads
    assert pred["speedup"] >= 1.0
    timing = {"median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1, "rel_error": 1e-3}
    modes = {"stream_sync": timing, "row+pdl": {**timing, "median_ms": 0.8, "policy": "RowSync"},
             "stream_sync@order_cfg": {**timing, "median_ms": 1.2},
             "row+order+pdl": {**timing, "median_ms": 0.6},
             "tile+pdl": {"error": "AssertionError: wrong"},
             "torch_eager": {**timing, "median_ms": 0.5}}
    speed = bench.speedups(modes)
    assert speed["row+pdl"] == pytest.approx(1.25) and speed["row+order+pdl"] == pytest.approx(2)
    assert "tile+pdl" not in speed
    result = {"library": "torch x", "reps": 3, "warmup": 1, "sms": 132, "programs_compiled": 1,
              "compile_seconds": 1.0, "programs_cached": 0, "seconds": 2.0,
              "rates": {"peak_tflops": 800.0, "copy_gbps": 3000.0},
              "rows": [{"model": "gpt3", "M": 2048, "configs": spec.label, "ratio": 4,
                        "flops": spec.flops, "wave_model": pred, "order_configs": "x",
                        "floor_ms": 0.75, "wave_model_order": pred, "modes": modes,
                        "speedup": speed, "sized_copy": {"median_ms": 0.8125}}]}
    modes["torch_graph"] = {**timing, "median_ms": 0.45, "layouts": "W1 N x K, W2 K x N"}
    table = bench.mlp_table(result)
    assert "row+order+pdl" in table and "FAILED: AssertionError: wrong" in table
    assert "1.250" in table and "stream_sync@order_cfg" in table
    assert "at 800 TFLOP/s" in table and "at 3000 GB/s" in table
    assert any(line.split()[:2] == ["floor", "0.7500"] for line in table.splitlines())
    assert any(line.split()[:5] == ["copy", "of", "its", "bytes", "0.8125"]
               for line in table.splitlines())
    assert any(line.split()[0] == "torch_graph" and line.endswith("W1 N x K, W2 K x N")
               for line in table.splitlines())


def test_the_floor_is_the_longer_of_compute_and_memory():
    """GPT-3 at M = 2048 is compute-bound (2 M N K twice over the peak); LLaMA at M = 1 reads
    its weights (8192 x 5632 + 2816 x 8192 halves) at the copy bandwidth."""
    rates = {"peak_tflops": 1000.0, "copy_gbps": 1000.0}
    gpt3 = mlp_spec("gpt3", 2048)
    assert bench.floor_ms(gpt3, rates) == pytest.approx(gpt3.flops / 1e15 * 1e3)
    llama = mlp_spec("llama", 1, mma="sync")
    weights = 8192 * 5632 + 2816 * 8192
    assert bench.floor_ms(llama, rates) == pytest.approx(2 * weights / 1e12 * 1e3, rel=0.01)
    # X (1 x 8192), W1, H written and read (1 x 2816 twice), W2, Y (1 x 8192): fp16
    assert bench.floor_bytes(llama) == 2 * (8192 + weights + 2 * 2816 + 8192)


@pytest.mark.parametrize(("model", "M", "mode", "policy"), [
    ("gpt3", 512, "tma:tile+pdl", "TileSync"),
    ("llama", 1024, "tma:row+wait_kernel", "RowSync"),
    ("llama", 64, "tma:tile+pdl", "TileSync"),  # 32 columns of H a GEMM1 tile: two a k-step
])
def test_tma_modes_verify_and_compile(model, M, mode, policy):
    """The MLP on the warp-specialized TMA kernels: one tile a block, GEMM1 storing H with TMA
    copies (its posts wait for their writes), GEMM2's producer thread waiting before its
    copies of H; sync-verify proves it, nvJitLink accepts it, and the operands are maps."""
    spec = bench.mode_spec(model, M, mode)
    for cfg in (spec.cfg1, spec.cfg2):
        assert cfg.warp_specialized and not cfg.persistent and cfg.grid[:2] == cfg.tile_grid
    assert spec.cfg1.tma_store
    entry = bench.compile_job((model, M, mode, False), "sm_90")
    producer = entry["ptx_by_module"]["gemm1_module"]
    consumer = entry["ptx_by_module"]["gemm2_module"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in producer
    assert "cp.async.bulk.wait_group 0;" in producer and "red.relaxed.gpu.global.add" in producer
    assert "fence.proxy.async.global;" in consumer and "ld.acquire.gpu" in consumer
    host = entry["host"]
    assert f"#sync.policy<{policy}" in host and 'sync.verified = "proved"' in host
    sigs = entry["kernels"]
    assert sigs["gemm1"].user_params == ("tmap",) * 3 == sigs["gemm2"].user_params
    with pytest.raises(ValueError, match="M >= 64"):
        mlp_spec(model, 16, mma="tma")


@pytest.mark.parametrize(("model", "M", "mode", "policy"), [
    ("gpt3", 512, "tma:row+one_launch", "RowSync"),
    ("llama", 512, "tma:tile+one_launch", "TileSync"),  # a k-step may read two GEMM1 tiles
])
def test_one_launch_modes_run_both_gemms_in_one_kernel(model, M, mode, policy):
    """cuSync in one launch: GEMM2's launch joins GEMM1's (fused), sync-verify proves it by the
    launch's tickets, and one kernel of both GEMMs (their tensor maps in stage order, the
    semaphores, the epoch and the ticket counter once; blocks of the larger GEMM's threads) is
    what nvJitLink accepts, its dynamic shared memory the larger GEMM's, not their sum."""
    spec = bench.mode_spec(model, M, mode)
    assert spec == bench.mode_spec(model, M, "tma:stream_sync")  # the same kernels
    entry = bench.compile_job((model, M, mode, False), "sm_90")
    host = entry["host"]
    assert f"#sync.policy<{policy}" in host and 'sync.verified = "proved"' in host
    assert "@gemm1: one launch, the producer's tickets first" in host
    assert "sync.launch @gemm1 {sync.one_launch_kernel = @gemm1_launch_module::@gemm1_launch" \
        in host and "sync.launch @gemm2 {fused = true}" in host
    sigs = entry["kernels"]
    fused = sigs["gemm1_launch"]
    assert fused.user_params == ("tmap",) * 6
    assert fused.sync_args == (Role.semaphores("gemm1"), EPOCH, TILE_COUNTER)
    largest = max(sigs["gemm1"].dynamic_shared_bytes, sigs["gemm2"].dynamic_shared_bytes)
    assert fused.dynamic_shared_bytes <= largest + 1024
    ptx = entry["ptx_by_module"]["gemm1_launch_module"]
    assert ptx.count(".entry") == 1
    threads = max(spec.cfg1.threads, spec.cfg2.threads)
    assert f".maxntid {threads}, 1, 1" in ptx
    # not by default (never faster than PDL on the MLP), and never where the GEMMs' blocks
    # differ (the TMA GEMMs at M = 256)
    assert not any(m.endswith("one_launch") for m in bench.modes_for(model, M))
    assert not any(m.endswith("one_launch") and m.startswith(bench.TMA)
                   for m in bench.modes_for(model, 256, tuple(bench.MODES)))
    # the stage kernels' bodies moved: they compile to a lone return
    assert "cp.async.bulk.tensor" not in entry["ptx_by_module"]["gemm1_module"]
    # the stages' resources are their launch's kernel's
    assert entry["resources"]["gemm1"] == entry["resources"]["gemm1_launch"]


def test_one_launch_of_the_mlp_runs_clean_in_the_simulator():
    """The one-launch MLP in one grid whose tickets hand out GEMM1's tiles first (GEMM1's
    blocks following their kernel; GEMM2's producer thread waits alone, which the simulator
    does not follow: its blocks read their declared tiles after their waits): no early read, no
    deadlock, under the adversarial and random schedulers, on a machine with room for a third
    of its blocks."""
    from tilesync.analysis.simulator import SimMachine, program_from_ir, simulate

    module = bench.stage_module("gpt3", 512, "tma:row+one_launch")
    lower(module, bench.MODES["tma:row+one_launch"])
    program = program_from_ir(module, follow_kernels=True)
    assert set(program.unfollowed) == {"gemm2"}
    for scheduler, seed in (("adversarial", 0), ("random", 1), ("random", 2)):
        result = simulate(program, SimMachine(sms=64), scheduler, seed=seed, launches=2)
        result.check()
        assert result.guarantees == {("gemm1", "gemm2"): "one-launch"}


def test_the_persistent_mode_runs_the_tma_gemms_without_hooks_in_stream_order():
    """tma:persistent: the same tiles as the TMA modes, without sync hooks, so each GEMM is a
    persistent grid (at most a block an SM, here 132 of GEMM1's 256 tiles); no dependency and
    no pass fills anything: GEMM2 starts once GEMM1 has ended on their one stream. The kernels
    take no parameter beyond their tensor maps, and nvJitLink accepts them."""
    spec = bench.mode_spec("gpt3", 1024, bench.PERSISTENT)
    hooked = bench.mode_spec("gpt3", 1024, "tma:stream_sync")
    for cfg, same in zip((spec.cfg1, spec.cfg2), (hooked.cfg1, hooked.cfg2), strict=True):
        assert cfg.persistent and not cfg.sync_hooks and cfg.tile == same.tile
        assert cfg.grid[:2] == (132, 1) and cfg.cluster_tiles > 132
    assert bench.baseline_mode(bench.PERSISTENT, {"tma:stream_sync"}) == bench.PERSISTENT
    host = _host(bench.stage_module("gpt3", 1024, bench.PERSISTENT))
    assert not host["deps"]
    assert [s.grid_shape for s in host["stages"].values()] == [(132, 1), (132, 1)]
    assert [(op.stream.value.data, op.pdl is not None and bool(op.pdl.value.data)) for op in
            host["launches"]] == [(0, False), (0, False)]
    entry = bench.compile_job(("gpt3", 1024, bench.PERSISTENT, False), "sm_90")
    assert "sync.dependency" not in entry["host"]
    sigs = entry["kernels"]
    assert sigs["gemm1"].user_params == ("tmap",) * 3 == sigs["gemm2"].user_params
    assert sigs["gemm1"].params == sigs["gemm1"].user_params  # no sync parameters appended


def test_the_persistent_mode_runs_a_tall_gemm1_where_the_wave_model_prefers_it():
    """LLaMA's fc1 from M = 1024 as 256 x 176 tiles (two warpgroups of 128 rows) in the
    persistent mode, which has no row dependency to keep BM2 a multiple of BM1; at M = 512
    (64 tall tiles for 132 SMs) and with the sweep's own tiles the mode keeps its 128-row
    tile; the hooked modes never take one (sync hooks refuse tall tiles)."""
    for M, tall in ((512, False), (1024, True), (2048, True)):
        spec = bench.mode_spec("llama", M, bench.PERSISTENT)
        hooked = bench.mode_spec("llama", M, "tma:stream_sync")
        assert spec.cfg1.tall == tall and not hooked.cfg1.tall
        assert spec.cfg1.tile == ((256, 176, 64) if tall else hooked.cfg1.tile)
        assert spec.cfg2.tile == hooked.cfg2.tile and not spec.cfg2.tall
    swept = bench.mode_spec("llama", 2048, bench.PERSISTENT, tiles=(128, 176, 128, 256))
    assert swept.cfg1.tile == (128, 176, 64)
    host = _host(bench.stage_module("llama", 2048, bench.PERSISTENT))
    assert not host["deps"]


def test_a_k_step_straddling_two_gemm1_tiles_waits_for_both():
    """LLaMA's TMA GEMM1 at M = 512 writes 88 columns of H a tile (BN1 = 176 of gate|up), which
    GEMM2's 64-column k-steps do not divide: k-step 1 reads H columns 64..127, written by tile
    columns 0 and 1. The dependency names both; sync-verify proves it under TileSync, and
    refuses the map of a k-step's first column alone (k-step 1 would not wait for tile 1)."""
    from xdsl.ir.affine import AffineExpr, AffineMap
    from xdsl.rewriter import Rewriter

    spec = mlp_spec("llama", 512, mma="tma")
    assert spec.cfg1.out_tile_cols == 88 and spec.ratio is None
    module = mlp_stage_module(spec=spec)
    (dep,) = _host(module)["deps"]
    assert "(d0, (s0 * 64 + s1 * 63) floordiv 88) forall s0 in [0, 44), s1 in [0, 2)" in str(dep)
    lower(module, bench.mode_passes("tma:tile+pdl"))
    assert _host(module)["stages"]["gemm2"].attributes["sync.verified"].data == "proved"

    module = mlp_stage_module(spec=spec)
    (dep,) = _host(module)["deps"]
    first_column = (AffineExpr.symbol(0) * 64) // 88
    Rewriter.replace_op(dep, sync.DependencyOp(
        "gemm1", "gemm2", 0, AffineMap(2, 1, (AffineExpr.dimension(0), first_column)),
        [(0, spec.k_steps)]))
    with pytest.raises(Exception, match=r"producer tile \(0, 1\) of @gemm1 .* no wait"):
        lower(module, bench.mode_passes("tma:tile+pdl"))


def test_tma_tiles_take_the_table_for_the_bench_models_and_the_wave_model_elsewhere():
    from tilesync.kernels.mlp import MODELS, default_configs, tma_tiles

    for model, shape in MODELS.items():
        for M in (256, 1024):
            (t1, _, _), (t2, _, _) = default_configs(model, M, "tma")
            assert tma_tiles(M, shape["K1"], shape["N1"], shape["H"], shape["K1"],
                             shape["epilogue"]) == (t1[:2], t2[:2])
    # a LlamaMLP of width 1024: GEMM2 (256 x 1024 x 2816) in 64-row tiles, so GEMM1's must be
    # 64 rows too, and its SwiGLU tile at least one 64-column k-step of H wide
    (bm1, bn1), (bm2, _) = tma_tiles(256, 1024, 5632, 2816, 1024, "swiglu")
    assert bm2 % bm1 == 0 and bn1 // 2 >= 64 and (bm1, bn1, bm2) == (64, 176, 64)


@pytest.mark.parametrize("M", [64, 100, 150, 192, 320, 448, 960])
@pytest.mark.parametrize(("k1", "n1", "hidden", "epilogue"), [
    (8192, 64, 64, "gelu"), (12288, 6144, 6144, "bias_gelu"), (4096, 22016, 11008, "swiglu"),
    (12288, 6144, 6144, "gelu"), (8192, 5632, 2816, "swiglu"),  # MODELS: the table's tiles
])
def test_tma_tiles_give_gemm2_row_tiles_that_cover_whole_gemm1_row_tiles(M, k1, n1, hidden,
                                                                         epilogue):
    """GEMM2's row tile d0 waits on GEMM1 row tiles Q d0 .. Q d0 + Q - 1: all inside GEMM1's
    grid (at 192 rows BM1 = 64, BM2 = 128 made the second wait on row tile 3 of three)."""
    from tilesync.kernels.mlp import rows_cover_whole_tiles, tma_tiles

    (bm1, _), (bm2, _) = tma_tiles(M, k1, n1, hidden, k1, epilogue)
    assert rows_cover_whole_tiles(M, bm1, bm2)
    assert -(-M // bm1) >= (-(-M // bm2)) * (bm2 // bm1)


def test_mlp_spec_refuses_row_tiles_outside_gemm1s_grid():
    from tilesync.kernels.mlp import MODELS, mlp_spec, tma_tile_configs

    tiles = tma_tile_configs((64, 192, 128, 192), MODELS["gpt3"]["epilogue"])
    mlp_spec("gpt3", 256, *tiles, mma="tma")  # four GEMM1 row tiles, two per GEMM2 row tile
    with pytest.raises(ValueError, match=r"cover whole GEMM1 row tiles .* BM1 64, BM2 128 at "
                                         r"M = 192"):
        mlp_spec("gpt3", 192, *tiles, mma="tma")


def test_a_sweep_job_runs_the_tma_mlp_on_the_tiles_it_names():
    """bench/mlp_sweep's jobs carry (BM1, BN1, BM2, BN2): the program is built, proved and
    compiled on those tiles, and its cache key differs from the table's program."""
    from tilesync.bench.mlp_sweep import candidates

    tiles = (64, 176, 128, 256)
    assert tiles in candidates("llama", 512)
    assert all(bm2 % bm1 == 0 for bm1, _, bm2, _ in candidates("gpt3", 256))
    spec = bench.mode_spec("llama", 512, "tma:row+pdl", tiles)
    assert (spec.cfg1.tile[:2], spec.cfg2.tile[:2]) == ((64, 176), (128, 256))
    job = ("llama", 512, "tma:row+pdl", False, tiles)
    assert bench._job_key(job, "sm_90a") != bench._job_key(job[:4], "sm_90a")
    entry = bench.compile_job(job, "sm_90")
    assert 'sync.verified = "proved"' in entry["host"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in entry["ptx_by_module"]["gemm1_module"]


def test_the_tma_mlp_stages_its_output_in_fewer_boxes_where_that_buys_a_stage():
    """GPT-3 at M = 512 (128 x 192 tiles): each GEMM stages one 64-column box of its output
    at a time and takes a fifth stage; a sweep's tiles without DEEP keep the four stages
    beside the whole tile's buffer, and with DEEP they equal the default; graph-to-stages
    builds the same GEMMs."""
    from tilesync.bench.mlp_sweep import deeper_candidates, table_tiles
    from tilesync.kernels.mlp import mlp_spec

    spec = mlp_spec("gpt3", 512, mma="tma")
    assert [(c.stages, c.staging_boxes) for c in (spec.cfg1, spec.cfg2)] == [(5, 1), (5, 1)]
    whole = mlp_spec("gpt3", 512, mma="tma", deeper=False, w1_layout="col", w2_layout="col")
    assert [(c.stages, c.staging_boxes) for c in (whole.cfg1, whole.cfg2)] == [(4, 0), (4, 0)]
    tiles = table_tiles("gpt3", 512)
    assert bench.mode_spec("gpt3", 512, "tma:row+pdl", tiles) == whole
    assert bench.mode_spec("gpt3", 512, "tma:row+pdl",
                           (*tiles, bench.DEEP, bench.W1_KXN, bench.W2_KXN)) == spec
    assert deeper_candidates("gpt3", 512, [tiles]) == [tiles, (*tiles, bench.DEEP)]
    # LLaMA's 64 x 176 | 128 x 128 tiles at M = 256: no smaller buffer buys a stage
    assert table_tiles("llama", 256) == (64, 176, 128, 128)
    assert deeper_candidates("llama", 256, [table_tiles("llama", 256)]) == \
        [table_tiles("llama", 256)]


def test_a_k_step_may_read_two_tiles_narrower_than_itself_but_not_three():
    from tilesync.kernels.mlp import k_step_reads_two_tiles_at_most

    assert k_step_reads_two_tiles_at_most(32, 64)  # k-steps start on tile starts: two tiles
    assert k_step_reads_two_tiles_at_most(48, 64)  # starts 0, 16, 32 into a tile: two
    assert k_step_reads_two_tiles_at_most(88, 64)  # LLaMA's 128 x 176 SwiGLU tile
    assert not k_step_reads_two_tiles_at_most(40, 64)  # a start 32 in: 8 + 40 + 16 columns
    assert not k_step_reads_two_tiles_at_most(16, 64)  # four tiles a k-step
    with pytest.raises(ValueError, match="more than two GEMM1 tiles"):
        mlp_spec("llama", 64, ((64, 32, 64), (4, 1), 8), None, mma="tma")
    # against the tiles each k-step's columns fall in, counted one by one
    for bk in (32, 64, 128):
        for width in range(8, 264, 8):
            most = max(len({c // width for c in range(s * bk, s * bk + bk)})
                       for s in range(width))  # k-step starts repeat within `width` steps
            assert k_step_reads_two_tiles_at_most(width, bk) == (most <= 2), (width, bk)


def test_the_tma_gemms_read_their_weights_k_by_n_where_told():
    """mlp_spec(w1_layout=, w2_layout='row'): a TMA GEMM reads its weight as K x N (its wgmmas
    transposed, B's k-tile in 64-column boxes); the default where its BN allows (W1_K_BY_N,
    W2_K_BY_N), N x K where not (LLaMA's 176-wide GEMM1); a sweep's W1_KXN / W2_KXN item asks
    for it where the GEMM's BN allows; the other MMAs refuse it; the program is proved and
    compiles."""
    from tilesync.bench.mlp_sweep import kxn_candidates, table_tiles
    from tilesync.kernels.mlp import mlp_spec

    spec = mlp_spec("gpt3", 256, mma="tma", w1_layout="col", w2_layout="row")
    assert (spec.cfg1.b_layout, spec.cfg2.b_layout) == ("col", "row")
    both = mlp_spec("gpt3", 256, mma="tma")  # the default (W1_K_BY_N, W2_K_BY_N)
    assert (both.cfg1.b_layout, both.cfg2.b_layout) == ("row", "row")
    assert mlp_spec("gpt3", 256, mma="tma", w1_layout="row", w2_layout="col").cfg2.b_layout \
        == "col"
    assert mlp_spec("gpt3", 256).cfg2.b_layout == "col"  # the wgmma kernels read N x K
    # LLaMA's GEMM1 at M = 256 is 176 wide: no 64-column boxes, N x K whatever the default
    assert mlp_spec("llama", 256, mma="tma").cfg1.b_layout == "col"
    with pytest.raises(ValueError, match="boxes of 64"):
        mlp_spec("llama", 256, mma="tma", w1_layout="row")
    # W2 is H x N2 (6144 x 12288), loaded in (BK, 64) boxes; W1 stays N1 x K1, in (BN1, BK)
    assert (spec.cfg2.tensor_map_shapes["B"], spec.cfg2.tensor_map_boxes["B"]) == \
        ((6144, 12288), (64, 64))
    assert spec.cfg1.tensor_map_boxes["B"] == (192, 64)
    # and K x N, W1 is K1 x N1 (12288 x 6144) in (BK, 64) boxes
    assert (both.cfg1.tensor_map_shapes["B"], both.cfg1.tensor_map_boxes["B"]) == \
        ((12288, 6144), (64, 64))
    assert spec.label.count("B-KxN") == 1 and both.label.count("B-KxN") == 2
    for name in ("w1_layout", "w2_layout"):
        for mma, layout in (("wgmma", "row"), ("tma", "n-major")):
            with pytest.raises(ValueError, match=f"{name} must be"):
                mlp_spec("gpt3", 256, mma=mma, **{name: layout})
    tiles = table_tiles("llama", 256)
    assert kxn_candidates("llama", 256, [tiles], bench.W2_KXN) == [tiles, (*tiles, bench.W2_KXN)]
    assert kxn_candidates("llama", 256, [tiles], bench.W1_KXN) == [tiles]  # 176 wide
    assert bench.mode_spec("llama", 256, "tma:tile+pdl", (*tiles, bench.W2_KXN)).cfg2.b_layout \
        == "row"
    gpt3 = table_tiles("gpt3", 256)
    assert bench.mode_spec("gpt3", 256, "tma:tile+pdl", (*gpt3, bench.W1_KXN)).cfg1.b_layout \
        == "row"
    entry = bench.compile_job(("gpt3", 256, "tma:tile+pdl", False, (*gpt3, bench.W1_KXN)),
                              "sm_90")
    assert 'sync.verified = "proved"' in entry["host"]
    # GEMM1's wgmmas take B transposed (the last immediate, imm-trans-b, 1), GEMM2's do not
    def trans_b(module):
        return {line.rstrip().rstrip(";").rsplit(",", 1)[1].strip()
                for line in entry["ptx_by_module"][module].splitlines()
                if "wgmma.mma_async" in line}
    assert (trans_b("gemm1_module"), trans_b("gemm2_module")) == ({"1"}, {"0"})


def test_torch_rows_take_cublas_faster_weight_layouts():
    """The bench's torch rows time torch's MLP with W1 and W2 in each layout (K x N as
    `x @ w`, N x K as nn.Linear keeps them) and keep, per mode, the fastest, naming it and
    every layout's median; the N x K copies are freed after; other records pass through."""
    times = {("col", "col"): (0.30, 0.20), ("col", "row"): (0.25, 0.19),
             ("row", "col"): (0.28, 0.22), ("row", "row"): (0.26, 0.21)}
    records = {"tma:row+pdl": {"median_ms": 0.1}, "torch_graph@col,col": {"error": "capture"}}
    for layouts, (eager, graph) in times.items():
        tag = "@" + ",".join(layouts)
        records["torch_eager" + tag] = {"median_ms": eager}
        if layouts != ("col", "col"):
            records["torch_graph" + tag] = {"median_ms": graph}
    assert sorted(times) == sorted(bench.TORCH_LAYOUTS)

    class Data:
        dropped = False

        def drop_torch_layouts(self):
            self.dropped = True

    data = Data()
    out = bench.fastest_layouts(records, data)
    assert data.dropped and set(out) == {"tma:row+pdl", "torch_eager", "torch_graph"}
    assert out["torch_eager"]["median_ms"] == 0.25
    assert out["torch_eager"]["layouts"] == "W1 N x K, W2 K x N"
    assert out["torch_graph"]["median_ms"] == 0.19
    assert out["torch_graph"]["by_layouts"] == {"W1 N x K, W2 K x N": 0.19,
                                               "W1 K x N, W2 N x K": 0.22,
                                               "W1 K x N, W2 K x N": 0.21}
    only_failed = bench.fastest_layouts({"torch_graph@row,row": {"error": "x"}}, data)
    assert only_failed == {"torch_graph": {"error": "x"}}


class _FakeForm:
    """A TimedForm's callables over a shared log; its check fails from turn `fails_at`."""

    def __init__(self, name, log, clock, fails_at=None):
        self.name, self.log, self.clock, self.fails_at = name, log, clock, fails_at
        self.turn = -1

    def form(self):
        return bench.TimedForm(self.run, lambda s, e: e - s, lambda: None, None, self.before,
                               self.check, self.after)

    def after(self):
        self.log.append(("after", self.name))

    def run(self):
        self.clock[0] += 1
        self.log.append(("run", self.name))
        return 0.0, self.clock[0]  # elapsed: how many runs came before this one, all forms

    def before(self):
        self.turn += 1
        self.log.append(("before", self.name))

    def check(self):
        self.log.append(("check", self.name))
        if self.fails_at is not None and self.turn >= self.fails_at:
            raise AssertionError(f"{self.name}: wrong")
        return 0.001 * (self.turn + 1)


def test_forms_take_turns_checked_before_and_after_each(monkeypatch):
    """time_in_turns: the forms run in turns (A's runs, B's, A's, ...), each turn behind a
    hold, warm-up runs uncounted in front of the first turn and one in front of every later
    one, reps samples in all; outputs readied before and checked after every turn (rel_error
    the worst), `after` run after each turn, its failing one too; a form whose check raises
    leaves the turns with its error, the others go on; time_forms checks each form once first
    (readied and `after` too) and reports one failing that without timing it."""
    import tilesync.harness.timing as timing

    holds = []
    monkeypatch.setattr(timing, "hold_stream", lambda ns, stream=None: holds.append(ns))
    monkeypatch.setattr(bench, "hold_ns", lambda runs, enqueue, synchronize: runs)
    log, clock = [], [0]
    a, b = _FakeForm("a", log, clock), _FakeForm("b", log, clock, fails_at=2)
    out = bench.time_in_turns({"a": a.form(), "b": b.form()}, warmup=3, reps=10, turns=5)
    assert out["a"]["reps"] == 10 and out["a"]["turns"] == 5
    assert out["a"]["rel_error"] == pytest.approx(0.005)
    assert out["b"]["error"] == "AssertionError: b: wrong" and "median_ms" not in out["b"]
    assert isinstance(out["b"]["exception"], AssertionError)
    # turn 0: 3 + 2 runs each; later turns 1 + 2; b checked wrong in its third turn
    assert holds == [5, 5, 3, 3, 3, 3, 3, 3]
    firsts = [name for kind, name in log if kind == "before"]
    assert firsts == ["a", "b", "a", "b", "a", "b", "a", "a"]
    runs_of_a = [i for i, (kind, name) in enumerate(log) if (kind, name) == ("run", "a")]
    runs_of_b = [i for i, (kind, name) in enumerate(log) if (kind, name) == ("run", "b")]
    assert runs_of_a[5] > runs_of_b[0]  # a's second turn after b's first
    # a's counted samples: runs 4-5 of its first turn (clock 4, 5), then 2 of 3 each turn
    assert out["a"]["samples_ms"][:2] == [4.0, 5.0]
    # every turn ends in `after`, right after its check (b's failing third turn too)
    ends = [(kind, name) for kind, name in log if kind in ("check", "after")]
    assert ends == [(kind, name) for name in ["a", "b", "a", "b", "a", "b", "a", "a"]
                    for kind in ("check", "after")]

    log.clear()
    c, d = _FakeForm("c", log, clock, fails_at=0), _FakeForm("d", log, clock)
    records = bench.time_forms({"c": c.form(), "d": d.form()}, warmup=1, reps=4, turns=2)
    assert records["c"] == {"error": "AssertionError: c: wrong"}
    assert log[:4] == [("before", "c"), ("run", "c"), ("check", "c"), ("after", "c")]
    assert records["d"]["reps"] == 4 and "exception" not in records["d"]
    assert not [1 for kind, name in log if (kind, name) == ("run", "c")][1:]  # its first only


@pytest.mark.parametrize("tiles", ["a,b,c,d", "64,192,128"])
def test_the_sweep_refuses_malformed_tiles_before_looking_for_a_gpu(tiles, capsys):
    from tilesync.bench import mlp_sweep

    with pytest.raises(SystemExit) as exit_:
        mlp_sweep.main(["--tiles", tiles])
    assert exit_.value.code == 2
    assert "--tiles takes BM1,BN1,BM2,BN2" in capsys.readouterr().err
