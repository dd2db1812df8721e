"""Probe (device): where does stream-K's shared round lose to data-parallel? Each shape's
data-parallel config (dp) against its stream-K twin as built (sk) and the same twin with the
partial tiles neither stored nor gathered (sk-nofix: wrong sums, timing only), in turns, with
cuBLAS. If sk-nofix runs near the ideal (dp x the rounds stream-K saves), the partials cost
what is lost; if it runs near sk, the shared round's k-steps themselves run slower.

`python bench/results/stream-k-fixup-probe.py` (torch; OUT names the folder of the JSON)."""
import inspect
import json
import os
import statistics
import sys
import time
import types
from dataclasses import replace

SHAPES = [("gemm4096", 4096, "f16"), ("gemm4096", 4096, "bf16"), ("gpt3_fc2", 2048, "f16"),
          ("gemm8192", 8192, "f16")]


def without_fixups():
    """kernels.gemm_tma's tma_ws_module with `_add_partial` storing nothing and the
    completing segment adding no other partials (its own sums stored as the tile's)."""
    import tilesync.kernels.gemm_tma as gt

    source = inspect.getsource(gt)
    edits = [("            pb.insert(tl.StoreAccOp(acc, workspace, [block, zero, zero], "
              "packed=True))\n", "            pass\n"),
             ("                          lambda lb: _other_partials(lb, shared, tiles, warp_m),",
              "                          lambda lb: tiles,")]
    for old, new in edits:
        if source.count(old) != 1:
            raise SystemExit(f"kernels/gemm_tma.py changed: {old.strip()!r} not found once")
        source = source.replace(old, new)
    module = types.ModuleType("gemm_tma_nofix")
    sys.modules[module.__name__] = module  # its dataclasses look their module up
    exec(compile(source, "gemm_tma_nofix", "exec"), module.__dict__)
    return module.tma_ws_module


def ideal_ms(dp_ms: float, cfg) -> float:
    """dp's time with its last partial round filled: the rounds of work over the rounds run."""
    tiles = cfg.cluster_tiles
    return dp_ms * (tiles / cfg.sms) / -(-tiles // cfg.sms)


def compile_with(builder, cfg, arch):
    import tilesync.kernels.gemm_tma as gt
    from tilesync.harness.compile import compile_kernel

    original = gt.tma_ws_module
    gt.tma_ws_module = builder
    try:
        return compile_kernel(cfg, arch).ptx
    finally:
        gt.tma_ws_module = original


def probe_shape(torch, name, m, dtype, record, nofix, device):
    from tilesync.bench.tma_sweep import library_ms
    from tilesync.harness.autotune import GemmProblem, measure
    from tilesync.kernels.choice import stream_k_twins
    from tilesync.kernels.config import GemmConfig

    row = next(r for r in record["gemm"] if r["name"] == name and r["M"] == m
               and r["dtype"] == dtype)
    base = replace(eval(row["choice"]["repr"], {"GemmConfig": GemmConfig}), stream_k_tiles=0)
    twins = stream_k_twins(base)
    if not twins:
        print(name, m, dtype, "no stream-K twin", flush=True)
        return None
    sk = twins[0]
    import tilesync.kernels.gemm_tma as gt

    forms = [("dp", base, gt.tma_ws_module), ("sk", sk, gt.tma_ws_module),
             ("sk-nofix", sk, nofix)]
    ptx = [compile_with(builder, cfg, device.arch) for _, cfg, builder in forms]
    problem = GemmProblem(base.M, base.N, base.K, base.dtype, base.epilogue, base.b_layout)
    label = f"{name} M={m} {dtype}"
    times = {form: [] for form, _, _ in forms}
    lib = []
    for _ in range(3):
        measured = measure([cfg for _, cfg, _ in forms], problem, ptx, warmup=3, reps=20,
                           label=label)
        for (form, _, _), (_, ms) in zip(forms, measured, strict=True):
            times[form].append(ms)
        lib.append(min(library_ms(torch, problem, 3, 20).values()))
    meds = {f: statistics.median(v) for f, v in times.items()
            if all(isinstance(x, float) for x in v)}
    libm = statistics.median(lib)
    ideal = ideal_ms(meds["dp"], base) if "dp" in meds else None
    print(f"{label:22s} cuBLAS {libm * 1e3:8.2f} us | " + "  ".join(
        f"{f} {meds[f] * 1e3:8.2f} ({libm / meds[f]:.3f})" for f in meds)
        + (f" | ideal {ideal * 1e3:.2f} us" if ideal else "")
        + f" | {sk.stream_k_tiles} shared of {base.cluster_tiles} tiles", flush=True)
    return {"name": label, "dp": repr(base), "sk": repr(sk), "library_ms": lib,
            "ours_ms": times, "ideal_ms": ideal}


def main() -> None:
    import torch

    from tilesync.runtime.device import get_device

    record = json.load(open("bench/results/kernels-nvidia-h100-80gb-hbm3.json"))
    device = get_device()
    nofix = without_fixups()
    shapes = SHAPES[:int(sys.argv[1])] if len(sys.argv) > 1 else SHAPES
    t0 = time.time()
    rows = [probe_shape(torch, *shape, record, nofix, device) for shape in shapes]
    print(f"# {time.time() - t0:.0f} s", flush=True)
    json.dump({"device": device.name, "commit": os.environ.get("TILESYNC_COMMIT"),
               "rows": [r for r in rows if r]},
              open(os.environ.get("OUT", "/tmp") + "/stream-k-fixup-probe.json", "w"),
              indent=1, default=str)


if __name__ == "__main__":
    main()
