"""How many tickets of each queue a stage kernel takes in one launch, counted by running it.

dataflow-verify balances a pipeline's queues from the `tiles` each stage declares; the count
here holds the kernel to that declaration. Every queue worker of the launch (each CTA of the
stage's grid, or each group of `threads N` threads of it) runs the kernel abstractly (the
evaluator sync-verify runs, `kernel_eval.BatchRun`): `gpu.block_id` is the worker's CTA,
`gpu.grid_dim` the stage's CTAs, `gpu.thread_id` ranges over the worker's threads; loops
around acquires are unrolled, branches taken where their condition is known. Workers that
take different paths run apart (`run_batches`). An acquire the run cannot place exactly (in a
loop or branch whose bounds or condition depend on data, on a kernel argument or on the
thread within a worker, or reached by only some of a worker's threads) leaves the count
unknown: `Unproven` at that op. Draws are counted alike, and the acquires that take a drawn
ticket: a worker that draws a ticket where no iteration acquires it (a guard that lets a
draw through where the loop does not run) draws more than it takes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import gpu, scf
from xdsl.ir import Operation, SSAValue

from tilesync.analysis.kernel_eval import (
    BatchRun,
    Divergent,
    StepBudget,
    Unproven,
    exact,
    point,
    relevant_ops,
    run_batches,
    uniform,
)
from tilesync.contract import KNOWN_BLOCK_SIZE_ATTR
from tilesync.dialects import dataflow
from tilesync.dialects.sync import ENUMERATION_LIMIT

COUNT_STEPS = 1 << 21
"""Abstract-execution steps one stage kernel's count may take (a loop of a few hundred
thousand tickets a launch is refused rather than run for minutes)."""


_TAKING = (*dataflow.ACQUIRE_OPS, dataflow.DrawFullOp, dataflow.DrawEmptyOp)


@dataclass(frozen=True)
class LaunchTickets:
    """Per queue argument, over one launch's workers: tickets acquired, tickets drawn ahead,
    and acquires that took a drawn ticket; and the tickets each CTA acquired (a cluster
    queue's balance is per cluster)."""

    acquired: dict[SSAValue, int]
    drawn: dict[SSAValue, int]
    drawn_acquired: dict[SSAValue, int]
    acquired_by_cta: dict[SSAValue, tuple[int, ...]] = field(default_factory=dict)


class _TicketCount(BatchRun):
    """Counts, for a batch of workers that agree on every branch and loop around an acquire
    or a draw, the acquires and draws of each queue one of them runs."""

    UNROLLED = _TAKING

    def __init__(self, kernel: gpu.FuncOp, workers: np.ndarray, ctas: int,
                 block: tuple[int, int, int] | None, worker_threads: int | None,
                 budget: StepBudget, drawn_acquires: set[Operation]):
        super().__init__(kernel, workers, (ctas,), block or (1, 1, 1))
        self.budget = budget
        self.block_known = block is not None
        self.worker_threads = worker_threads
        self.drawn_acquires = drawn_acquires
        self.counts: Counter[tuple[str, SSAValue]] = Counter()

    def on_for(self, op: scf.ForOp, state: object, definite: bool) -> None:
        """A loop whose iterations each take the same tickets is run once, its induction
        variable ranging over them all, and counted that many times; one whose tickets
        depend on the iteration (an acquire the abstract iteration cannot place) is
        unrolled."""
        counted = self._trips(op) if any(isinstance(inner, _TAKING) for inner in op.walk()) \
            else None
        if counted is None:
            super().on_for(op, state, definite)
            return
        first, stride, trips = counted
        before = self.counts
        if trips:
            body = op.body.block
            last = first + (trips - 1) * stride
            self.env[body.args[0]] = point(first) if trips == 1 else (first, last)
            for arg in body.args[1:]:
                self.env[arg] = None
            self.counts = Counter()
            try:
                self.run_block(body, state, definite)
            except Unproven:
                self.counts = before
                super().on_for(op, state, definite)
                return
            once, self.counts = self.counts, Counter(before)
            for queue, count in once.items():
                self.counts[queue] += count * trips
        for result in op.results:
            self.env[result] = None

    def _trips(self, op: scf.ForOp) -> tuple[np.ndarray, np.ndarray, int] | None:
        """(first, step, trips) of a loop whose bounds each worker knows and whose trip count
        all the batch's workers share (they may start apart: a CTA striding over tiles from
        its own index); Divergent by trip count where they do not; None where a bound is not
        known exactly. Splitting by where the workers start would run every CTA on its own
        (a million-CTA grid for minutes)."""
        values = [self.value(v) for v in (op.lb, op.ub, op.step)]
        if any(value is None or not exact(value) for value in values):
            return None
        first, end, stride = (np.asarray(value[0]) for value in values)
        if (stride <= 0).any():
            return None
        trips = np.maximum(0, -(-(end - first) // stride))
        one = uniform(trips)
        if one is None:
            raise Divergent(op, [np.flatnonzero(trips == t) for t in np.unique(trips)])
        return first, stride, one

    def on_if(self, op: scf.IfOp, state: object, definite: bool) -> None:
        """A branch whose condition is not known still counts where both its sides take the
        same tickets (a tile taken one way or another)."""
        if not any(isinstance(inner, _TAKING) for inner in op.walk()) or \
                self._decide(op, self.value(op.cond)) is not None or \
                self._thread_roles(op) is not None:
            super().on_if(op, state, definite)
            return
        before, sides = self.counts, []
        for region in (op.true_region, op.false_region):
            self.counts = Counter(before)
            if region.blocks:
                self.run_block(region.blocks.first, state, definite)  # type: ignore[arg-type]
            sides.append(self.counts)
        if sides[0] != sides[1]:
            raise Unproven(op, "has a condition not known here and sides that take "
                               "different numbers of tickets")
        self.counts = sides[0]
        for result in op.results:
            self.env[result] = None

    def evaluate(self, op: Operation) -> None:
        if isinstance(op, gpu.BlockIdOp) and op.dimension.data == gpu.DimensionEnum.X:
            self.env[op.result] = point(self.tiles[:, 0])
        elif isinstance(op, gpu.ThreadIdOp) and not self.block_known:
            self.env[op.result] = None
        elif isinstance(op, gpu.ThreadIdOp) and op.dimension.data == gpu.DimensionEnum.X \
                and self.worker_threads is not None:
            first = self.tiles[:, 1] * self.worker_threads
            self.env[op.result] = (first, first + self.worker_threads - 1)
        else:
            super().evaluate(op)
            # a worker's thread range divided down to its group index is one value per
            # worker: exact, so the loops it bounds are unrolled
            for result in op.results:
                value = self.env.get(result)
                if value is not None and not exact(value) and np.array_equal(*value):
                    self.env[result] = point(np.asarray(value[0]))

    def on_op(self, op: Operation, state: object) -> None:
        if not isinstance(op, _TAKING):
            return
        if not self.definite:
            raise Unproven(op, "may or may not run (a loop or branch around it whose "
                               "bounds or condition depend on data, on a kernel argument or "
                               "on the thread within a worker)")
        if self.threads is not None:
            raise Unproven(op, "is reached by only some threads of a worker (a branch on "
                               "the thread index)")
        if isinstance(op, dataflow.ACQUIRE_OPS):
            self.counts["acquired", op.queue] += 1
            if op in self.drawn_acquires:
                self.counts["drawn_acquired", op.queue] += 1
        else:
            self.counts["drawn", op.queue] += 1


def tickets_per_launch(kernel: gpu.FuncOp, ctas: int, workers_per_cta: int,
                       worker_threads: int | None) -> LaunchTickets:
    """The acquires and draws of each queue argument of `kernel` that one launch of `ctas`
    CTAs runs, over all its workers (`workers_per_cta` groups of `worker_threads` threads a
    CTA, or the whole CTA where `worker_threads` is None); Unproven where one cannot be
    counted."""
    if ctas * workers_per_cta > ENUMERATION_LIMIT:  # each worker's count is kept
        raise Unproven(kernel, f"{ctas} CTAs of {workers_per_cta} worker(s): more than the "
                               f"{ENUMERATION_LIMIT} workers whose tickets are counted")
    block = kernel.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
    extents = tuple(block.get_values()) if block is not None else None  # type: ignore
    workers = np.indices((ctas, workers_per_cta), dtype=np.int64).reshape(2, -1).T
    budget = StepBudget(COUNT_STEPS, "fewer tickets a worker")
    total: Counter[tuple[str, SSAValue]] = Counter()
    # only the acquires, the draws and what decides whether they run: one slice for all
    relevant = relevant_ops(kernel, [op for op in kernel.walk() if isinstance(op, _TAKING)])
    drawn_acquires = dataflow.drawn_acquires(kernel)

    def attempt(indices: np.ndarray) -> Counter[tuple[str, SSAValue]]:
        run = _TicketCount(kernel, workers[indices], ctas, extents,  # type: ignore[arg-type]
                           worker_threads if workers_per_cta > 1 else None, budget,
                           drawn_acquires)
        run._relevant = relevant
        run.run(None)
        return run.counts

    by_cta: dict[SSAValue, np.ndarray] = {}
    for indices, counts in run_batches(workers, attempt):
        for key, count in counts.items():
            total[key] += count * len(indices)
            if key[0] == "acquired":
                per_cta = by_cta.setdefault(key[1], np.zeros(ctas, dtype=np.int64))
                np.add.at(per_cta, workers[indices][:, 0], count)
    return LaunchTickets(*({queue: count for (what, queue), count in total.items()
                            if what == kind}
                           for kind in ("acquired", "drawn", "drawn_acquired")),
                         {queue: tuple(int(c) for c in per_cta)
                          for queue, per_cta in by_cta.items()})
