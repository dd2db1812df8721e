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
chosen. Before it is timed, each candidate's output is checked once: poisoned with NaN, one run
on the first copy of the inputs, compared with an fp32 reference of the same inputs (torch on
the GPU, numpy on the host where torch sees no GPU) within the GPU tests' tolerance
(`TOLERANCE`); a candidate that fails the check is reported ("wrong output"), neither timed nor
chosen, so no wrong kernel is chosen or cached. While it tunes, a progress bar goes to stderr.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tilesync.harness.compile import compile_ptx_many
from tilesync.harness.compile_cache import CACHE_DIR, CompileCache
from tilesync.kernels.choice import conv_candidates, propose_tma_configs
from tilesync.kernels.config import ConvConfig, GemmConfig
from tilesync.kernels.reference import apply_epilogue, host_array, host_values, reference_gemm

HOLD_NS_PER_REP = 100_000
L2_BYTES_DEFAULT = 50 * 1024 * 1024
TOLERANCE = {"f16": 3e-3, "bf16": 1e-2}
"""‖out − ref‖ / ‖ref‖ a GEMM's output must stay under, by its element type: the GPU tests'
(test/python/kernels/test_gemm_tma.py; rounding C to fp16 alone gives ~3e-4, to bf16 ~2e-3)."""
CONV_TOLERANCE = 1e-2
"""The same for a conv's fp16 output: the conv GPU tests'
(test/python/kernels/test_workloads.py)."""


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


class Measured(NamedTuple):
    """One candidate's outcome: its median ms, or why it was not timed (it failed to compile or
    to run, or its output was wrong), and its output's relative error where it was checked."""

    config: Any
    outcome: float | str
    rel_error: float | None = None


@dataclass
class Choice:
    """The fastest candidate of a problem, its time, and every candidate's outcome. `checked`:
    every timed candidate's output was checked (`measure`), the chosen one's error
    `rel_error`."""

    config: GemmConfig
    median_ms: float
    measured: list[Measured] = field(default_factory=list)
    from_cache: bool = False
    seconds: float = 0.0
    checked: bool = False
    rel_error: float | None = None


def tolerance(problem: GemmProblem | ConvProblem) -> float:
    """The relative error a candidate's output must stay under (`TOLERANCE`, `CONV_TOLERANCE`)."""
    return CONV_TOLERANCE if isinstance(problem, ConvProblem) else TOLERANCE[problem.dtype]


def wrong_output(error: float, limit: float) -> str | None:
    """Why an output `error` away from its reference is wrong, None where it is below `limit`."""
    if error < limit:
        return None
    return (f"wrong output: ‖out − ref‖/‖ref‖ = {error:.3g} against the fp32 reference "
            f"(tolerance {limit:g})")


class WrongOutput(AssertionError):
    """A kernel's output is not within its tolerance of the fp32 reference."""


def checked_error(what: str, error: float, limit: float) -> float:
    """`error` where it is below `limit`, else WrongOutput naming `what`."""
    if (why := wrong_output(error, limit)) is not None:
        raise WrongOutput(f"{what}: {why}")
    return error


def relative_error(got, ref) -> float:
    """‖got − ref‖ / ‖ref‖ of two torch tensors or numpy arrays (got in its own element type,
    ref in fp32 or wider); inf where an element of got is not finite (a NaN the poisoning left:
    an element never written)."""
    if isinstance(got, np.ndarray):
        if not np.isfinite(got).all():
            return math.inf
        return float(np.linalg.norm(got - ref) / max(float(np.linalg.norm(ref)), 1e-30))
    if not bool(got.isfinite().all()):
        return math.inf
    return float((got.float() - ref).norm()) / max(float(ref.norm()), 1e-30)


@contextmanager
def exact_fp32(torch) -> Iterator[None]:
    """torch's fp32 matmuls and convs without TF32, for a reference (restored after)."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def _fp32(values):
    return values.astype(np.float32) if isinstance(values, np.ndarray) else values.float()


def conv_reference(cfg: ConvConfig, x, w):
    """The fp32 NHWC output of `cfg` (3x3, padding 1) on NHWC x and KRSC w (torch tensors, or
    numpy arrays: float64 there), then its epilogue (no bias: the tuner passes none)."""
    if isinstance(x, np.ndarray):
        from tilesync.kernels.reference import reference_conv2d

        return reference_conv2d(x, w, epilogue=cfg.epilogue)
    import torch

    nchw = (0, 3, 1, 2)
    y = torch.nn.functional.conv2d(_fp32(x).permute(nchw), _fp32(w).permute(nchw), padding=1)
    flat = apply_epilogue(cfg.gemm, y.permute(0, 2, 3, 1).reshape(-1, cfg.K))
    return flat.reshape(cfg.output_shape)


def _torch_on_gpu():
    """torch where it is importable and sees the GPU (the references run there), else None."""
    try:
        import torch
    except Exception:  # absent or broken: the references run on the host
        return None
    return torch if torch.cuda.is_available() else None


class _Output:
    """A candidate's output and its check: a torch tensor poisoned and compared on the GPU where
    torch sees one, else a DeviceBuffer compared on the host."""

    def __init__(self, shape: tuple[int, ...], dtype: str, torch):
        from tilesync.runtime.buffers import DeviceBuffer

        self.torch, self.dtype = torch, dtype
        if torch is not None:
            kind = torch.float16 if dtype == "f16" else torch.bfloat16
            self.buffer = torch.empty(shape, dtype=kind, device="cuda")
        else:
            self.buffer = DeviceBuffer.empty(shape, np.float16 if dtype == "f16" else np.uint16)

    def inputs(self, *host):
        """The values of host arrays (host_array's) where the reference is computed: fp32
        tensors on the GPU, or float64 arrays."""
        values = [host_values(h, self.dtype) for h in host]
        if self.torch is None:
            return values
        return [self.torch.from_numpy(v.astype(np.float32)).cuda() for v in values]

    def error(self, run: Callable[[], Any], reference: Callable[[], Any]) -> float:
        """`run()` once on the poisoned output; its relative error against `reference()`."""
        from tilesync.runtime.launch import synchronize

        if self.torch is not None:
            self.buffer.fill_(float("nan"))
            self.torch.cuda.synchronize()
        else:
            self.buffer.fill_bytes(0xFF)  # NaN in f16 and bf16
        run()
        synchronize()
        if self.torch is None:
            return relative_error(host_values(self.buffer.to_numpy(), self.dtype), reference())
        with exact_fp32(self.torch):
            return relative_error(self.buffer, reference())


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
    """launch(config, ptx) -> (step, check): a step that runs the GEMM, rotating through enough
    copies of A and B that each repetition reads them from device memory, and the check of its
    output on the first copy (`_Output.error`; the reference computed once per layout of B)."""
    from tilesync.harness.runner import GemmRunner
    from tilesync.runtime.buffers import DeviceBuffer

    p = problem
    operand_bytes = 2 * (p.M * p.K + p.N * p.K)
    copies = 1 if operand_bytes >= 2 * l2 else min(8, math.ceil(3 * l2 / operand_bytes))

    def random(shape, scale=1.0):
        block = rng.standard_normal(min(math.prod(shape), 1 << 20)).astype(np.float32)
        return host_array(np.resize(block * scale, shape), p.dtype)

    b_shape = (p.N, p.K) if p.b_layout == "col" else (p.K, p.N)
    # A scaled by 1/sqrt(K), as the GPU tests do: products of order 1, so no SwiGLU product
    # overflows fp16
    a_host = [random((p.M, p.K), p.K ** -0.5) for _ in range(copies)]
    b_host = [random(b_shape) for _ in range(copies)]
    out_cols = p.N // 2 if p.epilogue == "swiglu" else p.N
    bias_host = random((out_cols,)) if p.epilogue in ("bias", "bias_gelu") else None
    a = [DeviceBuffer.from_numpy(h) for h in a_host]
    b = [DeviceBuffer.from_numpy(h) for h in b_host]
    bias = None if bias_host is None else DeviceBuffer.from_numpy(bias_host)
    out = _Output((p.M, out_cols), p.dtype, _torch_on_gpu())
    c = out.buffer
    checked = [a_host[0], b_host[0]] + ([] if bias_host is None else [bias_host])
    references: dict[str, Any] = {}

    def reference(cfg: GemmConfig):
        if cfg.b_layout not in references:  # the candidates read B's bytes one way or the other
            references[cfg.b_layout] = reference_gemm(cfg, *out.inputs(*checked))
        return references[cfg.b_layout]

    def launcher(cfg: GemmConfig, text: str):
        runner = GemmRunner(cfg, ptx=text)
        state = {"i": 0}

        def step():
            k = state["i"] % copies
            runner.launch(a[k], b[k], c, bias)
            state["i"] += 1

        def check() -> float:
            return out.error(lambda: runner.launch(a[0], b[0], c, bias),
                             lambda: reference(cfg))
        return step, check
    return launcher


def _conv_launcher(problem: ConvProblem, rng, l2: int):
    """launch(config, ptx) -> (step, check): a step that runs the conv on random NHWC input and
    filters (the kernels bench's conv layers fit in L2: what the layer costs inside a network),
    and the check of its output (`_Output.error`)."""
    from tilesync.harness.runner import Conv2dRunner
    from tilesync.runtime.buffers import DeviceBuffer

    p = problem

    def random(shape, scale=1.0):
        return host_array(rng.standard_normal(shape) * scale, p.dtype)

    x_host = random((p.N, p.H, p.W, p.C))
    w_host = random((p.K, 3, 3, p.C), (9 * p.C) ** -0.5)  # outputs of order 1, as in the tests
    x, w = DeviceBuffer.from_numpy(x_host), DeviceBuffer.from_numpy(w_host)
    out = _Output((p.N, p.H, p.W, p.K), p.dtype, _torch_on_gpu())
    y = out.buffer
    references: list[Any] = []

    def reference(cfg: ConvConfig):
        if not references:  # every candidate computes the same
            references.append(conv_reference(cfg, *out.inputs(x_host, w_host)))
        return references[0]

    def launcher(cfg: ConvConfig, text: str):
        runner = Conv2dRunner(cfg, ptx=text)

        def step():
            runner.launch(x, w, y)

        return step, lambda: out.error(step, lambda: reference(cfg))
    return launcher


def measure(configs: Sequence[Any], problem: GemmProblem | ConvProblem,
            ptx: Sequence[str] | None = None, warmup: int = 3, reps: int = 10, seed: int = 0,
            label: str | None = None) -> list[Measured]:
    """Each config's output checked once (a wrong one is not timed), then its median time on
    the current GPU; or why it could not run."""
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
    limit = tolerance(problem)
    results: list[Measured] = []
    name = label or problem.label
    for i, (cfg, text) in enumerate(zip(configs, ptx, strict=True)):
        _progress(name, i, len(configs))
        error = None
        try:
            step, check = launcher(cfg, text)
            error = check()
            if (wrong := wrong_output(error, limit)) is not None:
                results.append(Measured(cfg, wrong, error))
                continue
            timing = time_region(step, warmup=warmup, reps=reps,
                                 hold_ns_per_rep=HOLD_NS_PER_REP, hold=hold_stream)
            results.append(Measured(cfg, timing.median_ms, error))
        except Exception as exc:  # one failing candidate must not stop the others
            results.append(Measured(cfg, f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
                                    error))
    _progress(name, len(configs), len(configs))
    return results


def choose(problem: GemmProblem | ConvProblem, candidates: Sequence[Any] | None = None,
           arch: str | None = None, cache_dir: Path | str | None = CACHE_DIR,
           warmup: int = 3, reps: int = 10, ptx: Sequence[str] | None = None) -> Choice:
    """The fastest of `candidates` whose output is right (default: the wave model's proposals
    for a GEMM, every conv tile and split of kernels.choice.conv_candidates for a conv) for
    `problem`, from the cache where it was measured and checked before on this architecture by
    this compiler. `ptx`: the candidates' PTX where the caller compiled them already."""
    from tilesync.runtime.device import get_device

    arch = arch or get_device().arch
    cache = CompileCache(cache_dir, "autotune") if cache_dir is not None else None
    key = tuning_key(problem, arch, candidates)
    if cache is not None:
        found, stored = cache.load(key)
        # a choice stored before candidates were checked (a tuple) is measured again
        if found and isinstance(stored, Choice) and stored.checked:
            return replace(stored, from_cache=True, seconds=0.0)
    started = time.perf_counter()
    p = problem
    if candidates is not None:
        configs = list(candidates)
    elif isinstance(p, ConvProblem):
        configs = conv_candidates(p.N, p.H, p.W, p.C, p.K, p.epilogue)
    else:
        configs = propose_tma_configs(p.M, p.N, p.K, p.dtype, p.epilogue)
    measured = measure(configs, problem, ptx=ptx, warmup=warmup, reps=reps)
    timed = [m for m in measured if isinstance(m.outcome, float)]
    if not timed:
        errors = "; ".join(str(m.outcome) for m in measured)
        raise RuntimeError(f"no candidate ran for {problem}: {errors}")
    best = min(timed, key=lambda m: m.outcome)
    choice = Choice(best.config, float(best.outcome), measured,
                    seconds=time.perf_counter() - started, checked=True,
                    rel_error=best.rel_error)
    if cache is not None:
        cache.store(key, choice)
    return choice


choose_gemm = choose  # the name the GEMM callers know


__all__ = ["CONV_TOLERANCE", "TOLERANCE", "Choice", "ConvProblem", "GemmProblem", "Measured",
           "WrongOutput", "checked_error", "choose", "choose_gemm", "conv_reference",
           "exact_fp32", "measure", "relative_error", "tolerance",
           "tuning_key", "wrong_output"]
