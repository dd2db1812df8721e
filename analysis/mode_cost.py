"""Which mode of a stage program runs fastest, predicted: the wave model at tile resolution (the
simulator) with measured tile times, plus what each synchronization mechanism costs.

A mode is a stage program after its passes: policies, post/wait, PDL or wait-kernels, tile
orders. Its predicted time is

    the makespan of the in-order simulation (`simulator.simulate`, blocks dispatched in launch
    order), every tile of stage i taking tau_i, (1 + `order_slowdown`) times that where it
    takes its tile from an order table (the order changes which tiles share the L2), plus
    `wait_ms` for each semaphore its kernel waits on (TileSync waits once per producer tile a
    consumer tile reads, RowSync once per row),
    + `stream_gap_ms` for each launch that follows another on its stream without PDL (the
      drain and launch between two kernels in stream order, which a PDL launch hides: the
      model counts it as free; stages that join a launch, `fused`, have none),
    + `wait_kernel_ms` for each wait-kernel (its launch and the consumer's, on another stream),
    + `joined_launch_ms` for each launch that joins the one before it (`fused`: one grid whose
      blocks draw tickets; what that costs over PDL is measured, not modelled: the ticket's
      atomic, a prologue no longer overlapped with the kernel before).

tau_i is measured, not guessed: the same kernels run stream-synchronized are timed (every
table's baseline anyway), and that time, less its own mechanism costs, is shared among the
stages in proportion to their tiles' work (flops per tile) as the simulation of that program
counts tiles (each stage's waves in turn, `tile_times`). Blocks that share an SM share its
throughput: a kernel of b blocks per SM is simulated as one block per SM taking tau_i / b, so
a last wave that leaves one block on an SM runs it at the SM's rate (with b slots of tau_i
each, the wave model would charge it a whole tile time and overrate what fills the gap).

The mechanism costs are constants of a device (`MECHANISM_COSTS`), fitted once to a bench run
of record (bench/mode_choice.py `fit`) and checked against later runs. The wave model alone
predicts no gain where the tiles of every stage end together (the MLP's GEMM1 at M = 256 is
one partial wave): the gain measured there is what PDL saves, which the costs carry.

`choose` takes the mode predicted fastest, and the library (its fastest form a bench row
measured, bench/mode_choice.py `fastest_library`) where no mode of ours is predicted below
`WIN_MARGIN` of it. `record` writes the choice, with the tile
times and costs it read, on the program of the mode predicted fastest (`MODE_CHOICE_ATTR`), so
that `tilesync explain` shows why and predicts that program again from it alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, fields

from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, StringAttr, f64, i64
from xdsl.ir import Attribute, Operation

from tilesync.analysis.grid import Tile
from tilesync.analysis.simulator.machine import simulate
from tilesync.analysis.simulator.program import SimMachine, SimProgram, program_from_ir
from tilesync.analysis.stage_graph import Launch, WaitKernel
from tilesync.contract import MODE_CHOICE_ATTR
from tilesync.dialects.locations import OpDiagnostic

TICKS_PER_MS = 10_000_000  # the simulator counts integer ticks: 0.1 ns each
WIN_MARGIN = 0.99
"""Ours is chosen over the library only where predicted below this fraction of its measured
time: nearer than that is the measurements' noise. 0.98 (the torch front end's margin, which
compares two measurements) lost 1.3% (GPT-3 M = 1024) and 3.6% (conv 1x56x56x128) in the bench
runs of 7af59f0 and 27d2f84, ours predicted 0.987 and 0.981 of the library there; with 0.99
every row of those and of the 56faa2b and 1332e46 runs (57 rows) is within 0.54% of its best,
as with no margin at all (in-sample: chosen from and measured by the same runs, the library
then torch_graph alone; bench/mode_choice.py's held-out check chooses on some turns of a row's
runs and measures on the others)."""
LIBRARY = "library"


@dataclass(frozen=True)
class MechanismCosts:
    """Milliseconds each mechanism adds on a device (see the module docstring)."""

    stream_gap_ms: float
    wait_kernel_ms: float
    wait_ms: float
    order_slowdown: float
    joined_launch_ms: float = 0.0
    """Records made before this cost existed lack it: read as free, as they predicted."""

    def as_tuple(self) -> tuple[float, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))

    @classmethod
    def zero(cls) -> MechanismCosts:
        return cls(*(0.0 for _ in fields(cls)))


MECHANISM_COSTS: dict[str, MechanismCosts] = {
    # `python -m tilesync.bench.mode_choice --fit` on the H200 records of bench mlp (2986bf5)
    # and bench conv (1d750f1) and those with one-launch modes (mlp at b64eb07 and 6b40790,
    # conv at 6b40790): 38 rows, every mode that is not a stream-sync baseline. With these
    # every row's choice was within 1.0% of its best measured time (the worst 1.010: conv
    # N = 1 C = 256, tma:row+pdl for tma:persistent); with the fit before (d866905, no
    # one-launch cost) the conv bench had taken one launch at N = 1 C = 128 at 1.022. Both
    # in-sample: fitted to, chosen from and measured by the same runs (those records were
    # timed one block a mode, so no held-out check of bench/mode_choice.py reads them)
    "H200": MechanismCosts(stream_gap_ms=0.00189, wait_kernel_ms=0.00254, wait_ms=0.000179,
                           order_slowdown=0.213, joined_launch_ms=0.00048),
}


def costs_for(device_name: str | None) -> MechanismCosts:
    """The device's costs (the H200's stand in for any other Hopper part)."""
    for name, costs in MECHANISM_COSTS.items():
        if device_name and name in device_name:
            return costs
    return MECHANISM_COSTS["H200"]


@dataclass(frozen=True)
class ModeShape:
    """What the prediction reads of one mode's program: the simulated program and, per stage,
    its blocks per SM, the semaphores each tile waits on and whether it takes its tile from an
    order table."""

    program: SimProgram  # one block per SM of every stage
    shares: dict[str, int]  # blocks per SM of each stage's kernel
    waits: dict[str, dict[Tile, int]]
    ordered: frozenset[str]
    stream_launches: int  # launches after another on their stream, without PDL (PDL: free)
    wait_kernels: int
    joined_launches: int = 0  # launches that join the one before them (`fused`)


def mode_shape(module: Operation, blocks_per_sm: Mapping[str, int] | None = None
               ) -> ModeShape:
    """Read a stage program after its passes (its policies chosen, its launches planned)."""
    program = program_from_ir(module, blocks_per_sm=blocks_per_sm)
    stages = {stage.name: stage for stage in program.stages}
    # blocks that share an SM share its throughput: a stage of b blocks per SM runs as one
    # block per SM taking 1/b of the tile time, so that a last wave with one block on an SM
    # runs it at the SM's rate instead of taking a whole tile time
    shares = {name: stage.blocks_per_sm or 1 for name, stage in stages.items()}
    for stage in program.stages:
        stage.blocks_per_sm = 1
    waits: dict[str, dict[Tile, int]] = {name: {} for name in stages}
    by_consumer: dict[str, list] = {}
    for dependency in program.dependencies:
        by_consumer.setdefault(dependency.consumer, []).append(dependency)
    for name, dependencies in by_consumer.items():
        # each dependency's reads enumerated once: every simulation of the mode reads them
        known = [{tile: list(d.reads(tile)) for tile in stages[name].tiles()}
                 for d in dependencies]
        for dependency, reads in zip(dependencies, known, strict=True):
            dependency.reads = reads.__getitem__
        for tile in stages[name].tiles():
            semaphores = set()
            for dependency, reads in zip(dependencies, known, strict=True):
                policy = stages[dependency.producer].policy
                for read in reads[tile]:
                    index = policy.semaphore_index(read) if policy is not None else read
                    semaphores.add((dependency.producer, index))
            waits[name][tile] = len(semaphores)
    plan = program.launch_plan()
    stream_launches = joined_launches = 0
    seen_streams: set[int] = set()
    for item in plan:
        if isinstance(item, Launch):
            # a launch others join is one launch: no gap before them, a cost of its own
            stream_launches += not (item.pdl or item.fused) and item.stream in seen_streams
            joined_launches += item.fused
            seen_streams.add(item.stream)
    return ModeShape(program, shares, waits,
                     frozenset(s.name for s in program.stages if s.order is not None),
                     stream_launches, sum(isinstance(item, WaitKernel) for item in plan),
                     joined_launches)


def _launch_ms(shape: ModeShape, costs: MechanismCosts) -> float:
    return (shape.stream_launches * costs.stream_gap_ms
            + shape.wait_kernels * costs.wait_kernel_ms
            + shape.joined_launches * costs.joined_launch_ms)


def _makespan_ms(shape: ModeShape, sms: int,
                 tile_ms: Callable[[str, Tile], float]) -> float:
    for stage in shape.program.stages:
        stage.duration = (lambda tile, name=stage.name:
                          max(0, round(tile_ms(name, tile) * TICKS_PER_MS)))
    # SMs beyond one a block are never used: a model of a larger machine gives the same time
    blocks = sum(math.prod(stage.grid) for stage in shape.program.stages)
    result = simulate(shape.program, SimMachine(min(sms, max(1, blocks))))
    if result.deadlock is not None:
        raise ValueError(f"the mode deadlocks in the simulation: {result.deadlock.describe()}")
    return result.makespan / TICKS_PER_MS


def _tile_ms(shape: ModeShape, tau: Mapping[str, float], costs: MechanismCosts
             ) -> Callable[[str, Tile], float]:
    def of(name: str, tile: Tile) -> float:
        slowdown = 1.0 + costs.order_slowdown if name in shape.ordered else 1.0
        own = tau[name] * slowdown + shape.waits[name].get(tile, 0) * costs.wait_ms
        return own / shape.shares[name]

    return of


def tile_times(stream_shape: ModeShape, measured_ms: float, work: Mapping[str, float],
               sms: int, costs: MechanismCosts) -> dict[str, float]:
    """Each stage's tile time from the measured time of its stream-synchronized program:
    `work` (per stage, a tile's flops) scaled so that the simulation of that program, with its
    waits, orders and launches costed, takes `measured_ms`."""
    top = max(work.values())
    unit = {name: w / top for name, w in work.items()}
    # at fixed costs the makespan grows linearly with the tile times: probe it at two scales
    base = _makespan_ms(stream_shape, sms, _tile_ms(stream_shape, dict.fromkeys(work, 0.0),
                                                    costs))
    probe = 1e-3  # ms per unit of work
    probed = _makespan_ms(stream_shape, sms, _tile_ms(
        stream_shape, {n: u * probe for n, u in unit.items()}, costs))
    per_unit = (probed - base) / probe
    if per_unit <= 0:
        raise ValueError("the stream-synchronized program has no work to scale")
    fixed = base + _launch_ms(stream_shape, costs)
    scale = max(0.0, measured_ms - fixed) / per_unit
    for _ in range(2):  # tiles of unequal cost make it piecewise linear: correct the scale
        tau = {name: u * scale for name, u in unit.items()}
        error = measured_ms - predict_ms(stream_shape, tau, sms, costs)
        scale = max(0.0, scale + error / per_unit)
    return {name: u * scale for name, u in unit.items()}


def predict_ms(shape: ModeShape, tau: Mapping[str, float], sms: int,
               costs: MechanismCosts) -> float:
    """The mode's predicted milliseconds, with tile times `tau` (`tile_times`)."""
    return sum(prediction_parts(shape, tau, sms, costs))


def prediction_parts(shape: ModeShape, tau: Mapping[str, float], sms: int,
                     costs: MechanismCosts) -> tuple[float, float]:
    """`predict_ms` in its two parts: the simulated makespan (semaphore waits and orders
    included) and the launches' costs."""
    return _makespan_ms(shape, sms, _tile_ms(shape, tau, costs)), _launch_ms(shape, costs)


@dataclass(frozen=True)
class Choice:
    mode: str  # a mode of ours, or LIBRARY
    predicted_ms: dict[str, float]
    library_ms: float | None
    reason: str

    @property
    def fastest(self) -> str:
        """The mode of ours predicted fastest (the one chosen unless the library is)."""
        return _fastest(self.predicted_ms)


def _fastest(predicted_ms: Mapping[str, float]) -> str:
    return min(predicted_ms, key=lambda mode: (predicted_ms[mode], mode))


def choose(predicted_ms: Mapping[str, float], library_ms: float | None = None) -> Choice:
    """The mode predicted fastest; the library where ours is not predicted below WIN_MARGIN
    of its measured time."""
    if not predicted_ms:
        raise ValueError("no mode to choose from")
    best = _fastest(predicted_ms)
    ours = predicted_ms[best]
    if library_ms is not None and not ours < WIN_MARGIN * library_ms:
        reason = (f"{best} predicted {ours:.4f} ms, not below {WIN_MARGIN} of the library's "
                  f"measured {library_ms:.4f} ms")
        return Choice(LIBRARY, dict(predicted_ms), library_ms, reason)
    others = sorted((t, m) for m, t in predicted_ms.items() if m != best)
    runner_up = f"; next {others[0][1]} {others[0][0]:.4f} ms" if others else ""
    library = "" if library_ms is None else f"; library measured {library_ms:.4f} ms"
    return Choice(best, dict(predicted_ms), library_ms,
                  f"{best} predicted {ours:.4f} ms{runner_up}{library}")


@dataclass(frozen=True)
class ChoiceRecord:
    """A choice as recorded on the program of one of its modes (`record`, `recorded`)."""

    mode: str  # the mode the program it is recorded on runs
    choice: Choice
    tile_ms: dict[str, float]  # that mode's tile times, per stage
    baseline: str  # the stream-sync mode whose measured time gave them
    baseline_ms: float
    costs: MechanismCosts
    sms: int
    device: str  # "" where unknown


def _float(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def _floats(values: Mapping[str, float]) -> DictionaryAttr:
    return DictionaryAttr({name: _float(v) for name, v in sorted(values.items())})


def record(module: Operation, rec: ChoiceRecord) -> None:
    """Write `rec` on `module` as its MODE_CHOICE_ATTR."""
    entries: dict[str, Attribute] = {
        "mode": StringAttr(rec.mode), "chosen": StringAttr(rec.choice.mode),
        "reason": StringAttr(rec.choice.reason),
        "predicted_ms": _floats(rec.choice.predicted_ms), "tile_ms": _floats(rec.tile_ms),
        "baseline": StringAttr(rec.baseline), "baseline_ms": _float(rec.baseline_ms),
        "costs": _floats(asdict(rec.costs)), "sms": IntegerAttr(rec.sms, i64),
        "device": StringAttr(rec.device)}
    if rec.choice.library_ms is not None:
        entries["library_ms"] = _float(rec.choice.library_ms)
    module.attributes[MODE_CHOICE_ATTR] = DictionaryAttr(entries)


_KINDS = {StringAttr: "a string", FloatAttr: "a float", IntegerAttr: "an integer",
          DictionaryAttr: "a dictionary"}


def recorded(module: Operation) -> ChoiceRecord | None:
    """The record `record` left on `module`, None where it has none; an OpDiagnostic naming
    the field where it is malformed."""
    attr = module.attributes.get(MODE_CHOICE_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, DictionaryAttr):
        raise OpDiagnostic(f"{MODE_CHOICE_ATTR} must be a dictionary, got {attr}", module)
    data = attr.data

    def field(name: str, kind: type) -> Attribute:
        value = data.get(name)
        if value is None:
            raise OpDiagnostic(f"{MODE_CHOICE_ATTR}: '{name}' is missing", module)
        if not isinstance(value, kind):
            raise OpDiagnostic(f"{MODE_CHOICE_ATTR}: '{name}' must be {_KINDS[kind]}, got "
                               f"{value}", module)
        return value

    def text(name: str) -> str:
        return field(name, StringAttr).data  # type: ignore[attr-defined]

    def time(label: str, value: Attribute) -> float:
        if not isinstance(value, FloatAttr) or not 0 <= value.value.data < math.inf:
            raise OpDiagnostic(f"{MODE_CHOICE_ATTR}: '{label}' must be a finite float, not "
                               f"negative, got {value}", module)
        return value.value.data

    def number(name: str) -> float:
        return time(name, field(name, FloatAttr))

    def numbers(name: str) -> dict[str, float]:
        return {key: time(f"{name}.{key}", value)
                for key, value in field(name, DictionaryAttr).data.items()}  # type: ignore

    costs = numbers("costs")
    missing = [f.name for f in fields(MechanismCosts)
               if f.name not in costs and f.default is MISSING]
    if missing:
        raise OpDiagnostic(f"{MODE_CHOICE_ATTR}: 'costs' lacks {', '.join(missing)}", module)
    library_ms = number("library_ms") if "library_ms" in data else None
    choice = Choice(text("chosen"), numbers("predicted_ms"), library_ms, text("reason"))
    sms = field("sms", IntegerAttr).value.data  # type: ignore[attr-defined]
    if sms < 1:
        raise OpDiagnostic(f"{MODE_CHOICE_ATTR}: 'sms' must be positive, got {sms}", module)
    return ChoiceRecord(text("mode"), choice, numbers("tile_ms"), text("baseline"),
                        number("baseline_ms"),
                        MechanismCosts(**{f.name: costs[f.name] for f in fields(MechanismCosts)
                                          if f.name in costs}),
                        sms, text("device"))


__all__ = ["LIBRARY", "MECHANISM_COSTS", "WIN_MARGIN", "Choice", "ChoiceRecord",
           "MechanismCosts", "ModeShape", "choose", "costs_for", "mode_shape", "predict_ms",
           "prediction_parts", "record", "recorded", "tile_times"]
