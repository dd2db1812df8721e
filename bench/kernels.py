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
`conv_workloads` config), each candidate's output checked first against torch's fp32 result
(a wrong one is neither timed nor chosen), and caches its choice on disk; the table prints the
choice, timed here as the library is, and every candidate's tuning time.

Checks: with torch, our chosen kernel's output (GEMM, conv, softmax) is poisoned with NaN
before each timed turn and compared after it with torch's fp32 result of the inputs the turn's
last run read (A with deviation 1/sqrt(K), as in the GPU tests, so SwiGLU stays finite in
fp16); past the GPU tests' tolerance the row fails, else its worst relative error is recorded
(`rel_error`).

Timing: CUDA events around each repetition on the legacy stream (ours and torch's), warm-up
first, median with p10/p90; the repetitions are enqueued behind a hold kernel so that they run
back to back whatever the host's launch cost (a Python launch can take longer than a 20 us
weight-streaming GEMM). A GEMM shape's forms (ours, cuBLAS in both layouts of B, torch's GEMM
+ epilogue) take turns (bench.mlp.time_forms), so that a step in the device's speed during
the run favours none of them; so do a conv's (ours, cuDNN eager and replayed from a CUDA
graph, cudnn.benchmark on) and a softmax's (ours, torch eager and in a graph), their ratio
against the library's faster form (the record's `form`). Where a shape's operands fit twice in
L2 (60 MB on an H200), the inputs rotate through enough copies that every repetition reads them
from HBM, as a layer of a real model would (the softmax's inputs too; the conv layers stay in
L2, as inside a network). For M <= 64 (weight streaming) the table gives GB/s with bytes = weights +
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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
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
    """A, B (and C) of one shape in device memory, rotating copies where they fit in L2. A's
    entries have deviation 1/sqrt(K) (B's 1), as in the GPU tests: products of order 1, so no
    SwiGLU product overflows fp16 and ours is checked on finite outputs."""

    def __init__(self, w: Workload, copies: int, torch_mod, seed: int = 0):
        self.copies = copies
        self.torch = torch_mod
        if torch_mod is not None:
            gen = torch_mod.Generator(device="cuda").manual_seed(seed)
            dtype = torch_mod.float16 if w.dtype == "f16" else torch_mod.bfloat16

            def rand(shape, scale=1.0):
                return (torch_mod.randn(shape, generator=gen, device="cuda",
                                        dtype=torch_mod.float32) * scale).to(dtype)

            self.a = [rand((w.M, w.K), w.K ** -0.5) for _ in range(copies)]
            self.b = [rand((w.K, w.N)) for _ in range(copies)]
            self.c = torch_mod.empty((w.M, w.out_cols), device="cuda", dtype=dtype)
            self.full = torch_mod.empty((w.M, w.N), device="cuda", dtype=dtype)
        else:
            from tilesync.kernels.reference import host_array
            from tilesync.runtime.buffers import DeviceBuffer

            rng = np.random.default_rng(seed)

            def rand(shape, scale=1.0):
                block = rng.standard_normal(min(math.prod(shape), 1 << 20), np.float32)
                return DeviceBuffer.from_numpy(host_array(np.resize(block * scale, shape),
                                                          w.dtype))

            self.a = [rand((w.M, w.K), w.K ** -0.5) for _ in range(copies)]
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


class _Checked:
    """Our kernel's output `out` (a torch tensor) against the fp32 reference of each copy of
    its inputs (`reference(copy)`, computed once a copy): poisoned with NaN before a turn,
    compared after it (`error`: autotune.checked_error, WrongOutput past `tolerance`, which
    fails the form); `worst` the largest error found."""

    def __init__(self, name: str, torch, out, reference: Callable[[int], Any],
                 tolerance: float):
        self.name, self.torch, self.out, self.tolerance = name, torch, out, tolerance
        self._reference = reference
        self._references: dict[int, Any] = {}
        self.worst = 0.0

    def reference(self, copy: int):
        from tilesync.harness.autotune import exact_fp32

        if copy not in self._references:
            with exact_fp32(self.torch):
                self._references[copy] = self._reference(copy)
        return self._references[copy]

    def poison(self) -> None:
        """NaN into `out`, enqueued on torch's stream (the default stream ours run on too), not
        waited for: between a turn's untimed runs and its timed ones (bench.mlp.TimedForm)."""
        self.out.fill_(float("nan"))

    def error(self, copy: int) -> float:
        from tilesync.harness.autotune import checked_error, relative_error

        error = relative_error(self.out, self.reference(copy))
        self.worst = max(self.worst, error)
        return checked_error(self.name, error, self.tolerance)


def _launch_form(launch: Callable[[], Any], check: Callable[[], float] = lambda: 0.0):
    """`launch()` between two events, one call a run, as a bench.mlp.TimedForm on the default
    stream (the stream torch's and our launches here take), its output checked by `check`
    (readied by the caller: `_rotating_form`)."""
    from tilesync.bench.mlp import TimedForm
    from tilesync.runtime.launch import synchronize
    from tilesync.runtime.stream import Event, elapsed_ms

    def run():
        start, end = Event(), Event()
        start.record(None)
        launch()
        end.record(None)
        return start, end

    return TimedForm(run, elapsed_ms, lambda: synchronize(None), None, lambda: None, check)


def _in_rotation(forms: Sequence[Any]):
    """One bench.mlp.TimedForm of `forms` (one per copy of the inputs) taking a run each in
    turn, so that no run reads inputs the one before left in L2: every copy's outputs readied
    before a turn, the last run's checked after it."""
    from tilesync.bench.mlp import TimedForm

    state = {"i": 0}

    def run():
        form = forms[state["i"] % len(forms)]
        state["i"] += 1
        return form.run()

    def each(step: str) -> Callable[[], None]:
        def call() -> None:
            for form in forms:
                getattr(form, step)()
        return call

    first = forms[0]
    return TimedForm(run, first.elapsed, first.synchronize, first.stream, each("before"),
                     lambda: forms[(state["i"] - 1) % len(forms)].check(), each("after"))


def _rotating_form(fn: Callable[[int], Any], copies: int, checked: _Checked | None = None):
    """`fn(i)` over the inputs' rotating copies (`_in_rotation`), its output `checked` (poisoned
    before a turn's timed runs, in stream order; after them compared with the reference of the
    copy the last run read), or nothing checked (the library's GEMMs, and ours without
    torch)."""
    if checked is None:
        return _in_rotation([_launch_form(lambda copy=copy: fn(copy)) for copy in range(copies)])
    rotation = _in_rotation([_launch_form(lambda copy=copy: fn(copy),
                                          check=lambda copy=copy: checked.error(copy))
                             for copy in range(copies)])
    return replace(rotation, before=checked.poison)  # one output: poisoned once


class _LibraryReference:
    """What bench.mlp.torch_forms checks a library form's output against (`error(y)`): the
    fp32 reference ours is checked against, within bench.mlp's tolerance; `worst` the largest
    error found. Without a reference (the library's dropout draws its own mask) nothing is
    compared and `worst` stays None."""

    def __init__(self, torch, ref=None):
        self.torch, self.ref = torch, ref
        self.worst: float | None = None

    def error(self, y) -> float:
        from tilesync.harness.autotune import relative_error

        if self.ref is None:
            return 0.0
        self.torch.cuda.synchronize()
        error = relative_error(y, self.ref)
        self.worst = max(self.worst or 0.0, error)
        return error


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
    """Each form's Timing, or its error: each checked once first, then the forms taking turns,
    each checked after every turn (bench.mlp.time_forms); a form failing a check is its error."""
    from tilesync.bench.mlp import time_forms
    from tilesync.runtime.timing import Timing

    timed = time_forms(forms, warmup, reps)
    return {name: Timing.from_samples(record["samples_ms"], warmup) if "samples_ms" in record
            else record["error"] for name, record in timed.items()}


def _bench_workload(w: Workload, ptx_by_cfg: dict, ops: _Operands, warmup: int, reps: int,
                    copy_gbps: float | None, tth, tuning_cache, l2: int) -> dict[str, Any]:
    """The autotuner's choice among the candidates (each checked, then measured once; cached on
    disk), timed here in turns with the library, its output checked (with torch: poisoned
    before each turn, compared with torch's fp32 result after it), with every candidate's
    tuning time reported beside it; for weight streaming, a copy moving the same bytes (half
    read, half written)."""
    from tilesync.harness.autotune import TOLERANCE, GemmProblem, choose_gemm
    from tilesync.harness.runner import GemmRunner
    from tilesync.kernels.reference import reference_gemm

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
                       "tuning_seconds": choice.seconds, "checked": choice.checked,
                       "rel_error": choice.rel_error}
    for measured in choice.measured:
        cfg, outcome = measured.config, measured.outcome
        record: dict[str, Any] = {"config": _config_label(cfg), "split_k": cfg.split_k}
        record.update({"tuning_ms": outcome} if isinstance(outcome, float) else
                      {"error": outcome})
        if measured.rel_error is not None:
            record["rel_error"] = measured.rel_error
        entry["configs"].append(record)
    cfg = choice.config
    best: dict[str, Any] = {"config": _config_label(cfg), "split_k": cfg.split_k}
    # ours and the library's forms take turns (_time_together)
    forms = _library_forms(w, ops) if tth.torch is not None else {}
    checked = None
    if tth.torch is not None:
        checked = _Checked(f"ours ({best['config']})", tth.torch, ops.c,
                           lambda i: reference_gemm(cfg, ops.a[i], ops.b[i]),
                           TOLERANCE[w.dtype])
    try:
        runner = GemmRunner(cfg, ptx=ptx_by_cfg[cfg])
        best["registers"] = runner.kernel.num_regs
        forms["ours"] = _rotating_form(lambda i, r=runner: r.launch(ops.a[i], ops.b[i], ops.c),
                                       ops.copies, checked)
    except Exception as exc:
        best["error"] = f"{type(exc).__name__}: {exc}"
    timed = _time_together(forms, warmup, reps)
    if isinstance(timed.get("ours"), str):
        best["error"] = timed["ours"]
    if "error" in best:
        entry["error"] = best["error"]
        best = None
    else:
        best.update(_timing_dict(timed["ours"]))
        best.update(_rates(w, timed["ours"].median_ms, copy_gbps, sized_gbps))
        best.update(_check_record(checked))
    entry["ours"] = best
    if tth.torch is not None:
        lib = _library_record(w, timed)
        lib.update(_rates(w, lib["gemm"]["median_ms"], copy_gbps, sized_gbps))
        entry["library"] = lib
        if best is not None:
            entry["ratio"] = lib["gemm"]["median_ms"] / best["median_ms"]
    return entry


def _check_record(checked: _Checked | None) -> dict[str, Any]:
    """A row's record of our output's check: `rel_error`, the worst ‖out − ref‖ / ‖ref‖ of its
    checks against torch's fp32 result, or why there was none."""
    if checked is None:
        return {"rel_error": None, "unchecked": "no torch for the reference"}
    return {"rel_error": checked.worst, "tolerance": checked.tolerance}


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
    result["softmax"] = softmax_benchmarks(softmax_ptx, warmup, reps, tth, copy["gbps"], l2)
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
    if any("rel_error" in (r.get("ours") or {}) for r in result["gemm"]):
        lines.insert(2, "rel err = ours against torch's fp32 result of the same inputs, its "
                        "output poisoned before each timed turn and checked after it; when "
                        "tuning, every candidate's output was checked first (a wrong one is "
                        "not timed: \"wrong output\")")
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
            errors = r.get("error") or "; ".join(c.get("error", "") for c in r["configs"])
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
            f"{ours['config']} ({ours.get('registers', '?')} regs; {tuned}{_checked_note(ours)})"
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


def _library_torch_forms(torch, library: Callable[[int], Any],
                         references: Sequence[_LibraryReference], name: str
                         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The library's path `library(copy)` eager and replayed from a CUDA graph (bench.mlp.
    torch_forms, as the stage benches time it: "library_eager", "library_graph"), the copies of
    the inputs taking a run each in turn (`_in_rotation`; a graph a copy), each output checked
    against its copy's reference; the forms that could not be made, as their errors."""
    from tilesync.bench.mlp import torch_forms

    made = [torch_forms(ref, lambda k=k: library(k), f" ({name})")
            for k, ref in enumerate(references)]
    forms: dict[str, Any] = {}
    failed: dict[str, Any] = {}
    for mode, form in (("torch_eager", "library_eager"), ("torch_graph", "library_graph")):
        lost = next((lost[mode] for _, lost in made if mode in lost), None)
        if lost is not None:
            failed[form] = lost
        else:
            forms[form] = _in_rotation([copy_forms[mode] for copy_forms, _ in made])
    return forms, failed


LIBRARY_FORMS = {"library_eager": "eager", "library_graph": "graph"}
"""The library's forms a conv or softmax row times, as their records name them."""


def _library_forms_record(timed: dict[str, Any], failed: dict[str, Any],
                          references: Sequence[_LibraryReference], flops: int | None = None
                          ) -> dict[str, Any] | None:
    """The library's record of a conv or softmax row: its fastest form's timing (the ratio is
    against it; `form` names it), every form's under `forms`, and `rel_error`, the worst of its
    outputs' checks (None: not compared); None where no form was timed."""
    forms: dict[str, Any] = {}
    for name, kind in LIBRARY_FORMS.items():
        if name in failed:
            forms[kind] = {"error": failed[name]["error"]}
        elif isinstance(timed.get(name), str):
            forms[kind] = {"error": timed[name]}
        elif name in timed:
            forms[kind] = _timing_dict(timed[name])
    ran = {kind: r for kind, r in forms.items() if "median_ms" in r}
    if not ran:
        return None
    fastest = min(ran, key=lambda kind: ran[kind]["median_ms"])
    errors = [ref.worst for ref in references if ref.worst is not None]
    out = {**ran[fastest], "form": fastest, "forms": forms,
           "rel_error": max(errors) if errors else None}
    if flops is not None:
        out["tflops"] = flops / (out["median_ms"] * 1e-3) / 1e12
    return out


def conv_benchmarks(candidates: dict[Any, list], ptx_by_cfg: dict, warmup: int, reps: int, tth,
                    tuning_cache=None) -> list[dict[str, Any]]:
    """Per layer, the autotuner's choice among its candidates (each checked, then measured
    once; cached on disk), timed in turns with cuDNN eager and replayed from a CUDA graph
    (cudnn.benchmark on, as bench/conv.py runs it), its output checked against torch's fp32
    conv (with torch); the ratio is against cuDNN's faster form."""
    rows = []
    for layer, cands in candidates.items():
        row: dict[str, Any] = {"N": layer.N, "H": layer.H, "W": layer.W, "C": layer.C,
                               "K": layer.K, "flops": layer.flops}
        try:
            _bench_conv(row, layer, cands, ptx_by_cfg, warmup, reps, tth.torch, tuning_cache)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


def _bench_conv(row: dict[str, Any], layer, candidates: list, ptx_by_cfg: dict, warmup: int,
                reps: int, torch, tuning_cache) -> None:
    """One layer of `conv_benchmarks` into `row`."""
    from tilesync.harness.autotune import CONV_TOLERANCE, ConvProblem, choose, conv_reference
    from tilesync.harness.runner import Conv2dRunner

    problem = ConvProblem(layer.N, layer.H, layer.W, layer.C, layer.K)
    choice = choose(problem, candidates=candidates, ptx=[ptx_by_cfg[c] for c in candidates],
                    cache_dir=tuning_cache)
    cfg = choice.config
    row.update(config=_config_label(cfg.gemm), tuning_seconds=choice.seconds,
               tuning_checked=choice.checked,
               tuned=[{"config": _config_label(m.config.gemm),
                       **({"tuning_ms": m.outcome} if isinstance(m.outcome, float)
                          else {"error": m.outcome}),
                       **({} if m.rel_error is None else {"rel_error": m.rel_error})}
                      for m in choice.measured])
    runner = Conv2dRunner(cfg, ptx=ptx_by_cfg[cfg])
    row["registers"] = runner.kernel.num_regs
    scale = (9 * cfg.C) ** -0.5  # the filters': outputs of order 1, as in the GPU tests
    if torch is not None:
        x = torch.randn(cfg.input_shape, device="cuda", dtype=torch.float16)
        w = (torch.randn(cfg.filter_shape, device="cuda") * scale).half()
        y = torch.empty(cfg.output_shape, device="cuda", dtype=torch.float16)
    else:
        from tilesync.runtime.buffers import DeviceBuffer

        rng = np.random.default_rng(0)
        x = DeviceBuffer.from_numpy(rng.standard_normal(cfg.input_shape).astype(np.float16))
        w = DeviceBuffer.from_numpy((rng.standard_normal(cfg.filter_shape) * scale)
                                    .astype(np.float16))
        y = DeviceBuffer.empty(cfg.output_shape, np.float16)
    checked = None if torch is None else _Checked(
        f"ours ({row['config']})", torch, y, lambda _: conv_reference(cfg, x, w), CONV_TOLERANCE)
    forms = {"ours": _rotating_form(lambda _: runner.launch(x, w, y), 1, checked)}
    failed: dict[str, Any] = {}
    references: list[_LibraryReference] = []
    if torch is None:
        timed = _time_together(forms, warmup, reps)
    else:
        benchmark = torch.backends.cudnn.benchmark
        # cuDNN picks its fastest algorithm for the shape, as bench/conv.py lets it
        torch.backends.cudnn.benchmark = True
        try:
            references = [_LibraryReference(torch, checked.reference(0))]
            nchw = (0, 3, 1, 2)  # cuDNN's operands: NCHW views of the NHWC memory
            xc, wc = x.permute(nchw), w.permute(nchw)
            F = torch.nn.functional
            made, failed = _library_torch_forms(
                torch, lambda _: F.conv2d(xc, wc, padding=1).permute(0, 2, 3, 1), references,
                "cuDNN")
            timed = _time_together({**forms, **made}, warmup, reps)
        finally:
            torch.backends.cudnn.benchmark = benchmark
    if isinstance(timed["ours"], str):
        raise RuntimeError(timed["ours"])
    ours = timed["ours"]
    row.update(_timing_dict(ours))
    row["tflops"] = cfg.flops / (ours.median_ms * 1e-3) / 1e12
    row.update(_check_record(checked))
    if torch is not None:
        row["library"] = lib = _library_forms_record(timed, failed, references, cfg.flops)
        if lib is not None:
            row["ratio"] = lib["median_ms"] / ours.median_ms


def _library_columns(r: dict[str, Any], tflops: bool) -> str:
    """A conv or softmax row's library cells: its fastest form's ms (and TFLOP/s), the ratio,
    and which form that is (records from before the CUDA graph timed the eager one only:
    "-")."""
    lib = r.get("library")
    if not lib:
        return f"{'-':>9} " + (f"{'-':>8} " if tflops else "") + f"{'-':>6} {'-':>5}"
    return (f"{lib['median_ms']:>9.4f} " + (f"{lib['tflops']:>8.1f} " if tflops else "")
            + f"{r['ratio']:>6.2f} {lib.get('form', '-'):>5}")


def _checked_rows(rows: list[dict[str, Any]]) -> bool:
    """Whether a conv or softmax table's rows were checked and timed in turns with the
    library's forms (records from before: neither)."""
    return any("rel_error" in r for r in rows)


def _error_cell(r: dict[str, Any]) -> str:
    error = r.get("rel_error")
    return f"{error:>8.1e}" if error is not None else f"{'-':>8}"


def _checked_note(ours: dict[str, Any]) -> str:
    """How a GEMM row's output was checked, for the table (nothing for records from before
    the check)."""
    if ours.get("unchecked"):
        return f"; unchecked: {ours['unchecked']}"
    if ours.get("rel_error") is None:
        return ""
    return f"; rel err {ours['rel_error']:.1e}"


def conv_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'conv3x3 NHWC':<14} {'C=K':>4} {'HxW':>6} {'ours ms':>9} {'TFLOP/s':>8} "
             f"{'rel err':>8} {'cuDNN ms':>9} {'cuDNN TF':>8} {'ratio':>6} {'form':>5}  config"]
    if _checked_rows(rows):
        lines.append("  (rel err: ours against torch's fp32 conv, poisoned before each timed "
                     "turn and checked after it; cuDNN: its faster form, eager or replayed "
                     "from a CUDA graph, cudnn.benchmark on)")
    for r in rows:
        head = f"{'batch ' + str(r['N']):<14} {r['C']:>4} {str(r['H']) + 'x' + str(r['W']):>6}"
        if "error" in r:
            lines.append(f"{head} FAILED: {r['error']}")
            continue
        tuned = (f"; tuned in {r['tuning_seconds']:.1f} s among {len(r['tuned'])}"
                 if r.get("tuned") else "")
        lines.append(f"{head} {r['median_ms']:>9.4f} {r['tflops']:>8.1f} {_error_cell(r)} "
                     f"{_library_columns(r, tflops=True)}  "
                     f"{r['config']} ({r.get('registers', '?')} regs{tuned})")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Fused softmax (+ dropout) over rows against torch
# --------------------------------------------------------------------------------------------

SOFTMAX_SEED = 1
"""The dropout seed of our softmax's launches (its keep mask: kernels.reference.dropout_mask)."""
SOFTMAX_TOLERANCE = 1e-2
"""‖y − ref‖ / ‖ref‖ our softmax must stay under: the softmax GPU tests'
(test/python/kernels/test_workloads.py)."""


def softmax_workloads(quick: bool) -> list:
    from tilesync.kernels.config import softmax_config

    cols = (1024,) if quick else (512, 1024, 2048)
    return [softmax_config(16384, c, dropout=d) for c in cols for d in (None, 0.9)]


def softmax_benchmarks(ptx_by_cfg: dict, warmup: int, reps: int, tth,
                       copy_gbps: float | None, l2: int = L2_BYTES_DEFAULT
                       ) -> list[dict[str, Any]]:
    """Per config, our softmax timed in turns with torch's softmax (+ dropout) eager and
    replayed from a CUDA graph, the inputs rotating through enough copies that every run reads
    them from device memory (`_copies_for` an L2 of `l2` bytes, as the GEMM rows), its output
    checked against torch's fp32 softmax times our keep mask (with torch; torch's dropout
    draws its own mask, so its output is compared only without dropout); the ratio is against
    torch's faster form."""
    rows = []
    for cfg, ptx in ptx_by_cfg.items():
        copies = _copies_for(2 * cfg.rows * cfg.cols, l2)
        row: dict[str, Any] = {"rows": cfg.rows, "cols": cfg.cols, "dropout": cfg.dropout,
                               "bytes": cfg.bytes, "rotating_copies": copies}
        try:
            _bench_softmax(row, cfg, ptx, copies, warmup, reps, tth.torch, copy_gbps)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows


def _bench_softmax(row: dict[str, Any], cfg, ptx: str, copies: int, warmup: int, reps: int,
                   torch, copy_gbps: float | None) -> None:
    """One config of `softmax_benchmarks` into `row`."""
    from tilesync.harness.runner import SoftmaxRunner
    from tilesync.kernels.reference import dropout_mask
    from tilesync.runtime.buffers import DeviceBuffer

    runner = SoftmaxRunner(cfg, ptx=ptx)
    row["registers"] = runner.kernel.num_regs
    shape = (cfg.rows, cfg.cols)
    checked = None
    if torch is not None:
        x = [torch.randn(shape, device="cuda", dtype=torch.float16) for _ in range(copies)]
        y = torch.empty_like(x[0])
        keep = None if cfg.dropout is None else torch.from_numpy(
            dropout_mask(SOFTMAX_SEED, *shape, cfg.dropout)).cuda()

        def reference(k):
            out = torch.softmax(x[k].float() * cfg.scale, dim=-1)
            return out if keep is None else out * keep / cfg.dropout

        checked = _Checked(f"ours (softmax {cfg.rows}x{cfg.cols})", torch, y, reference,
                           SOFTMAX_TOLERANCE)
    else:
        rng = np.random.default_rng(0)
        x = [DeviceBuffer.from_numpy(rng.standard_normal(shape).astype(np.float16))
             for _ in range(copies)]
        y = DeviceBuffer.empty(shape, np.float16)
    forms = {"ours": _rotating_form(lambda k: runner.launch(x[k], y, seed=SOFTMAX_SEED),
                                    copies, checked)}
    failed: dict[str, Any] = {}
    references: list[_LibraryReference] = []
    if torch is not None:
        F = torch.nn.functional
        p = cfg.dropout

        def library(k):
            out = torch.softmax(x[k], dim=-1)
            return F.dropout(out, 1.0 - p) if p is not None else out

        references = [_LibraryReference(torch, None if p is not None else checked.reference(k))
                      for k in range(copies)]
        made, failed = _library_torch_forms(torch, library, references, "torch")
        forms.update(made)
    timed = _time_together(forms, warmup, reps)
    if isinstance(timed["ours"], str):
        raise RuntimeError(timed["ours"])
    ours = timed["ours"]
    row.update(_timing_dict(ours))
    row["gbps"] = cfg.bytes / (ours.median_ms * 1e-3) / 1e9
    if copy_gbps:
        row["fraction_of_copy_bw"] = row["gbps"] / copy_gbps
    row.update(_check_record(checked))
    if torch is not None:
        row["library"] = lib = _library_forms_record(timed, failed, references)
        if lib is not None:
            row["ratio"] = lib["median_ms"] / ours.median_ms


def softmax_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'softmax rows':<14} {'cols':>5} {'keep':>5} {'ours ms':>9} {'GB/s':>6} "
             f"{'%copy':>6} {'rel err':>8} {'torch ms':>9} {'ratio':>6} {'form':>5}"]
    if _checked_rows(rows):
        lines.append("  (rel err: ours against torch's fp32 softmax times our keep mask; torch: "
                     "its faster form, eager or replayed from a CUDA graph; inputs rotating "
                     "past L2)")
    for r in rows:
        head = f"{r['rows']:<14} {r['cols']:>5} {r['dropout'] or '-'!s:>5}"
        if "error" in r:
            lines.append(f"{head} FAILED: {r['error']}")
            continue
        frac = f"{100 * r['fraction_of_copy_bw']:>5.0f}%" if "fraction_of_copy_bw" in r \
            else f"{'':>6}"
        lines.append(f"{head} {r['median_ms']:>9.4f} {r['gbps']:>6.0f} {frac} "
                     f"{_error_cell(r)} {_library_columns(r, tflops=False)}")
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
