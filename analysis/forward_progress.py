"""Forward progress: what keeps a waiting consumer block from holding the SM slot its producer's
blocks need. The one rule set; sync-verify, sync-drop-wait-kernel, the simulator and the
dataflow pipeline check (through `contract.all_resident`) all ask it.

A block that spins holds its SM slot. For a dependency (producer P, consumer C) of a program —
its stages, their blocks per SM where known, and its host plan of launches and wait-kernels in
program order — C's waits are safe when one of these holds (`guarantees`), checked in this order:

* **stream order** — P is launched before C on C's stream: C's grid becomes eligible only once
  P completed;
* **pdl** — the same, but every launch after P up to C on that stream is a programmatic
  dependent launch: C's grid is dispatched once every block of P (and of the launches between)
  has started. PDL orders a launch only after the previous launch on the *same* stream:
  `pdl = true` on a launch of another stream than P's says nothing about P;
* **wait-kernel** — a wait-kernel for P precedes C on C's stream; it ends once every block of P
  has been dispatched. The paper's wait-kernel ends when P's *first* block started
  (`wait_kernel_ends="first_started"`); that is enough only for a dispatcher that serves grids
  in the order they became eligible (`in_order_dispatch`) with C at no higher priority than P;
* **co-resident** — every block of every stage of the program fits on the device at once
  (`contract.all_resident`), or the consumer is declared so;
* **wave model** — optimization W's rule (`wait_kernel_legality`): fewer than two waves for P
  and C together, and even with every block of the other stages resident (C's first) a block of
  P still finds a slot.

A pair gets no guarantee when P or C is not launched, or when P's launch waits, directly or
not, on C or on a cycle of launches (P after C on one stream, say): nothing breaks that.

Each rule is stated for one dependency; co-residency and starvation count the blocks of the
whole program, one launch of it at a time.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from tilesync.analysis.stage_graph import HostStep, Launch, WaitKernel
from tilesync.analysis.wave_model import Legality, StageWaves, format_waves
from tilesync.contract import all_resident

WaitKernelEnds = Literal["all_dispatched", "first_started"]

STREAM_ORDER = "stream-order"
PDL = "pdl"
WAIT_KERNEL = "wait-kernel"
CO_RESIDENT = "co-resident"
WAVE_MODEL = "wave-model"
GUARANTEES = (STREAM_ORDER, PDL, WAIT_KERNEL, CO_RESIDENT, WAVE_MODEL)

_DESCRIPTIONS = {
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
    the whole program. `wait_kernel_ends` and `in_order_dispatch`: see the module doc."""

    stages: Sequence[str]
    dependencies: Sequence[tuple[str, str]]
    plan: Sequence[HostStep]
    residency: Mapping[str, Residency]
    sms: int = 0
    declared_co_resident: Collection[str] = ()
    wait_kernel_ends: WaitKernelEnds = "all_dispatched"
    in_order_dispatch: bool = False

    def waves(self, stage: str) -> StageWaves | None:
        known = self.residency.get(stage)
        if known is None or self.sms < 1 or known.blocks < 1 or known.blocks_per_sm < 1:
            return None
        return StageWaves(known.blocks, known.blocks_per_sm, self.sms)


def guarantees(facts: ProgressFacts) -> dict[tuple[str, str], Guarantee | None]:
    """For each dependency (producer, consumer), the guarantee it relies on, or None."""
    plan = list(facts.plan)
    streams: dict[int, list[int]] = defaultdict(list)
    for index, step in enumerate(plan):
        streams[step.stream].append(index)
    launch_index: dict[str, int] = {}
    for index, step in enumerate(plan):
        if isinstance(step, Launch):
            launch_index.setdefault(step.stage, index)
    producers: dict[str, list[str]] = defaultdict(list)
    for producer, consumer in facts.dependencies:
        producers[consumer].append(producer)

    # needs[i]: plan steps whose progress step i's eligibility or completion depends on.
    needs: dict[int, set[int]] = defaultdict(set)
    for indices in streams.values():
        for earlier, later in itertools.pairwise(indices):
            needs[later].add(earlier)
    for index, step in enumerate(plan):
        names = [step.producer] if isinstance(step, WaitKernel) else producers[step.stage]
        needs[index] |= {launch_index[n] for n in names if n in launch_index}

    def reachable(start: int) -> set[int]:
        seen: set[int] = set()
        todo = list(needs[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(needs[node])
        return seen

    reach = {index: reachable(index) for index in range(len(plan))}
    on_cycle = {index for index in range(len(plan)) if index in reach[index]}

    program_fits: Legality | None = None
    if facts.sms > 0 and all(name in facts.residency for name in facts.stages):
        program_fits = co_residency([facts.residency[n] for n in facts.stages], facts.sms)

    result: dict[tuple[str, str], Guarantee | None] = {}
    for producer_name, consumer_name in facts.dependencies:
        key = (producer_name, consumer_name)
        if key in result:
            continue
        producer, consumer = launch_index.get(producer_name), launch_index.get(consumer_name)
        if producer is None or consumer is None:
            result[key] = None
            continue
        if consumer in reach[producer] or on_cycle & (reach[producer] | {producer}):
            # The producer's launch waits, directly or not, on the consumer or on a cycle.
            result[key] = None
            continue
        result[key] = _ordering(facts, plan, streams, producer, consumer) or _occupancy(
            facts, program_fits, producer_name, consumer_name
        )
    return result


def _ordering(
    facts: ProgressFacts,
    plan: list[HostStep],
    streams: Mapping[int, list[int]],
    producer: int,
    consumer: int,
) -> Guarantee | None:
    """Stream order, PDL or a wait-kernel: the consumer's blocks come after the producer's."""
    launch = plan[consumer]
    assert isinstance(launch, Launch)
    stream = streams[launch.stream]
    before = stream[: stream.index(consumer)]
    if producer in before:
        between = stream[stream.index(producer) + 1 : stream.index(consumer) + 1]
        chained = all(isinstance(plan[i], Launch) and plan[i].pdl for i in between)
        return Guarantee(PDL if chained else STREAM_ORDER)
    producer_launch = plan[producer]
    assert isinstance(producer_launch, Launch)
    waited = any(
        isinstance(plan[i], WaitKernel) and plan[i].producer == producer_launch.stage
        for i in before
    )
    if waited and (
        facts.wait_kernel_ends == "all_dispatched"
        or (facts.in_order_dispatch and launch.priority >= producer_launch.priority)
    ):
        return Guarantee(WAIT_KERNEL)
    return None


def _occupancy(
    facts: ProgressFacts, program_fits: Legality | None, producer: str, consumer: str
) -> Guarantee | None:
    """Co-residency (declared or counted), or the wave model's no-starvation rule."""
    if consumer in facts.declared_co_resident:
        return Guarantee(CO_RESIDENT, "declared")
    if program_fits is None:
        return None
    if program_fits.legal:
        counted = [facts.residency[name] for name in facts.stages]
        blocks = sum(r.blocks for r in counted)
        return Guarantee(CO_RESIDENT, f"{blocks} blocks, {_bound(counted, facts.sms)}")
    waves = {name: facts.waves(name) for name in facts.stages}
    if any(w is None for w in waves.values()):
        return None  # a stage that cannot run: nothing to count on
    others = [w for name, w in waves.items() if name not in (producer, consumer)]
    verdict = wait_kernel_legality(waves[producer], waves[consumer], others)  # type: ignore[arg-type]
    return Guarantee(WAVE_MODEL, verdict.reason) if verdict.legal else None
