"""PTX digests of every example and every benchmark configuration: refactors keep them equal.

    python -m tilesync.tools.ptx_digests --write   # record test/python/data/ptx_digests.json
    python -m tilesync.tools.ptx_digests           # compare with the record; exit 1 on a change
    python -m tilesync.tools.ptx_digests --only examples,gemm

Programs (each compiled for the target its configuration names, else sm_90):
* examples: every examples/*.mlir whose hooks need no filling through the kernel lowering
  alone (`default_pipeline()`; one with unfilled hooks a dependency names is refused there),
  and every stage program among them also through the cuSync passes (policies, post/wait, PDL)
  and with debug waits;
* gemm / conv / softmax: every cp.async / wgmma configuration `tilesync bench kernels` tunes
  (full mode, wgmma and mma.sync), and the wave model's first warp-specialized TMA proposal
  (with and without clusters) of each of its GEMM shapes;
* attention: the fused attention kernel of every `tilesync bench attention` shape (the
  fused: modes' wgmma form, and its mma.sync form in 64 x 64 blocks);
* mlp: every (model, M, mode) program `tilesync bench mlp` compiles;
* dataflow: each MLP stack `tilesync bench dataflow-mlp` runs as one persistent pipeline, on
  its first row count (the stages' CTAs follow the rows).

A digest is the sha256 of the PTX text of each gpu.module (sorted by module name). A refactor
that changes none is proved not to change the emitted code; a change must be explained in its
commit and recorded again with --write.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "test" / "python" / "data" / "ptx_digests.json"
GROUPS = ("examples", "gemm", "conv", "softmax", "attention", "mlp", "dataflow")
SYNC_PASSES = ("sync-generate-policies", "sync-insert-post-wait", "sync-use-pdl")


def _digest(ptx_by_module: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(ptx_by_module):
        h.update(name.encode() + b"\0" + ptx_by_module[name].encode() + b"\0")
    return h.hexdigest()


# --- the programs: name -> a picklable job (group, arguments) --------------------------------


def example_jobs() -> dict[str, tuple]:
    from tilesync.api import parse, sync_passes_for

    jobs: dict[str, tuple] = {}
    for path in sorted((ROOT / "examples").glob("*.mlir")):
        if not sync_passes_for(parse(path.read_text())):  # else the lowering refuses it
            jobs[f"examples/{path.name}"] = ("example", path.name, "default")
        if "sync.stage" in path.read_text():
            jobs[f"examples/{path.name} +sync"] = ("example", path.name, "sync")
            jobs[f"examples/{path.name} +sync debug"] = ("example", path.name, "sync-debug")
    return jobs


def gemm_jobs() -> dict[str, tuple]:
    from tilesync.bench.kernels import legacy_candidates, workloads
    from tilesync.kernels.choice import propose_tma_configs

    configs = {}
    for w in workloads(quick=False):
        # the TMA kernels: the wave model's first proposal with and without clusters
        tma = propose_tma_configs(w.M, w.N, w.K, w.dtype, w.epilogue, limit=1, twins=1)
        for cfg in [*legacy_candidates(w, quick=False), *tma]:
            configs.setdefault(repr(cfg), cfg)
    return {f"gemm {key}": ("config", cfg) for key, cfg in sorted(configs.items())}


def conv_jobs() -> dict[str, tuple]:
    from tilesync.bench.kernels import conv_workloads

    configs = {repr(c): c for wgmma in (True, False) for c in conv_workloads(False, wgmma)}
    return {f"conv {key}": ("config", cfg) for key, cfg in sorted(configs.items())}


def softmax_jobs() -> dict[str, tuple]:
    from tilesync.bench.kernels import softmax_workloads

    return {f"softmax {c!r}": ("config", c) for c in softmax_workloads(False)}


def attention_jobs() -> dict[str, tuple]:
    from dataclasses import replace

    from tilesync.bench.attention import CAUSAL_SHAPES, SHAPES, fused_spec

    configs = {}
    for shape in SHAPES + CAUSAL_SHAPES:
        cfg = fused_spec(shape).attention
        for form in (cfg, replace(cfg, mma="sync", block_m=64, block_n=64)):
            configs.setdefault(repr(form), form)
    return {f"attention {key}": ("config", cfg) for key, cfg in sorted(configs.items())}


def mlp_jobs() -> dict[str, tuple]:
    from tilesync.bench.mlp import BATCHES, MODELS, modes_for

    jobs = {}
    for model in MODELS:
        for m in BATCHES:
            for mode in modes_for(model, m):
                jobs[f"mlp {model} M={m} {mode}"] = ("mlp", (model, m, mode, False))
    for model, m in (("gpt3", 512), ("llama", 1024)):  # the GPU tests' debug programs
        for mode in modes_for(model, m):
            jobs[f"mlp {model} M={m} {mode} debug"] = ("mlp", (model, m, mode, True))
    return jobs


def dataflow_jobs() -> dict[str, tuple]:
    from tilesync.bench.dataflow_mlp import BENCHED, ROWS

    return {f"dataflow {workload} rows={ROWS[0]}": ("stack", (workload, ROWS[0]))
            for workload in BENCHED}


JOBS: dict[str, Callable[[], dict[str, tuple]]] = {
    "examples": example_jobs, "gemm": gemm_jobs, "conv": conv_jobs,
    "softmax": softmax_jobs, "attention": attention_jobs, "mlp": mlp_jobs,
    "dataflow": dataflow_jobs,
}


def compile_job(job: tuple, target: str = "sm_90") -> str:
    """The digest of one job's PTX (or 'error: ...' where it does not compile). `target` is
    unused: each program compiles for the target its configuration names, else sm_90."""
    try:
        return _digest(_ptx_of(job))
    except Exception as err:  # recorded, so that a program that starts failing is a change
        return f"error: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _ptx_of(job: tuple) -> dict[str, str]:
    import tilesync

    kind = job[0]
    if kind == "example":
        from tilesync.api import default_pipeline

        _, name, variant = job
        text = (ROOT / "examples" / name).read_text()
        if variant == "default":
            return tilesync.compile(text, pipeline=default_pipeline(),
                                    target="sm_90").ptx_by_module
        pipeline = default_pipeline(debug=variant == "sync-debug", before=SYNC_PASSES)
        return tilesync.compile(text, pipeline=pipeline, target="sm_90").ptx_by_module
    if kind == "config":
        from tilesync.harness.compile import compile_kernel

        return compile_kernel(job[1]).ptx_by_module
    if kind == "mlp":
        from tilesync.bench.mlp import compile_ptx

        return compile_ptx(job[1])  # the bench's compile, without nvJitLink's resource check
    if kind == "stack":
        from tilesync.bench.dataflow_mlp import compile_pipeline, workload_stack

        return compile_pipeline(workload_stack(*job[1])).ptx_by_module
    raise ValueError(f"unknown job kind {kind!r}")


def digests(groups: Iterable[str], processes: int | None = None,
            progress: bool = False) -> dict[str, str]:
    jobs: dict[str, tuple] = {}
    for group in groups:
        jobs.update(JOBS[group]())
    from tilesync.harness.compile_cache import compile_many

    def show(done: int, total: int) -> None:
        print(f"\r{done}/{total}", end="" if done < total else "\n", file=sys.stderr,
              flush=True)

    # never cached: the point is to compile the programs again
    results = compile_many(jobs.values(), processes=processes or max(1, os.cpu_count() or 1),
                           compile_one=compile_job, progress=show if progress else None)
    return dict(zip(jobs, results, strict=True))


def compare(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """One line per program whose digest changed, appeared or disappeared."""
    lines = []
    for name in sorted(set(recorded) | set(now)):
        if name not in now:
            continue  # a group not compared this time
        if name not in recorded:
            lines.append(f"new: {name}")
        elif recorded[name] != now[name]:
            lines.append(f"changed: {name}: {recorded[name][:16]} -> {now[name][:16]}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the digests")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"comma-separated groups of {', '.join(GROUPS)}")
    parser.add_argument("-j", "--processes", type=int, default=None)
    args = parser.parse_args(argv)
    groups = [g for g in args.only.split(",") if g]
    unknown = [g for g in groups if g not in JOBS]
    if unknown:
        print(f"ptx_digests: unknown group(s) {', '.join(unknown)}; choose from "
              f"{', '.join(GROUPS)}", file=sys.stderr)
        return 2
    now = digests(groups, args.processes, progress=sys.stderr.isatty())
    recorded = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
    if args.write:
        merged = {**{k: v for k, v in recorded.items()
                     if not any(k.startswith(g) for g in groups)}, **now}
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        RECORD.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
        print(f"recorded {len(now)} digests in {RECORD.relative_to(ROOT)}")
        return 0
    changed = compare(recorded, now)
    for line in changed:
        print(line)
    print(f"{len(now)} programs, {len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
