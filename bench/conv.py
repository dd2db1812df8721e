"""`tilesync bench conv`: two-conv chains conv3x3 -> ReLU -> conv3x3 (NHWC fp16, stride 1,
padding 1, C = K) as stage programs synchronized tile by tile, against stream sync of the same
kernels and against cuDNN.

    conv_benchmarks(shapes=SHAPES, warmup=5, reps=30) -> dict   (the CLI adds "device")
    conv_table(result) -> str;  conv_plot(result, out_dir) -> PNG path or None

Per shape (batch, H = W, C) the program is the one graph-to-stages builds for the torch front
end (transforms/graph/graph_to_stages.py: match_conv_chain, conv_chain_configs,
conv_chain_stage_module): two implicit-GEMM wgmma convs of one BM (ReLU in conv1's epilogue),
the Conv2DTileSync dependency with its halo rows; a shape the pass refuses (tiles that straddle
images: conv_halo) is listed with the pass's reason. The modes are bench/mlp.py's, with the
same passes (mlp.MODES):

* stream_sync     both convs on one stream, no PDL: the same kernels, bulk-synchronous;
* row+pdl         the generated policy (RowSync: one semaphore per tile row of conv1, which
                  every conv2 tile reads across its k-steps; TileSync where conv1 has one
                  column tile) and programmatic dependent launch;
* row+order+pdl   the same with the generated tile order (tiles from a counter);
* tile+pdl, tile+order+pdl  TileSync (one semaphore per conv1 tile), without and with the
                  order; left out where conv1 has one column of tiles (the same program as row);
* row+wait_kernel cuSync's wait-kernel instead of PDL (conv2 on a second stream);
* tma:stream_sync, tma:row+pdl, tma:tile+pdl, tma:row+wait_kernel  the same on the chain's
                  conv-pipeline=tma_ws kernels (warp-specialized, A copied by im2col TMA
                  loads, 64-row tiles; a producer thread waits, then fences the async proxy
                  before its copies of h), against tma:stream_sync;
* tma:row+one_launch, tma:tile+one_launch  the TMA convs in one launch (sync-one-launch, as
                  in bench/mlp.py): conv2's blocks join conv1's grid, tickets conv1's first;
* tma:persistent  the same TMA convs without sync hooks, so persistent (at most a block an
                  SM walking its tiles), in stream order (graph-to-stages' persistent=true);

and cuDNN through torch: eager (F.conv2d -> relu -> F.conv2d on NCHW views of the NHWC
tensors, channels_last, as bench/kernels.py conv_benchmarks does) and the same replayed from a
CUDA graph. sync-verify{sms=132} proves every program exhaustively (its default limit, 2^20
tiles per stage, is far above the largest grid here, 1568 x 4): `sync.verified = "proved"` is
checked on both stages and recorded.

Every mode's y is checked against an fp32 reference of the chain computed by torch (TF32 off):
‖y − ref‖ / ‖ref‖ < TOL with every element finite; the middle activation and y are poisoned
with NaN before the first run, and y is checked again after the timed runs, which run back to
back without a memset of the semaphores (each run a new epoch). The floor is the longer of the
chain's flops at the measured peak (bench.mlp.PEAK_SOURCE, this run) and its bytes (x, w1, w2,
the middle activation written and read, y) at the measured copy bandwidth.

Compilation runs first, in a process pool, cached in `.tilesync-cache/conv/` (bench/mlp.py's
machinery: compile_stage_program, load_program, time_forms, torch_forms, measured_rates).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

from tilesync.bench import mlp, mode_choice, report, stage_bench
from tilesync.bench.report import floor_ms as roofline_ms
from tilesync.contract import target_for_device
from tilesync.harness.compile_cache import (
    CACHE_DIR,
    CompileCache,
    source_digest,
)

SIZE = 56  # H = W: ResNet's / VGG's 56x56 3x3 layers
CHANNELS = (64, 128, 256)
BATCHES = (1, 8, 32)
SHAPES = tuple((batch, SIZE, c) for batch in BATCHES for c in CHANNELS)
GPU_TEST_SHAPES = ((2, 24, 256),)
"""test_conv_chain_gpu.py's shape: two 24x24 images (the halo rows of the tiles at their border
lie in the other image), four column tiles of 64 channels (the tile modes differ from the row
ones). Small, so that CI compiles and proves its six programs in 17 s (2x56x56x512 took 60 s);
the bench's wider filter tiles are checked by `tilesync bench conv`, which compares every
mode's result with cuDNN's."""
VERIFY_SMS = 132  # sync-verify's sms option (the H100's SMs; only co-residency uses it)
TMA = mlp.TMA
CP_ASYNC_MODES = ("stream_sync", "row+pdl", "row+order+pdl", "tile+pdl", "tile+order+pdl",
                  "row+wait_kernel")
PERSISTENT = mlp.PERSISTENT
TMA_MODES = (*(f"{TMA}{mode}" for mode in ("stream_sync", "row+pdl", "tile+pdl",
                                           "row+wait_kernel", *mlp.ONE_LAUNCH)), PERSISTENT)
MODES = CP_ASYNC_MODES + TMA_MODES
"""Names and passes are bench/mlp.py's (mlp.MODES), so the two benches compare alike; the tma:
modes run graph-to-stages' conv-pipeline=tma_ws kernels (no tile order: the TMA convs have no
`sync.tile`), their speedup against tma:stream_sync; tma:row+one_launch and tma:tile+one_launch
run both convs in one launch (sync-one-launch: tickets conv1's tiles first); tma:persistent runs
the same convs without sync hooks as persistent grids in stream order (graph-to-stages'
persistent=true)."""
TORCH_MODES = mlp.TORCH_MODES


def shape_label(shape: tuple[int, int, int]) -> str:
    batch, size, c = shape
    return f"N={batch} {size}x{size} C={c}"


def chain_function(batch: int, size: int, c: int):
    """The graph function graph-to-stages matches: conv2d -> relu -> conv2d, NHWC, C = K, no
    biases (what frontend/torch hands it for a ResNet pair after folding nothing)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import TensorType, f16
    from xdsl.ir import Block, Region

    from tilesync.dialects import graph

    act = TensorType(f16, [batch, size, size, c])
    filt = TensorType(f16, [c, 3, 3, c])
    block = Block(arg_types=[act, filt, filt])
    x, w1, w2 = block.args
    conv1 = graph.Conv2dOp(x, w1, None, [1, 1], [1, 1], act, layout="NHWC")
    relu = graph.ReluOp(conv1.result)
    conv2 = graph.Conv2dOp(relu.result, w2, None, [1, 1], [1, 1], act, layout="NHWC")
    block.add_ops([conv1, relu, conv2, func.ReturnOp(conv2.result)])
    fn = func.FuncOp("conv_chain", ([act, filt, filt], [act]), Region(block))
    fn.verify()
    return fn


def pipeline_of(mode: str) -> str:
    """The conv-pipeline (graph-to-stages' CONV_PIPELINES) whose kernels `mode` runs."""
    return "tma_ws" if mode.startswith(TMA) else "cp_async"


def chain_spec(shape: tuple[int, int, int], pipeline: str = "cp_async",
               persistent: bool = False):
    """graph-to-stages' ConvChainSpec of `shape` (raises its diagnostic where it refuses);
    `pipeline`: its conv-pipeline; `persistent`: the tiles of its persistent form."""
    from tilesync.transforms.graph.graph_to_stages import conv_chain_configs, match_conv_chain

    return conv_chain_configs(match_conv_chain(chain_function(*shape)), pipeline, persistent)


def mode_spec(shape: tuple[int, int, int], mode: str):
    """The ConvChainSpec whose kernels `mode` runs."""
    return chain_spec(shape, pipeline_of(mode), mode == PERSISTENT)


def refusal(shape: tuple[int, int, int], pipeline: str = "cp_async") -> str | None:
    """Why graph-to-stages refuses `shape` with `pipeline`'s kernels, or None."""
    from tilesync.contract import CompileError
    from tilesync.dialects.locations import OpDiagnostic

    try:
        chain_spec(shape, pipeline)
    except (CompileError, OpDiagnostic, ValueError) as err:
        return str(err).splitlines()[0]
    return None


def refusals(shape: tuple[int, int, int], modes=MODES) -> dict[str, str]:
    """Why graph-to-stages refuses `shape`, per conv-pipeline of `modes` that it refuses."""
    pipelines = dict.fromkeys(pipeline_of(mode) for mode in modes)
    return {p: why for p in pipelines if (why := refusal(shape, p)) is not None}


def modes_for(shape: tuple[int, int, int], modes=MODES) -> list[str]:
    """`modes` whose pipeline takes `shape`, without the tile ones where conv1 has a single
    column of tiles: TileSync and the generated RowSync are then one policy, one program."""
    refused = refusals(shape, modes)
    one_column = {p: chain_spec(shape, p).conv1.grid[1] == 1
                  for p in dict.fromkeys(map(pipeline_of, modes)) if p not in refused}
    return [m for m in modes if pipeline_of(m) in one_column
            and not (one_column[pipeline_of(m)] and m.removeprefix(TMA).startswith("tile+"))]


def stage_module(shape: tuple[int, int, int], mode: str):
    """The chain's stage program of `mode` before its passes (stream_sync: one stream)."""
    from tilesync.transforms.graph.graph_to_stages import (
        conv_chain_persistent_module,
        conv_chain_stage_module,
    )

    if mode == PERSISTENT:
        return conv_chain_persistent_module(mode_spec(shape, mode))
    return stage_bench.for_mode(conv_chain_stage_module(mode_spec(shape, mode)), mode)


def mode_passes(mode: str) -> list[str]:
    return mlp.mode_passes(mode, VERIFY_SMS)


# --------------------------------------------------------------------------------------------
# Compiling (process pool, cached)
# --------------------------------------------------------------------------------------------


def _job_key(job: tuple, target: str) -> str:
    shape, mode, debug = job
    spec = mode_spec(shape, mode)
    return repr((spec.conv1, spec.conv2, spec.halo, mode_passes(mode), target, debug,
                 mlp.TIMEOUT_NS))


def compile_job(job: tuple, target: str = "sm_90") -> dict[str, Any]:
    """Compile one (shape, mode, debug) program (wgmma: sm_90a where the device is sm_90)."""
    shape, mode, _ = job
    return stage_bench.compile_mode(job, target, stage_module(shape, mode), mode_passes(mode),
                                    mode_spec(shape, mode).conv1.target)


def conv_cache(directory: str | Path = CACHE_DIR) -> CompileCache:
    """The compile cache of the conv-chain programs; its key covers this file."""
    return CompileCache(directory, "conv", sources=source_digest(extra=[__file__, mlp.__file__]))


def compile_jobs(jobs, target: str = "sm_90", processes: int | None = None,
                 cache: CompileCache | None = None) -> dict[tuple, dict[str, Any]]:
    """compile_job results per job ({"job", "error"} for one that fails), from `cache` where
    it holds them, the others in a process pool (bench.mlp.compile_jobs with this bench's
    programs)."""
    return mlp.compile_jobs(jobs, target, processes, cache, compile_one=compile_job,
                            key=_job_key)


verdicts = stage_bench.verdicts


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def flops(spec) -> int:
    return spec.conv1.flops + spec.conv2.flops


def floor_bytes(spec) -> int:
    """Reading x, w1, w2, writing and reading the middle activation and writing y once (fp16)."""
    c1, c2 = spec.conv1, spec.conv2
    elements = (math.prod(c1.input_shape) + math.prod(c1.filter_shape)
                + 2 * math.prod(c1.output_shape) + math.prod(c2.filter_shape)
                + math.prod(c2.output_shape))
    return 2 * elements


def floor_ms(spec, rates: dict[str, float]) -> float:
    """The chain's flops at the measured peak rate, or its floor_bytes at the measured copy
    bandwidth, the longer (report.settle_floors raises both rates to any faster timed form's)."""
    return roofline_ms(flops(spec), floor_bytes(spec), rates)


class ChainData(mlp.CheckedOutputs):
    """x, w1, w2 (NHWC / KRSC fp16), the middle activation h, y, and the fp32 reference."""

    def __init__(self, torch, spec, seed: int = 0):
        self.torch = torch
        self.spec = spec
        F = torch.nn.functional
        c1, c2 = spec.conv1, spec.conv2
        gen = torch.Generator(device="cuda").manual_seed(seed)

        def rand(shape, scale=1.0):
            return (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
                    * scale).half()

        self.x = rand(c1.input_shape)
        # scaled by 1/sqrt(fan-in), so h and y stay O(1) in fp16
        self.w1 = rand(c1.filter_shape, (9 * c1.C) ** -0.5)
        self.w2 = rand(c2.filter_shape, (9 * c2.C) ** -0.5)
        self.h = torch.empty(c1.output_shape, device="cuda", dtype=torch.float16)
        self.y = torch.empty(c2.output_shape, device="cuda", dtype=torch.float16)
        # cuDNN's operands: NCHW-shaped views of the channels-last memory (no copy)
        self.x_nchw, self.w1_nchw, self.w2_nchw = (t.permute(0, 3, 1, 2)
                                                   for t in (self.x, self.w1, self.w2))
        tf32 = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            mid = F.relu(F.conv2d(self.x_nchw.float(), self.w1_nchw.float(), padding=1))
            self.ref = F.conv2d(mid, self.w2_nchw.float(), padding=1).permute(0, 2, 3, 1)
        finally:
            torch.backends.cudnn.allow_tf32 = tf32
        torch.cuda.synchronize()

    def kernel_args(self, spec=None) -> dict[str, list]:
        """conv1: x, w1 (K x 9C as it is), h; conv2: h, w2, y (graph-to-stages' bindings) for
        the kernels of `spec` (default: this data's), a TMA conv's operands as its tensor maps
        (A an im2col map of its input)."""
        from tilesync.harness.runner import tensor_map_args

        spec = spec or self.spec
        return {"conv1": tensor_map_args(spec.conv1.gemm, [self.x, self.w1, self.h]),
                "conv2": tensor_map_args(spec.conv2.gemm, [self.h, self.w2, self.y])}

    def torch_chain(self):
        """cuDNN: conv, ReLU (in place: no third kernel's allocation), conv; y in NHWC order."""
        F = self.torch.nn.functional
        mid = F.relu(F.conv2d(self.x_nchw, self.w1_nchw, padding=1), inplace=True)
        return F.conv2d(mid, self.w2_nchw, padding=1).permute(0, 2, 3, 1)



def mode_form(entry: dict[str, Any], data: ChainData, name: str, spec=None):
    """One mode (running `spec`'s kernels, default the data's), both stages proved, ready to
    time (stage_bench.proved_form)."""
    persistent = entry["job"][1] == PERSISTENT  # no dependency: nothing to prove
    return stage_bench.proved_form(entry, data, data.kernel_args(spec), name,
                                   () if persistent else ("conv1", "conv2"))


def config_label(spec, persistent: bool = False) -> str:
    conv1 = spec.conv1
    bm, bn, bk = conv1.tile
    tiles = f"{conv1.grid[0]}x{conv1.grid[1]} tiles"
    return (f"{conv1.pipeline}{' persistent' if persistent else ''}: BM {bm} BN {bn} BK {bk}, "
            f"{conv1.stages} stages, {tiles}" + ("" if persistent else f", halo {spec.halo}"))


def conv_benchmarks(shapes=SHAPES, warmup: int = 5, reps: int = 30, modes=MODES,
                    processes: int | None = None,
                    cache_dir: str | Path | None = CACHE_DIR) -> dict[str, Any]:
    """Time every mode of every shape; see the module docstring. Needs torch and a GPU."""
    from tilesync.runtime.device import get_device

    started = time.perf_counter()
    device = get_device()
    target = target_for_device(device.arch)
    refused = {shape: "; ".join(f"{p}: {why}" for p, why in refusals(shape, modes).items())
               for shape in shapes if not modes_for(shape, modes)}
    accepted = [shape for shape in shapes if shape not in refused]
    jobs = [(shape, mode, False) for shape in accepted for mode in modes_for(shape, modes)]
    torch, compiled, result = stage_bench.start_run(
        "conv", jobs, compile_jobs, conv_cache(cache_dir) if cache_dir else None, target,
        processes, device.sm_count, warmup, reps, modes, VERIFY_SMS,
        lambda torch: f"torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()})")
    torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest algorithm per shape
    rates = result["rates"]
    lost: str | None = None  # a CUDA error: the context is gone, later GPU work is skipped
    for shape in shapes:
        batch, size, c = shape
        row: dict[str, Any] = {"shape": shape_label(shape), "N": batch, "H": size, "W": size,
                               "C": c, "modes": {}}
        result["rows"].append(row)
        if shape in refused:
            row["refused"] = refused[shape]
            continue
        shape_modes = modes_for(shape, modes)
        specs = {m: mode_spec(shape, m) for m in shape_modes}
        spec = next(iter(specs.values()))
        labels = {m: config_label(s, m == PERSISTENT) for m, s in specs.items()}
        row.update(config="; ".join(dict.fromkeys(labels.values())),
                   flops=flops(spec), floor_bytes=floor_bytes(spec),
                   floor_ms=floor_ms(spec, rates))
        if partly_refused := refusals(shape, modes):
            row["refused_pipelines"] = partly_refused
        if lost is not None:
            row["skipped"] = lost
            continue
        try:
            data = ChainData(torch, spec, seed=batch * 1000 + c)
        except Exception as exc:
            row["skipped"] = f"{type(exc).__name__}: {exc}"
            continue
        lost = stage_bench.time_modes(
            row, shape_modes, {m: compiled[(shape, m, False)] for m in shape_modes},
            lambda entry, name, data=data, specs=specs: mode_form(
                entry, data, name, specs[entry["job"][1]]),
            shape_label(shape), data, warmup, reps, {"torch": data.torch_chain})
        del data
        torch.cuda.empty_cache()
        row["speedup"] = mlp.speedups(row["modes"])
        row["mode_choice"] = mode_choice.bench_row(
            "conv", shape, {m: compiled[(shape, m, False)] for m in shape_modes},
            row["modes"], device.sm_count, device.name)
    if lost is not None:
        result["lost"] = lost
    report.settle_floors(result, row_label)
    report.check_floors(result, row_label)
    result["seconds"] = time.perf_counter() - started
    return result


def row_label(row: dict[str, Any]) -> str:
    return row["shape"]


def conv_table(result: dict[str, Any]) -> str:
    report.check_floors(result, row_label)
    peak, copy = report.floor_rates_text(result, mlp.PEAK_SOURCE)
    lines = [
        f"conv3x3 -> ReLU -> conv3x3 (NHWC fp16, C = K) vs {result['library']}; "
        f"{result['reps']} reps after {result['warmup']} warm-up; {result['sms']} SMs; "
        f"{result['programs_compiled']} programs compiled in {result['compile_seconds']:.1f} s "
        f"({result['programs_cached']} cached); every program {result['verify']}",
        "speedup = median of stream_sync (the same kernels) / the mode's; vs graph = cuDNN "
        "replayed from a CUDA graph / the mode's (> 1: faster than cuDNN); /floor = median / "
        f"floor (the longer of the flops at {peak}, and x, w1, w2, h twice, y at {copy})",
        f"{'shape':<20} {'mode':<18} {'median ms':>10} {'p10-p90':>17} {'speedup':>8} "
        f"{'vs graph':>8} {'/floor':>7} {'TFLOP/s':>8} {'rel err':>8}",
    ]
    for row in result["rows"]:
        if row.get("refused"):
            lines.append(f"{row['shape']:<20} REFUSED: {row['refused']}")
            continue
        lines.append(f"{row['shape']:<20} {row['config']}; floor {row['floor_ms']:.4f} ms")
        if row.get("skipped"):
            lines.append(f"{'':<20} SKIPPED: {row['skipped']}")
        lines.extend(stage_bench.mode_lines(row, 20, ["torch_graph"]))
        if (line := mode_choice.table_line(row, " " * 21)) is not None:
            lines.append(line)
    if result.get("lost"):
        lines.append(f"STOPPED: {result['lost']}")
    lines.append(f"total {result['seconds']:.0f} s")
    return "\n".join(lines)


def conv_plot(result: dict[str, Any], out_dir, name: str = "conv"):
    """A PNG: per shape, each mode's speedup over cuDNN replayed from a CUDA graph (p10-p90 of
    the mode as error bars); None where matplotlib is missing."""
    return stage_bench.library_plot(
        result, out_dir, name, [*result.get("modes", MODES), "torch_eager"],
        lambda row: row["shape"].replace(" ", "\n", 1), "cuDNN (CUDA graph) time / mode time",
        "conv3x3 -> ReLU -> conv3x3 as two synchronized stages")


def precompile(shapes=SHAPES, target: str = "sm_90", processes: int | None = None,
               debug: bool = False) -> dict[str, Any]:
    """Fill the cache without a GPU: `python -m tilesync.bench.conv --precompile`."""
    jobs = [(s, m, debug) for s in shapes for m in modes_for(s)]
    return stage_bench.precompile(jobs, compile_jobs, conv_cache(), target, processes)


def main(argv=None) -> int:
    """`python -m tilesync.bench.conv --precompile`: fill the compile cache (no GPU)."""
    return stage_bench.precompile_main("python -m tilesync.bench.conv", precompile,
                                       GPU_TEST_SHAPES, argv)


__all__ = ["CP_ASYNC_MODES", "GPU_TEST_SHAPES", "MODES", "PERSISTENT", "SHAPES", "TMA_MODES",
           "ChainData", "chain_spec", "compile_job", "compile_jobs", "conv_benchmarks",
           "conv_cache", "conv_plot", "conv_table", "mode_spec", "modes_for", "pipeline_of",
           "precompile", "refusal", "refusals", "stage_module", "verdicts"]


if __name__ == "__main__":
    sys.exit(main())
