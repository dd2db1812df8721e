"""Probe (device): the MLP GEMMs below cuBLAS in `bench kernels` (035aa8d) with B read K x N in
tiles of whole 64-column boxes, in turns with the autotuner's choice of record and cuBLAS (the
faster of its two layouts)."""
import json
import os
import statistics
import sys
from dataclasses import replace


def main() -> None:
    import torch

    from tilesync.bench.tma_sweep import library_ms
    from tilesync.harness.autotune import GemmProblem, measure
    from tilesync.harness.compile import compile_kernel
    from tilesync.kernels.config import GemmConfig  # noqa: F401
    from tilesync.runtime.device import get_device

    rec = json.load(open("bench/results/kernels-nvidia-h100-80gb-hbm3.json"))  # 035aa8d's choices
    want = [("gpt3_fc2", 64), ("gpt3_fc2", 256), ("llama_fc1", 512), ("gpt3_fc1", 2048),
            ("gpt3_fc2", 16)]
    tiles = {("gpt3_fc2", 64): [(64, 64, 8), (64, 128, 6), (64, 128, 8), (64, 192, 6), (64, 96, 7)],
             ("gpt3_fc2", 16): [(64, 64, 8), (64, 128, 6)],
             ("gpt3_fc2", 256): [(128, 128, 6), (128, 256, 4), (64, 192, 6), (64, 128, 8)],
             ("llama_fc1", 512): [(128, 128, 6), (64, 192, 6), (64, 128, 8), (128, 256, 4)],
             ("gpt3_fc1", 2048): [(128, 192, 4), (128, 128, 6), (128, 256, 3)]}
    device = get_device()
    out = []
    for name, m in want:
        row = next(r for r in rec["gemm"] if r["name"] == name and r["M"] == m
                   and r["dtype"] == "f16")
        base = eval(row["choice"]["repr"])
        forms = [("record", base)]
        for bm, bn, stages in tiles[(name, m)]:
            try:
                cfg = replace(base, tile=(bm, bn, 64), warps=(bm // 16, 1), stages=stages,
                              b_layout="row", pipeline="tma_ws", mma="wgmma", split_k=1,
                              producer_warps=4, tma_store=True, staging_boxes=0,
                              stream_k_tiles=0, persistent=True, cluster_m=1,
                              dynamic_shared=True)
            except (ValueError, TypeError) as exc:
                print(name, m, (bm, bn, stages), "refused:", str(exc)[:100], flush=True)
                continue
            forms.append((f"{bm}x{bn} s{stages} KxN", cfg))
        ptx = []
        ok = []
        for label, cfg in forms:
            try:
                ptx.append(compile_kernel(cfg, device.arch).ptx)
                ok.append((label, cfg))
            except Exception as exc:  # a candidate that does not compile is reported
                print(name, m, label, "does not compile:", str(exc)[:160], flush=True)
        forms = ok
        problem = GemmProblem(base.M, base.N, base.K, base.dtype, base.epilogue, base.b_layout)
        times = {label: [] for label, _ in forms}
        lib = []
        for _ in range(3):
            for (label, _), (_, ms) in zip(forms, measure([c for _, c in forms], problem, ptx,
                                                          warmup=3, reps=20,
                                                          label=f"{name} {m}"), strict=True):
                times[label].append(ms)
            lib.append(min(library_ms(torch, problem, 3, 20).values()))
        libm = statistics.median(lib)
        meds = {k: statistics.median(v) for k, v in times.items()
                if all(isinstance(x, float) for x in v)}
        print(f"{name} M={m}: cuBLAS {libm * 1e3:.2f} us | " + "  ".join(
            f"{k} {v * 1e3:.2f} ({libm / v:.3f})" for k, v in meds.items()), flush=True)
        out.append({"name": name, "M": m, "library_ms": lib, "ours_ms": times,
                    "configs": {k: repr(c) for k, c in forms}})
    json.dump({"device": device.name, "commit": os.environ.get("TILESYNC_COMMIT"),
               "rows": out}, open(os.environ.get("OUT", "/tmp") + "/kxn-probe.json", "w"),
              indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
