"""A CPU model of a spatial pipeline (Kitsune): persistent CTAs that hand tiles through queues.

The queue is the lowering's (convert-dataflow-to-nvvm), object for object: a ring of `entries`
entries, one ticket counter for the producer stage and one per consumer stage, and per entry a
`full` count (fills so far) and an `empty` count (consumer-stage releases so far). Ticket t is
entry `t mod N`, round `t div N`; a producer may fill it once `empty >= round × consumers`, a
consumer may read it once `full >= round + 1`. Nothing is reset between launches.

A stage is `ctas` CTAs of `workers` queue workers each (the CTA itself, or its groups of threads
when the kernel's queue ops carry `threads N`: B / N of them), every worker running `iterations`
times (or the workers sharing `tiles`) independently of the others: acquire a full entry of
every input (drawing a ticket of its stage; a tile that reads r entries, like the final stage
of a split reduction, draws r consecutive tickets at once), acquire a free entry of every output
(drawing a ticket, or, for a relay, taking the ticket of its first input: `at %t`), compute,
then release the inputs and fill the outputs. An input or output given the ticket of another
of the stage's queues (`at`: a join's second input, a fan-out's second output) takes that
ticket and moves no counter, as the lowering does. A stage that draws ahead (`dataflow.draw_full` /
`draw_empty`) draws its next tile's tickets of the counter it draws first (its first input's,
or a source's output's), when the launch gives it that tile, as soon as it holds the current
ones, and waits for them on its next tile. Entries carry what was written (the ticket and the
tile whose data it holds: a source's tile is its stage and ticket, every other stage's the tile
of the first input it read), so a read of an entry that does not hold its ticket yet
(`early-read`), a fill of an entry some consumer stage has not released yet (`overwrite`) and
a tile whose inputs (one entry each) hold the data of different tiles (`mismatched-join`: its
tickets named the same number, not the same tile) are caught, as is a deadlock: no worker
can move, some are not done. CTAs hold an SM slot from dispatch until their last worker is
done, spinning included; the dispatcher places them on `sms` SMs (a stage's CTA takes
1 / blocks_per_sm of one), in an order the scheduler picks: stage order, random, or
adversarial (consumer stages first), and the interleaving of the running workers is random or
adversarial (the most downstream first). `faults` makes the protocol wrong on purpose (a
wait one short, a release dropped), so the tests can see each check fire.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

QueueScheduler = Literal["in_order", "random", "adversarial"]


@dataclass(frozen=True)
class SimQueue:
    name: str
    entries: int


@dataclass(frozen=True)
class SimQueueStage:
    name: str
    ctas: int
    iterations: int  # per worker and launch
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    relay: bool = False  # outputs take the ticket of the first input (`acquire_empty at %t`)
    blocks_per_sm: int = 1
    reads: tuple[tuple[str, int], ...] = ()  # (queue, entries held per tile) where not 1
    tiles: int | None = None  # tiles per launch shared by the workers (else iterations each)
    workers: int = 1  # queue workers per CTA: B / N with `threads N`, else the CTA alone
    draw_ahead: bool = False  # draws its next tickets once it holds its current ones
    # (queue, another queue of the stage): the queue's acquire takes that queue's ticket
    # (`at`, a join's later input, a fan-out's later output, a relay's output), drawing none
    given: tuple[tuple[str, str], ...] = ()

    def iterations_of(self, cta: int, worker: int = 0) -> int:
        if self.tiles is None:
            return self.iterations
        workers, rank = self.ctas * self.workers, cta * self.workers + worker
        return self.tiles // workers + (1 if rank < self.tiles % workers else 0)


@dataclass(frozen=True)
class QueueFaults:
    """Ways to break the protocol: waits one short, a stage that never releases its input."""

    full_target_offset: int = 0  # consumers wait for full >= round + 1 + offset
    empty_target_offset: int = 0  # producers wait for empty >= round × consumers + offset
    drop_release: str | None = None  # this stage never releases its input entries


@dataclass(frozen=True)
class QueueViolation:
    kind: str  # "early-read", "overwrite" or "mismatched-join"
    stage: str
    cta: int
    queue: str
    ticket: int
    found: int | None  # the ticket the entry held (early read), or the round not yet released
    worker: int = 0  # of the CTA


@dataclass(frozen=True)
class QueueWait:
    stage: str
    cta: int
    queue: str
    ticket: int
    waits_for: str  # "full" or "free"
    expected: int
    seen: int
    worker: int = 0  # of the CTA


@dataclass
class QueueSimResult:
    deadlock: tuple[QueueWait, ...] | None
    violations: list[QueueViolation]
    delivered: dict[str, list[int]]  # per sink stage: tickets it consumed, in order
    steps: int
    undispatched: int = 0  # CTAs never placed (a deadlock with slots held by spinners)

    @property
    def ok(self) -> bool:
        return self.deadlock is None and not self.violations


@dataclass
class _Queue:
    spec: SimQueue
    consumers: list[str]
    producer_ticket: int = 0
    consumer_ticket: dict[str, int] = field(default_factory=dict)
    full: list[int] = field(default_factory=list)
    empty: list[int] = field(default_factory=list)
    held: list[int | None] = field(default_factory=list)  # the ticket each entry holds
    tile: list[tuple[str, int] | None] = field(default_factory=list)  # whose data it holds

    def __post_init__(self) -> None:
        n = self.spec.entries
        self.full, self.empty, self.held = [0] * n, [0] * n, [None] * n
        self.tile = [None] * n
        self.consumer_ticket = {c: 0 for c in self.consumers}


class _Cta:
    """One CTA: its SM slot (`sm`), held from dispatch until its last worker is done."""

    def __init__(self, sim: QueuePipelineSim, stage: SimQueueStage, index: int):
        self.sim, self.stage, self.index = sim, stage, index
        self.sm: int | None = None
        self.workers = [_Worker(self, w) for w in range(stage.workers)]


class _Worker:
    """One queue worker of a CTA as a generator of waits: it yields (queue, ticket, 'full' |
    'free') when it must wait, and is resumed when that entry is ready."""

    def __init__(self, cta: _Cta, index: int):
        self.cta, self.index = cta, index
        self.sim, self.stage = cta.sim, cta.stage
        self.program = self._run()
        self.waiting: tuple[str, int, str] | None = None
        self.done = False

    def _run(self):
        sim, stage = self.sim, self.stage
        reads = dict(stage.reads)
        per_launch = stage.iterations_of(self.cta.index, self.index)
        ahead: dict[tuple[str, str], list[int]] = {}  # tickets drawn for the next tile

        def draw(name: str, end: str, count: int) -> list[int]:
            if (name, end) in ahead:
                return ahead.pop((name, end))
            queue = sim.queues[name]
            if end == "producer":
                first = queue.producer_ticket
                queue.producer_ticket += count
            else:
                first = queue.consumer_ticket[stage.name]
                queue.consumer_ticket[stage.name] += count
            return list(range(first, first + count))

        # drawing ahead takes the tickets of the counter a tile draws first, before it holds
        # an entry (the verifier refuses others): its first input's, or a source's output's
        first_counter = ((stage.inputs[0], "consumer", reads.get(stage.inputs[0], 1))
                         if stage.inputs else
                         (stage.outputs[0], "producer", 1) if stage.outputs else None)

        given = dict(stage.given)
        for tile in range(per_launch * sim.launches):
            held_in = []
            taken: dict[str, int] = {}  # the first ticket of each queue this tile holds
            for name in stage.inputs:
                queue = sim.queues[name]
                # a tile that reads r entries draws r consecutive tickets at once: the r
                # partials of one output tile
                tickets = [taken[given[name]]] if name in given else \
                    draw(name, "consumer", reads.get(name, 1))
                taken[name] = tickets[0]
                for ticket in tickets:
                    while not sim.ready(queue, ticket, "full"):
                        yield name, ticket, "full"
                    sim.read(self, queue, ticket)
                    held_in.append((queue, ticket))
            joined = {queue.tile[ticket % queue.spec.entries] for queue, ticket in held_in
                      if reads.get(queue.spec.name, 1) == 1}
            if len(joined) > 1:
                queue, ticket = held_in[-1]
                sim.violations.append(QueueViolation(
                    "mismatched-join", stage.name, self.cta.index, queue.spec.name, ticket,
                    None, self.index))
            held_out = []
            for name in stage.outputs:
                queue = sim.queues[name]
                if name in given:
                    ticket = taken[given[name]]
                elif stage.relay and held_in and not given:
                    ticket = held_in[0][1]
                else:
                    (ticket,) = draw(name, "producer", 1)
                taken[name] = ticket
                while not sim.ready(queue, ticket, "free"):
                    yield name, ticket, "free"
                held_out.append((queue, ticket))
            # the launch has another tile
            if stage.draw_ahead and first_counter and (tile + 1) % per_launch:
                name, end, count = first_counter
                ahead[(name, end)] = draw(name, end, count)
            yield None  # compute: another CTA may run meanwhile
            for queue, ticket in held_in:
                if sim.faults.drop_release != stage.name:
                    queue.empty[ticket % queue.spec.entries] += 1
            source = held_in[0] if held_in else held_out[0] if held_out else None
            tile = (None if source is None else
                    source[0].tile[source[1] % source[0].spec.entries] if held_in else
                    (stage.name, source[1]))
            for queue, ticket in held_out:
                sim.fill(self, queue, ticket, tile)
            if not stage.outputs:
                for _, ticket in held_in:
                    sim.delivered[stage.name].append(ticket)
        self.done = True


class QueuePipelineSim:
    def __init__(self, queues: Sequence[SimQueue], stages: Sequence[SimQueueStage], sms: int,
                 scheduler: QueueScheduler = "random", seed: int = 0, launches: int = 1,
                 faults: QueueFaults = QueueFaults(), persistent: bool = False):
        self.rng = random.Random(seed)
        self.scheduler = scheduler
        self.launches = launches
        self.faults = faults
        self.stages = list(stages)
        consumers = {q.name: [s.name for s in stages if q.name in s.inputs] for q in queues}
        self.queues = {q.name: _Queue(q, consumers[q.name]) for q in queues}
        self.depth = self._depths()
        self.violations: list[QueueViolation] = []
        self.delivered: dict[str, list[int]] = {s.name: [] for s in stages if not s.outputs}
        self.capacity = math.lcm(*(s.blocks_per_sm for s in stages))
        self.free = [self.capacity] * sms
        self.pending = [_Cta(self, s, i) for s in stages for i in range(s.ctas)]
        self.persistent = persistent
        self.running: list[_Worker] = []

    def _depths(self) -> dict[str, int]:
        producer = {q: s.name for s in self.stages for q in s.outputs}
        depth: dict[str, int] = {}

        def of(stage: SimQueueStage) -> int:
            if stage.name not in depth:
                ups = [next(s for s in self.stages if s.name == producer[q])
                       for q in stage.inputs if q in producer]
                depth[stage.name] = 1 + max((of(u) for u in ups), default=-1)
            return depth[stage.name]

        for stage in self.stages:
            of(stage)
        return depth

    # -- the queue protocol ----------------------------------------------------------------------
    def ready(self, queue: _Queue, ticket: int, what: str) -> bool:
        entry, round_ = ticket % queue.spec.entries, ticket // queue.spec.entries
        if what == "full":
            return queue.full[entry] >= round_ + 1 + self.faults.full_target_offset
        return queue.empty[entry] >= round_ * len(queue.consumers) + \
            self.faults.empty_target_offset

    def read(self, worker: _Worker, queue: _Queue, ticket: int) -> None:
        entry = ticket % queue.spec.entries
        if queue.held[entry] != ticket:
            self.violations.append(QueueViolation("early-read", worker.stage.name,
                                                  worker.cta.index, queue.spec.name, ticket,
                                                  queue.held[entry], worker.index))

    def fill(self, worker: _Worker, queue: _Queue, ticket: int,
             tile: tuple[str, int] | None = None) -> None:
        entries = queue.spec.entries
        entry, round_ = ticket % entries, ticket // entries
        if queue.empty[entry] < round_ * len(queue.consumers):
            self.violations.append(QueueViolation("overwrite", worker.stage.name,
                                                  worker.cta.index, queue.spec.name, ticket,
                                                  round_ - 1, worker.index))
        queue.held[entry] = ticket
        queue.tile[entry] = tile
        queue.full[entry] += 1

    # -- the machine -------------------------------------------------------------------------
    def _units(self, cta: _Cta) -> int:
        return self.capacity // cta.stage.blocks_per_sm

    def _dispatch(self) -> None:
        order = list(self.pending)
        if self.scheduler == "adversarial":
            order.sort(key=lambda c: -self.depth[c.stage.name])
        elif self.scheduler == "random":
            self.rng.shuffle(order)
        if self.persistent:  # a cooperative launch places every CTA or none
            if sum(self._units(c) for c in order) > sum(self.free):
                return
        for cta in order:
            best = max(range(len(self.free)), key=lambda sm: self.free[sm])
            if self.free[best] >= self._units(cta):
                self.free[best] -= self._units(cta)
                cta.sm = best
                self.pending.remove(cta)
                self.running.extend(cta.workers)

    def _step(self, worker: _Worker) -> None:
        try:
            worker.waiting = next(worker.program)
        except StopIteration:
            worker.done = True
        if worker.done:
            self.running.remove(worker)
            cta = worker.cta
            if all(w.done for w in cta.workers):
                assert cta.sm is not None
                self.free[cta.sm] += self._units(cta)

    def _can_move(self, worker: _Worker) -> bool:
        if worker.waiting is None:
            return True
        name, ticket, what = worker.waiting
        return self.ready(self.queues[name], ticket, what)

    def run(self, max_steps: int = 1_000_000) -> QueueSimResult:
        steps = 0
        while steps < max_steps:
            self._dispatch()
            movable = [w for w in self.running if self._can_move(w)]
            if not movable:
                break
            if self.scheduler == "adversarial":
                # the most downstream worker first: consumers race ahead of their producers
                top = max(self.depth[w.stage.name] for w in movable)
                movable = [w for w in movable if self.depth[w.stage.name] == top]
            self._step(self.rng.choice(movable))
            steps += 1
        deadlock = None
        if self.running or self.pending:
            deadlock = tuple(self._wait(w) for w in self.running if w.waiting is not None)
        return QueueSimResult(deadlock, self.violations, self.delivered, steps,
                              len(self.pending))

    def _wait(self, worker: _Worker) -> QueueWait:
        assert worker.waiting is not None
        name, ticket, what = worker.waiting
        queue = self.queues[name]
        entry, round_ = ticket % queue.spec.entries, ticket // queue.spec.entries
        if what == "full":
            expected, seen = round_ + 1 + self.faults.full_target_offset, queue.full[entry]
        else:
            expected = round_ * len(queue.consumers) + self.faults.empty_target_offset
            seen = queue.empty[entry]
        return QueueWait(worker.stage.name, worker.cta.index, name, ticket, what, expected,
                         seen, worker.index)


def pipeline_from_ir(pipeline, cluster: int = 0) -> tuple[list[SimQueue], list[SimQueueStage]]:
    """The queues and stages of a `dataflow.pipeline` (its `ctas`, `tiles` per launch, by
    default one per worker, and `dataflow.reads`; the queue workers of each stage's kernel,
    `dataflow.queue_workers`; whether it relays tickets, `acquire_empty at`, and draws ahead),
    as the simulator runs them; tickets are drawn as the lowering draws them. A pipeline in
    clusters (cluster queues) is independent clusters, each one CTA a stage and a ring a
    queue: the model is cluster `cluster`'s, every stage one CTA taking its share of the
    stage's `tiles` (that CTA's tiles in the whole stage's model); simulate it with room for
    all its CTAs (`sms` = its stages), as the hardware starts a cluster whole."""
    from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr
    from xdsl.traits import SymbolTable

    from tilesync.contract import READS_ATTR, TILES_ATTR
    from tilesync.dialects.dataflow import DrawEmptyOp, DrawFullOp, queue_workers

    module = pipeline.parent_op()
    queues = [SimQueue(q.sym_name.data, q.queue_type.num_entries) for q in pipeline.queues]
    stages = []
    for stage in pipeline.stages:
        tiles = stage.attributes.get(TILES_ATTR)
        reads = stage.attributes.get(READS_ATTR)
        kernel = SymbolTable.lookup_symbol(module, stage.kernel) if module is not None else None
        workers = queue_workers(kernel).count if kernel is not None else 1
        ops = list(kernel.walk()) if kernel is not None else []
        given = _given_tickets(stage, kernel) if kernel is not None else ()
        inputs = {r.root_reference.data for r in stage.inputs}
        relay = any(source in inputs and queue not in inputs for queue, source in given)
        stages.append(SimQueueStage(
            stage.sym_name.data, stage.num_ctas, 0,
            tuple(r.root_reference.data for r in stage.inputs),
            tuple(r.root_reference.data for r in stage.outputs),
            reads=tuple((k, v.value.data) for k, v in reads.data.items()
                        if isinstance(v, IntegerAttr)) if isinstance(reads, DictionaryAttr)
            else (),
            tiles=tiles.value.data if isinstance(tiles, IntegerAttr)
            else stage.num_ctas * workers,
            workers=workers, relay=relay, given=given,
            draw_ahead=any(isinstance(op, DrawEmptyOp | DrawFullOp) for op in ops)))
    if pipeline.clustered:
        if not 0 <= cluster < pipeline.stages[0].num_ctas:
            raise ValueError(f"pipeline @{pipeline.sym_name.data} has "
                             f"{pipeline.stages[0].num_ctas} clusters, no cluster {cluster}")
        stages = [replace(stage, ctas=1, tiles=stage.iterations_of(cluster), workers=1)
                  for stage in stages]
    return queues, stages


def _given_tickets(stage, kernel) -> tuple[tuple[str, str], ...]:
    """(queue, source) for each acquire given (`at`) another queue's ticket
    (`dataflow.given_tickets`). The model takes inputs, then outputs, in the stage's order: a
    source later in it cannot be modelled (ValueError)."""
    from tilesync.dialects.dataflow import given_tickets

    names = [r.root_reference.data for r in (*stage.inputs, *stage.outputs)]
    given = given_tickets(stage, kernel)
    for queue, source in given.items():
        if names.index(source) > names.index(queue):
            raise ValueError(f"stage @{stage.sym_name.data}: @{queue} takes the ticket of "
                             f"@{source}, which the model acquires after it (inputs first)")
    return tuple(given.items())


def simulate_pipeline(queues: Sequence[SimQueue], stages: Sequence[SimQueueStage], sms: int,
                      scheduler: QueueScheduler = "random", *, seed: int = 0, launches: int = 1,
                      faults: QueueFaults = QueueFaults(), persistent: bool = False,
                      max_steps: int = 1_000_000) -> QueueSimResult:
    """Run the pipeline `launches` times back to back (each CTA runs its iterations of every
    launch; tickets and counts run on, nothing is reset) and report deadlocks, early reads and
    overwrites, and what each sink stage received."""
    return QueuePipelineSim(queues, stages, sms, scheduler, seed, launches, faults,
                            persistent).run(max_steps)
