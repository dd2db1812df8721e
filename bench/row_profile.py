"""Why a bench row is below its goal, measured: the device time of every kernel of our
stream-synchronized program and of the library's path replayed from a CUDA graph, per call,
from CUPTI (torch.profiler), for the rows of bench mlp, conv and attention that miss their
goals.

    python -m tilesync.bench.row_profile [--json PATH]

A row whose kernels are each slower than the library's loses in the kernels, not in the
synchronization between them; the table says which kernel and by how much.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from tilesync.bench.report import tilesync_commit

# (bench, key) rows below a goal in the runs of record (bench/results, 1332e46): conv chains
# below cuDNN at batch <= 8 or below 1.10x over stream sync; MLPs below cuBLAS or above 1.15x
# the floor; attention (68b9004) below torch
ROWS: tuple[tuple[str, tuple], ...] = (
    ("conv", (1, 56, 256)), ("conv", (8, 56, 128)), ("conv", (8, 56, 256)),
    ("conv", (32, 56, 128)),
    ("mlp", ("gpt3", 1024)), ("mlp", ("gpt3", 2048)), ("mlp", ("llama", 64)),
    ("mlp", ("llama", 256)),
    ("attention", (512, 128)), ("attention", (4096, 128)),  # below torch (bench attention)
)
MLP_MODE = "tma:stream_sync"


def kernel_times(torch, run: Callable[[], Any], synchronize: Callable[[], Any],
                 reps: int = 30, warmup: int = 5) -> dict[str, dict[str, float]]:
    """Per kernel name (first 90 characters): its device ms per call and calls per run."""
    for _ in range(warmup):
        run()
    synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            run()
        synchronize()
    out = {}
    for event in prof.key_averages():
        total_us = getattr(event, "device_time_total", 0.0)
        if event.count >= reps and total_us > 0:
            out[event.key[:90]] = {"ms": total_us / event.count / 1e3,
                                   "calls": event.count / reps}
    return out


def profile_row(torch, bench: str, key: tuple) -> dict[str, Any]:
    """Our stream-sync program's kernels and the library's, for one row."""
    from tilesync.bench import attention, conv, mlp
    from tilesync.frontend.torch.cost import capture_graph

    if bench in ("conv", "attention"):
        job = (key, "stream_sync", False)
        if bench == "conv":
            entry = conv.compile_jobs([job], cache=conv.conv_cache())[job]
            data = conv.ChainData(torch, conv.chain_spec(key), seed=1)
        else:
            entry = attention.compile_jobs([job], cache=attention.attention_cache())[job]
            data = attention.AttentionData(torch, key, seed=1)
        args, library = data.kernel_args(), data.torch_chain
    else:
        job = (*key, MLP_MODE, False)
        entry = mlp.compile_jobs([job], cache=mlp.mlp_cache())[job]
        data = mlp._Data(torch, mlp.mode_spec(*key, "stream_sync"), seed=key[1])
        args, library = mlp.kernel_args(mlp.mode_spec(*key, MLP_MODE), data), data.torch_mlp
    if "error" in entry:
        return {"error": entry["error"][:500]}
    program = mlp.load_program(entry)
    graph, _ = capture_graph(library)  # its warm-up call lets cuBLAS / cuDNN pick kernels
    return {"ours": kernel_times(torch, lambda: program.run(args), program.synchronize),
            "library": kernel_times(torch, graph.replay, torch.cuda.synchronize)}


def row_table(result: dict[str, Any]) -> str:
    lines = []
    for row in result["rows"]:
        lines.append(f"{row['bench']} {tuple(row['key'])}")
        if "error" in row:
            lines.append(f"   FAILED: {row['error']}")
            continue
        for side in ("ours", "library"):
            kernels = sorted(row[side].items(), key=lambda item: -item[1]["ms"])
            for name, t in kernels:
                lines.append(f"   {side:8} {t['ms']:8.4f} ms x{t['calls']:g}  {name}")
            lines.append(f"   {side:8} {sum(t['ms'] * t['calls'] for _, t in kernels):8.4f} ms "
                         "in all (kernels only)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m tilesync.bench.row_profile")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    from tilesync.runtime.device import get_device, require_gpu
    from tilesync.runtime.errors import NoGPUError

    try:
        require_gpu()
    except NoGPUError as err:  # one line, never a traceback
        print(f"python -m tilesync.bench.row_profile: error: {err}", file=sys.stderr)
        return 1
    import torch

    result: dict[str, Any] = {"device": get_device().to_dict(), "torch": torch.__version__,
                              "tilesync_commit": tilesync_commit(),
                              "mlp_mode": MLP_MODE, "rows": []}
    for bench, key in ROWS:
        try:
            row = profile_row(torch, bench, key)
        except Exception as exc:  # a row that fails is reported, the others still run
            row = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        result["rows"].append({"bench": bench, "key": list(key), **row})
    print(row_table(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
