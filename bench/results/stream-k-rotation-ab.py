"""A/B (device): stream-K with each shared tile's k-steps rotated so runs start at k-tile 0
(kernels.gemm_tma._tile_rotation) against the unrotated order and the data-parallel config,
in turns, with cuBLAS; outputs of the rotated form against the data-parallel one."""
import json
import os
import statistics
import sys
import time
from dataclasses import replace


def main() -> None:
    import numpy as np
    import torch

    import tilesync.kernels.gemm_tma as gt
    from tilesync.bench.tma_sweep import library_ms
    from tilesync.harness.autotune import GemmProblem, measure
    from tilesync.harness.compile import compile_kernel
    from tilesync.harness.runner import GemmRunner
    from tilesync.kernels.choice import stream_k_twins
    from tilesync.kernels.config import GemmConfig  # noqa: F401  (eval of the recorded reprs)
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.device import get_device

    rec = json.load(open("bench/results/kernels-nvidia-h100-80gb-hbm3.json"))
    want = [("gemm4096", 4096, "f16"), ("gemm4096", 4096, "bf16"), ("gemm8192", 8192, "f16"),
            ("llama_fc1", 1024, "f16"), ("llama_fc2", 1024, "f16"), ("gemm8192", 8192, "bf16"),
            ("llama_fc1", 2048, "f16"), ("gpt3_fc2", 2048, "f16")]
    if len(sys.argv) > 1:
        want = want[:int(sys.argv[1])]
    device = get_device()
    rotate = gt._tile_rotation
    out = []
    for name, m, dtype in want:
        row = next(r for r in rec["gemm"] if r["name"] == name and r["M"] == m
                   and r["dtype"] == dtype)
        base = replace(eval(row["choice"]["repr"]), stream_k_tiles=0)
        try:
            twins = stream_k_twins(base)
        except ValueError as exc:
            print(name, m, dtype, "no stream-K twin:", str(exc)[:80], flush=True)
            continue
        if not twins:
            print(name, m, dtype, "no stream-K twin for", base, flush=True)
            continue
        forms = [("dp", base, True)] + [(f"sk{c.stream_k_tiles}{tag}", c, rot)
                                        for c in twins for tag, rot in (("", False), ("rot", True))]
        t0 = time.time()
        ptx = []
        for _, cfg, rot in forms:
            gt._tile_rotation = rotate if rot else (lambda b, cfg, shared: b.idx(0))
            ptx.append(compile_kernel(cfg, device.arch).ptx)
        gt._tile_rotation = rotate
        problem = GemmProblem(base.M, base.N, base.K, base.dtype, base.epilogue, base.b_layout)
        label = f"{name} M={m} {dtype}"
        times = {f[0]: [] for f in forms}
        lib = []
        for _ in range(3):
            for (form, _, _), (_cfg, ms) in zip(forms, measure([f[1] for f in forms], problem,
                                                                 ptx, warmup=3, reps=20,
                                                                 label=label), strict=True):
                times[form].append(ms)
            lib.append(min(library_ms(torch, problem, 3, 20).values()))
        # outputs: each stream-K form against the data-parallel one, same operands
        rng = np.random.default_rng(1)
        npdt = np.float16
        a = DeviceBuffer.from_numpy((rng.standard_normal((base.M, base.K)) * 0.1)
                                    .astype(npdt).view(np.uint16))
        bshape = (base.N, base.K) if base.b_layout == "col" else (base.K, base.N)
        b = DeviceBuffer.from_numpy((rng.standard_normal(bshape) * 0.1).astype(npdt)
                                    .view(np.uint16))
        results = {}
        if dtype == "f16" and base.epilogue is None:
            for (form, cfg, _), text in zip(forms, ptx, strict=True):
                runner = GemmRunner(cfg, ptx=text)
                c = DeviceBuffer.zeros((base.M, base.N), np.uint16)
                for _ in range(3):  # repeated launches: the workspace and counters reset
                    runner.launch(a, b, c)
                results[form] = c.to_numpy().view(np.float16).astype(np.float32)
        diffs = {f: float(np.abs(v - results["dp"]).max()) for f, v in results.items()}
        libm = statistics.median(lib)
        meds = {f: statistics.median(v) for f, v in times.items()
                if all(isinstance(x, float) for x in v)}
        print(f"{label:22s} cuBLAS {libm * 1e3:8.2f} us | " + "  ".join(
            f"{f} {meds[f] * 1e3:8.2f} ({libm / meds[f]:.3f})" for f in meds)
            + f" | max|diff| vs dp {diffs} | {time.time() - t0:.0f} s", flush=True)
        out.append({"name": label, "config": repr(base), "library_ms": lib,
                    "ours_ms": times, "max_abs_diff_vs_dp": diffs})
    json.dump({"device": device.name, "commit": os.environ.get("TILESYNC_COMMIT"),
               "rows": out}, open(os.environ.get("OUT", "/tmp") + "/sk-rot-ab.json", "w"),
              indent=1, default=str)


if __name__ == "__main__":
    main()
