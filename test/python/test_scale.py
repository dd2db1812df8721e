"""Compile time grows linearly with the program: parsing and every tilesync pass, measured on
a chain of n and 4n dependent GEMM stages (each with its own kernel and sync hooks). A pass
quadratic in the ops, kernels or stages would take 16× as long; linear ones take about 4×."""

import re
import time
from pathlib import Path

from tilesync.api import SYNC_PASSES, default_pipeline, lower, parse
from tilesync.transforms import get_all_passes

ROOT = Path(__file__).resolve().parents[2]
SOURCE = (ROOT / "examples" / "three_stage_chain.mlir").read_text()
KERNEL = re.search(r"    gpu\.func @gemm2\(.*?\n    \}\n", SOURCE, re.S).group(0)
PIPELINE = [*SYNC_PASSES, *default_pipeline()]
GROWTH = 4


def chain(stages: int) -> str:
    """A program of `stages` GEMM stages, each reading the previous one's output."""
    head = SOURCE[: SOURCE.index("    // C[128, 256]")]
    kernels = "\n".join(KERNEL.replace("@gemm2", f"@gemm{i}") for i in range(stages))
    grid = "grid = array<i64: 1, 8>, block = array<i64: 32, 32, 1>, tile = array<i64: 32, 32, 32>"
    host = [f"  sync.stage @gemm{i} {{kernel = @chain::@gemm{i}, {grid}}}" for i in range(stages)]
    host += [f"  sync.dependency @gemm{i - 1} -> @gemm{i} operand 0 tiles (d0, d1)[s0] -> "
             f"(d0, s0) forall s0 in [0, 8)" for i in range(1, stages)]
    host += ["  sync.launch @gemm0"]
    host += [f"  sync.launch @gemm{i} {{pdl = true}}" for i in range(1, stages)]
    return head + kernels + "  }\n" + "\n".join(host) + "\n}\n"


def timings(sizes: tuple[int, ...], rounds: int = 5) -> list[dict[str, float]]:
    """Seconds of parsing and of each pass per size, the best of `rounds`: the sizes take turns
    within a round, so that a machine busy with other work (other test workers) slows both."""
    best: list[dict[str, float]] = [{} for _ in sizes]
    for _ in range(rounds):
        for stages, fastest in zip(sizes, best, strict=True):
            text = chain(stages)
            start = time.perf_counter()
            module = parse(text)
            seconds = {"parse": time.perf_counter() - start}
            seconds.update(lower(module, PIPELINE)[1])
            for name, value in seconds.items():
                fastest[name] = min(fastest.get(name, value), value)
    return best


def test_every_tilesync_pass_is_linear():
    ours = {"parse", *get_all_passes()}
    slow: dict[str, float] | None = None
    # A pass that looks slow is measured again: a quadratic one stays slow, while a burst of
    # another worker's load during the large runs (under xdist on 2 cores it once made
    # lower-scf-to-cf grow 14.6x for 4x; alone 4-5x) does not come back each time.
    for _ in range(3):
        small, large = timings((4, 4 * GROWTH))
        now = {name: round(large[name] / small[name], 1) for name in large
               if name in ours and large[name] > 0.05 and large[name] / small[name] > 2.5 * GROWTH}
        slow = now if slow is None else {name: now[name] for name in now if name in slow}
        if not slow:
            break
    assert not slow, f"grew faster than the program ({GROWTH}x) in three measurements: {slow}"
