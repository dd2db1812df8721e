"""`tilesync bench kernels`: our generated kernels against cuBLAS / cuDNN (through PyTorch).

    kernel_benchmarks(quick=False) -> dict      (the CLI adds "device" and writes the JSON)
    kernels_table(result) -> str

Workloads (those of the cuSync paper): GEMM 4096^3 and 8192^3 in fp16 and bf16; the GPT-3 MLP
of 8-way tensor parallelism (M x 6144 x 12288 with GeLU, M x 12288 x 6144) and the LLaMA-65B MLP
(M x 5632 x 8192 with SwiGLU on the combined gate|up weight -> M x 2816, then M x 8192 x 2816)
for M = 1 .. 2048; 3x3 convolutions (NHWC fp16) where kernels/conv2d.py is present. Per shape
the autotuner (harness/autotune.py) measures the candidates once (the warp-specialized TMA
kernels the wave model proposes, and for the shapes of record the cp.async / wgmma kernels;
for a conv every tile and split-K factor of kernels.choice.conv_candidates beside the layer's
`conv_workloads` config) and caches its choice on disk; the table prints the choice, timed
here as the library is, and every candidate's tuning time.

Timing: CUDA events around each repetition on the legacy stream (ours and torch's), warm-up
first, median with p10/p90; the repetitions are enqueued behind a hold kernel so that they run
back to back whatever the host's launch cost (a Python launch can take longer than a 20 us
weight-streaming GEMM). A GEMM shape's forms (ours, cuBLAS in both layouts of B, torch's GEMM
+ epilogue) take turns (bench.mlp.time_in_turns), so that a step in the device's speed during
the run favours none of them. Where a shape's operands fit twice in L2 (60 MB on an H200), the
inputs rotate through enough copies that every repetition reads them from HBM, as a layer of
a real model would. For M <= 64 (weight streaming) the table gives GB/s with bytes = weights +
input and output activations once, and the fraction of a device-to-device copy's bandwidth
measured in the same run (%copy: a 1 GiB copy's; %size: a copy moving the GEMM's bytes, read
half and written half, rotating through buffers as the GEMM's operands do (`copy_bandwidth`
with `l2`), timed the same way: how much of the copy rate a transfer of this size reaches
at all, launch and ramp included). The ratio is library time / our time (1.0 = as fast as cuBLAS);
for fused epilogues (GeLU, SwiGLU) the library time is the GEMM alone (a conservative ratio:
ours includes the epilogue), and torch's eager GEMM + epilogue is reported beside it.
Without torch only our numbers are reported, and the result says so.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

GPT3 = (("gpt3_fc1", 6144, 12288, "gelu"), ("gpt3_fc2", 12288, 6144, None))
LLAMA = (("llama_fc1", 5632, 8192, "swiglu"), ("llama_fc2", 8192, 2816, None))
BATCHES = (1, 16, 64, 256, 512, 1024, 2048)
QUICK_BATCHES = (16, 1024)
STREAMING_M = 64  # M <= this: weight streaming, report GB/s
HOLD_NS_PER_REP = 100_000
"""Each timed sequence starts behind a hold kernel of this many ns per repetition
(runtime/timing.py): the host enqueues the repetitions meanwhile, so kernels shorter than a
Python launch are timed back to back, as in a graph or a busy stream, not host-bound."""
L2_BYTES_DEFAULT = 50 * 1024 * 1024


@dataclass(frozen=True)
class Workload:
    name: str
    M: int
    N: int
    K: int
    epilogue: str | None = None
    dtype: str = "f16"

    @property
    def out_cols(self) -> int:
        return self.N // 2 if self.epilogue == "swiglu" else self.N

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @property
    def bytes(self) -> int:
        """Weights + input and output activations once (fp16)."""
        return 2 * (self.K * self.N + self.M * self.K + self.M * self.out_cols)


LEGACY_GEMMS = ("gemm4096", *(name for name, *_ in (*GPT3, *LLAMA)))
"""Workloads whose cp.async / wgmma candidates are part of the PTX digest record."""


def workloads(quick: bool) -> list[Workload]:
    out = [Workload("gemm4096", 4096, 4096, 4096)]
    if not quick:
        out += [Workload("gemm4096", 4096, 4096, 4096, dtype="bf16"),
                Workload("gemm8192", 8192, 8192, 8192),
                Workload("gemm8192", 8192, 8192, 8192, dtype="bf16")]
    for m in QUICK_BATCHES if quick else BATCHES:
        for name, n, k, epilogue in (*GPT3, *LLAMA):
            out.append(Workload(name, m, n, k, epilogue))
    return out


def legacy_candidates(w: Workload, quick: bool) -> list:
    """The cp.async and wgmma kernels of `candidate_configs` for the fp16 workloads of record
    (GEMM 4096^3 and the MLPs), none for the others."""
    if w.name not in LEGACY_GEMMS or w.dtype != "f16" or w.M == 8192:
        return []
    return candidate_configs(w, quick)


def tuning_candidates(w: Workload, quick: bool) -> list:
    """What the autotuner measures for `w`: the warp-specialized TMA kernels the wave model
    proposes (with and without clusters, the first reading B K x N too; the full bench also
    their stream-K twins, the ping-pongs and the tall tiles) and the `legacy_candidates`. Every
    candidate reads
    the same bytes of B, as N x K or K x N, as cuBLAS does in its two timings."""
    from tilesync.kernels.choice import (
        BENCH_N_MAJOR,
        BENCH_PINGPONG,
        BENCH_STREAM_K,
        BENCH_TALL,
        BENCH_TWINS,
        propose_tma_configs,
    )

    tma = propose_tma_configs(w.M, w.N, w.K, w.dtype, w.epilogue, limit=3 if quick else 5,
                              twins=BENCH_TWINS, stream_k=0 if quick else BENCH_STREAM_K,
                              pingpong=0 if quick else BENCH_PINGPONG,
                              n_major=1 if quick else BENCH_N_MAJOR,
                              tall=0 if quick else BENCH_TALL)
    return [*tma, *legacy_candidates(w, quick)]


def candidate_configs(w: Workload, quick: bool) -> list:
    """The cp.async and wgmma configs of the generator per shape (the autotuner measures them
    beside the TMA kernels). wgmma configs (sm_90a) read B as N x K (`b_layout="col"`): they
    are timed on the same buffer, and the library is timed in both layouts, the faster one
    compared."""
    from tilesync.kernels.config import gemm_config

    def make(tile, warps, stages, split_k=1, mma="sync", in_cluster=False, b_layout=None):
        try:
            return gemm_config(w.M, w.N, w.K, tile=tile, warps=warps, stages=stages,
                               epilogue=w.epilogue, split_k=split_k, name="gemm", mma=mma,
                               b_layout=b_layout or ("col" if mma == "wgmma" else "row"),
                               split_cluster=in_cluster)
        except ValueError:
            return None

    def wgmma(tile, stages, split_k=1, in_cluster=False):
        return make(tile, (tile[0] // 16, 1), stages, split_k, "wgmma", in_cluster)

    configs = []
    if w.M <= STREAMING_M:
        # Weight streaming: enough bytes in flight per SM (deep or wide k-tiles, or split K
        # when the N tiles alone leave SMs idle).
        if w.M <= 16:
            tiles_n = -(-w.N // 128)
            k_tiles = -(-w.K // 32)
            splits = [s for s in (8, 4, 2) if k_tiles % s == 0]
            want = max(1, min(splits, key=lambda s: abs(tiles_n * s - 400))) if splits else 1
            configs.append(make((16, 64, 128), (1, 4), 4))
            configs.append(make((16, 64, 64), (1, 4), 8))
            if not quick:
                # twice the bytes in flight of the first (160 KB of stages a block)
                configs.append(make((16, 64, 128), (1, 4), 8))
                for in_cluster in (False, True):  # the slices' sums in L2, or on the SMs
                    configs.append(make((16, 128, 32), (1, 4), 4, want, in_cluster=in_cluster))
                    configs.append(make((16, 64, 64), (1, 4), 4, 2, in_cluster=in_cluster))
                configs.append(make((16, 128, 64), (1, 4), 4))
                # 48-wide tiles (B read as N x K, which takes widths that are not powers of
                # two) put a block on 118-128 of the 132 SMs where 64-wide ones fill 88-96: on
                # an H200 (bench/results/kernels-smallm-ab-nvidia-h200) GPT-3's fc1 at M = 16
                # took 0.0397 ms against 0.0408, its fc2 0.0387 (wgmma) against 0.0396
                configs.append(make((16, 48, 128), (1, 3), 8, b_layout="col"))
                configs.append(wgmma((64, 48, 64), 8))
        else:
            # One warpgroup of wgmma, narrow N tiles: a CTA on nearly every SM, 7 k-tiles of
            # 64 in flight each
            configs.append(wgmma((64, 48, 64), 8))
            configs.append(wgmma((64, 64, 64), 8))
            if not quick:
                configs.append(wgmma((64, 32, 64), 8))
                configs.append(wgmma((64, 96, 64), 8))
                configs.append(make((64, 64, 128), (1, 4), 4))
                configs.append(make((64, 128, 64), (1, 4), 4))
                # two slices a tile, reducing in their cluster: two such blocks fit an SM
                configs.append(wgmma((64, 64, 64), 6, 2, in_cluster=True))
    else:
        configs.append(wgmma((128, 256, 64), 4))
        configs.append(wgmma((128, 128, 64), 6))
        if not quick:
            configs.append(wgmma((256, 128, 64), 4))
            configs.append(make((128, 64, 32), (2, 2), 4))
            configs.append(make((128, 128, 32), (2, 2), 3))
    seen, unique = set(), []
    for c in configs:
        if c is not None and c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def _config_label(cfg) -> str:
    bm, bn, bk = cfg.tile
    label = f"{bm}x{bn}x{bk} w{cfg.warps[0]}x{cfg.warps[1]} s{cfg.stages}"
    if getattr(cfg, "pipeline", "cp_async") == "tma_ws":
        gemm = getattr(cfg, "gemm", cfg)  # a conv's: its implicit GEMM
        label = (f"tma_ws{gemm.wgmma_in_flight} {bm}x{bn}x{bk} s{cfg.stages}"
                 + (f" cluster{gemm.cluster_m}" if gemm.cluster_m > 1 else "")
                 + (f" staging{gemm.staging_boxes}" if gemm.staging_boxes else "")
                 + (f" streamK{gemm.stream_k_tiles}" if gemm.stream_k_tiles else "")
                 + (" pingpong" if gemm.pingpong else "")
                 + (f" l2prefetch{gemm.l2_prefetch}" if gemm.l2_prefetch else "")
                 + (" im2col" if gemm.im2col else "")
                 + (" B-KxN" if gemm.b_layout == "row" else ""))
    elif getattr(cfg, "mma", "sync") == "wgmma":
        label = f"wgmma{cfg.wgmma_in_flight} " + label
    return label + split_label(cfg)


def split_label(cfg) -> str:
    """` splitk4`, ` splitk4 cluster` (the slices reduce in a cluster), or nothing."""
    if cfg.split_k == 1:
        return ""
    return f" splitk{cfg.split_k}" + (" cluster" if getattr(cfg, "split_cluster", False) else "")


def _timing_dict(timing) -> dict[str, Any]:
    return {"median_ms": timing.median_ms, "p10_ms": timing.p10_ms, "p90_ms": timing.p90_ms,
            "reps": timing.reps, "warmup": timing.warmup}


def _rates(w: Workload, ms: float, copy_gbps: float | None,
           sized_copy_gbps: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"tflops": w.flops / (ms * 1e-3) / 1e12}
    if w.M <= STREAMING_M:
        out["gbps"] = w.bytes / (ms * 1e-3) / 1e9
        if copy_gbps:
            out["fraction_of_copy_bw"] = out["gbps"] / copy_gbps
        if sized_copy_gbps:
            out["fraction_of_sized_copy_bw"] = out["gbps"] / sized_copy_gbps
    return out


class _Torch:
    """torch, when importable and seeing the GPU."""

    def __init__(self) -> None:
        self.torch = None
        self.why = ""
        try:
            import torch

            if not torch.cuda.is_available():
                self.why = "torch sees no CUDA device"
            else:
                self.torch = torch
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
        except Exception as exc:  # absent or broken: our numbers only
            self.why = f"torch is not importable ({type(exc).__name__}: {exc})"


def _copies_for(nbytes: int, l2: int) -> int:
    """Copies of the inputs to rotate through so that each repetition misses L2."""
    if nbytes >= 2 * l2:
        return 1
    return min(8, math.ceil(3 * l2 / max(nbytes, 1)))


def copy_bandwidth(torch_mod, warmup: int, reps: int, nbytes: int = 1 << 30,
                   l2: int | None = None) -> dict[str, Any]:
    """A device-to-device copy of `nbytes`: GB/s counting the read and the write. With `l2`,
    through enough buffer pairs that every repetition misses an L2 of that size (a copy the
    size of one GEMM's bytes, timed as its operands rotate)."""
    pairs = 1 if l2 is None else _copies_for(2 * nbytes, l2)
    if torch_mod is not None:
        buffers = [(torch_mod.empty(nbytes, dtype=torch_mod.uint8, device="cuda"),
                    torch_mod.empty(nbytes, dtype=torch_mod.uint8, device="cuda"))
                   for _ in range(pairs)]
        how = "torch Tensor.copy_"

        def fn(i):
            src, dst = buffers[i]
            dst.copy_(src)
    else:
        from cuda.bindings import driver

        from tilesync.runtime.buffers import DeviceBuffer
        from tilesync.runtime.errors import check

        buffers = [(DeviceBuffer.empty(nbytes, np.uint8), DeviceBuffer.empty(nbytes, np.uint8))
                   for _ in range(pairs)]
        how = "cuMemcpyDtoDAsync"

        def fn(i):
            src, dst = buffers[i]
            check(driver.cuMemcpyDtoDAsync(dst.ptr, src.ptr, nbytes, driver.CUstream(0)),
                  "cuMemcpyDtoDAsync")
    timing = _time_rotating(fn, pairs, warmup, reps)
    return {"bytes": nbytes, "how": how, "rotating_copies": pairs, **_timing_dict(timing),
            "gbps": 2 * nbytes / (timing.median_ms * 1e-3) / 1e9}


class _Operands:
    """A, B (and C) of one shape in device memory, rotating copies where they fit in L2."""

    def __init__(self, w: Workload, copies: int, torch_mod, seed: int = 0):
        self.copies = copies
        self.torch = torch_mod
        if torch_mod is not None:
            gen = torch_mod.Generator(device="cuda").manual_seed(seed)
            dtype = torch_mod.float16 if w.dtype == "f16" else torch_mod.bfloat16

            def rand(shape):
                return torch_mod.randn(shape, generator=gen, device="cuda", dtype=dtype)

            self.a = [rand((w.M, w.K)) for _ in range(copies)]
            self.b = [rand((w.K, w.N)) for _ in range(copies)]
            self.c = torch_mod.empty((w.M, w.out_cols), device="cuda", dtype=dtype)
            self.full = torch_mod.empty((w.M, w.N), device="cuda", dtype=dtype)
        else:
            from tilesync.kernels.reference import host_array
            from tilesync.runtime.buffers import DeviceBuffer

            rng = np.random.default_rng(seed)

            def rand(shape):
                block = rng.standard_normal(min(math.prod(shape), 1 << 20), np.float32)
                return DeviceBuffer.from_numpy(host_array(np.resize(block, shape), w.dtype))

            self.a = [rand((w.M, w.K)) for _ in range(copies)]
            self.b = [rand((w.K, w.N)) for _ in range(copies)]
            self.c = DeviceBuffer.empty((w.M, w.out_cols), np.uint16)
            self.full = None


def _time_rotating(fn, copies: int, warmup: int, reps: int):
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.timing import time_region

    state = {"i": 0}

    def step():
        fn(state["i"] % copies)
        state["i"] += 1

    return time_region(step, warmup=warmup, reps=reps, hold_ns_per_rep=HOLD_NS_PER_REP,
                 hold=hold_stream)


def _rotating_form(fn, copies: int):
    """`fn(i)` over the operands' rotating copies, one call a run, as a bench.mlp.TimedForm on
    the default stream (the stream torch's and our launches here take). Nothing is checked in
    the timing loop: the kernels' numerics are the GPU tests'."""
    from tilesync.bench.mlp import TimedForm
    from tilesync.runtime.launch import synchronize
    from tilesync.runtime.stream import Event, elapsed_ms

    state = {"i": 0}

    def run():
        start, end = Event(), Event()
        start.record(None)
        fn(state["i"] % copies)
        end.record(None)
        state["i"] += 1
        return start, end

    return TimedForm(run, elapsed_ms, lambda: synchronize(None), None, lambda: None,
                     lambda: 0.0)


def _library_forms(w: Workload, ops: _Operands) -> dict[str, Any]:
    """cuBLAS through torch on the workload's bytes: B read K x N (gemm_nn) and the same bytes
    read as N x K (gemm_nt); with an epilogue, torch's eager GEMM + epilogue too."""
    torch = ops.torch
    b_nk = [b.view(w.N, w.K) for b in ops.b]  # the same bytes as an N x K matrix
    forms = {"gemm_nn": lambda i: torch.matmul(ops.a[i], ops.b[i], out=ops.full),
             "gemm_nt": lambda i: torch.matmul(ops.a[i], b_nk[i].t(), out=ops.full)}
    if w.epilogue is not None:
        F = torch.nn.functional

        def eager(i):
            y = torch.matmul(ops.a[i], ops.b[i], out=ops.full)
            if w.epilogue == "gelu":
                return F.gelu(y, approximate="tanh")
            g, u = y[:, : w.out_cols], y[:, w.out_cols:]
            return F.silu(g) * u

        forms["gemm_plus_epilogue"] = eager
    return {name: _rotating_form(fn, ops.copies) for name, fn in forms.items()}


def _library_record(w: Workload, timed: dict[str, Any]) -> dict[str, Any]:
    """The library's record from its forms' timings: `gemm` the faster layout's."""
    gemm_nn, gemm_nt = timed["gemm_nn"], timed["gemm_nt"]
    best, layout = (gemm_nn, "A @ B (B K x N)") if gemm_nn.median_ms <= gemm_nt.median_ms \
        else (gemm_nt, "A @ B^T (B N x K)")
    out: dict[str, Any] = {"gemm": _timing_dict(best),
                           "what": f"torch.matmul {w.dtype} (cuBLAS)",
                           "layout": layout, "gemm_nn": _timing_dict(gemm_nn),
                           "gemm_nt": _timing_dict(gemm_nt)}
    if "gemm_plus_epilogue" in timed:
        out["gemm_plus_epilogue"] = _timing_dict(timed["gemm_plus_epilogue"])
    return out


def _time_together(forms: dict[str, Any], warmup: int, reps: int) -> dict[str, Any]:
    """Each form's Timing, the forms taking turns (bench.mlp.time_in_turns), or its error."""
    from tilesync.bench.mlp import time_in_turns
    from tilesync.runtime.timing import Timing

    timed = time_in_turns(forms, warmup, reps)
    return {name: Timing.from_samples(record["samples_ms"], warmup) if "samples_ms" in record
            else record["error"] for name, record in timed.items()}


def _bench_workload(w: Workload, ptx_by_cfg: dict, ops: _Operands, warmup: int, reps: int,
                    copy_gbps: float | None, tth, tuning_cache, l2: int) -> dict[str, Any]:
    """The autotuner's choice among the candidates (measured once, cached on disk), timed
    here as the library is, with every candidate's tuning time reported beside it; for
    weight streaming, a copy moving the same bytes (half read, half written)."""
    from tilesync.harness.autotune import GemmProblem, choose_gemm
    from tilesync.harness.runner import GemmRunner

    entry: dict[str, Any] = {**asdict(w), "flops": w.flops, "bytes": w.bytes,
                             "rotating_copies": ops.copies, "configs": []}
    sized_gbps = None
    if w.M <= STREAMING_M and tth.torch is not None:
        entry["sized_copy"] = copy_bandwidth(tth.torch, warmup, reps, w.bytes // 2, l2)
        sized_gbps = entry["sized_copy"]["gbps"]
    problem = GemmProblem(w.M, w.N, w.K, w.dtype, w.epilogue)
    choice = choose_gemm(problem, candidates=list(ptx_by_cfg), ptx=list(ptx_by_cfg.values()),
                         cache_dir=tuning_cache)
    entry["choice"] = {"config": _config_label(choice.config), "repr": repr(choice.config),
                       "tuning_ms": choice.median_ms, "cached": choice.from_cache,
                       "tuning_seconds": choice.seconds}
    for cfg, ms in choice.measured:
        record: dict[str, Any] = {"config": _config_label(cfg), "split_k": cfg.split_k}
        record.update({"tuning_ms": ms} if isinstance(ms, float) else {"error": ms})
        entry["configs"].append(record)
    best: dict[str, Any] = {"config": _config_label(choice.config),
                            "split_k": choice.config.split_k}
    # ours and the library's forms take turns (_time_together)
    forms = _library_forms(w, ops) if tth.torch is not None else {}
    try:
        runner = GemmRunner(choice.config, ptx=ptx_by_cfg[choice.config])
        best["registers"] = runner.kernel.num_regs
        forms["ours"] = _rotating_form(lambda i, r=runner: r.launch(ops.a[i], ops.b[i], ops.c),
                                       ops.copies)
    except Exception as exc:
        best["error"] = f"{type(exc).__name__}: {exc}"
    timed = _time_together(forms, warmup, reps)
    if isinstance(timed.get("ours"), str):
        best["error"] = timed["ours"]
    if "error" in best:
        best = None
    else:
        best.update(_timing_dict(timed["ours"]))
        best.update(_rates(w, timed["ours"].median_ms, copy_gbps, sized_gbps))
    entry["ours"] = best
    if tth.torch is not None:
        lib = _library_record(w, timed)
        lib.update(_rates(w, lib["gemm"]["median_ms"], copy_gbps, sized_gbps))
        entry["library"] = lib
        if best is not None:
            entry["ratio"] = lib["gemm"]["median_ms"] / best["median_ms"]
    return entry


def kernel_benchmarks(quick: bool = False, warmup: int = 5, reps: int = 30,
                      conv: bool = True, tuning_cache=None) -> dict[str, Any]:
    """Time our kernels and the libraries' on every workload; see the module docstring.
    `tuning_cache`: where the autotuner keeps its choices (default .tilesync-cache)."""
    from tilesync.harness.compile import compile_ptx_many
    from tilesync.harness.compile_cache import CACHE_DIR
    from tilesync.runtime.device import get_device

    started = time.perf_counter()
    device = get_device()
    l2 = device.l2_cache_bytes or L2_BYTES_DEFAULT
    # Compile first (a process pool; cached in .tilesync-cache/ptx), before torch starts its
    # threads.
    loads = workloads(quick)
    hopper = device.arch == "sm_90"  # wgmma and TMA configs need sm_90a
    candidates = {w: [c for c in tuning_candidates(w, quick) if hopper or c.target is None]
                  for w in loads}
    all_cfgs = sorted({c for cs in candidates.values() for c in cs}, key=repr)
    t0 = time.perf_counter()
    ptx = dict(zip(all_cfgs, compile_ptx_many(all_cfgs, device.arch), strict=True))
    compile_seconds = time.perf_counter() - t0
    softmax_cfgs = softmax_workloads(quick)
    softmax_ptx = dict(zip(softmax_cfgs, compile_ptx_many(softmax_cfgs, device.arch),
                           strict=True))
    conv_ptx = None
    if conv:
        conv_cfgs = sorted({c for cs in conv_tuning_candidates(quick, hopper).values()
                            for c in cs}, key=repr)
        conv_ptx = dict(zip(conv_cfgs, compile_ptx_many(conv_cfgs, device.arch), strict=True))

    tth = _Torch()
    result: dict[str, Any] = {
        "experiment": "kernels", "quick": quick, "warmup": warmup, "reps": reps,
        "l2_bytes": l2, "library": "torch " + tth.torch.__version__ if tth.torch else None,
        "library_note": tth.why or "cuBLAS via torch.matmul, cuDNN via conv2d",
    }
    copy = copy_bandwidth(tth.torch, warmup, reps)
    result["copy"] = copy
    result["compile_seconds"] = compile_seconds
    result["configs_compiled"] = len(all_cfgs)

    rows = []
    for w in loads:
        copies = _copies_for(2 * (w.M * w.K + w.K * w.N), l2)
        try:
            ops = _Operands(w, copies, tth.torch)
            rows.append(_bench_workload(w, {c: ptx[c] for c in candidates[w]}, ops, warmup,
                                        reps, copy["gbps"], tth, tuning_cache or CACHE_DIR,
                                        l2))
            del ops
        except Exception as exc:  # report and go on with the other shapes
            rows.append({**asdict(w), "configs": [{"error": f"{type(exc).__name__}: {exc}"}]})
    result["gemm"] = rows
    if conv_ptx is not None:
        result["conv"] = conv_benchmarks(conv_tuning_candidates(quick, hopper), conv_ptx,
                                         warmup, reps, tth, tuning_cache or CACHE_DIR)
    result["softmax"] = softmax_benchmarks(softmax_ptx, warmup, reps, tth, copy["gbps"])
    add_floors(result)
    result["seconds"] = time.perf_counter() - started
    return result


def run_rates(result: dict[str, Any]) -> dict[str, float] | None:
    """{"peak_tflops", "copy_gbps"} of a kernels run: the highest rate the library reached on
    any GEMM of the run (one shape's rate varies run to run: 8192^3 ran at 700-777 TFLOP/s on
    one H100), and the run's copy bandwidth; None without library timings."""
    rates = [r["library"]["tflops"] for r in result.get("gemm", []) if r.get("library")]
    if not rates:
        return None
    return {"peak_tflops": max(rates), "copy_gbps": result["copy"]["gbps"]}


def add_floors(result: dict[str, Any]) -> None:
    """Each GEMM row's floor (bench.report.floor_ms) from the run's measured rates."""
    from tilesync.bench.report import floor_ms

    rates = run_rates(result)
    if rates is None:
        return
    result["rates"] = rates
    for r in result["gemm"]:
        if "flops" in r and "bytes" in r:
            r["floor_ms"] = floor_ms(r["flops"], r["bytes"], rates)


def kernels_table(result: dict[str, Any]) -> str:
    copy = result["copy"]
    lines = [
        f"kernels vs {result.get('library') or 'no library'} ({result['library_note']}); "
        f"{result['reps']} reps after {result['warmup']} warm-up, medians",
        f"device copy: {copy['gbps']:.0f} GB/s ({copy['how']}, {copy['bytes'] >> 20} MiB); "
        f"{result['configs_compiled']} configs compiled in {result['compile_seconds']:.1f} s",
        f"{'workload':<15} {'M':>5} {'N':>6} {'K':>6} {'ours ms':>9} {'p10-p90':>15} "
        f"{'TFLOP/s':>8} {'GB/s':>6} {'%copy':>6} {'%size':>6} {'lib ms':>8} {'lib TF':>7} "
        f"{'ratio':>6} "
        f"{'floor':>8} {'/floor':>6}  autotuned choice",
    ]
    rates = run_rates(result)
    if rates:
        lines.insert(2, f"floor = the longer of the flops at {rates['peak_tflops']:.0f} TFLOP/s "
                        f"(the library's fastest GEMM, this run) and the bytes at "
                        f"{rates['copy_gbps']:.0f} GB/s (device copy, this run); /floor = ours "
                        "over it; %size = ours over a copy of the same bytes")
    for r in result["gemm"]:
        ours = r.get("ours")
        name = f"{r['name']} {r.get('dtype', 'f16')}"
        if ours is None:
            errors = "; ".join(c.get("error", "") for c in r["configs"])
            lines.append(f"{name:<15} {r['M']:>5} {r['N']:>6} {r['K']:>6}  FAILED: {errors}")
            continue
        lib = r.get("library")
        gbps = f"{ours['gbps']:>6.0f}" if "gbps" in ours else f"{'':>6}"
        frac = " ".join(f"{100 * ours[key]:>5.0f}%" if key in ours else f"{'':>6}"
                        for key in ("fraction_of_copy_bw", "fraction_of_sized_copy_bw"))
        lib_cols = (f"{lib['gemm']['median_ms']:>8.4f} {lib['tflops']:>7.1f} "
                    f"{r['ratio']:>6.2f}") if lib else f"{'-':>8} {'-':>7} {'-':>6}"
        spread = f"{ours['p10_ms']:.4f}-{ours['p90_ms']:.4f}"
        choice = r.get("choice", {})
        tuned = "cached" if choice.get("cached") else \
            f"tuned in {choice.get('tuning_seconds', 0.0):.1f} s"
        floor = f"{r['floor_ms']:>8.4f} {ours['median_ms'] / r['floor_ms']:>6.2f}" \
            if r.get("floor_ms") else f"{'-':>8} {'-':>6}"
        lines.append(
            f"{name:<15} {r['M']:>5} {r['N']:>6} {r['K']:>6} {ours['median_ms']:>9.4f} "
            f"{spread:>15} {ours['tflops']:>8.1f} {gbps} {frac} {lib_cols} {floor}  "
            f"{ours['config']} ({ours.get('registers', '?')} regs; {tuned})"
        )
        for c in r["configs"]:
            if c["config"] == ours["config"]:
                continue
            what = c.get("error") or f"{c['tuning_ms']:.4f} ms when tuning"
            lines.append(f"{'':<15} {'':>5}   also {c['config']}: {what}")
    if result.get("conv"):
        lines.append("")
        lines.append(conv_table(result["conv"]))
    if result.get("softmax"):
        lines.append("")
        lines.append(softmax_table(result["softmax"]))
    lines.append(f"total {result['seconds']:.0f} s")
    return "\n".join(lines)


__all__ = [
    "Workload",
    "add_floors",
    "candidate_configs",
    "conv_benchmarks",
    "conv_table",
    "conv_tuning_candidates",
    "conv_workloads",
    "copy_bandwidth",
    "kernel_benchmarks",
    "kernels_table",
    "legacy_candidates",
    "run_rates",
    "softmax_benchmarks",
    "softmax_table",
    "softmax_workloads",
    "tuning_candidates",
    "workloads",
]


# --------------------------------------------------------------------------------------------
# Conv2D (implicit GEMM) against cuDNN
# --------------------------------------------------------------------------------------------

CONV_LAYERS = ((64, 56), (128, 28), (256, 14), (512, 7))  # C = K at H = W (ResNet/VGG 3x3)


def conv_workloads(quick: bool, wgmma: bool = True) -> list:
    """One config per layer and batch (1 and 8; quick: batch 8 only); wgmma (sm_90a) unless
    `wgmma` is false."""
    from tilesync.kernels.config import conv2d_config

    out = []
    for batch in ((8,) if quick else (1, 8)):
        for c, hw in CONV_LAYERS:
            m = batch * hw * hw
            bn = 64 if c == 64 else 128
            mma = "wgmma" if wgmma else "sync"
            if wgmma and m >= 8192:  # two warpgroups over 128 rows, 64-wide k-tiles
                tile, warps, stages = (128, bn, 64), (8, 1), 4
            elif wgmma:  # one warpgroup
                tile, warps, stages = (64, 64, 64), (4, 1), 6
            elif m >= 8192:
                tile, warps, stages = (128, bn, 32), (2, 2), 3 if bn == 128 else 4
            else:
                tile, warps, stages = (64, 64, 32), (2, 2), 4
            tiles = -(-m // tile[0]) * -(-c // tile[1])
            k_tiles = 9 * c // tile[2]
            split = 1
            for s in (2, 4, 8, 16):  # fill ~2 blocks per SM on 132 SMs
                if tiles * split >= 264 or k_tiles % s or k_tiles // s < 4:
                    break
                split = s
            out.append(conv2d_config(batch, hw, hw, c, c, tile=tile, warps=warps,
                                     stages=stages, split_k=split, mma=mma))
    return out


def conv_tuning_candidates(quick: bool, wgmma: bool = True) -> dict[Any, list]:
    """Per layer (its config of `conv_workloads`): what the autotuner measures, that config
    and, with wgmma, every tile and split of kernels.choice.conv_candidates."""
    from tilesync.kernels.choice import conv_candidates

    out = {}
    for cfg in conv_workloads(quick, wgmma):
        tuned = conv_candidates(cfg.N, cfg.H, cfg.W, cfg.C, cfg.K) if wgmma else []
        out[cfg] = [cfg, *(c for c in tuned if c != cfg)]
    return out


def conv_benchmarks(candidates: dict[Any, list], ptx_by_cfg: dict, warmup: int, reps: int, tth,
                    tuning_cache=None) -> list[dict[str, Any]]:
    """Per layer, the autotuner's choice among its candidates (measured once, cached on
    disk), timed here as cuDNN is."""
    from tilesync.harness.autotune import ConvProblem, choose
    from tilesync.harness.runner import Conv2dRunner
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.timing import time_region

    torch = tth.torch
    rows = []
    for layer, cands in candidates.items():
        row: dict[str, Any] = {"N": layer.N, "H": layer.H, "W": layer.W, "C": layer.C,
                               "K": layer.K, "flops": layer.flops}
        try:
            problem = ConvProblem(layer.N, layer.H, layer.W, layer.C, layer.K)
            choice = choose(problem, candidates=cands, ptx=[ptx_by_cfg[c] for c in cands],
                            cache_dir=tuning_cache)
            cfg = choice.config
            row.update(config=_config_label(cfg.gemm), tuning_seconds=choice.seconds,
                       tuned=[{"config": _config_label(c.gemm),
                               **({"tuning_ms": ms} if isinstance(ms, float) else
                                  {"error": ms})} for c, ms in choice.measured])
            runner = Conv2dRunner(cfg, ptx=ptx_by_cfg[cfg])
            row["registers"] = runner.kernel.num_regs
            if torch is not None:
                x = torch.randn(cfg.input_shape, device="cuda", dtype=torch.float16)
                w = torch.randn(cfg.filter_shape, device="cuda", dtype=torch.float16)
                y = torch.empty(cfg.output_shape, device="cuda", dtype=torch.float16)
            else:
                from tilesync.runtime.buffers import DeviceBuffer

                rng = np.random.default_rng(0)
                x = DeviceBuffer.from_numpy(rng.standard_normal(cfg.input_shape)
                                            .astype(np.float16))
                w = DeviceBuffer.from_numpy(rng.standard_normal(cfg.filter_shape)
                                            .astype(np.float16))
                y = DeviceBuffer.empty(cfg.output_shape, np.float16)
            timing = time_region(lambda r=runner, x=x, w=w, y=y: r.launch(x, w, y),
                                 warmup=warmup, reps=reps, hold_ns_per_rep=HOLD_NS_PER_REP,
                                 hold=hold_stream)
            row.update(_timing_dict(timing))
            row["tflops"] = cfg.flops / (timing.median_ms * 1e-3) / 1e12
            if torch is not None:
                # cuDNN: NCHW-shaped views of channels_last (NHWC) memory, fp16.
                xc = x.permute(0, 3, 1, 2)
                wc = w.permute(0, 3, 1, 2)
                F = torch.nn.functional
                lib = time_region(lambda F=F, xc=xc, wc=wc: F.conv2d(xc, wc, padding=1),
                                  warmup=warmup, reps=reps, hold_ns_per_rep=HOLD_NS_PER_REP,
                                  hold=hold_stream)
                row["library"] = _timing_dict(lib)
                row["library"]["tflops"] = cfg.flops / (lib.median_ms * 1e-3) / 1e12
                row["ratio"] = lib.median_ms / timing.median_ms
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


def conv_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'conv3x3 NHWC':<14} {'C=K':>4} {'HxW':>6} {'ours ms':>9} {'TFLOP/s':>8} "
             f"{'cuDNN ms':>9} {'cuDNN TF':>8} {'ratio':>6}  config"]
    for r in rows:
        head = f"{'batch ' + str(r['N']):<14} {r['C']:>4} {str(r['H']) + 'x' + str(r['W']):>6}"
        if "error" in r:
            lines.append(f"{head} FAILED: {r['error']}")
            continue
        lib = r.get("library")
        lib_cols = (f"{lib['median_ms']:>9.4f} {lib['tflops']:>8.1f} {r['ratio']:>6.2f}"
                    if lib else f"{'-':>9} {'-':>8} {'-':>6}")
        tuned = (f"; tuned in {r['tuning_seconds']:.1f} s among {len(r['tuned'])}"
                 if r.get("tuned") else "")
        lines.append(f"{head} {r['median_ms']:>9.4f} {r['tflops']:>8.1f} {lib_cols}  "
                     f"{r['config']} ({r.get('registers', '?')} regs{tuned})")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Fused softmax (+ dropout) over rows against torch
# --------------------------------------------------------------------------------------------


def softmax_workloads(quick: bool) -> list:
    from tilesync.kernels.config import softmax_config

    cols = (1024,) if quick else (512, 1024, 2048)
    return [softmax_config(16384, c, dropout=d) for c in cols for d in (None, 0.9)]


def softmax_benchmarks(ptx_by_cfg: dict, warmup: int, reps: int, tth,
                       copy_gbps: float | None) -> list[dict[str, Any]]:
    from tilesync.harness.runner import SoftmaxRunner
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.timing import time_region

    torch = tth.torch
    rows = []
    for cfg, ptx in ptx_by_cfg.items():
        row: dict[str, Any] = {"rows": cfg.rows, "cols": cfg.cols, "dropout": cfg.dropout,
                               "bytes": cfg.bytes}
        try:
            runner = SoftmaxRunner(cfg, ptx=ptx)
            row["registers"] = runner.kernel.num_regs
            if torch is not None:
                x = torch.randn((cfg.rows, cfg.cols), device="cuda", dtype=torch.float16)
                y = torch.empty_like(x)
            else:
                x = DeviceBuffer.from_numpy(np.random.default_rng(0).standard_normal(
                    (cfg.rows, cfg.cols)).astype(np.float16))
                y = DeviceBuffer.empty((cfg.rows, cfg.cols), np.float16)
            timing = time_region(lambda r=runner, x=x, y=y: r.launch(x, y, seed=1),
                                 warmup=warmup, reps=reps, hold_ns_per_rep=HOLD_NS_PER_REP,
                 hold=hold_stream)
            row.update(_timing_dict(timing))
            row["gbps"] = cfg.bytes / (timing.median_ms * 1e-3) / 1e9
            if copy_gbps:
                row["fraction_of_copy_bw"] = row["gbps"] / copy_gbps
            if torch is not None:
                F = torch.nn.functional
                p = cfg.dropout

                def lib(x=x, p=p, F=F):
                    out = torch.softmax(x, dim=-1)
                    return F.dropout(out, 1.0 - p) if p is not None else out

                t = time_region(lib, warmup=warmup, reps=reps, hold_ns_per_rep=HOLD_NS_PER_REP,
                 hold=hold_stream)
                row["library"] = _timing_dict(t)
                row["ratio"] = t.median_ms / timing.median_ms
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


def softmax_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'softmax rows':<14} {'cols':>5} {'keep':>5} {'ours ms':>9} {'GB/s':>6} "
             f"{'%copy':>6} {'torch ms':>9} {'ratio':>6}"]
    for r in rows:
        head = f"{r['rows']:<14} {r['cols']:>5} {r['dropout'] or '-'!s:>5}"
        if "error" in r:
            lines.append(f"{head} FAILED: {r['error']}")
            continue
        frac = f"{100 * r['fraction_of_copy_bw']:>5.0f}%" if "fraction_of_copy_bw" in r \
            else f"{'':>6}"
        lib = r.get("library")
        lib_cols = f"{lib['median_ms']:>9.4f} {r['ratio']:>6.2f}" if lib else f"{'-':>9} {'-':>6}"
        lines.append(f"{head} {r['median_ms']:>9.4f} {r['gbps']:>6.0f} {frac} {lib_cols}")
    return "\n".join(lines)


def _plot_label(row: dict[str, Any]) -> str:
    dtype = row.get("dtype", "f16")
    return f"{row['name']} M={row['M']}" + ("" if dtype == "f16" else f" {dtype}")


def kernels_plot(result: dict[str, Any], out_dir, name: str = "kernels"):
    """A PNG: ratio to the library per GEMM workload (and per conv / softmax), and the
    weight-streaming GEMMs' fraction of the copy bandwidth; None where matplotlib is missing."""
    from tilesync.bench.report import pyplot, save_figure

    plt = pyplot()
    if plt is None:
        return None

    gemm = [r for r in result.get("gemm", []) if r.get("ratio") is not None]
    streaming = [r for r in gemm if r["M"] <= STREAMING_M
                 and r["ours"].get("fraction_of_copy_bw") is not None]
    others = [(f"conv n{r['N']} {r['H']}px c{r['C']}", r["ratio"])
              for r in result.get("conv", []) if r.get("ratio") is not None]
    others += [(f"softmax {r['rows']}x{r['cols']} p={r['dropout'] or 1}", r["ratio"])
               for r in result.get("softmax", []) if r.get("ratio") is not None]
    panels = [p for p in (gemm, streaming, others) if p]
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, len(gemm) * 0.32), 3.2 * len(panels)))
    axes = list(axes) if len(panels) > 1 else [axes]
    ax = iter(axes)
    if gemm:
        a = next(ax)
        a.bar(range(len(gemm)), [r["ratio"] for r in gemm])
        a.axhline(1.0, color="gray", lw=0.8)
        a.axhline(1.0, color="red", lw=0.8, ls="--", label="goal 1.0")
        a.set_xticks(range(len(gemm)), [_plot_label(r) for r in gemm],
                     rotation=90, fontsize=7)
        a.set_ylabel("cuBLAS time / ours")
        a.set_title(f"GEMMs vs cuBLAS on {result['device']['name']} (higher is better)")
        a.legend(fontsize=7)
    if streaming:
        a = next(ax)
        a.bar(range(len(streaming)), [r["ours"]["fraction_of_copy_bw"] for r in streaming],
              label="ours")
        lib = [r["library"].get("fraction_of_copy_bw", float("nan")) for r in streaming]
        a.plot(range(len(streaming)), lib, "k_", ms=14, label="cuBLAS")
        sized = [r["sized_copy"]["gbps"] / result["copy"]["gbps"] if "sized_copy" in r
                 else float("nan") for r in streaming]
        a.plot(range(len(streaming)), sized, "gv", ms=6, label="a copy of the same bytes")
        a.axhline(0.9, color="red", lw=0.8, ls="--", label="goal 0.9")
        a.set_xticks(range(len(streaming)),
                     [_plot_label(r) for r in streaming], rotation=90, fontsize=7)
        a.set_ylabel("fraction of copy GB/s")
        a.set_title("weight streaming (M <= 64)")
        a.legend(fontsize=7)
    if others:
        a = next(ax)
        a.bar(range(len(others)), [v for _, v in others])
        a.axhline(1.0, color="gray", lw=0.8)
        a.set_xticks(range(len(others)), [k for k, _ in others], rotation=90, fontsize=7)
        a.set_ylabel("library time / ours")
        a.set_title("conv2d vs cuDNN, softmax+dropout vs torch")
    return save_figure(plt, fig, result, out_dir, name)
