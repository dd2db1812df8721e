"""Probe (device): at M = 256-512 the MLP GEMMs run one partial round of narrow tiles (LLaMA's
fc1 at M = 256: 128 tiles of 64 x 192, one consumer warpgroup each, 40.5 us against a floor of
32.3 where both its flops and its weights' bytes take about 30 us). Would the widest tile (two
consumer warpgroups of 64 x 256, the shape GEMM 4096^3 runs at 0.99 of cuBLAS) with every tile
shared out by k-tiles over all 132 SMs (stream-K, 44 tiles of 128 x 256 at M = 256: each SM a
third of one) do better? The autotuner proposes stream-K only for a last partial round of its
first proposal, never for a grid of fewer tiles than SMs in wide tiles.

Per shape, in turns with cuBLAS (3 turns x 20 reps): the kernels record's choice (dp) against
wide tiles with every tile shared (`skA`), in B's layout of the choice.

`python bench/results/small-m-stream-k-probe.py [SHAPES]` (the first SHAPES shapes; torch;
OUT names the folder of the JSON)."""
import json
import os
import statistics
import sys
import time
from dataclasses import replace

SHAPES = [("llama_fc1", 256), ("llama_fc1", 512), ("gpt3_fc1", 256), ("gpt3_fc2", 256),
          ("llama_fc2", 256)]
WIDE = [((128, 256, 64), 3), ((128, 256, 64), 4), ((128, 192, 64), 4), ((128, 128, 64), 6)]
RECORD = "bench/results/kernels-nvidia-h100-80gb-hbm3.json"


def candidates(base):
    """(label, config) of base and of each wide tile with all its tiles shared out."""
    from tilesync.kernels.config import GemmConfig

    out = [("dp (the record's choice)", base)]
    for tile, stages in WIDE:
        for staging in (0, 2):
            try:
                cfg = replace(base, tile=tile, warps=(tile[0] // 16, 1), stages=stages,
                              staging_boxes=staging, stream_k_tiles=0, persistent=True)
                cfg = replace(cfg, stream_k_tiles=cfg.tiles)
            except ValueError as err:
                print(f"  skipped {tile} s{stages} staging{staging}: {err}", flush=True)
                continue
            assert isinstance(cfg, GemmConfig)
            out.append((f"skA {tile[0]}x{tile[1]} s{stages} staging{staging} "
                        f"({cfg.tiles} tiles)", cfg))
    return out


def probe_shape(torch, name, m, record, device):
    from tilesync.bench.tma_sweep import library_ms
    from tilesync.harness.autotune import GemmProblem, compile_ptx_many, measure
    from tilesync.kernels.config import GemmConfig

    row = next(r for r in record["gemm"] if r["name"] == name and r["M"] == m
               and r["dtype"] == "f16")
    base = eval(row["choice"]["repr"], {"GemmConfig": GemmConfig})
    forms = candidates(base)
    ptx = compile_ptx_many([cfg for _, cfg in forms], device.arch)
    problem = GemmProblem(base.M, base.N, base.K, base.dtype, base.epilogue, base.b_layout)
    label = f"{name} M={m}"
    times = {form: [] for form, _ in forms}
    lib = []
    for _ in range(3):
        measured = measure([cfg for _, cfg in forms], problem, ptx, warmup=3, reps=20,
                           label=label)
        for (form, _), (_, ms) in zip(forms, measured, strict=True):
            times[form].append(ms)
        lib.append(min(library_ms(torch, problem, 3, 20).values()))
    libm = statistics.median(lib)
    print(f"{label}: cuBLAS {libm * 1e3:.2f} us, record's ours "
          f"{row['ours']['median_ms'] * 1e3:.2f} ({row['ours']['config']})", flush=True)
    for form, values in times.items():
        if all(isinstance(x, float) for x in values):
            med = statistics.median(values)
            print(f"    {form:44s} {med * 1e3:8.2f} us  {libm / med:.3f} of cuBLAS", flush=True)
        else:
            print(f"    {form:44s} failed: {next(x for x in values if isinstance(x, str))}",
                  flush=True)
    return {"name": label, "library_ms": lib,
            "forms": {form: {"config": repr(cfg), "ms": times[form]} for form, cfg in forms}}


def main() -> None:
    import torch

    from tilesync.runtime.device import get_device

    record = json.load(open(RECORD))
    device = get_device()
    t0 = time.time()
    shapes = SHAPES[:int(sys.argv[1])] if len(sys.argv) > 1 else SHAPES
    rows = [probe_shape(torch, name, m, record, device) for name, m in shapes]
    print(f"# {time.time() - t0:.0f} s", flush=True)
    json.dump({"device": device.name, "commit": os.environ.get("TILESYNC_COMMIT"),
               "rows": rows},
              open(os.environ.get("OUT", "/tmp") + "/small-m-stream-k-probe.json", "w"),
              indent=1, default=str)


if __name__ == "__main__":
    main()
