"""dataflow-verify against the queue simulator on random spatial pipelines: what verify proves
must never deadlock, read early, overwrite an unread entry, join entries of different tiles or
lose a ticket, under in-order, random and adversarial schedulers; what a mutation breaks must
be refused.

    python -m tilesync.tools.dataflow_differential --programs 20000 --jobs 2
    python -m tilesync.tools.dataflow_differential --programs 200 --show-failures

A program (`draw_program`) is a `dataflow.pipeline` of 2–6 stages in MLIR text, the form of the
lit tests (test/filecheck/transforms/dataflow/verify*.mlir): every stage a real `gpu.func`
whose queue workers (the block, or with `threads N` its groups of N threads) stride over the
stage's `tiles` a launch, acquiring a full entry of each input (`dataflow.reads` > 1 entries
of one: the final stage of a split reduction after its fan-in), a free entry of each output,
then releasing them. Drawn at random: CTA counts, tiles, queue entries, block sizes, workers,
registers and shared bytes (so that co-residency sometimes fails on the drawn SM count),
multicast (several consumer stages of one queue), joins (a second input given the first's
ticket, `at`), fan-out (a second output given the first's), relays (outputs given the input's
ticket), draw-ahead (`dataflow.draw_full` / `draw_empty` of the next tile's ticket under the
`lb < ub` and `iv + step < ub` guards), and pipelines in clusters (`cluster` queues, equal CTA
counts). A third of the programs carry one MUTATION, a real bug: a release dropped, doubled,
put before its acquire or under a branch; a kernel that acquires one tile more than its stage
declares; producer and consumer stages whose tiles do not balance; a ring smaller than a
consumer tile takes; a worker drawing while it holds (a join without `at`, outputs before
inputs) with several workers a ring (not in clusters, whose rings have one worker at each
end: there it is no bug, and verify proves it); a block barrier while several workers hold
tickets; an input taken at its producer end; a constant released as a ticket; more CTAs than
the SMs hold; a cycle; a cluster whose producer and consumer CTAs take different shares;
`tiles` undeclared.

Each program is parsed and run through `dataflow-verify{sms=S}` (`tilesync.api.run_passes`,
as `tilesync-opt` runs it). An exception other than a `TilesyncError` is a failure: bad input
is refused with a diagnostic. A mutant verify proves is a failure (the mutation is a bug by
construction). Every program verify proves is run by `analysis.simulator.queues` as
`pipeline_from_ir` reads it, on the true machine (S SMs, each stage's blocks per SM from its
registers, shared bytes and block by `analysis.occupancy`; each cluster on its own), two
launches back to back, in order, at random and adversarially with several seeds: no deadlock,
no early read, no overwrite, no join of entries holding different tiles, and at the end every
queue's producer and consumer counters at the tickets its producer declares, every entry given
back by every consumer stage. Refused programs
are simulated too: a refused program that runs clean under every scheduler is counted (verify
is incomplete there; not a failure).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace

from tilesync.contract import (
    KNOWN_BLOCK_SIZE_ATTR,
    READS_ATTR,
    REGISTERS_ATTR,
    SHARED_BYTES_ATTR,
    TILES_ATTR,
)
from tilesync.tools.errors import non_negative_int, positive_int

MUTATIONS = {
    "dropped-release": ("never runs 'dataflow.release", "the ticket is not released"),
    "doubled-release": ("releases a ticket the worker does not hold",),
    "release-before-acquire": ("releases a ticket the worker does not hold",
                               "but it reaches 'dataflow.release"),
    "release-in-branch": ("inside a branch or loop releases a ticket acquired outside it",),
    "kernel-count": ("but the stage declares",),
    "imbalanced-tiles": ("tickets per launch but stage",),
    "small-ring": ("could never hold them all",),
    "draw-while-holding": ("queue workers draws",),
    # a worker's loop bounds depend on its threads: the barrier is also a divergent one
    "barrier-while-holding": ("wait for each other while a worker holds a ticket",
                              "'gpu.barrier' waits for every thread of the block"),
    "wrong-end": ("is taken at its consumer end only",),
    "constant-ticket": ("not one a queue handed out",),
    "not-co-resident": ("cannot run: not all",),
    "cycle": ("stage graph has a cycle",),
    "cluster-lanes": ("in cluster",),
    "no-tiles": ("does not declare its 'tiles'",),
}
"""Each mutation, and words of which one names it in the refusal."""

SCHEDULES = (("in_order", 0), ("random", 1), ("random", 2), ("random", 3),
             ("adversarial", 0), ("adversarial", 1))
LAUNCHES = 2


@dataclass
class Stage:
    name: str
    ctas: int
    tiles: int  # declared tiles a launch
    block: int  # threads of its block
    threads: int | None  # threads of a queue worker (`threads N`), None: the block
    registers: int
    shared: int
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=dict)
    relay: bool = False  # outputs take the first input's ticket
    join_at: bool = True  # later inputs take the first input's ticket
    fan_out_at: bool = True  # later outputs take the first output's ticket
    draw_ahead: bool = False
    draw_early: bool = False  # draws ahead right after its first acquire, not after all
    fault: str | None = None  # a kernel-level mutation
    kernel_tiles: int | None = None  # the tiles its kernel runs, where not `tiles`
    declares_tiles: bool = True

    @property
    def workers(self) -> int:
        return self.block // self.threads if self.threads else 1


@dataclass
class Program:
    stages: list[Stage]
    entries: dict[str, int]  # queue -> entries, in creation order
    sms: int
    cluster: bool = False
    mutation: str | None = None

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    def producer(self, queue: str) -> Stage:
        return next(s for s in self.stages if queue in s.outputs)


class _Draw:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def chance(self, percent: int) -> bool:
        return self.rng.randrange(100) < percent

    def pick(self, options):
        return options[self.rng.randrange(len(options))]

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


TILE_COUNTS = (1, 2, 3, 4, 6, 8, 12, 16, 24)


def draw_program(seed: int, mutate: bool = True, mutation: str | None = None) -> Program:
    """A random pipeline, with a mutation a third of the time (see the module docstring);
    `mutate=False`: the same program without it; `mutation`: that one, where it applies."""
    d = _Draw(seed)
    cluster = d.chance(12)
    count = d.integer(2, 6 if not cluster else 4)
    sms = d.pick((1, 2, 4, 8, 16, 16, 32, 132))
    cluster_ctas = d.integer(1, 4)
    stages: list[Stage] = []
    entries: dict[str, int] = {}

    def new_stage(index: int, tiles: int) -> Stage:
        block = d.pick((64, 128, 128, 256, 256, 512, 1024))
        # now and then a block too big for the registers: a stage that cannot run at all
        registers = d.pick([r for r in (32, 64, 96, 128, 168, 255)
                            if r * block <= 65536 or d.chance(3)] or [32])
        threads = None if cluster or d.chance(60) else d.pick(
            [n for n in (32, 64, 128, 256) if n < block and block // n <= 8] or [None])
        return Stage(f"s{index}", cluster_ctas if cluster else d.pick((1, 1, 2, 3, 4, 8)),
                     tiles, block, threads, registers,
                     d.pick((0, 0, 4096, 49152, 100_000, 120_000) + ((230_000,) * d.chance(5))))

    def new_queue(producer: Stage) -> str:
        name = f"q{len(entries)}"
        entries[name] = d.integer(1, 4)
        producer.outputs.append(name)
        return name

    stages.append(new_stage(0, d.pick(TILE_COUNTS)))
    for index in range(1, count):
        # the first input: a new queue of an earlier stage, or (multicast) one already consumed
        taken = [q for s in stages for q in s.outputs]
        if taken and not cluster and d.chance(25):
            first = d.pick(taken)
        else:
            first = new_queue(stages[0] if index == 1 else d.pick(stages))
        producer = next(s for s in stages if first in s.outputs)
        divisors = [r for r in range(2, producer.tiles + 1) if producer.tiles % r == 0]
        reads = d.pick(divisors) if divisors and d.chance(25) else 1
        stage = new_stage(index, producer.tiles // reads)
        stage.inputs.append(first)
        if reads > 1:
            stage.reads[first] = reads
            entries[first] = max(entries[first], reads + d.integer(0, 1))
            if d.chance(80):  # a split reduction's final stage: one worker takes the partials
                stage.ctas, stage.threads = (stage.ctas, None) if cluster else (1, None)
        # a join: a second input of a stage with as many tiles
        same = [s for s in stages if s.tiles == stage.tiles and s is not producer]
        if same and not cluster and reads == 1 and d.chance(25):
            stage.inputs.append(new_queue(d.pick(same)))
            stage.join_at = d.chance(90) or stage.workers * stage.ctas == 1
        stage.relay = reads == 1 and not cluster and d.chance(40)
        stage.draw_ahead = not cluster and reads == 1 and d.chance(30)
        stage.draw_early = d.chance(50)
        stages.append(stage)
    for stage in stages:
        if not stage.inputs:
            stage.draw_ahead = not cluster and d.chance(30)
        stage.fan_out_at = not cluster and (d.chance(90) or stage.relay
                                            or stage.workers * stage.ctas == 1)
    program = Program(stages, entries, sms, cluster)
    if mutate and (d.chance(33) or mutation is not None):
        _mutate(program, d, mutation)
    return program


def _mutate(program: Program, d: _Draw, kind: str | None = None) -> None:
    """One mutation that applies to `program` (none where the drawn one does not)."""
    kind = kind or d.pick(list(MUTATIONS))
    stages = program.stages
    with_queues = [s for s in stages if s.inputs or s.outputs]
    consumers = [s for s in stages if s.inputs]
    target = d.pick(with_queues)
    if kind in ("dropped-release", "doubled-release", "release-in-branch", "constant-ticket"):
        target.fault = kind
    elif kind == "release-before-acquire":
        target.fault, target.draw_ahead = kind, False
    elif kind == "kernel-count":
        target.kernel_tiles = target.tiles + target.ctas * target.workers
    elif kind == "wrong-end" and consumers:
        stage = d.pick(consumers)
        stage.fault, stage.draw_ahead = kind, False
    elif kind == "imbalanced-tiles" and consumers:
        stage = d.pick(consumers)
        stage.tiles += 1
    elif kind == "small-ring":
        queue = d.pick(list(program.entries))
        consumer = next(s for s in stages if queue in s.inputs)
        if consumer.reads.get(queue, 1) > 1:
            program.entries[queue] = consumer.reads[queue] - 1
        else:  # a consumer tile takes 2 entries the producer fills as 2 tiles
            producer = program.producer(queue)
            if consumer.inputs[0] != queue or consumer.relay:
                return
            producer_tiles = consumer.tiles * 2
            if any(program.stage(s).tiles != producer.tiles for q in producer.outputs
                   for s in [c.name for c in stages if q in c.inputs] if q != queue) \
                    or producer.inputs:
                return
            producer.tiles = producer_tiles
            consumer.reads[queue], program.entries[queue] = 2, 1
            consumer.ctas, consumer.threads = (consumer.ctas if program.cluster else 1), None
    elif kind == "draw-while-holding" and not program.cluster:
        # a cluster's ring has one worker at each end: nobody to wait for while it holds
        joins = [s for s in stages if len(s.inputs) > 1]
        relays = [s for s in stages if s.inputs and s.outputs]
        if joins:
            stage = d.pick(joins)
            stage.join_at = False
        elif relays:
            stage = d.pick(relays)
            stage.fault, stage.relay, stage.draw_ahead = "outputs-first", False, False
        else:
            return
        if stage.ctas * stage.workers < 2:
            stage.ctas = 2
    elif kind == "barrier-while-holding" and not program.cluster:
        # a stage whose workers draw one ticket a queue: more workers make no other bug
        target = d.pick([s for s in with_queues if not s.reads and len(s.inputs) < 2]
                        or [target])
        target.fault = kind
        if target.workers < 2:
            target.block, target.threads = 256, 128
    elif kind == "not-co-resident" and not program.cluster:
        target.ctas = program.sms * 32 + 1  # more than any SM count x blocks per SM holds
    elif kind == "cycle" and consumers:
        last = consumers[-1]
        queue = f"q{len(program.entries)}"
        program.entries[queue] = 2
        last.outputs.append(queue)
        first = stages[0]
        first.inputs.append(queue)
        first.relay = first.relay and len(first.inputs) == 1
    elif kind == "cluster-lanes" and program.cluster and consumers:
        stage = d.pick(consumers)
        if stage.ctas < 2 or stage.tiles % stage.ctas == 0:
            return
        stage.fault = kind
    elif kind == "no-tiles":
        target.declares_tiles = False
    else:
        return
    program.mutation = kind


# ---------------------------------------------------------------------------------------------
# MLIR text
# ---------------------------------------------------------------------------------------------


def _queue_type(program: Program, queue: str) -> str:
    space = ", 0 : i64" if program.cluster else ""
    return f"!dataflow.queue<{program.entries[queue]} x memref<64xf32{space}>>"


def kernel_text(program: Program, stage: Stage) -> str:
    """The stage's kernel: its workers stride over the launch's tiles, each tile acquiring
    its inputs' and outputs' entries and giving them back (`stage.fault` breaks it)."""
    qtype = {q: _queue_type(program, q) for q in stage.inputs + stage.outputs}
    th = f" threads {stage.threads}" if stage.threads else ""
    fault = stage.fault
    lines = ["%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index",
             f"%tiles = arith.constant {stage.kernel_tiles or stage.tiles} : index",
             "%cta = gpu.block_id x", "%ctas = gpu.grid_dim x"]
    if fault == "cluster-lanes":  # CTA c takes the share of CTA ctas - 1 - c
        lines += ["%top = arith.subi %ctas, %c1 : index", "%rank = arith.subi %top, %cta : index"]
    rank = "%rank" if fault == "cluster-lanes" else "%cta"
    if stage.workers > 1:
        lines += [f"%per = arith.constant {stage.workers} : index",
                  f"%n = arith.constant {stage.threads} : index", "%tid = gpu.thread_id x",
                  "%w = arith.divui %tid, %n : index", f"%base = arith.muli {rank}, %per : index",
                  "%first = arith.addi %base, %w : index",
                  "%stride = arith.muli %ctas, %per : index"]
    else:
        lines += [f"%first = arith.addi {rank}, %c0 : index",
                  "%stride = arith.addi %ctas, %c0 : index"]
    ahead = None  # (queue, op) drawn ahead
    if stage.draw_ahead and (stage.inputs or stage.outputs):
        ahead = (stage.inputs[0], "draw_full") if stage.inputs else (stage.outputs[0],
                                                                      "draw_empty")
        q, op = ahead
        lines += ["%run = arith.cmpi ult, %first, %tiles : index",
                  "%d0 = scf.if %run -> (index) {",
                  f"  %x0 = dataflow.{op} %{q}{th} : {qtype[q]}", "  scf.yield %x0 : index",
                  "} else {", "  scf.yield %c0 : index", "}",
                  "scf.for %i = %first to %tiles step %stride iter_args(%d = %d0) -> (index) {"]
    else:
        lines.append("scf.for %i = %first to %tiles step %stride {")
    body: list[str] = []
    held: list[tuple[str, str, str]] = []  # (queue, ticket, release op)
    draw_next = ["%i1 = arith.addi %i, %stride : index",
                 "%more = arith.cmpi ult, %i1, %tiles : index",
                 "%next = scf.if %more -> (index) {"] + ([
                     f"  %x1 = dataflow.{ahead[1]} %{ahead[0]}{th} : {qtype[ahead[0]]}",
                     "  scf.yield %x1 : index", "} else {", "  scf.yield %d : index", "}"]
                     if ahead else [])

    def acquire(kind: str, queue: str, ticket: str, at: str | None) -> None:
        if ahead and queue == ahead[0] and not any(h[0] == queue for h in held):
            at = "%d"
        given = f" at {at}" if at else ""
        body.append(f"%{ticket} = dataflow.{kind} %{queue}{given}{th} : {qtype[queue]}")
        release = "release_empty" if kind == "acquire_full" else "release_full"
        held.append((queue, ticket, release))
        if ahead and len(held) == 1 and stage.draw_early:
            body.extend(draw_next)

    def inputs() -> None:
        for n, queue in enumerate(stage.inputs):
            kind = "acquire_empty" if fault == "wrong-end" and n == 0 else "acquire_full"
            at = "%a0_0" if n > 0 and stage.join_at else None
            for r in range(stage.reads.get(queue, 1)):
                acquire(kind, queue, f"a{n}_{r}", at)

    def outputs() -> None:
        for n, queue in enumerate(stage.outputs):
            at = "%a0_0" if stage.relay and stage.inputs else (
                "%b0" if n > 0 and stage.fan_out_at else None)
            acquire("acquire_empty", queue, f"b{n}", at)

    if fault == "release-before-acquire":  # the first queue's ticket given back before taken
        queue = (stage.inputs + stage.outputs)[0]
        draw = "draw_full" if stage.inputs else "draw_empty"
        body += [f"%early = dataflow.{draw} %{queue}{th} : {qtype[queue]}",
                 f"dataflow.{'release_empty' if stage.inputs else 'release_full'} %{queue}, "
                 f"%early{th} : {qtype[queue]}"]
    if fault == "outputs-first":
        outputs()
        inputs()
    else:
        inputs()
        outputs()
    if ahead and not stage.draw_early:
        body.extend(draw_next)
    if fault == "barrier-while-holding":
        body.append("gpu.barrier")
    for n, (queue, ticket, release) in enumerate(held):
        text = f"dataflow.{release} %{queue}, %{ticket}{th} : {qtype[queue]}"
        if n == 0 and fault == "dropped-release":
            continue
        if n == 0 and fault == "doubled-release":
            body.append(text)
        if n == 0 and fault == "release-in-branch":
            # given back on the worker's first tile only
            body += ["%keep = arith.cmpi ult, %i, %c1 : index", "scf.if %keep {", f"  {text}",
                     "}"]
            continue
        if n == 0 and fault == "constant-ticket":
            text = f"dataflow.{release} %{queue}, %c0{th} : {qtype[queue]}"
        body.append(text)
    if ahead:
        body.append("scf.yield %next : index")
    lines += ["  " + line for text in body for line in text.split("\n")] + ["}", "gpu.return"]
    args = ", ".join(f"%{q}: {qtype[q]}" for q in stage.inputs + stage.outputs)
    return (f"gpu.func @k_{stage.name}({args}) kernel attributes {{{KNOWN_BLOCK_SIZE_ATTR} = "
            f"array<i32: {stage.block}, 1, 1>}} {{\n" +
            "".join(f"  {line}\n" for line in lines) + "}")


def program_text(program: Program) -> str:
    kernels = "\n".join(kernel_text(program, s) for s in program.stages)
    queues = "".join(f"    dataflow.queue @{q}{' cluster' if program.cluster else ''} : "
                     f"{_queue_type(program, q)}\n" for q in program.entries)
    stages = ""
    for s in program.stages:
        attrs = [f"kernel = @k::@k_{s.name}", "resource = #dataflow.resource<simt>",
                 f"ctas = {s.ctas} : i64",
                 "inputs = [" + ", ".join(f"@{q}" for q in s.inputs) + "]",
                 "outputs = [" + ", ".join(f"@{q}" for q in s.outputs) + "]",
                 f"{REGISTERS_ATTR} = {s.registers} : i64",
                 f"{SHARED_BYTES_ATTR} = {s.shared} : i64"]
        if s.declares_tiles:
            attrs.append(f"{TILES_ATTR} = {s.tiles} : i64")
        if s.reads:
            attrs.append(f"{READS_ATTR} = {{" + ", ".join(f"{q} = {r} : i64"
                                                         for q, r in s.reads.items()) + "}")
        stages += f"    dataflow.stage @{s.name} {{{', '.join(attrs)}}}\n"
    indented = "".join(f"    {line}\n" for line in kernels.splitlines())
    return (f"builtin.module {{\n  gpu.module @k {{\n{indented}  }}\n"
            f"  dataflow.pipeline @p {{\n{queues}{stages}  }}\n}}\n")


# ---------------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------------

MAX_REFUSED_CTAS = 400
"""A refused program of more CTAs is not simulated (a mutant's thousands of CTAs: slow, and
nothing to learn)."""
CRASHED = "dataflow-verify crashed instead of refusing with a diagnostic"


@dataclass
class Outcome:
    proved: bool
    failure: str | None = None
    refusal: str = ""
    runs_clean: bool = False  # the simulator found nothing wrong under every scheduler


def check(program: Program) -> Outcome:
    """Verify `program`; simulate it, proved or refused; a failure where the two disagree on
    a proved program, where a mutant is proved, or where verify crashes."""
    from tilesync.api import parse, run_passes
    from tilesync.contract import TilesyncError
    from tilesync.dialects import dataflow

    try:
        module = parse(program_text(program))
        run_passes(module, [f"dataflow-verify{{sms={program.sms}}}"])
    except TilesyncError as err:
        refusal = str(err)
        module = None
    except Exception as err:  # verify must refuse with a diagnostic, never crash
        return Outcome(False, f"{CRASHED}: {_innermost_frame(err)}: "
                              f"{type(err).__name__}: {err}")
    else:
        refusal = ""
    if module is None:
        if program.mutation == "cycle":
            return Outcome(False, refusal=refusal)
        try:  # simulate the refused program as verify would have seen it
            module = parse(program_text(program))
        except TilesyncError:
            return Outcome(False, refusal=refusal)
    if refusal and sum(s.ctas for s in program.stages) > MAX_REFUSED_CTAS:
        return Outcome(False, refusal=refusal)
    pipeline = next(op for op in module.walk() if isinstance(op, dataflow.PipelineOp))
    problem = simulate(program, pipeline)
    if refusal:
        return Outcome(False, refusal=refusal, runs_clean=problem is None)
    if program.mutation is not None:
        return Outcome(True, f"proved a mutant ({program.mutation})"
                             + (f"; the simulator: {problem}" if problem else ""))
    if problem is not None:
        return Outcome(True, f"proved, but {problem}")
    return Outcome(True, runs_clean=True)


def verify_proves(program: Program) -> bool:
    """Whether dataflow-verify proves `program` (False also where it crashes)."""
    from tilesync.api import parse, run_passes

    try:
        run_passes(parse(program_text(program)), [f"dataflow-verify{{sms={program.sms}}}"])
    except Exception:
        return False
    return True


def simulate(program: Program, pipeline) -> str | None:
    """What the queue simulator finds wrong with `pipeline` on the true machine, or None."""
    from tilesync.analysis.occupancy import blocks_per_sm
    from tilesync.analysis.simulator.queues import QueuePipelineSim, pipeline_from_ir

    per_sm = {s.name: blocks_per_sm(s.block, s.registers, s.shared).blocks_per_sm
              for s in program.stages}
    if min(per_sm.values()) == 0:
        return "a stage cannot run at all (no block fits an SM)"
    runs = []
    for cluster in range(program.stages[0].ctas if program.cluster else 1):
        try:
            queues, stages = pipeline_from_ir(pipeline, cluster)
        except ValueError as err:
            return f"the simulator cannot model it: {err}"
        if program.cluster:  # the hardware starts a cluster whole: room for its CTAs
            runs.append((queues, stages, len(stages), f"cluster {cluster}: "))
        else:
            runs.append((queues, [replace(s, blocks_per_sm=per_sm[s.name]) for s in stages],
                         program.sms, ""))
    for queues, stages, sms, where in runs:
        if sum(s.ctas * s.workers for s in stages) > 20_000:
            return f"{where}too many workers to simulate"
        for scheduler, seed in SCHEDULES:
            sim = QueuePipelineSim(queues, stages, sms, scheduler, seed, LAUNCHES)
            result = sim.run()
            how = f"{where}under the {scheduler} scheduler (seed {seed}, {LAUNCHES} launches)"
            if result.deadlock is not None:
                waits = "; ".join(f"@{w.stage} CTA {w.cta} worker {w.worker} waits for "
                                  f"ticket {w.ticket} of @{w.queue} {w.waits_for}"
                                  for w in result.deadlock[:3])
                return (f"{how}: deadlock ({result.undispatched} CTAs never placed)"
                        + (f": {waits}" if waits else ""))
            if result.violations:
                v = result.violations[0]
                return (f"{how}: {v.kind} of ticket {v.ticket} of @{v.queue} by @{v.stage} "
                        f"CTA {v.cta} (entry held {v.found})")
            lost = _lost_tickets(sim, stages)
            if lost:
                return f"{how}: {lost}"
    return None


def _lost_tickets(sim, stages) -> str | None:
    """Where a queue's entries were not filled once for each ticket its producer declares
    over the launches, or not given back by every consumer stage after each fill."""
    for name, queue in sim.queues.items():
        producer = next(s for s in stages if name in s.outputs)
        given = sum(producer.iterations_of(c, w) for c in range(producer.ctas)
                    for w in range(producer.workers)) * LAUNCHES
        entries = queue.spec.entries
        rounds = [len(range(entry, given, entries)) for entry in range(entries)]
        if queue.full != rounds:
            return f"@{name}'s entries were filled {queue.full} times, not {rounds}"
        if queue.empty != [n * len(queue.consumers) for n in rounds]:
            return (f"@{name}'s entries were given back {queue.empty} times by "
                    f"{len(queue.consumers)} consumer stage(s) after {rounds} fills")
    return None


def _innermost_frame(err: BaseException) -> str:
    import traceback

    frame = traceback.extract_tb(err.__traceback__)[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


# ---------------------------------------------------------------------------------------------
# Many programs
# ---------------------------------------------------------------------------------------------


@dataclass
class Tally:
    programs: int = 0
    proved: int = 0
    failures: list[tuple[int, str, str]] = field(default_factory=list)  # seed, why, program
    refused_clean: int = 0  # refused, yet clean under every scheduler (incompleteness)
    mutants: Counter = field(default_factory=Counter)  # (kind, "drawn" | "refused")
    refusals: Counter = field(default_factory=Counter)
    features: Counter = field(default_factory=Counter)  # (feature, "drawn" | "proved")

    def add(self, seed: int, program: Program, outcome: Outcome,
            base_proved: bool = False) -> None:
        """`base_proved`: a mutant's program without its mutation is proved (so a refusal of
        the mutant is the mutation's)."""
        self.programs += 1
        self.proved += outcome.proved
        if outcome.failure is not None:
            self.failures.append((seed, outcome.failure, program_text(program)))
        if not outcome.proved and outcome.failure is None:
            self.refusals[_refusal_kind(outcome.refusal)] += 1
            self.refused_clean += outcome.runs_clean and program.mutation is None
        if program.mutation is not None:
            self.mutants[program.mutation, "drawn"] += 1
            self.mutants[program.mutation, "refused"] += not outcome.proved
            self.mutants[program.mutation, "base proved"] += base_proved
            self.mutants[program.mutation, "caught"] += base_proved and \
                refused_for_mutation(program, outcome)
        else:
            for feature in features(program):
                self.features[feature, "drawn"] += 1
                self.features[feature, "proved"] += outcome.proved

    def merge(self, other: Tally) -> None:
        self.programs += other.programs
        self.proved += other.proved
        self.failures += other.failures
        self.refused_clean += other.refused_clean
        for name in ("mutants", "refusals", "features"):
            getattr(self, name).update(getattr(other, name))


def refused_for_mutation(program: Program, outcome: Outcome) -> bool:
    """Whether verify refused the mutant, naming its mutation."""
    return not outcome.proved and any(words in outcome.refusal
                                      for words in MUTATIONS[program.mutation or ""])


def features(program: Program) -> set[str]:
    """What an unmutated program exercises, for the summary."""
    found = set()
    for s in program.stages:
        found |= {name for name, present in (
            ("split reduction", any(r > 1 for r in s.reads.values())),
            ("join", len(s.inputs) > 1), ("fan-out", len(s.outputs) > 1),
            ("relay", s.relay and bool(s.inputs and s.outputs)),
            ("threads", s.workers > 1), ("draw-ahead", s.draw_ahead)) if present}
    queues = [q for s in program.stages for q in s.inputs]
    if len(queues) > len(set(queues)):
        found.add("multicast")
    if program.cluster:
        found.add("cluster")
    return found


def _refusal_kind(message: str) -> str:
    for key in ("cannot run", "cycle", "draws", "releases", "not released", "balance",
                "acquires", "tickets per launch", "entries", "barrier", "wait for each other",
                "end only", "does not declare", "cluster", "ticket"):
        if key in message:
            return key
    return "other"


def run_seeds(seeds) -> Tally:
    tally = Tally()
    for seed in seeds:
        try:
            program = draw_program(seed)
            base_proved = program.mutation is not None and \
                verify_proves(draw_program(seed, mutate=False))
            tally.add(seed, program, check(program), base_proved)
        except Exception as err:  # the tester's own fault: reported with its seed, not raised
            tally.programs += 1
            tally.failures.append((seed, f"the tester failed: {_innermost_frame(err)}: "
                                         f"{type(err).__name__}: {err}", ""))
    return tally


def _chunk(bounds: tuple[int, int]) -> Tally:
    return run_seeds(range(*bounds))


def run(programs: int, seed: int = 0, jobs: int = 1, chunk: int = 100,
        log_every: int = 2_000) -> Tally:
    """`programs` random programs (seeds `seed`, `seed` + 1, ...) over `jobs` processes."""
    ranges = [(start, min(start + chunk, seed + programs))
              for start in range(seed, seed + programs, chunk)]
    tally, started, logged = Tally(), time.perf_counter(), 0
    pool = None
    if jobs > 1:
        import multiprocessing

        pool = multiprocessing.get_context("fork").Pool(jobs)
    for part in (pool.imap(_chunk, ranges) if pool else map(_chunk, ranges)):
        tally.merge(part)
        if tally.programs - logged >= log_every:
            logged = tally.programs
            print(f"{tally.programs}/{programs} programs, {tally.proved} proved, "
                  f"{len(tally.failures)} failures, "
                  f"{tally.programs / (time.perf_counter() - started):.1f}/s",
                  file=sys.stderr, flush=True)
    if pool:
        pool.close()
        pool.join()
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=positive_int, default=2_000)
    parser.add_argument("--seed", type=non_negative_int, default=0,
                        help="seed of the first program")
    parser.add_argument("--jobs", type=positive_int, default=1)
    parser.add_argument("--show-failures", action="store_true",
                        help="print every failing program (else the first 3)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        tally = run(args.programs, args.seed, args.jobs)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    seconds = time.perf_counter() - started
    mutants = sum(n for (_, what), n in tally.mutants.items() if what == "drawn")
    refused_mutants = sum(n for (_, what), n in tally.mutants.items() if what == "refused")
    print(f"{tally.programs} programs (seeds {args.seed}..{args.seed + args.programs - 1}) in "
          f"{seconds:.0f} s ({tally.programs / max(seconds, 1e-9):.1f}/s, {args.jobs} jobs): "
          f"{tally.proved} proved, {tally.programs - tally.proved} refused, "
          f"{len(tally.failures)} failures; {mutants} mutants, {refused_mutants} refused; "
          f"{tally.refused_clean} unmutated programs refused yet clean in the simulator")
    print("mutants refused / drawn (refused for the mutation / drawn, of those whose "
          "unmutated program is proved): " + ", ".join(
              f"{kind} {tally.mutants[kind, 'refused']}/{tally.mutants[kind, 'drawn']} "
              f"({tally.mutants[kind, 'caught']}/{tally.mutants[kind, 'base proved']})"
              for kind in MUTATIONS if tally.mutants[kind, "drawn"]))
    print("unmutated, proved/drawn: " + ", ".join(
        f"{name} {tally.features[name, 'proved']}/{n}"
        for (name, what), n in sorted(tally.features.items()) if what == "drawn"))
    print("refusals: " + ", ".join(f"{k} {n}" for k, n in sorted(tally.refusals.items())))
    for seed, why, text in tally.failures[: None if args.show_failures else 3]:
        print(f"\n--- seed {seed}: {why}\n{text}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
