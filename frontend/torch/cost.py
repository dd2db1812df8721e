"""The cost model of a piece: predicted time of our stage program and of torch's own path.

    predict(spec, rates=H100) -> Prediction(ours_ms, torch_ms)
    predict_stack(stack, rates=H100) -> Prediction    an MLP stack's pipeline
    rates_for(device_name) -> DeviceRates

torch (cuBLAS, eager): each GEMM at the larger of its compute time at cuBLAS's efficiency and
its bytes over the copy bandwidth, plus a launch, plus a pass over the hidden layer for an
activation torch does not fuse. Ours: each GEMM's compute time at our kernels' efficiency,
stretched by its last partial wave (analysis/wave_model.py), or its bytes at our fraction of
the bandwidth, whichever is larger, then the two stages overlapped tile by tile as the wave
model predicts. The efficiencies are the numbers of record in bench/results (H100): cuBLAS
~0.9 of the dense rate; our warp-specialized TMA GEMMs 0.89-1.05 of cuBLAS at M = 256-2048
(the kernels bench at a1f1f95), the older wgmma ones 0.53-0.91; 72-94% of the copy bandwidth
when weights stream. It is a coarse filter: a piece it does not rule out is
measured on the device, and the measurement decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilesync.analysis.wave_model import predict_chain, stage_waves

LAUNCH_S = 5e-6  # one eager launch from Python, torch or ours
CUBLAS_EFFICIENCY = 0.9
OUR_EFFICIENCY = {"tma_ws": 0.86, "cp_async": 0.6}  # of the dense rate, by GemmConfig.pipeline
OUR_BANDWIDTH_FRACTION = 0.8
DYNAMO_CALL_S = 60e-6
"""The host's time per call of a torch.compile'd model around its backend's function (guards,
the frame's bytecode): torch.compile's default minus Inductor's function called directly,
40-100 us for the example models on the bench's H100 host (bench/results/torch-rows, 844e9b8).
Forms are measured behind it, so that one device-bound alone but host-bound behind Dynamo
is not chosen for the device time it has alone."""
HOPELESS = 1.25
"""Ours predicted this many times torch's or slower: torch, without measuring."""


@dataclass(frozen=True)
class DeviceRates:
    name: str
    sms: int
    flops: float  # dense fp16/bf16 FLOP/s
    bandwidth: float  # bytes/s, read + write of a device copy


H100 = DeviceRates("H100", 132, 780e12, 3.0e12)
H200 = DeviceRates("H200", 132, 790e12, 4.3e12)


def rates_for(device_name: str | None) -> DeviceRates:
    return H200 if device_name and "H200" in device_name else H100


@dataclass(frozen=True)
class Prediction:
    ours_ms: float
    torch_ms: float

    @property
    def hopeless(self) -> bool:
        return self.ours_ms > HOPELESS * self.torch_ms


def _bytes(cfg) -> int:
    extra = cfg.N if cfg.has_bias else 0
    return 2 * (cfg.M * cfg.K + cfg.N * cfg.K + cfg.M * cfg.out_cols + extra)


def predict(spec, rates: DeviceRates = H100) -> Prediction:
    """Milliseconds of the GEMMs of an MlpSpec (kernels/mlp.py) or of an attention chain's
    (its `gemms`; the softmax, alike on both paths, left out), ours and torch's."""
    torch_s = 0.0
    ours = []
    gemms = getattr(spec, "gemms", None) or (spec.cfg1, spec.cfg2)
    for cfg in gemms:
        memory = _bytes(cfg) / rates.bandwidth
        torch_s += max(cfg.flops / (CUBLAS_EFFICIENCY * rates.flops), memory) + LAUNCH_S
        waves = stage_waves(cfg.grid[:2], 1, rates.sms)
        stretch = waves.wave_count / float(waves.waves)
        compute = cfg.flops / (OUR_EFFICIENCY[cfg.pipeline] * rates.flops) * stretch
        ours.append((max(compute, memory / OUR_BANDWIDTH_FRACTION) + LAUNCH_S, waves))
    if gemms[0].epilogue not in (None, "bias"):  # torch runs the activation on its own
        hidden = gemms[0].M * gemms[0].out_cols
        factor = 3 if gemms[0].epilogue == "swiglu" else 2
        torch_s += factor * 2 * hidden / rates.bandwidth + LAUNCH_S
    chain = predict_chain([w for _, w in ours])
    ours_s = sum(t for t, _ in ours) / float(chain.speedup)
    return Prediction(ours_s * 1e3, torch_s * 1e3)


PIPELINE_EFFICIENCY = 0.44
"""Of the dense rate, an MLP stack's pipeline: NeRF's whole MLP at 2^18 rows on an H100
(bench/results/dataflow-mlp, 0.899 ms for 312 GFLOP), the best of record, so that the filter
rules out no stack the pipeline could win (MeshGraphNets' reached 0.28)."""


def predict_stack(stack, rates: DeviceRates = H100) -> Prediction:
    """Milliseconds of an MlpStack (kernels/mlp_pipeline.py): ours one pipeline at
    PIPELINE_EFFICIENCY, or its inputs, weights and outputs once at the copy bandwidth; torch's
    a GEMM a layer (and the dot head) as `predict` counts them, with a pass over each ReLU's
    and each concatenation's columns, and the layer norm's."""
    shapes = [(stack.in_width(layer), stack.widths[layer + 1]) for layer in range(stack.layers)]
    if stack.dot_head is not None:
        shapes.append((stack.in_width(stack.dot_head), 1))
    rows = stack.rows
    torch_s = ours_flops = 0.0
    for k, n in shapes:
        flops = 2.0 * rows * k * n
        memory = 2 * (rows * k + k * n + rows * n) / rates.bandwidth
        torch_s += max(flops / (CUBLAS_EFFICIENCY * rates.flops), memory) + LAUNCH_S
        ours_flops += flops
    passes = [stack.widths[layer + 1] for layer in range(stack.layers)
              if layer not in stack.plain_layers]
    passes += [stack.in_width(layer) for layer in stack.skips]
    passes += [stack.in_width(layer) for layer, _ in stack.side_inputs]
    passes += [stack.width] * stack.layer_norm
    torch_s += sum(2 * 2 * rows * cols / rates.bandwidth + LAUNCH_S for cols in passes)
    inputs = stack.widths[0] + sum(w for _, w in stack.side_inputs)
    outputs = stack.width + (stack.dot_head is not None)
    memory = 2 * (rows * (inputs + outputs) + sum(k * n + n for k, n in shapes))
    ours_s = max(ours_flops / (PIPELINE_EFFICIENCY * rates.flops),
                 memory / rates.bandwidth) + LAUNCH_S
    return Prediction(ours_s * 1e3, torch_s * 1e3)


WIN_MARGIN = 0.98
"""Ours runs only where its measured median is below this fraction of torch's: a piece against
torch's path for it (compiler), a form of the graph with our pieces against torch's fastest
form (graph_choice). Nearer than that is the measurement's noise (a form that measured 0.06%
ahead in the choice ran 5% behind in the bench), and a tie goes to torch."""


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def measure_ms(fn, warmup: int = 5, reps: int = 25) -> float:
    """Median milliseconds of `fn()` on torch's current stream (CUDA events, one per run)."""
    return measure_interleaved_ms([fn], warmup, rounds=1, block=reps)[0]


def measure_interleaved_ms(fns, warmup: int = 3, rounds: int = 3, block: int = 10,
                           host_delay_s: float = 0.0) -> list[float]:
    """The median of each of `fns`' sample_ms."""
    return [median(samples) for samples in sample_ms(fns, warmup, rounds, block, host_delay_s)]


def sample_ms(fns, warmup: int = 3, rounds: int = 3, block: int = 10,
              host_delay_s: float = 0.0) -> list[list[float]]:
    """Milliseconds of each call of each of `fns`: `rounds` times, each fn called `block`
    times back to back (CUDA events around each call on torch's current stream), the device
    idle between blocks. Back to back, as a user's loop calls a model, the host's and the
    device's time overlap; the blocks take turns, so that a clock drifting over the run
    favours none, and no fn's host time hides behind another's queued work (the first
    `warmup` calls of each block are not counted). `host_delay_s`: the host busy this long
    before each call, inside the timed span, as the caller's own work (Dynamo's,
    DYNAMO_CALL_S) keeps it: a form that is device-bound alone can be host-bound behind it."""
    import time

    import torch

    timed: list[list[Any]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, pairs in zip(fns, timed, strict=True):
            torch.cuda.synchronize()
            for _ in range(warmup):
                fn()
            for _ in range(block):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                until = time.perf_counter() + host_delay_s
                while time.perf_counter() < until:
                    pass
                fn()
                end.record()
                pairs.append((start, end))
    torch.cuda.synchronize()
    return [[s.elapsed_time(e) for s, e in pairs] for pairs in timed]


def capture_graph(fn, warmup: int = 1, ours: bool = True) -> tuple[Any, Any]:
    """(torch.cuda.CUDAGraph of one call of `fn()`, the call's output), after `warmup` calls on
    a side stream as torch asks (allocations and lazy initialization out of the capture). A
    capture of ours records a pipeline still on its fast tier as it is (ops.ours_capturing):
    a measurement made so is cached only where ours won, and a replay captures again once the
    full kernels run. `ours=False` captures as a user's code does (a benchmark's graph of the
    compiled model, kept and replayed for good): a pipeline's call waits for its full kernels."""
    import contextlib

    import torch

    from tilesync.frontend.torch.ops import ours_capturing

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with ours_capturing() if ours else contextlib.nullcontext(), torch.cuda.graph(graph):
        out = fn()
    return graph, out


def measure_graph_ms(fn, warmup: int = 3, reps: int = 25) -> float:
    """Median milliseconds of `fn()` captured once in a CUDA graph and replayed: the device's
    time alone, without the host's (to choose among forms of ours, which the host launches
    alike)."""
    graph, _ = capture_graph(fn, warmup)
    return measure_ms(graph.replay, warmup, reps)


__all__ = ["DYNAMO_CALL_S", "H100", "H200", "HOPELESS", "PIPELINE_EFFICIENCY", "WIN_MARGIN",
           "DeviceRates",
           "Prediction", "capture_graph", "measure_graph_ms", "measure_interleaved_ms",
           "measure_ms", "median", "predict", "predict_stack", "rates_for", "sample_ms"]
