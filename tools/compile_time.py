"""Compile time of one GEMM configuration: `python -m tilesync.tools.compile_time`.

For each configuration of the kernels benchmark (bench/kernels.py) the time from the generator
call (`gemm_module`) to the PTX text (`tilesync.compile` with the default pipeline: lowering,
translation to LLVM IR, LLVM's O3 and the NVPTX backend), median and minimum of several runs
in this process, after one warm-up compile (imports of the passes, LLVM's target set-up).
Python's import of tilesync is measured apart, in a fresh interpreter. Also printed: the
largest items of the median run's `pass_seconds` (per pass; `verify` runs while LLVM works,
`ptx:<module>` is translation + LLVM).

A benchmark, not a test: nothing here asserts a duration.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from typing import Any, TextIO

# name -> gemm_config arguments: the configurations bench/kernels.py compiles for its shapes
CONFIGS: dict[str, dict[str, Any]] = {
    "4096^3 128x128x32 w2x2 s3": dict(M=4096, N=4096, K=4096, tile=(128, 128, 32),
                                      warps=(2, 2), stages=3),
    "4096^3 128x64x32 w2x2 s4": dict(M=4096, N=4096, K=4096, tile=(128, 64, 32),
                                     warps=(2, 2), stages=4),
    "gpt3 fc1 M=16 16x128x32 w1x4 s4 splitk4 gelu": dict(
        M=16, N=6144, K=12288, tile=(16, 128, 32), warps=(1, 4), stages=4, split_k=4,
        epilogue="gelu"),
    "llama fc1 M=1024 128x128x32 w2x2 s3 swiglu": dict(
        M=1024, N=5632, K=8192, tile=(128, 128, 32), warps=(2, 2), stages=3,
        epilogue="swiglu"),
    "llama fc1 M=16 16x128x32 w1x4 s4 splitk8 swiglu": dict(
        M=16, N=5632, K=8192, tile=(16, 128, 32), warps=(1, 4), stages=4, split_k=8,
        epilogue="swiglu"),
    "4096^3 wgmma 128x256x64 w8x1 s4": dict(M=4096, N=4096, K=4096, tile=(128, 256, 64),
                                            warps=(8, 1), stages=4, mma="wgmma",
                                            b_layout="col"),
    "4096^3 tma_ws 128x256x64 s4": dict(M=4096, N=4096, K=4096, tile=(128, 256, 64),
                                        warps=(8, 1), stages=4, mma="wgmma", b_layout="col",
                                        pipeline="tma_ws", dynamic_shared=True),
    "4096^3 tma_ws 128x256x64 s4 cluster2": dict(M=4096, N=4096, K=4096, tile=(128, 256, 64),
                                                 warps=(8, 1), stages=4, mma="wgmma",
                                                 b_layout="col", pipeline="tma_ws",
                                                 dynamic_shared=True, cluster_m=2),
    "llama fc1 M=1024 tma_ws 128x176x64 s5 swiglu": dict(
        M=1024, N=5632, K=8192, tile=(128, 176, 64), warps=(8, 1), stages=5, mma="wgmma",
        b_layout="col", epilogue="swiglu", pipeline="tma_ws", dynamic_shared=True),
}


def import_seconds() -> float:
    """`import tilesync` plus the GEMM generator and the lowering, in a fresh interpreter."""
    code = ("import time; t = time.perf_counter(); import tilesync, tilesync.kernels.gemm, "
            "tilesync.lowering.ptx; print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip())


def time_config(arguments: dict[str, Any], runs: int = 5, target: str = "sm_90"
                ) -> dict[str, Any]:
    """Wall seconds of generator + compile for `runs` runs; the pass times of the median run."""
    import tilesync
    from tilesync.kernels.config import gemm_config
    from tilesync.kernels.gemm import gemm_module

    cfg = gemm_config(**arguments)
    target = cfg.target or target
    samples: list[tuple[float, float, dict[str, float]]] = []
    for _ in range(runs):
        gc.collect()  # garbage of the previous run is not this run's cost
        start = time.perf_counter()
        module = gemm_module(0, 0, 0, config=cfg)
        built = time.perf_counter()
        program = tilesync.compile(module, target=target)
        done = time.perf_counter()
        assert program.ptx
        samples.append((done - start, built - start, dict(program.pass_seconds)))
    totals = [s[0] for s in samples]
    median_run = sorted(samples, key=lambda s: s[0])[len(samples) // 2]
    return {"median_s": statistics.median(totals), "min_s": min(totals),
            "max_s": max(totals), "runs": totals, "generate_s": median_run[1],
            "pass_seconds": median_run[2]}


def compile_time_report(runs: int = 5, configs: dict[str, dict[str, Any]] | None = None,
                        top: int = 4, out: TextIO | None = None) -> dict[str, dict[str, Any]]:
    """Print configs x (median, min, max) seconds and the largest per-pass items; return them."""
    out = out or sys.stdout
    configs = configs or CONFIGS
    import_s = import_seconds()
    from tilesync.harness.compile import compile_kernel
    from tilesync.kernels.config import gemm_config

    start = time.perf_counter()
    compile_kernel(gemm_config(256, 256, 64, tile=(64, 64, 32), stages=2))  # warm-up
    warm_s = time.perf_counter() - start
    print(f"import tilesync (fresh interpreter): {import_s:.3f} s; first compile (lazy pass "
          f"imports, LLVM set-up): {warm_s:.3f} s; {runs} runs per config", file=out)
    print(f"{'config':<50} {'median':>7} {'min':>7} {'max':>7}   largest items of the "
          "median run (ms)", file=out)
    results: dict[str, dict[str, Any]] = {}
    for name, arguments in configs.items():
        result = time_config(arguments, runs)
        results[name] = result
        items = {"generate": result["generate_s"], **result["pass_seconds"]}
        largest = sorted(items.items(), key=lambda kv: -kv[1])[:top]
        detail = "  ".join(f"{k}={v * 1e3:.0f}" for k, v in largest)
        print(f"{name:<50} {result['median_s']:7.3f} {result['min_s']:7.3f} "
              f"{result['max_s']:7.3f}   {detail}", file=out)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per config (default 5)")
    args = parser.parse_args(argv)
    compile_time_report(args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
