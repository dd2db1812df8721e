"""`dataflow-verify`: proves that a spatial pipeline cannot hang, or refuses it.

Two things must hold for the queues of a pipeline never to wait forever:

* **co-residency** — every CTA of every stage is resident at once. A CTA spinning on a queue
  keeps its SM slot, so a stage whose CTAs could find no slot behind spinning consumers would
  never run. Counted by the one forward-progress rule set (`forward_progress.co_residency`,
  i.e. `contract.all_resident`) from each stage's CTAs and blocks per SM, which come from the
  compiled kernel's registers and shared memory (`registers`, `shared_bytes` on the stage, as
  `tilesync.api.annotate_resources` records them) and its block size. The queue workers of a
  CTA (the CTA itself, or with `threads N` its groups of threads) are resident with it, so
  CTAs are what is counted, however many workers each runs;
* **balanced, acyclic queues** — the stage graph is acyclic (the dialect's verifier), every
  queue holds at least the entries one consumer tile takes at once (`dataflow.reads`, drawn as
  consecutive tickets), and each launch takes from every queue as many tickets as it gives: the
  producer stage's `tiles` (tiles per launch) equals each consumer stage's. Then, with every
  CTA resident, the lowest ticket not yet done can always move (its producer's earlier tickets
  are done, its entry's previous round was released by consumers that drew it earlier), so by
  induction every ticket completes, and the next launch finds every count where it expects.
  The argument is per queue worker, not per CTA: groups of threads (`threads N`) draw and
  release tickets independently (they must not wait for one another while holding one), so
  neither check depends on how many workers a CTA runs;
* **the kernels keep the tickets' discipline** the induction assumes (`check_kernel_tickets`,
  on every stage kernel that still takes its queues as arguments): each queue a stage lists
  is acquired and released by its kernel, inputs only at their consumer end and outputs at
  their producer end; and where a stage runs more than one worker, a worker draws at most one
  ticket per tile on its inputs and one on its outputs — further tickets of its tile are
  given (`at`) the one it drew. Two drawn independently (a join of two queues, a tile that
  takes `dataflow.reads` > 1 entries one draw at a time) let one worker hold ticket t of one
  queue while it waits for a ticket another worker holds and that worker waits for t: the
  lowest ticket no longer moves (found by the queue simulator on a residual join and on a
  split reduction's final stage); on outputs, the tickets of one tile would name different
  tiles in different queues.

A pipeline that passes gets `dataflow.verified` saying what was proved; otherwise a VerifyError
names the stage and what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import gpu
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from tilesync.analysis.forward_progress import Residency, co_residency
from tilesync.analysis.occupancy import blocks_per_sm
from tilesync.contract import (
    KNOWN_BLOCK_SIZE_ATTR,
    READS_ATTR,
    REGISTERS_ATTR,
    SHARED_BYTES_ATTR,
    TILES_ATTR,
    UNBOUND_ATTR,
    VerifyError,
    limits_for_arch,
)
from tilesync.dialects import dataflow
from tilesync.dialects.locations import OpDiagnostic, diagnostic

PASS = "dataflow-verify"
VERIFIED_ATTR = "dataflow.verified"


def _refuse(op, message: str) -> OpDiagnostic:
    return diagnostic(PASS, op, message, VerifyError)


def _int_attr(op, name: str) -> int | None:
    attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def stage_residency(module: ModuleOp, stage: dataflow.StageOp, arch: str) -> Residency:
    """The stage's CTAs and how many fit on one SM, from its compiled kernel's resources."""
    name = stage.sym_name.data
    registers, shared = _int_attr(stage, REGISTERS_ATTR), _int_attr(stage, SHARED_BYTES_ATTR)
    if registers is None or shared is None:
        raise _refuse(stage, f"stage @{name}: occupancy unknown: the stage needs the "
                      f"'{REGISTERS_ATTR}' and '{SHARED_BYTES_ATTR}' of its compiled kernel "
                      "(tilesync.api.annotate_resources records them)")
    if registers < 0 or shared < 0:
        raise _refuse(stage, f"stage @{name}: '{REGISTERS_ATTR}' and '{SHARED_BYTES_ATTR}' "
                      f"must not be negative, got {registers} and {shared}")
    kernel = SymbolTable.lookup_symbol(module, stage.kernel)
    block = kernel.attributes.get(KNOWN_BLOCK_SIZE_ATTR) if isinstance(kernel, gpu.FuncOp) \
        else None
    if block is None:
        raise _refuse(stage, f"stage @{name}: its kernel declares no block size "
                      f"({KNOWN_BLOCK_SIZE_ATTR}), so its CTAs cannot be counted")
    threads = 1
    for extent in block.get_values():
        threads *= extent
    occupancy = blocks_per_sm(threads, registers, shared, limits_for_arch(arch))
    if occupancy.blocks_per_sm == 0:
        raise _refuse(stage, f"stage @{name}: its kernel cannot run: {occupancy.reason}")
    return Residency(stage.num_ctas, occupancy.blocks_per_sm)


def reads_per_tile(stage: dataflow.StageOp, queue: str) -> int:
    """Entries of `queue` one tile of `stage` takes (`dataflow.reads`, default 1)."""
    reads = stage.attributes.get(READS_ATTR)
    entry = reads.data.get(queue) if isinstance(reads, DictionaryAttr) else None
    return entry.value.data if isinstance(entry, IntegerAttr) else 1


def check_tickets(pipeline: dataflow.PipelineOp) -> str:
    """Every queue gives and takes as many tickets per launch; the proof in words."""
    tiles: dict[str, int] = {}
    for stage in pipeline.stages:
        count = _int_attr(stage, TILES_ATTR)
        if count is None and (stage.inputs.data or stage.outputs.data):
            raise _refuse(stage, f"stage @{stage.sym_name.data} does not declare its "
                          f"'{TILES_ATTR}' per launch, so its queues' tickets cannot be "
                          "balanced")
        if count is not None and count < 1 and (stage.inputs.data or stage.outputs.data):
            raise _refuse(stage, f"stage @{stage.sym_name.data} declares {count} "
                          f"'{TILES_ATTR}' per launch: a stage with queues moves at least one")
        if count is not None:
            tiles[stage.sym_name.data] = count
    for queue in pipeline.queues:
        name = queue.sym_name.data
        producer = next(s for s in pipeline.stages
                        if name in [r.root_reference.data for r in s.outputs])
        for consumer in pipeline.stages:
            if name not in [r.root_reference.data for r in consumer.inputs]:
                continue
            given = tiles[producer.sym_name.data]
            group = reads_per_tile(consumer, name)
            taken = tiles[consumer.sym_name.data] * group
            if queue.queue_type.num_entries < group:
                raise _refuse(queue, f"queue @{name} has {queue.queue_type.num_entries} "
                              f"entries but a tile of @{consumer.sym_name.data} holds {group} "
                              "at once: it could never hold them all")
            if given != taken:
                raise _refuse(consumer, f"queue @{name}: stage @{producer.sym_name.data} "
                              f"fills {given} tickets per launch but stage "
                              f"@{consumer.sym_name.data} takes {taken}: a launch would "
                              f"{'wait forever for' if taken > given else 'leave'} "
                              f"{abs(taken - given)} ticket(s)")
    return f"tickets balanced on {len(pipeline.queues)} queue(s)"


_CONSUMER_OPS = (dataflow.AcquireFullOp, dataflow.ReleaseEmptyOp, dataflow.DrawFullOp)
_PRODUCER_OPS = (dataflow.AcquireEmptyOp, dataflow.ReleaseFullOp, dataflow.DrawEmptyOp)


def check_kernel_tickets(module: ModuleOp, stage: dataflow.StageOp) -> None:
    """The kernel of `stage` acquires and releases every queue the stage lists, each at its
    own end, and (more than one worker) draws at most one ticket a tile on its inputs and one
    on its outputs (the module docstring says why). A kernel already lowered (its queues are
    parameters the runtime binds) was checked before."""
    kernel = SymbolTable.lookup_symbol(module, stage.kernel)
    if not isinstance(kernel, gpu.FuncOp) or not kernel.body.blocks:
        return
    name = stage.sym_name.data
    queue_args = [a for a in kernel.body.blocks.first.args
                  if isinstance(a.type, dataflow.QueueType)]
    inputs = [r.root_reference.data for r in stage.inputs]
    outputs = [r.root_reference.data for r in stage.outputs]
    if len(queue_args) != len(inputs) + len(outputs):
        return  # not bound to its queues yet (the stage's own verifier says so)
    try:
        workers = dataflow.queue_workers(kernel).count * stage.num_ctas
    except dataflow.QueueWorkersError as error:
        raise _refuse(error.op, f"stage @{name}: {error}") from None
    position = {op: i for i, op in enumerate(kernel.walk())}
    ahead = dataflow.drawn_acquires(kernel)  # `at` a ticket drawn ahead: drawn all the same
    sides = (("input", inputs, queue_args[:len(inputs)], _CONSUMER_OPS),
             ("output", outputs, queue_args[len(inputs):], _PRODUCER_OPS))
    for side, names, args, ends in sides:
        drawing: list = []
        for queue, arg in zip(names, args, strict=True):
            users = sorted({use.operation for use in arg.uses}, key=position.__getitem__)
            wrong = [op for op in users if isinstance(op, _CONSUMER_OPS + _PRODUCER_OPS)
                     and not isinstance(op, ends)]
            if wrong:
                raise _refuse(wrong[0], f"stage @{name}: '{wrong[0].name}' on @{queue}, one of "
                              f"its {side}s: an {side} is taken at its "
                              f"{'consumer' if side == 'input' else 'producer'} end only")
            acquire_kind, release_kind = ends[0], ends[1]
            acquires = [op for op in users if isinstance(op, acquire_kind)]
            releases = [op for op in users if isinstance(op, release_kind)]
            if not acquires or not releases:
                missing = acquire_kind.name if not acquires else release_kind.name
                raise _refuse(stage, f"stage @{name}: its kernel {stage.kernel} never runs "
                              f"'{missing}' on @{queue}, one of its {side}s: the queue's "
                              "tickets would never all be taken or given back")
            drawn = [op for op in acquires if op.ticket is None or op in ahead]  # not given
            reads = reads_per_tile(stage, queue) if side == "input" else 1
            if workers > 1 and (len(drawn) > 1 or (drawn and reads > 1)):
                raise _refuse(drawn[-1], f"stage @{name}: each of its {workers} queue workers "
                              f"draws {max(len(drawn), reads)} tickets of @{queue} for a tile, "
                              "one at a time: two workers holding part of their tiles can "
                              "wait for each other forever (one worker per stage, or one "
                              "ticket a tile)")
            drawing += [(queue, op) for op in drawn]
        if workers > 1 and len({queue for queue, _ in drawing}) > 1:
            (first, _), (second, op) = drawing[0], next(
                (q, o) for q, o in drawing if q != drawing[0][0])
            mismatch = " (and the tiles would not match)" if side == "output" else ""
            raise _refuse(op, f"stage @{name}: each of its {workers} queue workers draws a "
                          f"ticket of @{first} and one of @{second} on its own: a worker can "
                          f"hold one while it waits for the other's, held by a worker that "
                          f"waits for its own{mismatch}; draw one and give it to the other "
                          "(`at`)")


@dataclass(frozen=True)
class VerifyPipelinePass(ModulePass):
    """Prove every dataflow.pipeline co-resident and deadlock-free, or refuse it."""

    name = "dataflow-verify"

    sms: int = 132
    arch: str = "sm_90"

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")
        limits_for_arch(self.arch)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pipeline in [p for p in op.walk() if isinstance(p, dataflow.PipelineOp)]:
            stages = pipeline.stages
            for stage in stages:
                if UNBOUND_ATTR in stage.attributes:
                    raise _refuse(stage, f"stage @{stage.sym_name.data}: its kernel does not "
                                  "take its queues yet, so nothing it runs uses them")
            residency = [stage_residency(op, s, self.arch) for s in stages]
            fits = co_residency(residency, self.sms)
            if not fits:
                per_stage = ", ".join(f"@{s.sym_name.data} {r.blocks} x 1/{r.blocks_per_sm} SM"
                                      for s, r in zip(stages, residency))
                raise _refuse(pipeline, f"pipeline @{pipeline.sym_name.data} cannot run: "
                              f"{fits.reason} ({per_stage}); a CTA spinning on a queue holds "
                              "the slot its producer needs")
            tickets = check_tickets(pipeline)
            for stage in stages:
                check_kernel_tickets(op, stage)
            pipeline.attributes[VERIFIED_ATTR] = StringAttr(f"co-resident: {fits.reason}; "
                                                            f"{tickets}")
