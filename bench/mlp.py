"""`tilesync bench mlp`: the GPT-3 and LLaMA MLPs (two tensor-core GEMMs, kernels/mlp.py)
synchronized tile by tile, against stream sync of the same kernels and against cuBLAS.

    mlp_benchmarks(models=("gpt3", "llama"), ms=(64, 256, 512, 1024, 2048), warmup=5, reps=30)
        -> dict                                    (the CLI adds "device" and writes the JSON)
    mlp_table(result) -> str

Per (model, M), the modes (MODES) are one stage program each, compiled from the same module:

* stream_sync     both GEMMs on one stream, one after the other; the same kernels as
                  row+* (their waits find the semaphores already posted);
* row+pdl         RowSync (the generated policy: one semaphore per row of H, posted by each
                  of the row's GEMM1 tiles; GEMM2's first k-step waits for the whole row) and
                  programmatic dependent launch (GEMM2 on GEMM1's stream);
* row+order+pdl   the same with cuSync's generated tile order (sync-tile-order{order=
                  generated}: tiles from a counter, rows of H finish one after another);
* tile+pdl        TileSync (one semaphore per GEMM1 tile; GEMM2 waits before each k-step for
                  the tile of H that k-step reads), PDL;
* tile+order+pdl  the same with the generated order;
* row+wait_kernel cuSync's wait-kernel instead of PDL (consumer on a second stream);
* stream_sync@order_cfg  stream sync of the kernels the ordered modes run: an ordered
                  sync.tile needs a 4-byte shared slot, and the best configs use exactly the
                  48 KB of static shared memory, so the ordered modes keep their stages in
                  dynamic shared memory (kernels/mlp.py: fit_ordered) and are compared with
                  this baseline;
* tma:stream_sync, tma:row+pdl, tma:tile+pdl, tma:row+wait_kernel  the same on the
                  warp-specialized TMA kernels (kernels/gemm_tma.py; GEMM1 stores H with TMA
                  copies and posts a tile once they have landed; GEMM2's producer thread waits
                  before its copies of H), launched one block a tile; against tma:stream_sync;
* row+one_launch, tile+one_launch, tile+R+one_launch  cuSync in one launch (sync-one-launch,
                  sync-fuse-launches): one grid of both GEMMs' blocks, each taking a ticket of
                  one counter, GEMM1's tiles first, so a waiting GEMM2 block never holds a slot
                  a GEMM1 tile needs; no launch gap, and GEMM2's first tiles fill the SMs
                  GEMM1's last partial wave leaves idle; RowSync or TileSync, with R (W2's
                  copy of a k-step before the wait for its tile of H) or not (also as tma:
                  modes); only where both GEMMs' blocks have one size (not the TMA GEMMs at
                  M = 256: GEMM1's 256-thread code in 384-thread blocks ran at 0.57-0.85 of
                  stream sync on an H200, bench/results/mlp-one-launch-nvidia-h200.json);
* tma:persistent  the same TMA GEMMs without sync hooks, so persistent (at most one block an
                  SM walks the tiles in grouped order: the producer loads the next tile while
                  the consumers store the last, and no block launches a tile), one after the
                  other on one stream: our kernels as a library would run them, their own
                  stream-sync baseline;

and cuBLAS through torch: eager (matmul, GeLU(tanh) / SiLU·up, matmul) and the same captured
in a CUDA graph. The LLaMA baseline multiplies by the same W1 as [gate | up] halves (torch's
usual layout) instead of our 8-column interleave.

Every mode's Y is checked against an fp32 reference computed by torch on the GPU
(‖Y − ref‖ / ‖ref‖ < 2e-2, every element finite): H and Y are poisoned with NaN before a first
checked run, and again in every turn after its untimed runs (the hold's calibration, the
warm-up), so that Y checked after the turn is what its timed runs wrote. Timing: CUDA events
around each run, runs enqueued back to back behind a hold kernel (each run joins its streams;
ours and torch's eager path alike, so the host's launch cost is out of every mode's time, as it
is out of the CUDA graph's), median and p10/p90. The weights do not fit in L2 (≥ 138 MB), so
every run streams them from HBM. The floor is the longer of the flops at the run's measured
peak and X, W1, W2, H twice and Y at its measured copy bandwidth: the highest rates measured in
the run, cuBLAS's square GEMMs' and a device copy's or any timed form's
(report.settle_floors).

The wave model (analysis/wave_model.py, occupancy from the registers and shared memory
nvJitLink reports for the compiled kernels, the same numbers annotate_resources records)
predicts stream / tile-sync time in tile-time units; the table prints it beside the measured
speedups. It assumes tiles of equal duration; GEMM1's and GEMM2's differ (K1 ≠ K2), so the
table also gives a tile-time weighted bound (tile time ~ BN·K, waves packed perfectly).

Compilation runs first, in a process pool (fork, before CUDA or torch start threads), and its
results (PTX, kernel signatures, the host plan) are cached in `.tilesync-cache/mlp/`
(harness/compile_cache.py) under a key of the configs, the pass list, the target and a digest
of the compiler's sources and this file, so a second run (or a device machine given the cache)
compiles nothing. sync-verify proves every program exhaustively (`sync.verified = "proved"`:
every tile, every k-step, every load of H against the GEMM1 tiles that wrote it), in well
under a second: it runs each kernel once for all the tiles that behave alike.
Spin-waits trap after `TIMEOUT_NS`, so a bad program fails instead of hanging; after a CUDA error
the remaining GPU work is skipped (the context is lost) and the table says so.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilesync.bench.report import (
    check_floors,
    floor_rates_text,
    settle_floors,
    tilesync_commit,
    turn_counts,
)
from tilesync.contract import target_for_device
from tilesync.harness.autotune import relative_error
from tilesync.harness.compile_cache import (
    CACHE_DIR,
    CompileCache,
    CompileFailure,
    compile_many,
    source_digest,
)

MODELS = ("gpt3", "llama")
BATCHES = (64, 256, 512, 1024, 2048)
TOL = 2e-2
TIMEOUT_NS = 2_000_000_000

_PDL = ["sync-insert-post-wait", "sync-use-pdl"]
_ONE_LAUNCH = ["sync-insert-post-wait", "sync-one-launch"]
_TILE = ["sync-generate-policies", "sync-select-policy{policy=tile}"]
_ORDER = ["sync-tile-order{order=generated}"]
MODES: dict[str, list[str]] = {
    "stream_sync": ["sync-generate-policies", "sync-insert-post-wait"],
    "row+pdl": ["sync-generate-policies", *_PDL],
    "row+order+pdl": ["sync-generate-policies", *_ORDER, *_PDL],
    "tile+pdl": [*_TILE, *_PDL],
    "tile+order+pdl": [*_TILE, *_ORDER, *_PDL],
    "row+wait_kernel": ["sync-generate-policies", "sync-insert-post-wait",
                        "sync-insert-wait-kernel"],
    "row+one_launch": ["sync-generate-policies", *_ONE_LAUNCH],
    "tile+one_launch": [*_TILE, *_ONE_LAUNCH],
    "tile+R+one_launch": [*_TILE, "sync-reorder-loads", *_ONE_LAUNCH],
    # stream sync of the kernels the ordered modes run (see mode_spec); only where they differ
    "stream_sync@order_cfg": ["sync-generate-policies", "sync-insert-post-wait"],
}
TMA = "tma:"
"""Prefix of the modes that run the warp-specialized TMA kernels (mlp_spec(mma="tma")); their
speedup is against tma:stream_sync. They have no `sync.tile` for the ordered modes."""
ONE_LAUNCH = ("row+one_launch", "tile+one_launch", "tile+R+one_launch")
"""cuSync in one launch (sync-one-launch, sync-fuse-launches): GEMM2's blocks join GEMM1's grid,
tickets GEMM1's first; with R (sync-reorder-loads) GEMM2 copies each k-step's W2 tile before it
waits for the k-step's tile of H."""
MODES.update({f"{TMA}{mode}": MODES[mode]
              for mode in ("stream_sync", "row+pdl", "tile+pdl", "row+wait_kernel",
                           *ONE_LAUNCH)})
PERSISTENT = f"{TMA}persistent"
MODES[PERSISTENT] = []  # no hooks to fill: stream order synchronizes it
DEFAULT_MODES = tuple(m for m in MODES if m.removeprefix(TMA) not in ONE_LAUNCH)
"""The modes a run times unless told: not one launch, which never beat PDL on the MLP (0.94-1.00
of tma:row+pdl where the GEMMs' blocks agree, M = 64-2048 on an H200:
bench/results/mlp-one-launch-nvidia-h200.json, mlp-one-launch-b-nvidia-h200.json) while the cost
model, which charges neither a gap, took it on ties (1.04-1.10 of the best at M = 64 and 512)."""
TORCH_MODES = ("torch_eager", "torch_graph")
DEEP = "deep"
"""An item after a sweep's four tiles that runs each TMA GEMM's deeper staging twin
(kernels/mlp.py: deeper_staging); tiles without it run the tiles' own stages."""
W2_KXN = "w2-kxn"
"""An item after a sweep's four tiles that has the TMA GEMM2 read W2 as K x N (mlp_spec's
w2_layout 'row'); without it GEMM2 reads N x K."""
W1_KXN = "w1-kxn"
"""Likewise for the TMA GEMM1 and W1 (mlp_spec's w1_layout)."""


def mode_spec(model: str, M: int, mode: str, tiles: tuple | None = None):
    """The MlpSpec a mode runs: the default configs, or for the ordered modes (and their
    stream-sync baseline) the configs with room for the ordered sync.tile's shared slot.
    `tiles` (BM1, BN1, BM2, BN2[, DEEP][, W1_KXN][, W2_KXN]): a tma: mode on those tiles
    instead of the table's (bench/mlp_sweep.py), with DEEP each GEMM's deeper staging twin,
    with W1_KXN / W2_KXN that weight read K x N."""
    from tilesync.kernels.mlp import (
        MODELS,
        fit_ordered,
        mlp_spec,
        persistent_spec,
        tma_tile_configs,
    )

    if mode.startswith(TMA):
        if tiles is not None:
            configs = tma_tile_configs(tiles[:4], MODELS[model]["epilogue"])
            spec = mlp_spec(model, M, *configs, mma="tma", deeper=DEEP in tiles[4:],
                            w1_layout="row" if W1_KXN in tiles[4:] else "col",
                            w2_layout="row" if W2_KXN in tiles[4:] else "col")
        else:
            spec = mlp_spec(model, M, mma="tma")
        return persistent_spec(spec, tall=tiles is None) if mode == PERSISTENT else spec
    spec = mlp_spec(model, M)
    return fit_ordered(spec) if "order" in mode else spec


def modes_for(model: str, M: int, modes=DEFAULT_MODES) -> list[str]:
    """`modes`, without stream_sync@order_cfg where the ordered modes run the default configs,
    nor the TMA modes below TMA_MIN_ROWS, nor one launch of GEMMs whose blocks differ
    (sync-one-launch joins them only with mixed_blocks=true: measured slower)."""
    from tilesync.kernels.mlp import TMA_MIN_ROWS, fit_ordered, mlp_spec

    spec = mlp_spec(model, M)
    same = fit_ordered(spec) is spec
    tma = M >= TMA_MIN_ROWS

    def one_block_size(mode: str) -> bool:
        run = mode_spec(model, M, mode)
        return run.cfg1.block == run.cfg2.block

    return [m for m in modes if not (m == "stream_sync@order_cfg" and same)
            and not (m.startswith(TMA) and not tma)
            and not (m.removeprefix(TMA) in ONE_LAUNCH and not one_block_size(m))]


def mode_passes(mode: str, sms: int = 132, steps: int | None = None) -> list[str]:
    """The mode's sync passes, then sync-verify for `sms` SMs (`steps`: its step budget, where
    not the default)."""
    budget = "" if steps is None else f" steps={steps}"
    return [*MODES[mode], f"sync-verify{{sms={sms}{budget}}}"]


def stage_module(model: str, M: int, mode: str, tiles: tuple[int, int, int, int] | None = None):
    """The MLP stage program of `mode` before its passes (stream_sync*: one stream)."""
    from tilesync.kernels.mlp import mlp_persistent_module, mlp_stage_module

    spec = mode_spec(model, M, mode, tiles)
    module = mlp_persistent_module(spec) if mode == PERSISTENT else mlp_stage_module(spec=spec)
    if mode.removeprefix(TMA).startswith("stream_sync"):
        launch_on_one_stream(module)
    return module


def launch_on_one_stream(module) -> None:
    """Every launch of `module` on stream 0 without PDL: the kernels one after another, each
    starting once the one before has ended (stream sync; their waits find the semaphores
    already posted)."""
    from xdsl.dialects.builtin import BoolAttr, IntegerAttr, i64

    from tilesync.dialects import sync

    for op in module.walk():
        if isinstance(op, sync.LaunchOp):
            op.stream = IntegerAttr(0, i64)
            op.pdl = BoolAttr.from_bool(False)


# --------------------------------------------------------------------------------------------
# Compiling (process pool, cached)
# --------------------------------------------------------------------------------------------


def _job_key(job: tuple, target: str) -> str:
    """What a (model, M, mode, debug[, tiles]) program is made of: both GEMM configs, the
    passes, the target, the debug flag and the spin timeout."""
    model, M, mode, debug, *tiles = job
    spec = mode_spec(model, M, mode, *tiles)
    return repr((spec.cfg1, spec.cfg2, mode_passes(mode), target, debug, TIMEOUT_NS))


def compile_job(job: tuple, target: str = "sm_90") -> dict[str, Any]:
    """Compile one (model, M, mode, debug[, tiles]) stage program; a picklable result: PTX per
    module, kernel signatures, the host plan as MLIR text, nvJitLink's registers / shared
    bytes, and the seconds it took."""
    start = time.perf_counter()
    entry = compile_stage_program(*_job_program(job, target))
    return {"job": job, **entry, "compile_seconds": time.perf_counter() - start}


def compile_ptx(job: tuple, target: str = "sm_90") -> dict[str, str]:
    """The PTX per module of one job as compile_job compiles it, without nvJitLink's check of
    its registers and shared memory (what tools.ptx_digests records)."""
    return _compile(*_job_program(job, target)).ptx_by_module


def _job_program(job: tuple, target: str) -> tuple[Any, list[str], str, bool]:
    """(stage program, its cuSync passes, target, debug) of a (model, M, mode, debug[, tiles])
    job."""
    model, M, mode, debug, *tiles = job
    spec = mode_spec(model, M, mode, *tiles)
    if spec.target is not None and target == "sm_90":
        target = spec.target  # wgmma: sm_90a
    return stage_module(model, M, mode, *tiles), mode_passes(mode), target, debug


def _compile(module, sync_passes: list[str], target: str, debug: bool):
    import tilesync
    from tilesync.api import default_pipeline

    pipeline = default_pipeline(debug=debug, timeout_ns=TIMEOUT_NS, before=tuple(sync_passes))
    return tilesync.compile(module, pipeline=pipeline, target=target)


def compile_stage_program(module, sync_passes: list[str], target: str,
                          debug: bool) -> dict[str, Any]:
    """Compile a stage program after `sync_passes` (spin-waits trap after TIMEOUT_NS); a
    picklable result: PTX per module, kernel signatures, the host plan as MLIR text,
    nvJitLink's registers / shared bytes per kernel (a stage's of one launch: its launch's
    kernel's), and the target."""
    from tilesync.analysis.stage_graph import StageGraph
    from tilesync.dialects import sync
    from tilesync.lowering.ptx import validate_ptx
    from tilesync.runtime.program import one_launches

    compiled = _compile(module, sync_passes, target, debug)
    resources_used: dict[str, tuple[int, int]] = {}
    for ptx in compiled.ptx_by_module.values():
        info = validate_ptx(ptx, target)
        for name, registers in info.registers.items():
            dynamic = compiled.kernels[name].dynamic_shared_bytes \
                if name in compiled.kernels else 0
            resources_used[name] = (registers, info.shared_bytes.get(name, 0) + dynamic)
    # the stages of one launch run in its kernel: theirs are its registers and shared memory
    graph = StageGraph.of(compiled.module)
    for together in one_launches(graph.plan).values():
        for name in together.stages:
            kernel = graph.stages[name].kernel.nested_references.data[-1].data
            resources_used[kernel] = resources_used[together.kernel]
    host = [op.clone() for op in compiled.module.ops
            if isinstance(op, sync.StageOp | sync.DependencyOp | sync.LaunchOp
                          | sync.WaitKernelOp)]
    from xdsl.dialects.builtin import ModuleOp

    return {"ptx_by_module": dict(compiled.ptx_by_module),
            "kernels": dict(compiled.kernels), "host": str(ModuleOp(host)),
            "resources": resources_used, "target": target}


def compile_jobs(jobs, target: str = "sm_90", processes: int | None = None,
                 cache: CompileCache | None = None, *, compile_one=None,
                 key=None) -> dict[tuple, dict[str, Any]]:
    """Compiled programs of `jobs` (compile_one's results, default compile_job, or {"job",
    "error"} for one that fails: one bad program must not stop the rest): from `cache` where it
    holds them under key(job, target) (default _job_key; None: no cache; the bench's is
    mlp_cache()), the others in a process pool, each cached as it arrives."""
    jobs = list(dict.fromkeys(jobs))
    results = compile_many(jobs, target, processes, compile_one=compile_one or compile_job,
                           key=key or _job_key, cache=cache, keep_going=True)
    return {job: {"job": job, "error": f"compile: {result.message}"}
            if isinstance(result, CompileFailure) else result
            for job, result in zip(jobs, results, strict=True)}


def mlp_cache(directory: str | Path = CACHE_DIR) -> CompileCache:
    """The compile cache of the MLP programs; its key covers this file (it builds them)."""
    return CompileCache(directory, "mlp", sources=source_digest(extra=[__file__]))


def load_program(entry: dict[str, Any]):
    """A StageProgram from a compile_job result (the host plan parsed back from its text)."""
    from tilesync.api import parse
    from tilesync.contract import CompiledProgram
    from tilesync.runtime.program import StageProgram

    host = parse(entry["host"])
    compiled = CompiledProgram(entry["ptx_by_module"], {}, entry["kernels"], host,
                               target=entry["target"])
    return StageProgram(compiled)


# --------------------------------------------------------------------------------------------
# The wave model
# --------------------------------------------------------------------------------------------


def kernel_occupancy(cfg, resources_used: Mapping[str, tuple[int, int]], arch: str = "sm_90"):
    """The Occupancy of a GEMM's, a conv's or a softmax's kernel from nvJitLink's registers and
    shared bytes (a compile entry's `resources`); without them, no registers and the config's
    shared memory (a conv's: its implicit GEMM's; a softmax's: none, its rows reduce in
    registers). A kernel that reallocates registers (setmaxnreg, which nvJitLink drops: the
    runtime loads it through the driver) holds what its launch bounds allot, known without
    nvJitLink and not what it reports (58 against 128 for a two-block TMA conv)."""
    from tilesync.analysis.occupancy import blocks_per_sm, register_cap
    from tilesync.contract import limits_for_arch
    from tilesync.kernels.config import SoftmaxConfig

    limits = limits_for_arch(target_for_device(arch))
    gemm = None if isinstance(cfg, SoftmaxConfig) else getattr(cfg, "gemm", cfg)
    found = resources_used.get(cfg.name)
    if found is None:
        found = (0, 0 if gemm is None else gemm.shared_bytes)
    registers, shared = found
    threads = math.prod(cfg.block)
    if gemm is not None and gemm.reallocates_registers:
        registers = register_cap(threads, limits, blocks=gemm.blocks_per_sm)
    return blocks_per_sm(threads, registers, shared, limits)


def wave_prediction(spec, resources_used: dict[str, tuple[int, int]], sms: int,
                    arch: str = "sm_90") -> dict[str, Any]:
    from tilesync.analysis.wave_model import predict_chain, stage_waves

    stages = []
    out: dict[str, Any] = {"stages": []}
    for cfg in (spec.cfg1, spec.cfg2):
        registers, shared = resources_used.get(cfg.name, (0, cfg.shared_bytes))
        occ = kernel_occupancy(cfg, resources_used, arch)
        waves = stage_waves(cfg.grid[:2], max(1, occ.blocks_per_sm), sms)
        stages.append(waves)
        out["stages"].append({"name": cfg.name, "grid": list(cfg.grid[:2]),
                              "blocks": waves.blocks, "registers": registers,
                              "shared_bytes": shared, "blocks_per_sm": occ.blocks_per_sm,
                              "limiter": occ.limiter, "waves": float(waves.waves)})
    prediction = predict_chain(stages)
    out.update({"stream_waves": prediction.stream_sync, "tile_waves": prediction.fine_grained,
                "speedup": float(prediction.speedup)})
    # Tiles of the two GEMMs take different times (~ BN * K per BM-row tile): stream sync pays
    # ceil(waves_i) tile times of each, perfect packing only waves_i; their ratio bounds the gain.
    times = [cfg.tile[1] * cfg.K for cfg in (spec.cfg1, spec.cfg2)]
    stream = sum(math.ceil(w.waves) * t for w, t in zip(stages, times, strict=True))
    packed = sum(float(w.waves) * t for w, t in zip(stages, times, strict=True))
    out["weighted_bound"] = stream / packed
    return out


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


class CheckedOutputs:
    """A program's middle tensor `h` and output `y` (torch tensors; `poisoned()`: every tensor
    a run writes), poisoned before a checked run, and `y` against the fp32 reference `ref`."""

    torch: Any
    h: Any
    y: Any
    ref: Any

    def poisoned(self) -> tuple:
        """Every tensor a run writes, the middle ones too."""
        return (self.h, self.y)

    def poison_on(self, stream, *more) -> None:
        """NaN into poisoned() and `more` on `stream` (a tilesync, torch or raw CUDA stream),
        not waited for: in stream order between the runs before it and those after."""
        torch = self.torch
        if not isinstance(stream, torch.cuda.Stream):
            from tilesync.runtime.launch import stream_handle

            stream = torch.cuda.ExternalStream(int(stream_handle(stream)))
        with torch.cuda.stream(stream):
            for tensor in (*self.poisoned(), *more):
                if tensor is not None:
                    tensor.fill_(float("nan"))

    def poison(self) -> None:
        self.poison_on(self.torch.cuda.current_stream())
        self.torch.cuda.synchronize()

    def error(self, y=None) -> float:
        """‖y − ref‖ / ‖ref‖ (inf when an element is not finite)."""
        y = self.y if y is None else y
        if y.is_cuda:
            self.torch.cuda.synchronize()
        return relative_error(y, self.ref)

    def worst_of_runs(self, program, args, runs: int, name: str) -> float:
        """`runs` runs of `program` on `args`, `h` and `y` poisoned before each and `y` checked
        after each (check_error: an AssertionError past TOL): the worst relative error. A
        timed-out wait raises SpinTimeoutError naming it."""
        worst = 0.0
        for run in range(runs):
            self.poison()
            program.run(args)
            program.synchronize()
            worst = max(worst, check_error(f"{name} run {run}", self.error()))
        return worst


class _Data(CheckedOutputs):
    """X, W1, W2 (ours and torch's layout), H, Y and the fp32 reference of one (model, M)."""

    def __init__(self, torch, spec, seed: int = 0):
        self.torch = torch
        cfg1, cfg2 = spec.cfg1, spec.cfg2
        M, K1, N1, hidden, N2 = spec.M, cfg1.K, cfg1.N, spec.hidden, cfg2.N
        gen = torch.Generator(device="cuda").manual_seed(seed)
        f16 = torch.float16

        def rand(shape, scale=1.0):
            return (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
                    * scale).to(f16)

        self.x = rand((M, K1))
        if cfg1.epilogue == "swiglu":
            gate, up = rand((K1, hidden), K1 ** -0.5), rand((K1, hidden), K1 ** -0.5)
            self.w1_torch = torch.cat([gate, up], dim=1).contiguous()
            self.w1 = torch.stack([gate.reshape(K1, hidden // 8, 8),
                                   up.reshape(K1, hidden // 8, 8)], dim=2) \
                .reshape(K1, N1).contiguous()
            del gate, up
        else:
            self.w1 = rand((K1, N1), K1 ** -0.5)
            self.w1_torch = self.w1
        self.w2_torch = self.w2 = rand((hidden, N2), hidden ** -0.5)
        self._weights = {("gemm1", "row"): self.w1, ("gemm2", "row"): self.w2}
        self._torch_weights = {("gemm1", "row"): self.w1_torch, ("gemm2", "row"): self.w2_torch}
        # wgmma kernels read the weights N x K (nn.Linear's layout) unless told K x N, as
        # torch keeps them
        self.w1 = self.weight("gemm1", cfg1.b_layout)
        self.w2 = self.weight("gemm2", cfg2.b_layout)
        self.h = torch.empty((M, hidden), device="cuda", dtype=f16)
        self.y = torch.empty((M, N2), device="cuda", dtype=f16)
        self.epilogue = cfg1.epilogue
        self.hidden = hidden
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            h = self.activation(self.x.float() @ self.w1_torch.float())
            self.ref = h @ self.w2_torch.float()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.cuda.synchronize()

    def weight(self, stage: str, b_layout: str):
        """The weight of `stage` ("gemm1", "gemm2") as a kernel reading B `b_layout` takes it
        ("row": K x N, "col": N x K), the transpose made once."""
        return _laid_out(self._weights, stage, b_layout)

    def activation(self, z):
        F = self.torch.nn.functional
        if self.epilogue == "gelu":
            return F.gelu(z, approximate="tanh")
        return F.silu(z[:, : self.hidden]) * z[:, self.hidden:]

    def torch_mlp(self, layouts: tuple[str, str] = ("row", "row")):
        """The MLP as torch runs it, W1 and W2 laid out `layouts` ("row": K x N, `x @ w`;
        "col": N x K as nn.Linear keeps them, `F.linear`, which cuBLAS reads transposed)."""
        linear = self.torch.nn.functional.linear

        def multiply(a, stage: str, layout: str):
            w = _laid_out(self._torch_weights, stage, layout)
            return self.torch.matmul(a, w) if layout == "row" else linear(a, w)

        h = self.activation(multiply(self.x, "gemm1", layouts[0]))
        return multiply(h, "gemm2", layouts[1])

    def drop_torch_layouts(self) -> None:
        """Free the N x K copies torch_mlp made (the K x N weights stay)."""
        for key in [k for k in self._torch_weights if k[1] != "row"]:
            del self._torch_weights[key]


def _laid_out(weights: dict, stage: str, layout: str):
    """`weights[(stage, layout)]`, made once from the K x N weight ("row") by a transpose."""
    if (stage, layout) not in weights:
        weights[(stage, layout)] = weights[(stage, "row")].t().contiguous()
    return weights[(stage, layout)]


TORCH_LAYOUTS = tuple((w1, w2) for w1 in ("col", "row") for w2 in ("col", "row"))
"""The weight layouts (W1, W2) the bench times torch's MLP in, keeping the fastest of each
torch mode: cuBLAS's faster layout differs by GEMM (on an H100, 4997617, GPT-3's fc1 at M =
256 ran 0.0649 ms with B N x K against 0.0709 K x N, its fc2 0.0644 against 0.0591)."""


def layouts_label(layouts: tuple[str, str]) -> str:
    return ", ".join(f"{w} {'K x N' if layout == 'row' else 'N x K'}"
                     for w, layout in zip(("W1", "W2"), layouts, strict=True))



def check_error(name: str, err: float) -> float:
    if not err < TOL:
        raise AssertionError(f"{name}: ‖Y − ref‖/‖ref‖ = {err:.3g} (tolerance {TOL})")
    return err


def kernel_args(spec, data: _Data) -> dict[str, list]:
    """Each stage's arguments: the buffers, or for a warp-specialized kernel their tensor maps
    (the boxes of its config)."""
    from tilesync.harness.runner import gemm_tensor_maps

    operands = {"gemm1": (spec.cfg1, [data.x, data.weight("gemm1", spec.cfg1.b_layout), data.h]),
                "gemm2": (spec.cfg2, [data.h, data.weight("gemm2", spec.cfg2.b_layout), data.y])}
    args = {}
    for stage, (cfg, tensors) in operands.items():
        if not cfg.warp_specialized:
            args[stage] = tensors
            continue
        args[stage] = gemm_tensor_maps(cfg, tensors)
    return args


TURNS = 5
"""The forms of a row take turns, about reps / TURNS timed runs each a turn (`time_in_turns`):
the device's speed steps for tens of ms at a time (GPT-3's MLP at M = 2048 on an H100,
77d3ca7, each mode's 50 runs in one block: every mode's runs took 0.80-0.82 ms, then from some
run on 0.85-0.93, cuBLAS's graph the other way round), so a form timed in one block paid for
whichever state it met alone."""


@dataclass
class TimedForm:
    """One thing a row times. `run()` enqueues it once on `stream` and returns its (start,
    end) events, `elapsed(start, end)` their milliseconds; `before()` readies its outputs for a
    check: enqueues their poison (every output it writes, the middle ones too) on `stream`,
    not waited for, right before a turn's timed runs (after its untimed ones, which would
    otherwise leave the right answer for a timed run that writes nothing); `check()` returns
    their relative error (check_error: raises past TOL) after the turn's runs."""

    run: Callable[[], tuple[Any, Any]]
    elapsed: Callable[[Any, Any], float]
    synchronize: Callable[[], Any]
    stream: Any
    before: Callable[[], Any]
    check: Callable[[], float]
    after: Callable[[], Any] = lambda: None
    """Run after each of its turns (synchronized), whatever the turn's outcome: a pipeline
    gives back the persisting L2 it set aside in `start_turn`."""
    start_turn: Callable[[], Any] = lambda: None
    """Run before each of its turns' first run: a pipeline sets aside the persisting L2 its
    queues are pinned in."""

    def first_check(self) -> float:
        """One run on readied (poisoned) outputs, checked."""
        try:
            self.start_turn()
            self.before()
            self.run()
            self.synchronize()
            return self.check()
        finally:
            self.after()


def program_form(program, args: dict[str, list], data, name: str) -> TimedForm:
    """A stage program run on `args`, its outputs `data`'s (poisoned before a turn)."""
    from tilesync.runtime.stream import elapsed_ms

    def run():
        end = program.run(args)
        return program.last_start, end

    stream = program.main_stream()
    return TimedForm(run, elapsed_ms, program.synchronize, stream,
                     lambda: data.poison_on(stream), lambda: check_error(name, data.error()))


def torch_forms(data, library, name: str = "") -> tuple[dict[str, TimedForm], dict[str, Any]]:
    """`library()` eager and replayed from a CUDA graph captured here (torch_eager and
    torch_graph, `name` after those in their errors), and {"torch_graph": {"error": ...}}
    where the capture failed (graphs are a bonus: the eager numbers stand). Before a turn's
    timed runs the graph's output is NaN and eager's last output dropped, so each check reads
    what the timed runs wrote."""
    torch = data.torch
    stream = torch.cuda.current_stream()
    latest: list[Any] = [None]

    def events(call):
        def run():
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            out = call()
            end.record()
            if out is not None:
                latest[0] = out
            return start, end
        return run

    def elapsed(start, end) -> float:
        return start.elapsed_time(end)

    def check_latest() -> float:
        if latest[0] is None:
            raise AssertionError(f"torch_eager{name}: no output since the poison")
        return check_error(f"torch_eager{name}", data.error(latest[0]))

    forms = {"torch_eager": TimedForm(
        events(library), elapsed, torch.cuda.synchronize, stream,
        lambda: latest.__setitem__(0, None), check_latest)}
    try:
        side = torch.cuda.Stream()
        side.wait_stream(stream)
        with torch.cuda.stream(side):  # warm up (cuBLAS workspaces) off the capture
            for _ in range(2):
                library()
        stream.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = library()
    except Exception as exc:
        return forms, {"torch_graph": {"error": f"{type(exc).__name__}: {exc}"}}

    def replay():
        graph.replay()

    forms["torch_graph"] = TimedForm(
        events(replay), elapsed, torch.cuda.synchronize, stream,
        lambda: static.fill_(float("nan")),
        lambda: check_error(f"torch_graph{name}", data.error(static)))
    return forms, {}


def time_in_turns(forms: Mapping[str, TimedForm], warmup: int, reps: int,
                  turns: int = TURNS) -> dict[str, dict[str, Any]]:
    """Each form timed `reps` times, in `turns` turns taken in order (a turn's runs back to
    back behind a hold kernel, `warmup` more runs in front of the first turn's and TURN_WARMUP
    in front of every later turn's, not counted), its outputs readied (poisoned: `before`)
    between a turn's uncounted runs and its timed ones and checked after them: summarize()d
    samples with `rel_error` the worst check. A form that raises leaves the turns as
    {"error": ..., "exception": the exception}; a CUDA error ends them all."""
    from tilesync.bench.experiments import summarize
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.errors import TilesyncRuntimeError

    turns = max(1, min(turns, reps))
    counts = turn_counts(reps, turns)
    samples: dict[str, list[float]] = {name: [] for name in forms}
    worst = dict.fromkeys(forms, 0.0)
    failed: dict[str, dict[str, Any]] = {}
    for turn, count in enumerate(counts):
        for name, form in forms.items():
            if name in failed:
                continue
            uncounted = warmup if turn == 0 else TURN_WARMUP
            try:
                form.start_turn()
                hold_stream(hold_ns(uncounted + count, form.run, form.synchronize), form.stream)
                pairs = [form.run() for _ in range(uncounted)]
                form.before()  # in stream order: the check reads what the timed runs wrote
                pairs += [form.run() for _ in range(count)]
                form.synchronize()
                samples[name] += [form.elapsed(s, e) for s, e in pairs[uncounted:]]
                worst[name] = max(worst[name], form.check())
            except Exception as exc:
                if _context_lost(exc, TilesyncRuntimeError):
                    raise
                failed[name] = {"error": f"{type(exc).__name__}: {exc}", "exception": exc}
            finally:
                form.after()
    return {name: failed.get(name) or {"rel_error": worst[name],
                                       **summarize(samples[name], warmup), "turns": turns}
            for name in forms}


PEAK_SHAPES = (4096, 8192)
"""The square fp16 GEMMs whose faster cuBLAS rate is the run's peak probe: on an H100 (4797793)
8192^3 alone gave 696 TFLOP/s where 4096^3 reached 769 and our 8192^3 kernel 785, a floor above
the measured times of GPT-3's MLP at M = 512-2048. Still no peak alone (kernels beat it in
later runs): the floors take the run's highest rate, the probe's or a timed form's
(report.settle_floors)."""
PEAK_SOURCE = "cuBLAS fp16, the faster of " + " and ".join(f"{n}^3" for n in PEAK_SHAPES)
TURN_WARMUP = 1
"""Runs in front of each turn after the first, not counted."""
HOLD_NS_PER_RUN = 200_000
"""The hold kernel's time per timed run: more than the host takes to enqueue one run of a
stage program (a few launches from Python) or of torch's path, so the runs queue up behind it
and the events time the device, not the host."""


def hold_ns(runs: int, enqueue, synchronize) -> int:
    """The hold for `runs` timed runs of `enqueue`: HOLD_NS_PER_RUN each, or twice what the
    host took to enqueue one (timed over three, then `synchronize`d), whichever is longer (a
    run of a dozen launches and events from Python can take longer than HOLD_NS_PER_RUN: NeRF's
    layers bulk-synchronously at 2^16 rows then timed the host, 1.07 ms for 0.3 of work)."""
    import time

    began = time.perf_counter()
    for _ in range(3):
        enqueue()
    per_run = (time.perf_counter() - began) / 3 * 1e9
    synchronize()
    return int(runs * max(HOLD_NS_PER_RUN, 2 * per_run))


def measured_rates(torch, warmup: int, reps: int) -> dict[str, Any]:
    """This run's probes of the device's limits: the copy bandwidth
    (bench.kernels.copy_bandwidth) and the fastest tensor rate cuBLAS reaches on the fp16 GEMMs
    of PEAK_SHAPES ("peak_probe" names which), where the floor's two rates start
    (report.settle_floors raises them to any faster timed form's)."""
    from tilesync.bench.experiments import summarize
    from tilesync.bench.kernels import copy_bandwidth

    rates = []
    for n in PEAK_SHAPES:
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        out = torch.empty_like(a)
        pairs = []
        for i in range(warmup + reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b, out=out)
            end.record()
            if i >= warmup:
                pairs.append((start, end))
        torch.cuda.synchronize()
        ms = summarize([s.elapsed_time(e) for s, e in pairs], warmup)["median_ms"]
        rates.append((2 * n ** 3 / (ms * 1e-3) / 1e12, n))
        del a, b, out
    peak, n = max(rates)
    return {"copy_gbps": copy_bandwidth(torch, warmup, reps)["gbps"],
            "peak_tflops": peak, "peak_probe": f"cuBLAS fp16 {n}^3"}


def floor_bytes(spec) -> int:
    """The bytes the MLP moves at least: reading X, W1, W2 and writing and reading H and
    writing Y once (fp16)."""
    c1, c2 = spec.cfg1, spec.cfg2
    elements = c1.M * c1.K + c1.N * c1.K + 2 * c1.M * c1.out_cols + c2.N * c2.K + c2.M * c2.N
    return 2 * elements


def floor_ms(spec, rates: dict[str, float]) -> float:
    """The MLP's floor: its multiply-adds at the measured peak rate, or its floor_bytes at the
    measured copy bandwidth, the longer."""
    from tilesync.bench.report import floor_ms as roofline_ms

    return roofline_ms(spec.flops, floor_bytes(spec), rates)


def sized_copy(torch, spec, warmup: int, reps: int, l2: int) -> dict[str, Any]:
    """A device copy moving the MLP's floor_bytes (half read, half written), rotating buffers
    past an L2 of `l2` bytes: the time those bytes take when nothing else runs, which the
    floor's 1 GiB copy bandwidth does not charge (a copy's ramp and tail)."""
    from tilesync.bench.kernels import copy_bandwidth

    return copy_bandwidth(torch, warmup, reps, floor_bytes(spec) // 2, l2)


def torch_layout_forms(data: _Data) -> tuple[dict[str, TimedForm], dict[str, Any]]:
    """torch_forms of data.torch_mlp in each of TORCH_LAYOUTS, named "MODE@W1,W2"."""
    forms: dict[str, TimedForm] = {}
    failed: dict[str, Any] = {}
    for layouts in TORCH_LAYOUTS:
        tag = "@" + ",".join(layouts)
        made, lost = torch_forms(data, lambda layouts=layouts: data.torch_mlp(layouts),
                                 f" ({layouts_label(layouts)})")
        forms.update({mode + tag: form for mode, form in made.items()})
        failed.update({mode + tag: record for mode, record in lost.items()})
    return forms, failed


def fastest_layouts(records: Mapping[str, dict[str, Any]], data: _Data) -> dict[str, Any]:
    """Of torch_layout_forms' records, each torch mode's fastest (its `layouts`; every
    layout's median under `by_layouts`); the rest of `records` as they are. Frees the N x K
    weights torch_mlp made."""
    data.drop_torch_layouts()
    out = {name: record for name, record in records.items() if "@" not in name}
    for mode in TORCH_MODES:
        mine = {tuple(name.partition("@")[2].split(",")): record
                for name, record in records.items() if name.partition("@")[0] == mode}
        timed = {layouts: r for layouts, r in mine.items() if "median_ms" in r}
        if not timed:
            if mine:
                out[mode] = next(iter(mine.values()))
            continue
        fastest = min(timed, key=lambda layouts: timed[layouts]["median_ms"])
        out[mode] = {**timed[fastest], "layouts": layouts_label(fastest),
                     "by_layouts": {layouts_label(layouts): record["median_ms"]
                                    for layouts, record in timed.items()}}
    return out


def time_forms(forms: Mapping[str, TimedForm], warmup: int, reps: int,
               turns: int = TURNS) -> dict[str, dict[str, Any]]:
    """Each form's first check (first_check), then all of them in turns (time_in_turns); the
    records without the exceptions (a form failing its first check is reported, not timed)."""
    from tilesync.runtime.errors import TilesyncRuntimeError

    first: dict[str, float] = {}
    records: dict[str, dict[str, Any]] = {}
    for name, form in forms.items():
        try:
            first[name] = form.first_check()
        except Exception as exc:
            if _context_lost(exc, TilesyncRuntimeError):
                raise
            records[name] = {"error": f"{type(exc).__name__}: {exc}"}
    timed = time_in_turns({n: f for n, f in forms.items() if n in first}, warmup, reps, turns)
    for name, record in timed.items():
        record.pop("exception", None)
        if "rel_error" in record:
            record["rel_error"] = max(first[name], record["rel_error"])
        records[name] = record
    return {name: records[name] for name in forms}


def _torch_or_none():
    try:
        import torch

        if torch.cuda.is_available():
            return torch, ""
        return None, "torch sees no CUDA device"
    except Exception as exc:
        return None, f"torch is not importable ({type(exc).__name__}: {exc})"


def mlp_benchmarks(models=MODELS, ms=BATCHES, warmup: int = 5, reps: int = 30,
                   modes=DEFAULT_MODES, processes: int | None = None,
                   cache_dir: str | Path | None = CACHE_DIR) -> dict[str, Any]:
    """Time every mode of every (model, M); see the module docstring. Needs torch (for the
    reference and the cuBLAS baseline) and a GPU."""
    from tilesync.bench.kernels import L2_BYTES_DEFAULT
    from tilesync.kernels.mlp import mlp_spec
    from tilesync.runtime.device import get_device
    from tilesync.runtime.errors import TilesyncRuntimeError

    started = time.perf_counter()
    device = get_device()
    target = target_for_device(device.arch)
    jobs = [(model, M, mode, False) for model in models for M in ms
            for mode in modes_for(model, M, modes)]
    t0 = time.perf_counter()
    cache = mlp_cache(cache_dir) if cache_dir else None
    compiled = compile_jobs(jobs, target, processes, cache)
    compile_seconds = time.perf_counter() - t0
    cached = cache.hits if cache else 0
    torch, why = _torch_or_none()
    if torch is None:
        raise RuntimeError(f"the MLP benchmark needs torch on the GPU: {why}")
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
    rates = measured_rates(torch, warmup, reps)
    result: dict[str, Any] = {
        "experiment": "mlp", "warmup": warmup, "reps": reps, "tolerance": TOL,
        "modes": list(modes), "library": f"torch {torch.__version__} (cuBLAS)",
        "sms": device.sm_count, "compile_seconds": compile_seconds,
        "programs_compiled": sum("error" not in e for e in compiled.values()) - cached,
        "programs_cached": cached,
        "verify": "proved", "timeout_ns": TIMEOUT_NS, "rates": rates, "rows": [],
    }
    lost: str | None = None  # a CUDA error: the context is gone, later GPU work is skipped
    for model in models:
        for M in ms:
            row_modes = modes_for(model, M, modes)
            spec = mlp_spec(model, M)
            row: dict[str, Any] = {"model": model, "M": M, "configs": spec.label,
                                   "ratio": spec.ratio, "flops": spec.flops,
                                   "floor_bytes": floor_bytes(spec),
                                   "floor_ms": floor_ms(spec, rates), "modes": {}}
            for mode in row_modes:
                entry = compiled[(model, M, mode, False)]
                if "error" in entry:
                    continue
                if mode.startswith(TMA):
                    row["tma_configs"] = mode_spec(model, M, mode).label
                    continue  # the wave model takes a block per tile: not a persistent grid
                if mode_spec(model, M, mode) != spec:
                    row["order_configs"] = mode_spec(model, M, mode).label
                key = "wave_model" if mode_spec(model, M, mode) == spec else "wave_model_order"
                if key not in row:
                    row[key] = wave_prediction(mode_spec(model, M, mode), entry["resources"],
                                               device.sm_count, target)
            result["rows"].append(row)
            if lost is not None:
                row["skipped"] = lost
                continue
            try:
                data = _Data(torch, spec, seed=M)
            except Exception as exc:
                row["skipped"] = f"{type(exc).__name__}: {exc}"
                continue
            # every mode and torch's path in each weight layout take turns (time_forms)
            forms: dict[str, TimedForm] = {}
            failed: dict[str, dict[str, Any]] = {}
            for mode in row_modes:
                entry = compiled[(model, M, mode, False)]
                if "error" in entry:
                    failed[mode] = {"error": entry["error"][:2000]}
                    continue
                try:
                    forms[mode] = program_form(
                        load_program(entry), kernel_args(mode_spec(model, M, mode), data),
                        data, f"{model} M={M} {mode}")
                except Exception as exc:
                    failed[mode] = {"error": f"{type(exc).__name__}: {exc}"}
            try:
                made, lost_torch = torch_layout_forms(data)
                forms.update(made)
                failed.update(lost_torch)
                records = fastest_layouts({**failed, **time_forms(forms, warmup, reps)}, data)
            except Exception as exc:  # a CUDA error: the context is gone
                if not _context_lost(exc, TilesyncRuntimeError):
                    raise
                lost = f"skipped after a CUDA error in {model} M={M}: {exc}"
                records = {**{mode: {"error": lost} for mode in (*row_modes, "torch_eager")},
                           **failed}
            for mode in row_modes:
                row["modes"][mode] = records[mode]
                if "median_ms" in records[mode]:
                    records[mode]["policy"] = _policy_of(compiled[(model, M, mode, False)]["host"])
            row["modes"].update({mode: records[mode] for mode in TORCH_MODES if mode in records})
            if lost is None:
                row["sized_copy"] = sized_copy(torch, spec, warmup, reps,
                                               device.l2_cache_bytes or L2_BYTES_DEFAULT)
            del data
            torch.cuda.empty_cache()
            row["speedup"] = speedups(row["modes"])
            from tilesync.bench import mode_choice  # (it imports this module)

            row["mode_choice"] = mode_choice.bench_row(
                "mlp", (model, M), {m: compiled[(model, M, m, False)] for m in row_modes},
                row["modes"], device.sm_count, device.name)
    if lost is not None:
        result["lost"] = lost
    settle_floors(result, row_label)
    check_floors(result, row_label)
    result["seconds"] = time.perf_counter() - started
    return result


def row_label(row: dict[str, Any]) -> str:
    return f"{row['model']} M={row['M']}"


def _context_lost(exc: BaseException, runtime_error: type) -> bool:
    """A CUDA error (ours, or torch's "CUDA error: ..."), after which the context is unusable."""
    return isinstance(exc, runtime_error) or "CUDA error" in str(exc) \
        or "CUDA_ERROR" in str(exc)


def mode_family(mode: str) -> str:
    """The prefix naming the kernels a mode runs ("tma:", attention's "fused:"), or ""."""
    family, colon, _ = mode.rpartition(":")
    return family + colon


def baseline_mode(mode: str, measured: Collection[str]) -> str:
    """The stream-sync mode that runs `mode`'s kernels: the family's stream_sync for the modes
    of a family (tma:stream_sync for the TMA modes), stream_sync@order_cfg for the ordered
    ones where it was run (they run other configs), else stream_sync (torch's, too).
    tma:persistent runs kernels of its own: its own."""
    if mode == PERSISTENT:
        return mode
    if mode_family(mode):
        return f"{mode_family(mode)}stream_sync"
    if "order" in mode and "stream_sync@order_cfg" in measured:
        return "stream_sync@order_cfg"
    return "stream_sync"


def speedups(modes: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Median of the stream-sync run of the same kernels (`baseline_mode`) / median of each
    mode."""
    measured = {mode for mode, record in modes.items() if "median_ms" in record}
    out: dict[str, float] = {}
    for mode, record in modes.items():
        base = modes.get(baseline_mode(mode, measured), {}).get("median_ms")
        if mode in measured and base:
            out[mode] = base / record["median_ms"]
    return out


def _policy_of(host: str) -> str:
    """The first stage's policy kind in a compiled host plan; "none" for a program without
    dependencies (tma:persistent: stream order)."""
    from tilesync.api import parse
    from tilesync.dialects import sync

    kinds = [op.policy.kind for op in parse(host).ops
             if isinstance(op, sync.StageOp) and op.policy is not None]
    return kinds[0] if kinds else "none"


def mlp_table(result: dict[str, Any]) -> str:
    lines = [
        f"MLP (two GEMM stages) vs {result['library']}; {result['reps']} reps after "
        f"{result['warmup']} warm-up; {result['sms']} SMs; "
        f"{result['programs_compiled']} programs compiled in {result['compile_seconds']:.1f} s "
        f"({result['programs_cached']} cached)",
        "speedup = median of stream sync of the same kernels / median of the mode (torch: vs "
        "stream_sync); pred = the wave model's stream/tile-sync ratio (equal tile times); the "
        "weighted bound packs waves perfectly with tile times ~ BN*K; vs graph = torch_graph "
        "(cuBLAS replayed from a CUDA graph) median / the mode's; torch's rows: the fastest "
        "of its weight layouts (named)",
        f"{'model':<6} {'M':>5} {'mode':<22} {'median ms':>10} {'p10-p90':>17} "
        f"{'speedup':>8} {'vs graph':>8} {'TFLOP/s':>8} {'rel err':>8}",
    ]
    if result.get("rates"):
        check_floors(result, row_label)
        peak, copy = floor_rates_text(result, PEAK_SOURCE)
        lines.insert(2, f"floor = the longer of the flops at {peak} and X, W1, W2, H twice and "
                        f"Y at {copy}")
    for row in result["rows"]:
        wm = row.get("wave_model")
        if wm is None:
            lines.append(f"{row['model']:<6} {row['M']:>5} configs {row['configs']}")
        else:
            waves = " + ".join(f"{s['name']} {s['blocks']} blk/{s['blocks_per_sm']} per SM "
                               f"({s['waves']:.2f} waves)" for s in wm["stages"])
            lines.append(f"{row['model']:<6} {row['M']:>5} configs {row['configs']} "
                         f"(R={row['ratio']}); {waves}; pred {wm['stream_waves']}/"
                         f"{wm['tile_waves']} = {wm['speedup']:.2f}x (tile-time weighted bound "
                         f"{wm['weighted_bound']:.2f}x)")
        if row.get("order_configs"):
            wo = row.get("wave_model_order", {})
            lines.append(f"{'':<6} {'':>5} ordered modes run {row['order_configs']} (a 48 KB "
                         "kernel has no room for the ordered tile's shared slot); pred "
                         f"{wo.get('speedup', float('nan')):.2f}x; their speedup is against "
                         "stream_sync@order_cfg")
        if row.get("floor_ms"):
            lines.append(f"{'':<6} {'':>5} {'floor':<22} {row['floor_ms']:>10.4f}")
        if row.get("sized_copy"):
            lines.append(f"{'':<6} {'':>5} {'copy of its bytes':<22} "
                         f"{row['sized_copy']['median_ms']:>10.4f}  (a device copy of the "
                         f"floor's bytes alone)")
        if row.get("tma_configs"):
            lines.append(f"{'':<6} {'':>5} {TMA} modes run {row['tma_configs']} (their speedup "
                         f"is against {TMA}stream_sync)")
        if row.get("skipped"):
            lines.append(f"{'':<6} {'':>5} SKIPPED: {row['skipped']}")
        speedup = row.get("speedup", {})
        graph = row["modes"].get("torch_graph", {}).get("median_ms")
        for mode, r in row["modes"].items():
            if "error" in r:
                lines.append(f"{'':<6} {'':>5} {mode:<22} FAILED: {r['error']}")
                continue
            spread = f"{r['p10_ms']:.4f}-{r['p90_ms']:.4f}"
            tflops = row["flops"] / (r["median_ms"] * 1e-3) / 1e12
            sp = f"{speedup[mode]:>8.3f}" if mode in speedup else f"{'-':>8}"
            vs = f"{graph / r['median_ms']:>8.3f}" if graph else f"{'-':>8}"
            policy = f"  {r['policy']}" if "policy" in r else \
                f"  {r['layouts']}" if "layouts" in r else ""
            lines.append(f"{'':<6} {'':>5} {mode:<22} {r['median_ms']:>10.4f} {spread:>17} "
                         f"{sp} {vs} {tflops:>8.1f} {r['rel_error']:>8.1e}{policy}")
        from tilesync.bench.mode_choice import table_line  # (it imports this module)

        if (line := table_line(row, " " * 13)) is not None:
            lines.append(line)
    if result.get("lost"):
        lines.append(f"STOPPED: {result['lost']}")
    lines.append(f"total {result['seconds']:.0f} s")
    return "\n".join(lines)


def precompile(models=MODELS, ms=BATCHES, modes=tuple(MODES), target: str = "sm_90",
               processes: int | None = None, debug: bool = False) -> dict[str, Any]:
    """Fill the cache without a GPU (a device machine given `.tilesync-cache/mlp` then compiles
    nothing): `python -m tilesync.bench.mlp`."""
    jobs = [(mo, M, mode, debug) for mo in models for M in ms for mode in modes_for(mo, M, modes)]
    t0 = time.perf_counter()
    cache = mlp_cache()
    out = compile_jobs(jobs, target, processes, cache)
    return {"programs": len(out), "compiled": len(out) - cache.hits,
            "seconds": time.perf_counter() - t0}


__all__ = ["MODES", "compile_jobs", "load_program", "mlp_benchmarks", "mlp_cache", "mlp_table",
           "mode_passes", "precompile", "stage_module", "wave_prediction"]


def main(argv=None) -> int:
    """`python -m tilesync.bench.mlp`: run on the GPU, print the table, write JSON;
    `--precompile` only fills the compile cache (no GPU needed)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m tilesync.bench.mlp")
    parser.add_argument("--precompile", action="store_true")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--ms", nargs="+", type=int, default=list(BATCHES))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--json", default=None, help="write the result here")
    args = parser.parse_args(argv)
    if args.precompile:
        print(precompile(args.models, args.ms))
        print(precompile(("gpt3",), (512,), debug=True))  # test_mlp_gpu.py's programs
        print(precompile(("llama",), (1024,), debug=True))
        return 0
    from tilesync.runtime.device import get_device, require_gpu
    from tilesync.runtime.errors import NoGPUError

    try:
        require_gpu()
    except NoGPUError as err:  # one line, never a traceback
        print(f"python -m tilesync.bench.mlp: error: {err}", file=sys.stderr)
        return 1
    result = mlp_benchmarks(args.models, args.ms, args.warmup, args.reps)
    result["device"] = get_device().to_dict()
    result["tilesync_commit"] = tilesync_commit()
    print(mlp_table(result))
    if args.json:
        from tilesync.bench.mode_choice import write_programs  # (it imports this module)

        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        programs = write_programs(result, path.parent, path.stem)
        path.write_text(json.dumps(result, indent=1, default=str))
        print(f"wrote {path}" + (f" and the rows' programs in {programs}/" if programs else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def mlp_plot(result: dict[str, Any], out_dir, name: str = "mlp"):
    """A PNG: per (model, M), each mode's speedup over cuBLAS replayed from a CUDA graph
    (torch_graph, as conv's and attention's plots: one baseline for every bar on the axis;
    p10-p90 of the mode as error bars), torch_eager's too; None where matplotlib is
    missing."""
    from tilesync.bench.report import pyplot, save_figure, speedup_bars

    plt = pyplot()
    if plt is None:
        return None

    rows = [r for r in result.get("rows", []) if r.get("modes")]
    modes = [m for m in (*result.get("modes", MODES), "torch_eager")
             if any(m in r["modes"] for r in rows)]
    if not rows or not modes:
        return None
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 1.3), 4.2))

    def over_library(row, mode):
        base = row["modes"].get("torch_graph", {}).get("median_ms")
        rec = row["modes"].get(mode, {})
        return None if not base or "median_ms" not in rec else (base / rec["median_ms"], rec)

    speedup_bars(ax, rows, modes, over_library)
    ax.set_xticks(range(len(rows)), [f"{r['model']} M={r['M']}" for r in rows], fontsize=8)
    ax.set_ylabel("cuBLAS (torch_graph, CUDA graph) time / mode time")
    ax.set_title(f"MLP as two synchronized GEMM stages on {result['device']['name']}")
    ax.legend(fontsize=7, ncol=2)
    return save_figure(plt, fig, result, out_dir, name)
