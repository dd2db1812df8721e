"""`python -m tilesync.bench.conv_sweep`: the implicit-GEMM 3x3 conv's tile shapes and split-K
factors (kernels.choice.conv_candidates, what the autotuner measures: cp.async wgmma tiles and
TMA im2col ones) against cuDNN on the layers of `tilesync bench kernels` (ResNet/VGG C = K at
56, 28, 14 and 7 pixels, batch 1 and 8) and, with `--chain`, on the conv chain's 56x56 layers
(batch 1, 8, 32) beside the chain's own kernel (graph-to-stages' 64-row cp.async tile).
Every candidate's output (NaN-poisoned first) is checked against torch's fp32 conv, then
timed. Writes JSON (--out) and prints a table; `--quick` takes batch 8 only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from tilesync.bench.report import tilesync_commit

BATCHES = (1, 8)
CHAIN_LAYERS = ((1, 256), (8, 128), (8, 256), (32, 64), (32, 128), (32, 256))
"""(batch, C = K) of the conv chain bench's 56x56 layers measured with --chain."""
CHAIN_PIXELS = 56
CHECK_TOL = 1e-2  # relative error of an fp16 conv against torch's fp32 one


def candidates(batch: int, channels: int, pixels: int) -> list:
    from tilesync.kernels.choice import conv_candidates

    return conv_candidates(batch, pixels, pixels, channels, channels)


def label(cfg) -> str:
    from tilesync.bench.kernels import split_label

    bm, bn, bk = cfg.tile
    tma = " tma im2col" + (" staged" if cfg.tma_store else "") if cfg.pipeline == "tma_ws" \
        else ""
    return f"{bm}x{bn}x{bk} s{cfg.stages}" + tma + split_label(cfg)


def time_config(torch, cfg, ptx: str, reps: int) -> float:
    from tilesync.bench.kernels import HOLD_NS_PER_REP
    from tilesync.harness.runner import Conv2dRunner
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.timing import time_region

    runner = Conv2dRunner(cfg, ptx=ptx)
    x = torch.randn(cfg.input_shape, device="cuda", dtype=torch.float16)
    w = torch.randn(cfg.filter_shape, device="cuda", dtype=torch.float16)
    y = torch.empty(cfg.output_shape, device="cuda", dtype=torch.float16)
    timing = time_region(lambda: runner.launch(x, w, y), warmup=3, reps=reps,
                         hold_ns_per_rep=HOLD_NS_PER_REP, hold=hold_stream)
    return timing.median_ms


def chain_kernel(batch: int, channels: int):
    """The conv chain's kernel for a layer: graph-to-stages' conv1 of bench conv's chain on
    it, without its sync hooks and epilogue."""
    import dataclasses

    from tilesync.bench.conv import chain_spec

    conv1 = chain_spec((batch, CHAIN_PIXELS, channels)).conv1
    return dataclasses.replace(conv1, sync_hooks=False, epilogue=None, name="conv2d")


def check_error(torch, cfg, ptx: str) -> tuple[float, int]:
    """The kernel's relative error against torch's fp32 conv, and the elements it left
    unwritten (NaN)."""
    from tilesync.harness.runner import Conv2dRunner

    x = torch.randn(cfg.input_shape, device="cuda", dtype=torch.float16)
    w = (torch.randn(cfg.filter_shape, device="cuda", dtype=torch.float16)
         / (3 * cfg.C ** 0.5)).half()
    y = torch.full(cfg.output_shape, float("nan"), device="cuda", dtype=torch.float16)
    Conv2dRunner(cfg, ptx=ptx).launch(x, w, y)
    torch.cuda.synchronize()
    nchw = (0, 3, 1, 2)
    ref = torch.nn.functional.conv2d(x.float().permute(*nchw), w.float().permute(*nchw),
                                     padding=1).permute(0, 2, 3, 1)
    return float((y.float() - ref).norm() / ref.norm()), int(torch.isnan(y).sum())


def cudnn_ms(torch, cfg, reps: int) -> float:
    """cuDNN on NCHW views of channels_last memory (what `bench kernels` times)."""
    from tilesync.bench.kernels import HOLD_NS_PER_REP
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.timing import time_region

    x = torch.randn(cfg.input_shape, device="cuda", dtype=torch.float16).permute(0, 3, 1, 2)
    w = torch.randn(cfg.filter_shape, device="cuda", dtype=torch.float16).permute(0, 3, 1, 2)
    conv = torch.nn.functional.conv2d
    return time_region(lambda: conv(x, w, padding=1), warmup=3, reps=reps,
                       hold_ns_per_rep=HOLD_NS_PER_REP, hold=hold_stream).median_ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--chain", action="store_true",
                        help="also the conv chain's 56x56 layers, with the chain's kernel")
    args = parser.parse_args(argv)
    from tilesync.bench.report import missing_gpu

    if missing_gpu("conv_sweep"):
        return 1

    from tilesync.bench.kernels import CONV_LAYERS
    from tilesync.harness.compile import compile_ptx_many
    from tilesync.runtime.device import get_device

    device = get_device()
    work = [(batch, c, hw, candidates(batch, c, hw))
            for batch in ((8,) if args.quick else BATCHES) for c, hw in CONV_LAYERS]
    if args.chain:
        work = [(batch, c, CHAIN_PIXELS, [chain_kernel(batch, c),
                                          *candidates(batch, c, CHAIN_PIXELS)])
                for batch, c in CHAIN_LAYERS] + work
    every = sorted({cfg for *_, cs in work for cfg in cs}, key=repr)
    started = time.perf_counter()
    ptx = dict(zip(every, compile_ptx_many(every, device.arch), strict=True))
    compiled = time.perf_counter() - started
    print(f"{len(every)} configs compiled in {compiled:.1f} s", flush=True)
    import torch

    # the first timed work of the process ran at half speed on an H200 (cuDNN 24 us where
    # the layer takes 13): one untimed round first
    cudnn_ms(torch, work[0][3][0], args.reps)
    rows: list[dict[str, Any]] = []
    for batch, c, hw, cands in work:
        flops = 2 * batch * hw * hw * c * 9 * c
        lib = cudnn_ms(torch, cands[0], args.reps)
        entries = []
        for cfg in cands:
            entry: dict[str, Any] = {"config": label(cfg), "repr": repr(cfg)}
            try:
                error, unwritten = check_error(torch, cfg, ptx[cfg])
                if not (error < CHECK_TOL and unwritten == 0):
                    raise AssertionError(f"relative error {error:.2e}, {unwritten} unwritten")
                ms = time_config(torch, cfg, ptx[cfg], args.reps)
                entry.update(ms=ms, tflops=flops / ms / 1e9, ratio=lib / ms, rel_error=error)
            except Exception as exc:  # a candidate that fails is reported, not chosen
                entry["error"] = f"{type(exc).__name__}: {exc}"
            entries.append(entry)
        rows.append({"batch": batch, "C": c, "HW": hw, "cudnn_ms": lib,
                     "cudnn_tflops": flops / lib / 1e9, "configs": entries})
        timed = [e for e in entries if "ms" in e]
        best = min(timed, key=lambda e: e["ms"]) if timed else None
        head = f"batch {batch} C={c:<4} {hw}x{hw:<3} cuDNN {lib * 1e3:7.1f} us"
        if best is not None:
            head += f" | best {best['ms'] * 1e3:7.1f} us ratio {best['ratio']:.3f} {best['config']}"
        print(head, flush=True)
        for e in entries:
            what = e.get("error") or f"{e['ms'] * 1e3:7.1f} us ratio {e['ratio']:.3f}"
            print(f"    {e['config']:<26} {what}", flush=True)
        if args.out:  # after every layer: a run cut short keeps what it measured
            with open(args.out, "w") as f:
                json.dump({"device": device.name, "compile_seconds": compiled, "rows": rows,
                           "tilesync_commit": tilesync_commit()},
                          f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
