"""`python -m tilesync.bench.mlp_sweep`: the TMA MLP's tiles (BM1, BN1, BM2, BN2) timed against
cuBLAS in a CUDA graph at the batches of `tilesync bench mlp`, so kernels/mlp.py's tile table
rests on measurements of the whole program, not of each GEMM alone. Every candidate runs in
the stream-synchronized and the row+pdl mode (the bench's tma: modes), checked against the fp32
reference like the bench, the candidates of a batch and torch's path taking turns
(bench.mlp.time_forms). Writes JSON (--out) and prints a table; `--quick` takes M = 512,
`--ms` the batches given, `--table` only the table's tiles, `--tiles` only
those given (those the MLP takes at each batch), `--deeper` each candidate also with
its GEMMs' deeper staging twins (a staging buffer of fewer boxes and a stage more: bench.mlp.DEEP),
so that kernels/mlp.py's DEEPER_STAGING rests on one run of both, `--w1-kxn` / `--w2-kxn` each
also with GEMM1 / GEMM2 reading its weight as K x N (bench.mlp.W1_KXN, W2_KXN).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from tilesync.bench.report import tilesync_commit

SWEEP_M = (256, 512, 1024)
MODES = ("tma:stream_sync", "tma:row+pdl")
GEMM1_TILES = {"gpt3": ((64, 192), (64, 128), (128, 96), (128, 128), (128, 192), (128, 256)),
               "llama": ((64, 176), (64, 192), (64, 128), (128, 128), (128, 176), (128, 192),
                         (128, 256))}
GEMM2_TILES = ((128, 128), (128, 192), (128, 256), (64, 128), (64, 192))
SMALL_M = 64
"""Up to this batch the sweep takes the tiles of one 64-row warpgroup, narrower ones too
(memory-bound GEMMs want more tiles than SMs)."""
SMALL_GEMM1_TILES = {"gpt3": ((64, 48), (64, 64), (64, 96), (64, 128), (64, 192)),
                     "llama": ((64, 64), (64, 128), (64, 176))}
SMALL_GEMM2_TILES = ((64, 64), (64, 96), (64, 128), (64, 176), (64, 192))


def candidates(model: str, M: int) -> list[tuple[int, int, int, int]]:
    """Every GEMM1 x GEMM2 tile pair the stage program takes (GEMM2's row tiles cover whole
    GEMM1 row tiles, GEMM1's tile at least one 64-column k-step of H: mlp_spec) and not wider
    than a row of tiles needs."""
    from tilesync.kernels.mlp import MODELS, mlp_spec, rows_cover_whole_tiles, tma_tile_configs

    small = M <= SMALL_M
    out = []
    for bm1, bn1 in (SMALL_GEMM1_TILES if small else GEMM1_TILES)[model]:
        for bm2, bn2 in SMALL_GEMM2_TILES if small else GEMM2_TILES:
            if not rows_cover_whole_tiles(M, bm1, bm2) or M < bm2:
                continue
            tiles = (bm1, bn1, bm2, bn2)
            try:
                mlp_spec(model, M, *tma_tile_configs(tiles, MODELS[model]["epilogue"]),
                         mma="tma")
            except ValueError:
                continue
            out.append(tiles)
    return out


def deeper_candidates(model: str, M: int, tiles_list) -> list[tuple]:
    """Each of `tiles_list` and, where a staging buffer of fewer boxes buys either GEMM a stage,
    the same tiles with its deeper twins (bench.mlp.DEEP)."""
    from tilesync.bench.mlp import DEEP, mode_spec

    out: list[tuple] = []
    for tiles in tiles_list:
        out.append(tiles)
        deep = (*tiles, DEEP)
        if mode_spec(model, M, MODES[0], deep) != mode_spec(model, M, MODES[0], tiles):
            out.append(deep)
    return out


def kxn_candidates(model: str, M: int, tiles_list, item: str) -> list[tuple]:
    """Each of `tiles_list` and, where the GEMM that `item` names (bench.mlp.W1_KXN, W2_KXN)
    can read its weight as K x N (its BN a multiple of 64), the same tiles so reading it."""
    from tilesync.bench.mlp import mode_spec

    out: list[tuple] = []
    for tiles in tiles_list:
        out.append(tiles)
        try:
            mode_spec(model, M, MODES[0], (*tiles, item))
        except ValueError:
            continue
        out.append((*tiles, item))
    return out


def table_tiles(model: str, M: int) -> tuple[int, int, int, int]:
    """The tiles kernels/mlp.py's table gives the TMA MLP at batch M."""
    from tilesync.bench.mlp import mode_spec

    spec = mode_spec(model, M, MODES[0])
    return (*spec.cfg1.tile[:2], *spec.cfg2.tile[:2])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--models", nargs="+", default=["gpt3", "llama"])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--ms", nargs="+", type=int, default=None,
                        help=f"batches (default {SWEEP_M}; --quick: 512)")
    parser.add_argument("--table", action="store_true",
                        help="only the tiles of kernels/mlp.py's table")
    parser.add_argument("--tiles", nargs="+", default=None, metavar="BM1,BN1,BM2,BN2",
                        help="only these tiles (with --table: and the table's)")
    parser.add_argument("--deeper", action="store_true",
                        help="each candidate also with its GEMMs' deeper staging twins")
    parser.add_argument("--w1-kxn", action="store_true",
                        help="each candidate also with GEMM1 reading W1 as K x N")
    parser.add_argument("--w2-kxn", action="store_true",
                        help="each candidate also with GEMM2 reading W2 as K x N")
    args = parser.parse_args(argv)
    try:
        given = [tuple(int(v) for v in t.split(",")) for t in args.tiles or ()]
    except ValueError:
        given = [()]
    if any(len(t) != 4 for t in given):
        parser.error(f"--tiles takes BM1,BN1,BM2,BN2; got {' '.join(args.tiles)}")
    from tilesync.bench.report import missing_gpu

    if missing_gpu("mlp_sweep"):
        return 1

    from tilesync.bench import mlp as bench
    from tilesync.contract import target_for_device
    from tilesync.runtime.device import get_device

    device = get_device()
    target = target_for_device(device.arch)
    batches = args.ms or ((512,) if args.quick else SWEEP_M)


    def chosen(model: str, M: int) -> list[tuple]:
        if given:
            usable = [t for t in given if t in candidates(model, M)]
            tiles = list(dict.fromkeys([table_tiles(model, M), *usable] if args.table
                                       else usable))
        else:
            tiles = [table_tiles(model, M)] if args.table else candidates(model, M)
        tiles = deeper_candidates(model, M, tiles) if args.deeper else tiles
        tiles = kxn_candidates(model, M, tiles, bench.W1_KXN) if args.w1_kxn else tiles
        return kxn_candidates(model, M, tiles, bench.W2_KXN) if args.w2_kxn else tiles

    work = [(model, M, tiles) for model in args.models for M in batches
            for tiles in chosen(model, M)]
    jobs = [(model, M, mode, False, tiles) for model, M, tiles in work for mode in MODES]
    started = time.perf_counter()
    compiled = bench.compile_jobs(jobs, target)
    print(f"{len(jobs)} programs compiled in {time.perf_counter() - started:.1f} s", flush=True)
    torch, why = bench._torch_or_none()
    if torch is None:
        raise SystemExit(f"the MLP sweep needs torch on the GPU: {why}")
    rows: list[dict[str, Any]] = []
    for model in args.models:
        for M in sorted({m for mm, m, _ in work if mm == model}):
            spec = bench.mode_spec(model, M, MODES[0])
            data = bench._Data(torch, spec, seed=M)
            mine = [tiles for mm, m, tiles in work if (mm, m) == (model, M)]
            # every candidate in both modes and torch's path take turns (time_forms)
            forms, records = {}, {}
            for tiles in mine:
                for mode in MODES:
                    program = compiled[(model, M, mode, False, tiles)]
                    if "error" in program:
                        records[(tiles, mode)] = {"error": program["error"][:500]}
                        continue
                    run_spec = bench.mode_spec(model, M, mode, tiles)
                    try:
                        forms[(tiles, mode)] = bench.program_form(
                            bench.load_program(program), bench.kernel_args(run_spec, data),
                            data, f"{model} M={M} {tiles} {mode}")
                    except Exception as exc:  # a program that does not load: report it
                        records[(tiles, mode)] = {"error": f"{type(exc).__name__}: {exc}"}
            made, failed = bench.torch_layout_forms(data)
            timed = bench.time_forms({**forms, **made}, 5, args.reps)
            torch_records = bench.fastest_layouts(
                {**failed, **{k: v for k, v in timed.items() if isinstance(k, str)}}, data)
            graph_ms = torch_records["torch_graph"]["median_ms"]
            records.update({k: v for k, v in timed.items() if not isinstance(k, str)})
            row: dict[str, Any] = {"model": model, "M": M, "torch_graph_ms": graph_ms,
                                   "torch_layouts": torch_records["torch_graph"]["layouts"],
                                   "table": list(spec.cfg1.tile[:2] + spec.cfg2.tile[:2]),
                                   "candidates": []}
            print(f"{model} M={M}: cuBLAS graph {graph_ms * 1e3:.1f} us "
                  f"({row['torch_layouts']}); table {tuple(row['table'])}", flush=True)
            for tiles in mine:
                entry: dict[str, Any] = {"tiles": list(tiles)}
                for mode in MODES:
                    record = records[(tiles, mode)]
                    entry[mode] = {"median_ms": record["median_ms"],
                                   "vs_graph": graph_ms / record["median_ms"]} \
                        if "median_ms" in record else {"error": record["error"][:500]}
                row["candidates"].append(entry)
                print(f"    {tiles!s:<30} " + "  ".join(
                    f"{mode} " + (f"{entry[mode]['median_ms'] * 1e3:7.1f} us "
                                  f"x{entry[mode]['vs_graph']:.3f}" if "median_ms" in entry[mode]
                                  else "error") for mode in MODES), flush=True)
            rows.append(row)
            del data
            torch.cuda.empty_cache()
            if args.out:
                with open(args.out, "w") as f:
                    json.dump({"device": device.name, "modes": list(MODES), "reps": args.reps,
                               "tilesync_commit": tilesync_commit(),
                               "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
