"""Forward progress: what keeps a waiting consumer block from holding the SM slot its producer's
blocks need. The one rule set; sync-verify, sync-drop-wait-kernel (W), sync-use-pdl,
sync-insert-wait-kernel, the simulator and the dataflow pipeline check (through
`contract.all_resident`) all ask it.

A block that spins holds its SM slot. The question is asked of the whole program (`analyze`):
its stages, their blocks per SM where known, its dependencies and its host plan of launches and
wait-kernels in program order. For each dependency (producer P, consumer C) C's waits are safe
when one of these holds, checked in this order:

* **one launch** — P and C are stages of one launch (`sync.launch ... fused`), P's tickets
  first: a block holding a ticket of C knows every tile of P was taken by a block already
  running, which (its own waits guaranteed) finishes;
* **stream order** — P is launched before C on C's stream and the step right after P there is
  not a programmatic dependent launch: C's grid becomes eligible only once P completed;
* **pdl** — the same, but the step right after P is a programmatic dependent launch: C's grid
  is dispatched once every block of P has started. PDL orders a launch only after the previous
  launch on the *same* stream: `pdl = true` on a launch of another stream than P's says
  nothing about P;
* **wait-kernel** — a wait-kernel for P precedes C on C's stream, and it works (`facts.
  working_wait_kernels`: P's kernel posts its start flag at flag[0], the wait-kernel function
  waits for it); it ends once every block of P has been dispatched. The paper's wait-kernel
  ends when P's *first* block started (`wait_kernel_ends="first_started"`); that is enough
  only for a dispatcher that serves grids in the order they became eligible
  (`in_order_dispatch`) with C at no higher priority than P;
* **co-resident** — every block of every stage of the program fits on the device at once
  (`contract.all_resident`), or C is declared so (a declaration that the known counts
  contradict is refused);
* **wave model** — optimization W's rule (`wait_kernel_legality`): fewer than two waves for P
  and C together, and even with every block of every other stage resident (C's first) a block
  of P still finds a slot.

A launch that others join (`stage_graph.one_launch_groups`) is one step of the plan: its stages'
blocks become eligible together, on its stream, and hold the slots of its one kernel (the
fewest blocks per SM among them). Stages of one launch in the other order (C's tickets before
P's) have only co-residency or the wave model.

Whole-program conditions come first: a dependency cycle (`dependency_cycle`: stages that wait
on each other's tiles) has no guarantee whatever the plan, and neither has a pair whose
producer's launch waits, directly or not, on its consumer or on a cycle of launches (P after C
on one stream, say). Each refusal says why, naming the cycle or the chain of launches.

With every dependency guaranteed no block waits forever: an ordered consumer only waits for
producer blocks already dispatched, which by induction over the (acyclic) dependencies finish;
co-residency leaves no block without a slot; the wave model leaves a slot for the producer
whatever the other stages hold. The differential test (test/python/analysis/
test_differential.py) checks this against the simulator on random programs.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Literal

from tilesync.analysis.stage_graph import (
    HostStep,
    Launch,
    StageGraph,
    WaitKernel,
    one_launch_groups,
)
from tilesync.analysis.wave_model import Legality, StageWaves, format_waves
from tilesync.contract import (
    CORESIDENT_ATTR,
    MAX_CLUSTER_BLOCKS,
    MOST_BLOCKS_PER_SM,
    MOST_WARPS_PER_SM,
    all_resident,
    most_blocks_per_sm,
    warps_of,
)

WaitKernelEnds = Literal["all_dispatched", "first_started"]

ONE_LAUNCH = "one-launch"
STREAM_ORDER = "stream-order"
PDL = "pdl"
WAIT_KERNEL = "wait-kernel"
CO_RESIDENT = "co-resident"
WAVE_MODEL = "wave-model"
GUARANTEES = (ONE_LAUNCH, STREAM_ORDER, PDL, WAIT_KERNEL, CO_RESIDENT, WAVE_MODEL)
COUNTED = (CO_RESIDENT, WAVE_MODEL)
"""The guarantees that rest on counts of SMs and blocks per SM (a device with other counts may
not give them); the others hold on any device."""

_DESCRIPTIONS = {
    ONE_LAUNCH: "one launch, the producer's tickets first",
    STREAM_ORDER: "stream order",
    PDL: "programmatic dependent launch",
    WAIT_KERNEL: "wait-kernel",
    CO_RESIDENT: "co-resident",
    WAVE_MODEL: "wave model",
}


@dataclass(frozen=True)
class Guarantee:
    """The mechanism a dependency relies on (one of GUARANTEES) and, where it takes a count,
    the count in words."""

    kind: str
    detail: str = ""

    def __str__(self) -> str:
        text = _DESCRIPTIONS[self.kind]
        if not self.detail:
            return text
        return f"{text}: {self.detail}" if self.kind == WAVE_MODEL else f"{text} ({self.detail})"


# ---------------------------------------------------------------------------------------------
# Co-residency and starvation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Residency:
    """How many blocks a stage launches and how many of them fit on one SM."""

    blocks: int
    blocks_per_sm: int


def co_residency(stages: Sequence[Residency], sms: int) -> Legality:
    """Whether every block of `stages` is resident at once on `sms` SMs, with the count."""
    fits = all_resident([(s.blocks, s.blocks_per_sm) for s in stages], sms)
    blocks = sum(s.blocks for s in stages)
    return Legality(fits, f"{'all' if fits else 'not all'} {blocks} blocks are co-resident "
                          f"({_bound(stages, sms)})")


def cluster_residency(cluster: Residency) -> Legality:
    """Whether a pipeline in clusters makes progress: its blocks wait only for blocks of their
    own cluster (cluster queues), which the hardware starts together or not at all, so one
    cluster (`cluster.blocks` blocks, one a stage) must fit, not the whole grid; clusters that
    find no room wait for earlier ones to finish, which never wait for them."""
    fits = cluster.blocks_per_sm >= 1 and cluster.blocks <= MAX_CLUSTER_BLOCKS
    return Legality(fits, f"each cluster's {cluster.blocks} blocks start together "
                          f"({cluster.blocks_per_sm} blocks per SM, at most "
                          f"{MAX_CLUSTER_BLOCKS} a cluster); clusters wait on no other"
                    if fits else f"a cluster of {cluster.blocks} blocks cannot start "
                                 f"({cluster.blocks_per_sm} blocks per SM, at most "
                                 f"{MAX_CLUSTER_BLOCKS} a cluster)")


def _bound(stages: Sequence[Residency], sms: int) -> str:
    """The room the count is held against, in words."""
    occupancies = sorted({s.blocks_per_sm for s in stages}) or [1]
    if len(occupancies) == 1 or sum(s.blocks for s in stages) <= sms * occupancies[0]:
        per_sm = occupancies[0]
        return f"at most {sms * per_sm} = {sms} SMs x {per_sm} blocks per SM"
    return f"{'/'.join(map(str, occupancies))} blocks per SM on {sms} SMs"


def consumer_blocks_that_starve(producer: StageWaves, consumer: StageWaves) -> int:
    """The fewest consumer blocks that, placed adversarially, leave no SM a producer block
    can use: SMs × m, where m is the fewest consumer blocks on one SM that leave no room for
    one producer block.

    Each block of a kernel with b blocks per SM uses at most 1/b of every per-SM resource
    (b·r ≤ R for each resource), so k consumer blocks and one producer block fit on an SM when
    k/b_c + 1/b_p ≤ 1; m is therefore ⌊b_c·(b_p − 1)/b_p⌋ + 1. With equal occupancy b this is
    b, i.e. the consumer starves the producer only from one full wave on.
    """
    b_c, b_p = consumer.blocks_per_sm, producer.blocks_per_sm
    per_sm = (b_c * (b_p - 1)) // b_p + 1
    return consumer.sms * per_sm


def starves(producer: StageWaves, others: Sequence[StageWaves]) -> bool:
    """Whether the blocks of `others`, all resident and placed adversarially, can leave no SM
    a block of `producer` fits on.

    With one occupancy among them this is `consumer_blocks_that_starve`; with several, counted
    in units of 1/lcm of an SM: a producer block of u units is refused by an SM holding more
    than lcm - u units."""
    others = [o for o in others if o.blocks > 0]
    if not others:
        return False
    sms = producer.sms
    if len({o.blocks_per_sm for o in others}) == 1:
        return sum(o.blocks for o in others) >= consumer_blocks_that_starve(producer, others[0])
    capacity = math.lcm(producer.blocks_per_sm, *(o.blocks_per_sm for o in others))
    unit = capacity // producer.blocks_per_sm
    held = sum(o.blocks * (capacity // o.blocks_per_sm) for o in others)
    return held >= sms * (capacity - unit + 1)


def wait_kernel_legality(
    producer: StageWaves, consumer: StageWaves, others: Sequence[StageWaves] = ()
) -> Legality:
    """May the wait-kernel between `producer` and `consumer` be dropped (optimization W)?
    `others`: the program's other stages (their blocks count too).

    The wait-kernel keeps consumer blocks from taking SMs before the producer's blocks are
    dispatched (paper §III-B); without it, the consumer's blocks may be dispatched first and
    spin. Dropping it is legal iff one of:

    1. **co-residency** (early cuSync, §V-1): every block of the program fits at once
       (`contract.all_resident`). Then no block ever waits for a slot, whatever order the
       blocks are dispatched in.
    2. **fewer than two waves, no starvation** (cuSync 2024, §IV-C): `w_p + w_c < 2`, the
       paper's condition (a performance rule: with the producer launched first, on a
       higher-priority stream, the consumer's blocks then fill at most the producer's partial
       last wave), and the consumer (with the other stages) cannot starve the producer even if
       every one of their blocks is dispatched first (`starves`; two stages of equal occupancy:
       `w_c < 1`). The paper states only the first half; without the second a consumer of one
       wave or more, dispatched first, would fill every SM with spinning blocks and deadlock.
       The second half is what makes the removal safe for any dispatch order; the first only
       bounds the cost under the in-order dispatch the paper observed.

    `w = B / (S·b)` with exact fractions; strict `< 2`, so exactly two waves is not legal.
    """
    stages = [producer, consumer, *others]
    if len({s.sms for s in stages}) != 1:
        raise ValueError(f"stages on different devices ({[s.sms for s in stages]} SMs)")
    resident = co_residency([Residency(s.blocks, s.blocks_per_sm) for s in stages],
                            producer.sms)
    if resident:
        return resident
    total = producer.waves + consumer.waves
    if total >= 2:
        return Legality(
            False,
            f"producer and consumer take {format_waves(producer.waves)} + "
            f"{format_waves(consumer.waves)} = {format_waves(total)} waves, not fewer than 2",
        )
    rivals = [consumer, *others]
    if starves(producer, rivals):
        what = f"{consumer.blocks} consumer blocks"
        if others:
            what += f" and {sum(o.blocks for o in others)} blocks of other stages"
        bound = ""
        if len(rivals) == 1:
            bound = f" (from {consumer_blocks_that_starve(producer, consumer)} on no producer " \
                    f"block fits)"
        return Legality(
            False,
            f"{what} dispatched first could fill every SM{bound}: the wait-kernel is what "
            f"keeps this from deadlocking",
        )
    total_others = sum((o.waves for o in others), Fraction(0))
    more = f" with {format_waves(total_others)} waves of other stages" if others else ""
    return Legality(
        True,
        f"{format_waves(total)} waves in all (fewer than 2) and {consumer.blocks} consumer "
        f"blocks{more} cannot starve the producer"
        + (f" (that needs {consumer_blocks_that_starve(producer, consumer)})"
           if not others else ""),
    )


# ---------------------------------------------------------------------------------------------
# Guarantees of a program
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProgressFacts:
    """What the rules read of a program.

    `stages`: every stage, in program order; `dependencies`: (producer, consumer) pairs;
    `plan`: launches and wait-kernels in program order; `residency`: blocks and blocks per SM
    of the stages where known (co-residency and starvation need every stage); `sms`: the
    device's SM count (0: unknown); `declared_co_resident`: consumers declared co-resident with
    the whole program (a declaration the counts contradict, where they are known, is refused);
    `working_wait_kernels`: the producers whose wait-kernel really works (the producer posts
    its start flag, the wait-kernel function waits for it; None: every one, as in the
    simulator).
    `block_threads`: threads of each stage's blocks, where known (a launch of several stages
    is one kernel: see `_one_launch_residency`); `grid_blocks`: the blocks of each stage's
    grid, where known.
    `wait_kernel_ends` and `in_order_dispatch`: see the module doc."""

    stages: Sequence[str]
    dependencies: Sequence[tuple[str, str]]
    plan: Sequence[HostStep]
    residency: Mapping[str, Residency]
    sms: int = 0
    declared_co_resident: Collection[str] = ()
    wait_kernel_ends: WaitKernelEnds = "all_dispatched"
    in_order_dispatch: bool = False
    working_wait_kernels: Collection[str] | None = None
    block_threads: Mapping[str, int] = field(default_factory=dict)
    grid_blocks: Mapping[str, int] = field(default_factory=dict)

    def waves(self, stage: str) -> StageWaves | None:
        known = self.residency.get(stage)
        if known is None or self.sms < 1 or known.blocks < 1 or known.blocks_per_sm < 1:
            return None
        return StageWaves(known.blocks, known.blocks_per_sm, self.sms)


def program_facts(graph: StageGraph, residency: Mapping[str, Residency], sms: int, *,
                  plan: Sequence[HostStep] | None = None,
                  working_wait_kernels: Collection[str] | None = None) -> ProgressFacts:
    """What the rules read of a stage program, given its stages' residency (where known) on
    `sms` SMs: its stages, dependencies and plan (default: the graph's), the consumers declared
    co-resident (`coresident` on the stage or on its launch) and each stage's block threads.
    The one reader of those declarations for sync-verify, W, explain and the runtime's check
    on the device it runs on."""
    declared = set()
    for name, stage in graph.stages.items():
        launch = graph.launch(name)
        if CORESIDENT_ATTR in stage.attributes or (
                launch is not None and launch.op is not None
                and CORESIDENT_ATTR in launch.op.attributes):
            declared.add(name)
    return ProgressFacts(list(graph.stages), graph.dependent_pairs(),
                         list(graph.plan if plan is None else plan), residency, max(sms, 0),
                         declared, working_wait_kernels=working_wait_kernels,
                         block_threads={name: math.prod(stage.block_shape)
                                        for name, stage in graph.stages.items()},
                         grid_blocks={name: math.prod(stage.grid_shape)
                                      for name, stage in graph.stages.items()})


@dataclass(frozen=True)
class ProgressReport:
    """The whole program's answer: per dependency (producer, consumer) its guarantee, or None
    and why (`reasons`); `cycle`, the stages of a dependency cycle (closed: first == last)."""

    guarantees: dict[tuple[str, str], Guarantee | None]
    reasons: dict[tuple[str, str], str]
    cycle: tuple[str, ...] | None = None
    # pairs no mechanism can help: a dependency cycle, a launch that waits on its consumer,
    # a stage never launched (a subset of `reasons`)
    blocked: frozenset[tuple[str, str]] = frozenset()
    # why the wave model's rule (W) does not hold, where it was asked
    wave_reasons: dict[tuple[str, str], str] = field(default_factory=dict)
    # plan steps that can never run to their end, with why: the program never completes
    stuck: tuple[tuple[HostStep, str], ...] = ()

    def unguaranteed(self) -> list[tuple[str, str]]:
        return [pair for pair, g in self.guarantees.items() if g is None]


def format_cycle(stages: Sequence[str]) -> str:
    return " -> ".join(f"@{name}" for name in stages)


def dependency_cycle(
    stages: Sequence[str], dependencies: Sequence[tuple[str, str]]
) -> tuple[str, ...] | None:
    """A cycle of the dependency graph (each stage waits for the next one's tiles... and the
    last for the first's), closed and starting at its first stage in program order; None when
    the graph is acyclic. Deterministic: stages and edges are visited in program order."""
    consumers: dict[str, list[str]] = {name: [] for name in stages}
    for producer, consumer in dependencies:
        consumers.setdefault(producer, [])
        consumers.setdefault(consumer, [])
        if consumer not in consumers[producer]:
            consumers[producer].append(consumer)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> tuple[str, ...] | None:
        state[name] = 1
        path.append(name)
        for nxt in consumers[name]:
            if state.get(nxt) == 1:
                loop = path[path.index(nxt):]
                return (*loop, nxt)
            if nxt not in state:
                found = visit(nxt)
                if found is not None:
                    return found
        path.pop()
        state[name] = 2
        return None

    for name in consumers:
        if name not in state:
            found = visit(name)
            if found is not None:
                first = min(found[:-1], key=list(consumers).index)
                start = found.index(first)
                loop = found[start:-1] + found[:start]
                return (*loop, first)
    return None


def _launch_heads(plan: Sequence[HostStep]) -> dict[int, int]:
    """Plan index of each step -> the index of the launch it is part of (itself, or the
    launch a fused one joins)."""
    position = {id(step): index for index, step in enumerate(plan)}
    heads = {index: index for index in range(len(plan))}
    for group in one_launch_groups(plan):
        for member in group[1:]:
            heads[position[id(member)]] = position[id(group[0])]
    return heads


def _one_launch_residency(facts: ProgressFacts) -> ProgressFacts:
    """`facts` with each stage of a launch that others join at that launch's one kernel's
    blocks per SM: the fewest among its stages' where their blocks have one size (the kernel
    uses the most registers and shared memory of any, per thread as each), else one (it may
    use the most registers of one stage in the largest block of another), where all are
    known."""
    residency = dict(facts.residency)
    for group in one_launch_groups(facts.plan):
        known = [facts.residency.get(member.stage) for member in group]
        if len(group) < 2 or any(r is None for r in known):
            continue
        threads = {facts.block_threads.get(member.stage) for member in group}
        fewest = min(r.blocks_per_sm for r in known) if len(threads) == 1 and \
            None not in threads else 1  # type: ignore[union-attr]
        for member, r in zip(group, known, strict=True):
            residency[member.stage] = Residency(r.blocks, fewest)  # type: ignore[union-attr]
    return replace(facts, residency=residency)


def analyze(facts: ProgressFacts) -> ProgressReport:
    """The guarantee of every dependency of the program (or why it has none)."""
    facts = _one_launch_residency(facts)
    plan = list(facts.plan)
    head = _launch_heads(plan)
    streams: dict[int, list[int]] = defaultdict(list)
    for index, step in enumerate(plan):
        if head[index] == index:
            streams[step.stream].append(index)
    launch_index: dict[str, int] = {}
    for index, step in enumerate(plan):
        if isinstance(step, Launch):
            launch_index.setdefault(step.stage, index)
    producers: dict[str, list[str]] = defaultdict(list)
    for producer, consumer in facts.dependencies:
        producers[consumer].append(producer)

    # needs[i]: plan steps whose progress step i's eligibility or completion depends on, with
    # why (for the message that names a cycle). A launch others join is one step: its
    # stages' producers are its own, and a fused launch needs only the launch it joins.
    needs: dict[int, dict[int, str]] = defaultdict(dict)
    for stream, indices in streams.items():
        for earlier, later in itertools.pairwise(indices):
            needs[later].setdefault(earlier, f"follows {_step_name(plan[earlier])} on stream "
                                             f"{stream}")
    for index, step in enumerate(plan):
        if head[index] != index:
            needs[index].setdefault(head[index], f"joins {_step_name(plan[head[index]])}'s "
                                                 f"launch")
        names = [step.producer] if isinstance(step, WaitKernel) else producers[step.stage]
        for name in names:
            if name in launch_index and head[launch_index[name]] != head[index]:
                needs[head[index]].setdefault(head[launch_index[name]], f"waits for @{name}")

    def reachable(start: int) -> dict[int, int]:
        """Steps `start` depends on, each with the step it was reached from."""
        parent: dict[int, int] = {}
        todo = [start]
        while todo:
            node = todo.pop(0)
            for nxt in sorted(needs[node]):
                if nxt not in parent:
                    parent[nxt] = node
                    todo.append(nxt)
        return parent

    reach = {index: reachable(index) for index in range(len(plan))}
    on_cycle = {index for index in range(len(plan)) if index in reach[index]}

    def chain(start: int, goal: int) -> str:
        """`start` depends on `goal`, in words, link by link."""
        parent = reach[start]
        path = [goal]
        while True:
            path.append(parent[path[-1]])
            if path[-1] == start:
                break
        path.reverse()
        return "; ".join(f"{_step_name(plan[a])} {needs[a][b]}"
                         for a, b in itertools.pairwise(path))

    cycle = dependency_cycle(facts.stages, facts.dependencies)
    cyclic_pairs: set[tuple[str, str]] = set()
    if cycle is not None:
        cyclic_pairs = set(itertools.pairwise(cycle))

    program_fits: Legality | None = None
    if facts.sms > 0 and all(name in facts.residency for name in facts.stages):
        program_fits = co_residency([facts.residency[n] for n in facts.stages], facts.sms)

    result: dict[tuple[str, str], Guarantee | None] = {}
    reasons: dict[tuple[str, str], str] = {}
    wave_reasons: dict[tuple[str, str], str] = {}
    blocked: set[tuple[str, str]] = set()
    for producer_name, consumer_name in facts.dependencies:
        key = (producer_name, consumer_name)
        if key in result:
            continue
        result[key] = None
        producer, consumer = launch_index.get(producer_name), launch_index.get(consumer_name)
        if producer is not None and consumer is not None:
            producer, consumer = head[producer], head[consumer]
        if key in cyclic_pairs:
            assert cycle is not None
            reasons[key] = (f"the dependencies form a cycle {format_cycle(cycle)}: each stage of "
                            f"it waits for the next one's tiles, so none can finish first")
        elif producer is None or consumer is None:
            missing = producer_name if producer is None else consumer_name
            reasons[key] = f"@{missing} is never launched (no sync.launch)"
        elif consumer in reach[producer]:
            reasons[key] = (f"the launch of @{producer_name} cannot start before "
                            f"@{consumer_name} progresses: {chain(producer, consumer)}")
        elif on_cycle & (set(reach[producer]) | {producer}):
            stuck = min(on_cycle & (set(reach[producer]) | {producer}))
            reasons[key] = (f"the launch of @{producer_name} depends on a cycle of launches: "
                            f"{chain(stuck, stuck)}")
        if key in reasons:
            blocked.add(key)
        else:
            if producer == consumer:
                found, why_not = _one_launch(plan, head, producer, producer_name,
                                             consumer_name)
            else:
                found, why_not = _ordering(facts, plan, streams, producer, consumer,
                                           producer_name)
            if found is None:
                needed = [plan[i].stage for i in sorted(reach[producer])
                          if isinstance(plan[i], Launch)]
                needed += [plan[i].stage for i in range(len(plan))
                           if head[i] in reach[producer] and head[i] != i]
                found, reason, wave = _occupancy(facts, program_fits, producer_name,
                                                 consumer_name, needed)
                if found is None:
                    reasons[key] = why_not or reason
                    if wave:
                        wave_reasons[key] = wave
            result[key] = found
    stuck: list[tuple[HostStep, str]] = []
    for index, step in enumerate(plan):
        if index in on_cycle:
            stuck.append((step, f"{_step_name(step)} can never start: {chain(index, index)}"))
        elif isinstance(step, WaitKernel) and step.producer not in launch_index:
            stuck.append((step, f"{_step_name(step)} never ends: @{step.producer} is never "
                                f"launched"))
        elif isinstance(step, WaitKernel) and facts.working_wait_kernels is not None \
                and step.producer not in facts.working_wait_kernels:
            stuck.append((step, f"{_step_name(step)} never ends: "
                                f"{_broken_wait_kernel(step.producer)}"))
    return ProgressReport(result, reasons, cycle, frozenset(blocked), wave_reasons,
                          tuple(stuck))


def _broken_wait_kernel(producer: str) -> str:
    return (f"@{producer}'s kernel does not post its start flag once on entry at flag[0], or "
            f"the module's wait-kernel function does not wait for that flag to reach the "
            f"host's target (run sync-insert-wait-kernel)")


def wait_kernel_removal(facts: ProgressFacts, wait: WaitKernel) -> Legality:
    """Optimization W for the whole program: may `wait` (a step of `facts.plan`) go? Legal
    when no dependency loses its guarantee without it; the reason names the dependency that
    would (the one `wait` guards first) or the guarantee that remains."""
    plan = list(facts.plan)
    position = next(i for i, step in enumerate(plan) if step is wait)
    before = analyze(facts)
    after = analyze(replace(facts, plan=[s for s in plan if s is not wait]))
    guarded = next((s.stage for s in plan[position + 1:]
                    if isinstance(s, Launch) and s.stream == wait.stream), None)
    mine = (wait.producer, guarded)
    lost = [pair for pair, g in before.guarantees.items()
            if g is not None and after.guarantees[pair] is None]
    if lost:
        pair = mine if mine in lost else lost[0]
        why = after.wave_reasons.get(pair) or after.reasons[pair]
        return Legality(False, f"@{pair[0]} -> @{pair[1]}: {why}")
    kept = after.guarantees.get(mine)
    if kept is not None:
        return Legality(True, f"@{mine[0]} -> @{mine[1]}: {kept}")
    return Legality(True, "no dependency relies on it")


def guarantees(facts: ProgressFacts) -> dict[tuple[str, str], Guarantee | None]:
    """For each dependency (producer, consumer), the guarantee it relies on, or None."""
    return analyze(facts).guarantees


def _step_name(step: HostStep) -> str:
    if isinstance(step, WaitKernel):
        return f"the wait-kernel of @{step.producer} (stream {step.stream})"
    return f"@{step.stage}"


def _one_launch(plan: list[HostStep], head: Mapping[int, int], launch: int, producer: str,
                consumer: str) -> tuple[Guarantee | None, str]:
    """Producer and consumer in one launch (plan index `launch`): ordered when the producer's
    tickets come first."""
    members = [step.stage for i, step in enumerate(plan)
               if head[i] == launch and isinstance(step, Launch)]
    if members.index(producer) < members.index(consumer):
        return Guarantee(ONE_LAUNCH), ""
    return None, (f"@{consumer} and @{producer} are one launch with @{consumer}'s tickets "
                  f"first: its blocks may hold every slot before a block of @{producer} "
                  f"exists")


def _ordering(
    facts: ProgressFacts,
    plan: list[HostStep],
    streams: Mapping[int, list[int]],
    producer: int,
    consumer: int,
    name: str,
) -> tuple[Guarantee | None, str]:
    """Stream order, PDL or a wait-kernel: the consumer's blocks come after the producer's
    (or why a wait-kernel there does not count). `producer` and `consumer` are the plan
    indices of their launches (the launch a fused one joins), `name` the producer stage.

    On one stream, the step right after the producer decides: a plain launch or a wait-kernel
    waits for the producer to complete (stream order), a programmatic dependent launch only
    for every producer block to have started (pdl); the steps after it only delay more."""
    launch = plan[consumer]
    assert isinstance(launch, Launch)
    stream = streams[launch.stream]
    before = stream[: stream.index(consumer)]
    if producer in before:
        following = plan[stream[stream.index(producer) + 1]]
        pdl = isinstance(following, Launch) and following.pdl
        return Guarantee(PDL if pdl else STREAM_ORDER), ""
    producer_launch = plan[producer]
    assert isinstance(producer_launch, Launch)
    waited = any(
        isinstance(plan[i], WaitKernel) and plan[i].producer == name for i in before
    )
    if not waited:
        return None, ""
    if facts.working_wait_kernels is not None and name not in facts.working_wait_kernels:
        return None, (f"the sync.wait_kernel @{name} before @{launch.stage} on stream "
                      f"{launch.stream} does not work: {_broken_wait_kernel(name)}")
    if facts.wait_kernel_ends == "all_dispatched" or (
        facts.in_order_dispatch and launch.priority >= producer_launch.priority
    ):
        return Guarantee(WAIT_KERNEL), ""
    return None, ""


def _stage_overflowing(facts: ProgressFacts) -> str | None:
    """Why not every block of the program can be resident at once on `facts.sms` SMs, where
    its counts show it, in words: a stage whose blocks alone outnumber the SMs' room for them
    (its blocks per SM where known, else the most an SM of any target holds: its block and
    warp slots), or, where some stage's count is unknown, all blocks together needing more
    block or warp slots than the SMs have."""
    if facts.sms < 1:
        return None
    total_blocks = total_warps = 0
    for name in facts.stages:
        known = facts.residency.get(name)
        blocks = known.blocks if known is not None else facts.grid_blocks.get(name)
        if blocks is None:
            continue
        threads = facts.block_threads.get(name, 1)
        most = known.blocks_per_sm if known is not None else most_blocks_per_sm(threads)
        if blocks > facts.sms * most:
            return (f"@{name} alone has {blocks} blocks, more than {facts.sms} SMs x "
                    f"{most} blocks per SM")
        total_blocks += blocks
        total_warps += blocks * warps_of(threads)
    if all(name in facts.residency for name in facts.stages):
        return None  # counted in full: all_resident decides (program_fits)
    if total_blocks > facts.sms * MOST_BLOCKS_PER_SM:
        return (f"the stages have {total_blocks} blocks, more than {facts.sms} SMs x "
                f"{MOST_BLOCKS_PER_SM} blocks per SM")
    if total_warps > facts.sms * MOST_WARPS_PER_SM:
        return (f"the stages' blocks have {total_warps} warps, more than {facts.sms} SMs x "
                f"{MOST_WARPS_PER_SM} warps per SM")
    return None


NO_GUARANTEE_HINT = (
    "launch a sync.wait_kernel @{producer} before @{consumer} on its stream, launch @{consumer} "
    "with pdl = true right after @{producer} on its stream, or show that all stages are "
    "co-resident (coresident, or blocks_per_sm on every stage and sms=N)"
)


def _occupancy(
    facts: ProgressFacts, program_fits: Legality | None, producer: str, consumer: str,
    needed: Sequence[str] = (),
) -> tuple[Guarantee | None, str, str]:
    """Co-residency (declared or counted), or the wave model's no-starvation rule; without
    one, why not (and why not the wave model, where it was asked). `needed`: the stages
    whose launches the producer's launch waits for (stream order, its own producers): under
    the wave model their blocks, too, must find a slot whatever the others hold."""
    hint = NO_GUARANTEE_HINT.format(producer=producer, consumer=consumer)
    if consumer in facts.declared_co_resident:
        if program_fits is not None and not program_fits.legal:
            return None, (f"@{consumer} is declared coresident, but {program_fits.reason}: "
                          f"the declaration does not hold"), ""
        overflow = _stage_overflowing(facts)
        if overflow is not None:
            return None, (f"@{consumer} is declared coresident, but {overflow}: the "
                          f"declaration does not hold"), ""
        return Guarantee(CO_RESIDENT, "declared"), "", ""
    if program_fits is None:
        return None, hint, ""
    if program_fits.legal:
        counted = [facts.residency[name] for name in facts.stages]
        blocks = sum(r.blocks for r in counted)
        return Guarantee(CO_RESIDENT, f"{blocks} blocks, {_bound(counted, facts.sms)}"), "", ""
    waves = {name: facts.waves(name) for name in facts.stages}
    if any(w is None for w in waves.values()):
        return None, hint, ""  # a stage that cannot run: nothing to count on
    others = [w for name, w in waves.items() if name not in (producer, consumer)]
    verdict = wait_kernel_legality(waves[producer], waves[consumer], others)  # type: ignore[arg-type]
    if verdict.legal:
        for name in dict.fromkeys(needed):
            if name in (producer, consumer):
                continue
            rest = [w for n, w in waves.items() if n != name]
            if starves(waves[name], rest):  # type: ignore[arg-type]
                verdict = Legality(False, (
                    f"@{producer}'s launch waits for @{name}, and the blocks of the other "
                    f"stages (@{consumer}'s first) could leave no SM a block of @{name} fits "
                    f"on"))
                break
    if verdict.legal:
        return Guarantee(WAVE_MODEL, verdict.reason), "", ""
    return None, f"{hint} ({program_fits.reason}; {verdict.reason})", verdict.reason
