"""A CPU simulator of a stage program: cuSync's per-tile semaphores without a GPU.

The model, in the terms of the cuSync paper (§III):

* A program (`program.SimProgram`) is a list of stages (kernels), each a grid of tiles computed
  by one block per tile, dependencies (consumer tile → the producer tiles it reads), one policy
  per producer stage (producer tile → semaphore index, `posts` posts per launch), and a launch
  plan: launches on streams (FIFO per stream, a priority, optionally PDL) and wait-kernels.
* A block, once dispatched, holds its SM slot until it ends. It waits (spins) until every
  semaphore covering the producer tiles it reads reaches `epoch × posts`, reads those tiles
  (recording which launch stored them), computes for its tile's duration, stores its tile and
  posts +1 to its own semaphore. With `per_step` it does this step by step (k-steps of a GEMM):
  wait for the tiles of step s, read them, compute a share of its duration, next step.
  That is the block-level model of the declared dependencies. From IR after
  sync-insert-post-wait (`program_from_ir(..., follow_kernels=True)`) a block follows its
  compiled kernel instead (`kernel_steps`): at each step the waits the kernel performs (which
  semaphore, how many posts), then the producer tiles its loads touch, so a load of a tile
  whose wait comes later (or never) is an early read. Stages whose kernel cannot be followed
  keep the block-level model (`SimProgram.unfollowed` says which and why).
* Without an order table block b computes a fixed tile; with one (cuSync's tile()) the k-th
  block *dispatched* takes entry k of the table from an atomic counter.
* The block scheduler (`machine`) fills SM slots (`sms × blocks_per_sm`, a stage may fit fewer
  blocks per SM) from the grids that are eligible: in launch order (priority first), at random,
  or adversarially (consumer grids ahead of producers, as early as their launch allows).
* What a block waits on and signals is kept apart from the machine (`sync_objects`): per-tile
  semaphores today, never reset — a program launched several times (epochs 1, 2, ...) waits
  for `epoch × posts`, so wrong epoch arithmetic shows up as reads of a previous launch's tiles.

What it reports (`results.SimResult`): the makespan in ticks, when each stage ran, a deadlock
(every waiting block with the semaphore, the value expected and the value seen), every read of a
tile the current launch had not stored yet, semaphores left at a count other than
`epoch × posts`, whether every output tile equals a reference computed stage after stage, and
the forward-progress guarantee of each dependency (`analysis.forward_progress`).

Tiles carry values: by default a hash of (stage, tile, epoch, values read); a stage may give its
own `compute(tile, epoch, inputs)` returning e.g. small numpy arrays.
"""

from tilesync.analysis.simulator.machine import (
    SCHEDULERS,
    Scheduler,
    progress_guarantees,
    simulate,
)
from tilesync.analysis.simulator.program import (
    SimDependency,
    SimMachine,
    SimPolicy,
    SimProgram,
    SimStage,
    program_from_ir,
)
from tilesync.analysis.simulator.results import (
    BlockWait,
    Deadlock,
    SemaphoreMismatch,
    SimResult,
    SimulationError,
    Violation,
)

__all__ = [
    "SCHEDULERS",
    "BlockWait",
    "Deadlock",
    "Scheduler",
    "SemaphoreMismatch",
    "SimDependency",
    "SimMachine",
    "SimPolicy",
    "SimProgram",
    "SimResult",
    "SimStage",
    "SimulationError",
    "Violation",
    "program_from_ir",
    "progress_guarantees",
    "simulate",
]
