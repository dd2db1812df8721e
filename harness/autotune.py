"""Choosing a GEMM or conv configuration by measurement: the model proposes a few candidates,
the device times each once, and the disk remembers the winner.

    choose(problem, candidates=None, arch=None, cache_dir=".tilesync-cache") -> Choice
    GemmProblem(M, N, K, dtype="f16", epilogue=None)     (A M x K, B N x K, C M x N; row-major)
    ConvProblem(N, H, W, C, K, dtype="f16", epilogue=None)   (3x3, NHWC)
    measure(configs, problem, warmup=3, reps=10) -> [(config, median ms or the error)]

The cache key is the problem (shape, dtype, layout, epilogue), the device's architecture, the
candidates where the caller gave them, and the compiler's source digest
(harness/compile_cache.py: an edit of the compiler forgets every choice). Candidates, unless
given (a caller adds its own, e.g. the weight-streaming cp.async kernels of small M): a GEMM's
are `kernels.choice.propose_tma_configs`, a conv's every tile
and split-K factor of `kernels.choice.conv_candidates` (the wave model does not rank convs:
bench/conv_sweep.py found the split-K reduction's cost decides). Every candidate runs on fresh
random inputs, a GEMM's rotating through enough copies of A and B that each repetition reads
them from device memory, not L2; a candidate that fails to compile or to run is reported, not
chosen. While it tunes, a progress bar goes to stderr.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tilesync.harness.compile import compile_ptx_many
from tilesync.harness.compile_cache import CACHE_DIR, CompileCache
from tilesync.kernels.choice import conv_candidates, propose_tma_configs
from tilesync.kernels.config import ConvConfig, GemmConfig

HOLD_NS_PER_REP = 100_000
L2_BYTES_DEFAULT = 50 * 1024 * 1024


@dataclass(frozen=True)
class GemmProblem:
    """C = epilogue(A B^T): A M x K, B N x K (K-major, the TMA kernels' layout), C M x N."""

    M: int
    N: int
    K: int
    dtype: str = "f16"
    epilogue: str | None = None
    b_layout: str = "col"

    @property
    def label(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"


@dataclass(frozen=True)
class ConvProblem:
    """y = conv3x3(x, w) (stride 1, padding 1), NHWC: x N x H x W x C, w K x 3 x 3 x C."""

    N: int
    H: int
    W: int
    C: int
    K: int
    dtype: str = "f16"
    epilogue: str | None = None

    @property
    def label(self) -> str:
        return f"conv n{self.N} {self.H}x{self.W} c{self.C} k{self.K}"


@dataclass
class Choice:
    """The fastest candidate of a problem, its time, and every candidate's outcome."""

    config: GemmConfig
    median_ms: float
    measured: list[tuple[GemmConfig, float | str]] = field(default_factory=list)
    from_cache: bool = False
    seconds: float = 0.0


def tuning_key(problem: GemmProblem | ConvProblem, arch: str,
               candidates: Sequence[Any] | None = None) -> str:
    """The problem and the architecture, and the candidates where a caller gave its own: a
    choice among other kernels is another choice (`tilesync bench kernels` adds kernels that
    read B as K x N, on the same bytes, which a caller of the default proposals must not be
    handed)."""
    if candidates is None:
        return repr((problem, arch))
    return repr((problem, arch, sorted(map(repr, candidates))))


def _progress(label: str, done: int, total: int) -> None:
    width = 24
    filled = width * done // max(total, 1)
    end = "\n" if done == total else ""
    print(f"\rautotune {label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}",
          end=end, file=sys.stderr, flush=True)


def _gemm_launcher(problem: GemmProblem, rng, l2: int):
    """launch(config, ptx) -> a step that runs the GEMM, rotating through enough copies of A and
    B that each repetition reads them from device memory."""
    from tilesync.harness.runner import GemmRunner
    from tilesync.kernels.reference import host_array
    from tilesync.runtime.buffers import DeviceBuffer

    p = problem
    operand_bytes = 2 * (p.M * p.K + p.N * p.K)
    copies = 1 if operand_bytes >= 2 * l2 else min(8, math.ceil(3 * l2 / operand_bytes))

    def random(shape):
        block = rng.standard_normal(min(math.prod(shape), 1 << 20)).astype(np.float32)
        return DeviceBuffer.from_numpy(host_array(np.resize(block, shape), p.dtype))

    b_shape = (p.N, p.K) if p.b_layout == "col" else (p.K, p.N)
    a = [random((p.M, p.K)) for _ in range(copies)]
    b = [random(b_shape) for _ in range(copies)]
    out_cols = p.N // 2 if p.epilogue == "swiglu" else p.N
    c = DeviceBuffer.empty((p.M, out_cols), np.uint16)
    bias = random((out_cols,)) if p.epilogue in ("bias", "bias_gelu") else None

    def launcher(cfg: GemmConfig, text: str):
        runner = GemmRunner(cfg, ptx=text)
        state = {"i": 0}

        def step():
            k = state["i"] % copies
            runner.launch(a[k], b[k], c, bias)
            state["i"] += 1
        return step
    return launcher


def _conv_launcher(problem: ConvProblem, rng, l2: int):
    """launch(config, ptx) -> a step that runs the conv on random NHWC input and filters (the
    kernels bench's conv layers fit in L2: what the layer costs inside a network)."""
    from tilesync.harness.runner import Conv2dRunner
    from tilesync.kernels.reference import host_array
    from tilesync.runtime.buffers import DeviceBuffer

    p = problem

    def random(shape):
        return DeviceBuffer.from_numpy(host_array(rng.standard_normal(shape), p.dtype))

    x = random((p.N, p.H, p.W, p.C))
    w = random((p.K, 3, 3, p.C))
    y = DeviceBuffer.empty((p.N, p.H, p.W, p.K), np.uint16)

    def launcher(cfg: ConvConfig, text: str):
        runner = Conv2dRunner(cfg, ptx=text)
        return lambda: runner.launch(x, w, y)
    return launcher


def measure(configs: Sequence[Any], problem: GemmProblem | ConvProblem,
            ptx: Sequence[str] | None = None, warmup: int = 3, reps: int = 10, seed: int = 0,
            label: str | None = None) -> list[tuple[Any, float | str]]:
    """The median time of each config on the current GPU (or why it could not run)."""
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.device import get_device
    from tilesync.runtime.timing import time_region

    device = get_device()
    if ptx is None:
        ptx = compile_ptx_many(configs, device.arch)
    rng = np.random.default_rng(seed)
    l2 = device.l2_cache_bytes or L2_BYTES_DEFAULT
    conv = isinstance(problem, ConvProblem)
    launcher = (_conv_launcher if conv else _gemm_launcher)(problem, rng, l2)  # type: ignore
    results: list[tuple[Any, float | str]] = []
    name = label or problem.label
    for i, (cfg, text) in enumerate(zip(configs, ptx, strict=True)):
        _progress(name, i, len(configs))
        try:
            timing = time_region(launcher(cfg, text), warmup=warmup, reps=reps,
                                 hold_ns_per_rep=HOLD_NS_PER_REP, hold=hold_stream)
            results.append((cfg, timing.median_ms))
        except Exception as exc:  # one failing candidate must not stop the others
            results.append((cfg, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))
    _progress(name, len(configs), len(configs))
    return results


def choose(problem: GemmProblem | ConvProblem, candidates: Sequence[Any] | None = None,
           arch: str | None = None, cache_dir: Path | str | None = CACHE_DIR,
           warmup: int = 3, reps: int = 10, ptx: Sequence[str] | None = None) -> Choice:
    """The fastest of `candidates` (default: the wave model's proposals for a GEMM, every conv
    tile and split of kernels.choice.conv_candidates for a conv) for `problem`, from the cache
    where it was measured before on this architecture by this compiler. `ptx`: the
    candidates' PTX where the caller compiled them already."""
    from tilesync.runtime.device import get_device

    arch = arch or get_device().arch
    cache = CompileCache(cache_dir, "autotune") if cache_dir is not None else None
    key = tuning_key(problem, arch, candidates)
    if cache is not None:
        found, stored = cache.load(key)
        if found:
            config, median_ms, measured = stored
            return Choice(config, median_ms, measured, from_cache=True)
    started = time.perf_counter()
    p = problem
    if candidates is not None:
        configs = list(candidates)
    elif isinstance(p, ConvProblem):
        configs = conv_candidates(p.N, p.H, p.W, p.C, p.K, p.epilogue)
    else:
        configs = propose_tma_configs(p.M, p.N, p.K, p.dtype, p.epilogue)
    measured = measure(configs, problem, ptx=ptx, warmup=warmup, reps=reps)
    timed = [(ms, cfg) for cfg, ms in measured if isinstance(ms, float)]
    if not timed:
        errors = "; ".join(str(ms) for _, ms in measured)
        raise RuntimeError(f"no candidate ran for {problem}: {errors}")
    best_ms, best = min(timed, key=lambda entry: entry[0])
    choice = Choice(best, best_ms, measured, seconds=time.perf_counter() - started)
    if cache is not None:
        cache.store(key, (best, best_ms, measured))
    return choice


choose_gemm = choose  # the name the GEMM callers know


__all__ = ["Choice", "ConvProblem", "GemmProblem", "choose", "choose_gemm", "measure",
           "tuning_key"]
