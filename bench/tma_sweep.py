"""`python -m tilesync.bench.tma_sweep`: the warp-specialized TMA GEMM's tile shapes against
cuBLAS on the shapes of `tilesync bench kernels` (GEMM 4096^3 and 8192^3 in fp16 and bf16, the
GPT-3 / LLaMA MLP GEMMs at M = 256 .. 2048), every candidate timed; where the wave model's
ranking and the device's disagree, this is where it shows. Writes JSON (--out) and prints a
table; `--quick` takes one shape of each kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from typing import Any

from tilesync.bench.report import tilesync_commit

GEMMS = [("gemm4096", 4096, 4096, 4096, None), ("gemm8192", 8192, 8192, 8192, None)]
MLP = [("gpt3_fc1", 6144, 12288, "gelu"), ("gpt3_fc2", 12288, 6144, None),
       ("llama_fc1", 5632, 8192, "swiglu"), ("llama_fc2", 8192, 2816, None)]
SWEEP_M = (256, 512, 1024, 2048)


def problems(quick: bool, only: list[str] | None = None,
             ms: list[int] | None = None) -> list[tuple[str, Any]]:
    """The shapes, those whose name contains one of `only` where given, the MLP GEMMs at the
    batches `ms` where given."""
    from tilesync.harness.autotune import GemmProblem

    out = []
    for name, m, n, k, epilogue in GEMMS[:1] if quick else GEMMS:
        for dtype in ("f16",) if quick else ("f16", "bf16"):
            out.append((f"{name} {dtype}", GemmProblem(m, n, k, dtype, epilogue)))
    for m in ms or ((256,) if quick else SWEEP_M):
        for name, n, k, epilogue in MLP:
            out.append((f"{name} M={m}", GemmProblem(m, n, k, "f16", epilogue)))
    return [(name, p) for name, p in out if not only or any(o in name for o in only)]


def n_major_twins(configs: list) -> list:
    """Each of `configs` that can read B as K x N, so reading it (kernels/choice.py:
    n_major_twin)."""
    from tilesync.kernels.choice import n_major_twin

    return list(dict.fromkeys(filter(None, map(n_major_twin, configs))))


def candidates(problem) -> list:
    from tilesync.kernels.choice import propose_tma_configs, stages_for
    from tilesync.kernels.config import tma_ws_config

    p = problem
    found = propose_tma_configs(p.M, p.N, p.K, p.dtype, p.epilogue, limit=5)
    # the same tiles without clusters, and the widest tile either way
    extra = [replace(c, cluster_m=1) for c in found[:3]]
    extra += [tma_ws_config(p.M, p.N, p.K, tile=(128, 256, 64), stages=stages_for(128, 256),
                            dtype=p.dtype, epilogue=p.epilogue, cluster_m=c) for c in (1, 2)]
    if p.M == p.N == p.K:
        extra += [tma_ws_config(p.M, p.N, p.K, dtype=p.dtype, producer_warps=4, cluster_m=2),
                  tma_ws_config(p.M, p.N, p.K, dtype=p.dtype, raster_group=16, cluster_m=2),
                  tma_ws_config(p.M, p.N, p.K, dtype=p.dtype, raster_group=4, cluster_m=2),
                  tma_ws_config(p.M, p.N, p.K, dtype=p.dtype, raster_group=16),
                  tma_ws_config(p.M, p.N, p.K, dtype=p.dtype, raster_group=4)]
    staged = []
    for cfg in [*found, *extra]:  # the same tiles with the TMA-store epilogue
        bm, bn, _ = cfg.tile
        for producer_warps in (1, 4):
            try:
                staged.append(replace(cfg, tma_store=True, producer_warps=producer_warps,
                                      stages=stages_for(bm, bn, cfg.out_tile_cols)))
            except ValueError:
                pass
    unique = []
    for cfg in [*found, *extra, *staged]:
        if cfg not in unique:
            unique.append(cfg)
    return unique


def label(cfg) -> str:
    bm, bn, _ = cfg.tile
    return (f"{bm}x{bn} s{cfg.stages} f{cfg.wgmma_in_flight} p{cfg.producer_warps} "
            f"g{cfg.raster_group} c{cfg.cluster_m}" + (" tma-store" if cfg.tma_store else "")
            + (f" streamK{cfg.stream_k_tiles}" if cfg.stream_k_tiles else "")
            + (" pingpong" if cfg.pingpong else "")
            + (" B-KxN" if cfg.b_layout == "row" else ""))


def library_ms(torch, problem, warmup: int, reps: int) -> dict[str, float]:
    """cuBLAS through torch.matmul: A @ B^T (B N x K) and A @ B (B K x N), rotating copies."""
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime.timing import time_region

    p = problem
    dtype = torch.float16 if p.dtype == "f16" else torch.bfloat16
    copies = 1 if 2 * (p.M * p.K + p.N * p.K) > 100 << 20 else 4
    a = [torch.randn(p.M, p.K, device="cuda", dtype=dtype) for _ in range(copies)]
    b = [torch.randn(p.N, p.K, device="cuda", dtype=dtype) for _ in range(copies)]
    out = torch.empty(p.M, p.N, device="cuda", dtype=dtype)
    result = {}
    for layout, fn in (("nt", lambda i: torch.matmul(a[i], b[i].t(), out=out)),
                       ("nn", lambda i: torch.matmul(a[i], b[i].view(p.K, p.N), out=out))):
        state = {"i": 0}

        def step(fn=fn, state=state):
            fn(state["i"] % copies)
            state["i"] += 1

        timing = time_region(step, warmup=warmup, reps=reps, hold_ns_per_rep=100_000,
                             hold=hold_stream)
        result[layout] = timing.median_ms
    return result


def jit_check() -> None:
    from tilesync.harness.compile import compile_kernel
    from tilesync.kernels.config import tma_ws_config
    from tilesync.runtime.module import load_ptx

    ptx = compile_kernel(tma_ws_config(4096, 4096, 4096, producer_warps=4)).ptx
    for disk in (True, False):
        module = load_ptx(ptx + f"// {disk}\n", "jit_check", disk_cache=disk)
        kernel = module.function("gemm")
        lines = [line for line in module.info_log.splitlines()
                 if "setmaxnreg" in line or "C75" in line or "registers" in line]
        print(f"jit check ({module.source}): {kernel.num_regs} registers; {lines}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--only", nargs="+", default=None,
                        help="only the shapes whose name contains one of these")
    parser.add_argument("--ms", type=int, nargs="+", default=None,
                        help="the MLP GEMMs at these batches (default 256 512 1024 2048)")
    parser.add_argument("--b-kxn", action="store_true",
                        help="also every candidate that can with B stored K x N, on such a B")
    parser.add_argument("--jit-check", action="store_true",
                        help="say whether the driver's JIT keeps setmaxnreg (nvJitLink drops it)")
    args = parser.parse_args(argv)
    from tilesync.bench.report import missing_gpu

    if missing_gpu("tma_sweep"):
        return 1
    if args.jit_check:
        jit_check()

    from tilesync.harness.autotune import measure
    from tilesync.harness.compile import compile_ptx_many
    from tilesync.runtime.device import get_device

    device = get_device()
    work = []
    for name, p in problems(args.quick, args.only, args.ms):
        found = candidates(p)
        work.append((name, p, found + (n_major_twins(found) if args.b_kxn else [])))
    every = sorted({c for _, _, cs in work for c in cs}, key=repr)
    started = time.perf_counter()
    ptx = dict(zip(every, compile_ptx_many(every, device.arch), strict=True))
    compiled = time.perf_counter() - started
    print(f"{len(every)} configs compiled in {compiled:.1f} s", flush=True)
    import torch

    rows = []
    for name, problem, cands in work:
        measured = []
        for b_layout in ("col", "row"):  # B as its configs read it, in one buffer a layout
            some = [c for c in cands if c.b_layout == b_layout]
            if some:
                measured += measure(some, replace(problem, b_layout=b_layout),
                                    [ptx[c] for c in some], warmup=3, reps=args.reps, label=name)
        lib = library_ms(torch, problem, 3, args.reps)
        for cfg in cands:
            if cfg.cluster_m > 1:  # the grid the runner picks (cluster slots on this GPU)
                from tilesync.harness.runner import GemmRunner

                print(f"    grid of {label(cfg)}: {GemmRunner(cfg, ptx=ptx[cfg]).grid}")
                break
        best_lib = min(lib.values())
        flops = 2 * problem.M * problem.N * problem.K
        entries = []
        for cfg, ms in measured:
            entry = {"config": label(cfg), "repr": repr(cfg)}
            if isinstance(ms, float):
                entry.update(ms=ms, tflops=flops / ms / 1e9, ratio=best_lib / ms)
            else:
                entry["error"] = ms
            entries.append(entry)
        rows.append({"name": name, "problem": repr(problem), "library_ms": lib,
                     "library_tflops": flops / best_lib / 1e9, "configs": entries})
        timed = [e for e in entries if "ms" in e]
        best = min(timed, key=lambda e: e["ms"]) if timed else None
        head = f"{name:<20} cuBLAS {best_lib * 1e3:8.1f} us {flops / best_lib / 1e9:6.0f} TF"
        if best is not None:
            head += (f" | best {best['ms'] * 1e3:8.1f} us {best['tflops']:6.0f} TF "
                     f"ratio {best['ratio']:.3f} {best['config']}")
        print(head, flush=True)
        for e in entries:
            what = e.get("error") or f"{e['ms'] * 1e3:8.1f} us ratio {e['ratio']:.3f}"
            print(f"    {e['config']:<28} {what}", flush=True)
        if args.out:  # after every shape: a run cut short keeps what it measured
            result = {"device": device.name, "tilesync_commit": tilesync_commit(),
                      "compile_seconds": compiled, "rows": rows}
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
