"""`tilesync bench compile`: how long a user waits for the example models to compile, first
(empty caches) and cached, with tilesync and with torch.compile, each call in a fresh
interpreter.

    compile_benchmarks(names=NAMES, fresh=3, torch_compile=True) -> dict
    compile_table(result) -> str
    compile_plot(result, out_dir, name) -> PNG path

Per model and repetition, fresh cache directories (tilesync's, Inductor's, Triton's, the CUDA
driver's JIT cache): a child process compiles with them empty ("first"), another with what
the first left ("cached"). Each child builds the model, runs it once eagerly (torch's own
first-call costs, cuBLAS handles and kernel loads, are paid before the clock starts), then
times

* tilesync: `tilesync.frontend.torch.compile(model, inputs)` (on a GPU in auto mode: pieces
  compiled, tuned and the graph's form measured, as a user's call does; without one with
  `emit_ptx`: the pieces compiled to PTX, nothing measured), then the compiled model's first
  call; it also reports each piece's own compile seconds (the report's "compiled in");
* torch.compile: the compiled model's first call (Dynamo and Inductor compile inside it).

"to result" is a child's time from the compile's start to the first call's output. The entry
points (tilesync.frontend.torch, torch._dynamo) are imported before the clock starts, as a
user's script imports them; what a compile imports on demand is timed. Before the children
run, the packages a compile imports (COMPILED_PACKAGES) are byte-compiled where this
interpreter looks for their bytecode (sys.pycache_prefix honoured), as pip does when it
installs them: a checkout without bytecode compiles every module a cached compile imports from
source in each fresh child (0.1-0.2 s of a cached compile on an H200 host). The result says
what share of tilesync's modules had bytecode (`bytecode`).
The table gives the median and the min-max over the repetitions.
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from tilesync.bench.torch_models import NAMES
from tilesync.contract import TilesyncError
from tilesync.harness.compile_cache import COMPILER_DISTRIBUTIONS

TOOLS = ("tilesync", "torch.compile")
COMPILED_PACKAGES = ("tilesync", *COMPILER_DISTRIBUTIONS, "cuda.bindings", "cuda.pathfinder")
"""What a tilesync compile imports: the package, the compiler's distributions and the CUDA
bindings (torch's own bytecode comes with its installation)."""
STATES = ("first", "cached")
CHILD_TIMEOUT_S = 600


def _child(name: str, tool: str, cache_dir: str) -> dict[str, Any]:
    """One timed compile in this (fresh) process: see the module docstring."""
    import torch
    import torch._dynamo  # torch.compile imports it at its first call

    import tilesync.frontend.torch as tt
    from tilesync.examples.torch_models import example

    gpu = torch.cuda.is_available()
    model, inputs = example(name, "cuda" if gpu else "cpu")

    def synchronize() -> None:
        if gpu:
            torch.cuda.synchronize()

    with torch.no_grad():
        model(*inputs)
    synchronize()
    record: dict[str, Any] = {"gpu": gpu, "library": f"torch {torch.__version__}"}
    start = time.perf_counter()
    if tool == "tilesync":
        compiled = tt.compile(model, inputs, cache_dir=cache_dir, emit_ptx=not gpu)
        synchronize()
        record["compile_s"] = time.perf_counter() - start
        record["pieces"] = [{"piece": p.description, "choice": p.choice,
                             "compile_s": p.compile_seconds, "cached": p.cached}
                            for p in compiled.report.pieces]
    else:
        compiled = torch.compile(model)
    with torch.no_grad():
        compiled(*inputs)
    synchronize()
    record["to_result_s"] = time.perf_counter() - start
    return record


def _run_child(name: str, tool: str, caches: str) -> dict[str, Any]:
    """`_child` in a fresh interpreter whose every compile cache lies under `caches`."""
    cache_dir = os.path.join(caches, "tilesync")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(caches, "inductor"),
               TRITON_CACHE_DIR=os.path.join(caches, "triton"),
               CUDA_CACHE_PATH=os.path.join(caches, "nv"), TILESYNC_LOG="0")
    code = ("import json, sys; from tilesync.bench.compile_time import _child; "
            "print(json.dumps(_child(*sys.argv[1:])))")
    try:
        done = subprocess.run([sys.executable, "-c", code, name, tool, cache_dir], env=env,
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CHILD_TIMEOUT_S} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {last[:200]}"}
    return json.loads(lines[-1])


def package_sources(name: str) -> list[str]:
    """The .py files of package `name`'s modules (its directories that are packages, no
    hidden ones); none where it is not installed."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent package missing
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    found = []
    for root in spec.submodule_search_locations:
        for path, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and os.path.isfile(os.path.join(path, d, "__init__.py")))
            found += [os.path.join(path, f) for f in sorted(files) if f.endswith(".py")]
    return found


def byte_compile(names=COMPILED_PACKAGES) -> None:
    """Byte-compile the packages `names` where the interpreter will look for their bytecode;
    a file it cannot write (a read-only installation) is left to compile at import."""
    for name in names:
        for source in package_sources(name):
            compileall.compile_file(source, quiet=2)


def bytecode_share(name: str = "tilesync") -> float:
    """The share of package `name`'s modules whose bytecode is where imports look for it."""
    sources = package_sources(name)
    present = sum(os.path.exists(importlib.util.cache_from_source(s)) for s in sources)
    return present / len(sources) if sources else 0.0


def _summary(values: list[float]) -> dict[str, float]:
    return {"median_s": statistics.median(values), "min_s": min(values), "max_s": max(values)}


def compile_benchmarks(names=NAMES, fresh: int = 3, torch_compile: bool = True,
                       compile_packages: bool = True) -> dict[str, Any]:
    """Each model's compile times (see the module docstring), `fresh` repetitions, after
    byte_compile() unless `compile_packages` is False; a TilesyncError (one line for the user)
    for an unknown model or no repetition."""
    if fresh < 1:
        raise TilesyncError(f"--fresh must be at least 1, got {fresh}")
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise TilesyncError(f"no example model {', '.join(map(repr, unknown))}; the examples: "
                         f"{', '.join(NAMES)}")
    tools = TOOLS if torch_compile else TOOLS[:1]
    if compile_packages:
        byte_compile()
    bytecode = bytecode_share()
    start = time.perf_counter()
    rows = []
    library, gpu = None, None
    for name in names:
        runs: dict[str, list[dict[str, Any]]] = {f"{t} {s}": [] for t in tools for s in STATES}
        for _ in range(fresh):
            with tempfile.TemporaryDirectory() as caches:
                for state in STATES:
                    for tool in tools:
                        record = _run_child(name, tool, caches)
                        runs[f"{tool} {state}"].append(record)
                        library = record.get("library", library)
                        gpu = record.get("gpu", gpu)
        row: dict[str, Any] = {"model": name, "modes": {}}
        for mode, records in runs.items():
            failed = [r["error"] for r in records if "error" in r]
            if failed:
                row["modes"][mode] = {"error": failed[0]}
                continue
            summary = {"to_result": _summary([r["to_result_s"] for r in records])}
            if "compile_s" in records[0]:
                summary["compile"] = _summary([r["compile_s"] for r in records])
                pieces = [sum(p["compile_s"] or 0.0 for p in r["pieces"]) for r in records]
                summary["pieces"] = _summary(pieces)
                summary["choices"] = [p["choice"] for p in records[0]["pieces"]]
            row["modes"][mode] = summary
        rows.append(row)
    return {"experiment": "compile", "rows": rows, "fresh": fresh, "library": library,
            "gpu": gpu, "bytecode": bytecode, "seconds": time.perf_counter() - start}


def _cell(summary: dict[str, float] | None) -> str:
    if summary is None:
        return f"{'-':>17}"
    return f"{summary['median_s']:>6.2f} {summary['min_s']:>4.2f}-{summary['max_s']:<5.2f}"


def compile_table(result: dict[str, Any]) -> str:
    where = {True: "on the GPU, auto mode", False: "without a GPU: pieces to PTX",
             None: "no child process ran"}[result["gpu"]]
    lines = [f"compile times of the example models with {result['library']} ({where}); each "
             f"call a fresh process, {result['fresh']} repetition(s): median min-max seconds; "
             f"{result.get('bytecode', 0.0):.0%} of tilesync's modules byte-compiled",
             f"{'model':<17} {'mode':<21} {'to result':>17} {'compile':>17} {'pieces':>17}"]
    for row in result["rows"]:
        for mode, r in row["modes"].items():
            if "error" in r:
                lines.append(f"{row['model']:<17} {mode:<21} FAILED: {r['error']}")
                continue
            lines.append(f"{row['model']:<17} {mode:<21} {_cell(r['to_result'])} "
                         f"{_cell(r.get('compile'))} {_cell(r.get('pieces'))}")
    lines.append(f"total {result['seconds']:.0f} s")
    return "\n".join(lines)


def compile_plot(result: dict[str, Any], out_dir, name: str):
    """Seconds to the first result per model and mode (median, min-max bars; log scale)."""
    from tilesync.bench.report import grouped_bars, pyplot, save_figure

    plt = pyplot()
    if plt is None:
        return None
    rows = result["rows"]
    modes = list(rows[0]["modes"]) if rows else []

    def bar(row, mode):
        timing = row["modes"].get(mode, {}).get("to_result")
        if timing is None:
            return None
        median = timing["median_s"]
        return median, median - timing["min_s"], timing["max_s"] - median

    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows)), 4))
    grouped_bars(ax, rows, modes, bar)
    ax.set_xticks(range(len(rows)), [row["model"] for row in rows], rotation=15)
    ax.set_yscale("log")
    ax.set_ylabel("seconds from compile to first result")
    ax.set_title(f"compile times, {result['library']}, {result['device']['name']}")
    ax.legend(fontsize=7)
    return save_figure(plt, fig, result, out_dir, name)


__all__ = ["COMPILED_PACKAGES", "byte_compile", "bytecode_share", "compile_benchmarks",
           "compile_plot", "compile_table", "package_sources"]
