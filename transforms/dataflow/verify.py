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
  consecutive tickets) and what both its ends may hold at once (`check_depths`: N >= P + C - 1,
  P and C the most tickets a producer and a consumer worker span at a wait), and each launch
  takes from every queue as many tickets as it gives: the producer stage's `tiles` (tiles per
  launch) equals each consumer stage's, or, where no stage declares them, the kernels' own
  counts agree (`check_counted_tickets`). Then, with every
  CTA resident, the lowest ticket not yet done can always move (its producer's earlier tickets
  are done, its entry's previous round was released by consumers that drew it earlier), so by
  induction every ticket completes, and the next launch finds every count where it expects.
  The argument is per queue worker, not per CTA: groups of threads (`threads N`) draw and
  release tickets independently (they must not wait for one another while holding one), so
  neither check depends on how many workers a CTA runs;
* **the kernels keep the tickets' discipline** the induction assumes (`check_kernel_tickets`,
  on every stage kernel that still takes its queues as arguments, followed region by region):
  each queue a stage lists is acquired and released by its kernel, inputs only at their
  consumer end and outputs at their producer end; a ticket is released exactly once, in the
  block that acquired it (so on every path, once per acquire however loops and branches run),
  or once in each side of a branch after it, or — a loop carrying it — in the next iteration,
  which hands on one it acquired in its place (a worker taking its next tile before it gives
  the current one back), a ticket a branch hands on acquired in each of its sides; a release
  or an `at` names a ticket a queue handed out, never a constant or a loop index; every draw
  is acquired, and a ticket drawn ahead for a loop's next iteration is drawn exactly where
  that iteration runs (or the last draw is never acquired, and every later ticket of its queue
  waits for it); a worker holds at most a queue's entries at once. Where a stage runs more
  than one worker on a ring (a cluster queue's ring has one at each end: the stage's CTA in
  that cluster, which takes its tickets in order, so it may draw while it holds), a worker
  draws no ticket while it holds one, but for an output ticket drawn
  while it holds only inputs (the lowest unfilled output ticket's holder has its inputs and
  waits for an entry lower, filled tickets free) — further tickets of its tile are given
  (`at`) the one it drew. Drawing while holding (a join of two queues, a tile that takes
  `dataflow.reads` > 1 entries one draw at a time, a relay that takes its output entry before
  its input) lets one worker hold ticket t of one queue while it waits for a ticket another
  worker holds and that worker waits for t: the lowest ticket no longer moves (found by the
  queue simulator on a residual join and on a split reduction's final stage). Tickets drawn on
  two queues of one side name different tiles, and a queue's tickets are taken one way, all
  drawn or all given (`at`) another queue's (its counter moves only on draws); and nothing
  that makes threads of several workers wait for each other (a barrier of the block or of a
  count past one worker, a block-wide arrival or reduction, a wait on an mbarrier, a call; a
  cluster barrier's wait where a cluster holds several CTAs) may stand between an acquire and
  its release, or between a draw and the acquire that takes it, where a CTA (or a cluster)
  runs several workers (a worker waiting for a ticket behind the holder never reaches it);
* **the inputs a tile joins name the same tiles** (`check_joined_tickets`): ticket t of each
  is tile t of the queue both come from, which holds where every stage on the way gives its
  output the ticket of its input (`at`) or draws it as its one queue worker; a join of a queue
  whose tickets several workers drew in the order they came pairs different tiles, and can
  wait forever behind the tile it holds (the queue simulator's deadlock on a residual join);
* **every thread a queue operation's barrier waits for reaches it** (the block, or with
  `threads N` each worker's N threads): no control flow that depends on the thread index
  lets some of them pass it by (`analysis.barrier_divergence`; the thread index divided by a
  multiple of N is one value a worker), and no other block-wide barrier either;
* **an entry is used only while its ticket is held** (`check_entry_use`, in the same walk):
  an op that may touch memory through an entry's address (`dataflow.entry`, a view of it, the
  address as handed on by loops and branches, renamed with the ticket they hand on beside it)
  runs after the acquire that takes the ticket and before its release; not a hang, but the
  producer of the ticket, or the consumers of the entry's previous or next round, would be at
  the same bytes. An asynchronous copy (`cp.async` or a bulk load reading an entry, a bulk
  store writing one) is issued while the ticket is held and complete before its release
  (`check_async_copies`): waited for on the path of the thread that issued it (its group, or
  the transaction barrier its bytes complete), counting the iterations a guarded copy's loop
  must still run;
* **a bulk copy of an entry fences the proxies** (`check_async_copies`, the same walk): the
  queue's acquire and release are the generic proxy's (an acquire load, a barrier, a release
  fence and atomic), which a bulk copy (`tile.BULK_READS`, `tile.BULK_WRITES`, their nvvm
  forms: the async proxy) does not see, as sync-verify's rule 7 says of cuSync's semaphores.
  So, on the issuing thread's path, (1) a bulk copy that reads an entry follows a
  `tile.fence_proxy_async global` after the acquire of its ticket (else the consumer's copy is
  not ordered after the producer's release it acquired, and may read the entry's previous
  round), and (2) so does one that writes an entry (else the producer's copy is not ordered
  after the consumers' releases of the previous round, and may overwrite bytes they still
  read); (3) a bulk write, once complete (`tile.tma_store_wait ... writes`), is followed by a
  `tile.fence_proxy_async global` before the release (the release publishes the generic
  proxy's writes only, so the consumer's acquire would not see its bytes). (4) A bulk read
  needs no fence before its release: complete on its transaction barrier, its reads have
  returned their bytes to shared memory, and nothing written after the release, by either
  proxy (a bulk write after its own fence (2)), can change them;
* **the kernels take the tickets their stages declare** (`check_launch_tickets`): each stage
  kernel, run abstractly for every queue worker of its grid (`queue_tickets`: the evaluator
  sync-verify runs, block ids the worker's CTA, loops around acquires unrolled or counted
  once where every iteration takes the same), acquires each input `tiles` x `dataflow.reads`
  times a launch and each output `tiles` times: the balance above is only as true as the
  declaration. A count that depends on data, on a kernel argument or on the thread within a
  worker is refused, or with `residency=false` left to the launch's arguments.

A pipeline in clusters (its queues `cluster`: dialects/dataflow.py) needs its clusters only
to start, not the grid to be resident (`forward_progress.cluster_residency`: a CTA waits only
for the CTAs of its own cluster); its kernels use each cluster queue as one worker a CTA taking
tickets in order (`check_cluster_queue_ops`), and each cluster's producer CTA fills as many
tickets a launch as its consumer CTA takes (`check_cluster_lanes`), not only the stages in all.

A pipeline that passes gets `dataflow.verified` saying what was proved; otherwise a VerifyError
names the stage and what is missing. A stage kernel already lowered (its queues ring
parameters) cannot be followed: its pipeline is refused, unless it carries the proof made
before the lowering, which stands.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, llvm, scf
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable, is_side_effect_free

from tilesync.analysis.barrier_divergence import (
    WARPGROUP_ALIGNED,
    WARPGROUP_THREADS,
    divergent_barrier,
)
from tilesync.analysis.forward_progress import Residency, cluster_residency, co_residency
from tilesync.analysis.kernel_eval import Unproven
from tilesync.analysis.occupancy import blocks_per_sm
from tilesync.analysis.queue_tickets import LaunchTickets, tickets_per_launch
from tilesync.contract import (
    CLUSTER_DIMS_ATTR,
    KNOWN_BLOCK_SIZE_ATTR,
    READS_ATTR,
    REGISTERS_ATTR,
    SHARED_BYTES_ATTR,
    SM_90,
    TILES_ATTR,
    UNBOUND_ATTR,
    VerifyError,
    limits_for_arch,
)
from tilesync.dialects import dataflow, nvvm, tile
from tilesync.dialects.locations import OpDiagnostic, diagnostic, location_of

PASS = "dataflow-verify"
VERIFIED_ATTR = "dataflow.verified"
TICKETS_ONLY = f"{PASS}{{residency=false}}"
"""The queues and the kernels' tickets, without co-residency: the compile driver's check of a
hand-written pipeline (VerifyPipelinePass.residency)."""


LAUNCH_TICKETS = "tickets a launch: its arguments'"
"""The proof's words where the tickets' balance is left to a launch's arguments."""


def _refuse(op, message: str) -> OpDiagnostic:
    return diagnostic(PASS, op, message, VerifyError)


def _int_attr(op, name: str) -> int | None:
    attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def stage_residency(module: Operation, stage: dataflow.StageOp, arch: str) -> Residency:
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
    threads = _block_threads(kernel) if isinstance(kernel, gpu.FuncOp) else None
    if threads is None:
        raise _refuse(stage, f"stage @{name}: its kernel declares no block size "
                      f"({KNOWN_BLOCK_SIZE_ATTR}), so its CTAs cannot be counted")
    occupancy = blocks_per_sm(threads, registers, shared, limits_for_arch(arch))
    if occupancy.blocks_per_sm == 0:
        raise _refuse(stage, f"stage @{name}: its kernel cannot run: {occupancy.reason}")
    return Residency(stage.num_ctas, occupancy.blocks_per_sm)


def reads_per_tile(stage: dataflow.StageOp, queue: str) -> int:
    """Entries of `queue` one tile of `stage` takes (`dataflow.reads`, default 1)."""
    reads = stage.attributes.get(READS_ATTR)
    entry = reads.data.get(queue) if isinstance(reads, DictionaryAttr) else None
    return entry.value.data if isinstance(entry, IntegerAttr) else 1


def check_reads(stage: dataflow.StageOp) -> None:
    """`dataflow.reads` names inputs of the stage, each with a positive count (a value read as
    1 where it is none would balance tickets the kernel does not take)."""
    reads = stage.attributes.get(READS_ATTR)
    if reads is None:
        return
    name = stage.sym_name.data
    if not isinstance(reads, DictionaryAttr):
        raise _refuse(stage, f"stage @{name}: '{READS_ATTR}' must be a dictionary of its "
                      f"inputs' entries a tile, got {reads}")
    inputs = {r.root_reference.data for r in stage.inputs}
    for queue, count in reads.data.items():
        if queue not in inputs:
            raise _refuse(stage, f"stage @{name}: '{READS_ATTR}' names @{queue}, which is not "
                          "one of its inputs")
        if not isinstance(count, IntegerAttr) or count.value.data < 1:
            raise _refuse(stage, f"stage @{name}: '{READS_ATTR}' of @{queue} must be a "
                          f"positive integer, got {count}")


def check_tickets(pipeline: dataflow.PipelineOp, launch_counts: bool = False) -> str:
    """Every queue gives and takes as many tickets per launch; the proof in words. With
    `launch_counts`, a pipeline whose stages do not declare their `tiles` takes its counts
    from the launch (kernel arguments): the queues' depths are checked, the balance is the
    caller's."""
    tiles: dict[str, int] = {}
    undeclared = [stage for stage in pipeline.stages if _int_attr(stage, TILES_ATTR) is None
                  and (stage.inputs.data or stage.outputs.data)]
    for stage in pipeline.stages:
        check_reads(stage)
        count = _int_attr(stage, TILES_ATTR)
        if count is None and (stage.inputs.data or stage.outputs.data) and not launch_counts:
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
            group = reads_per_tile(consumer, name)
            if queue.queue_type.num_entries < group:
                raise _refuse(queue, f"queue @{name} has {queue.queue_type.num_entries} "
                              f"entries but a tile of @{consumer.sym_name.data} holds {group} "
                              "at once: it could never hold them all")
            if undeclared:
                continue
            given = tiles[producer.sym_name.data]
            taken = tiles[consumer.sym_name.data] * group
            if given != taken:
                raise _refuse(consumer, f"queue @{name}: stage @{producer.sym_name.data} "
                              f"fills {given} tickets per launch but stage "
                              f"@{consumer.sym_name.data} takes {taken}: a launch would "
                              f"{'wait forever for' if taken > given else 'leave'} "
                              f"{abs(taken - given)} ticket(s)")
    if undeclared:
        return f"{LAUNCH_TICKETS} ({len(pipeline.queues)} queue(s))"
    return f"tickets balanced on {len(pipeline.queues)} queue(s)"


_CONSUMER_OPS = (dataflow.AcquireFullOp, dataflow.ReleaseEmptyOp, dataflow.DrawFullOp)
_PRODUCER_OPS = (dataflow.AcquireEmptyOp, dataflow.ReleaseFullOp, dataflow.DrawEmptyOp)
_ACQUIRES = dataflow.ACQUIRE_OPS
_RELEASES = (dataflow.ReleaseFullOp, dataflow.ReleaseEmptyOp)
_DRAWS = (dataflow.DrawFullOp, dataflow.DrawEmptyOp)


def _is_ticket(value: SSAValue) -> bool:
    return isinstance(value, OpResult) and isinstance(value.owner, _ACQUIRES + _DRAWS)


def _ticket_identity(value: SSAValue) -> SSAValue:
    """The value that names a ticket's number: an acquire given a ticket (`at`) holds that
    one."""
    while isinstance(value, OpResult) and isinstance(value.owner, _ACQUIRES) \
            and value.owner.ticket is not None:
        value = value.owner.ticket
    return value


_CLUSTER_WAITS = (tile.ClusterBarrierOp, nvvm.ClusterWaitOp)
_OPAQUE = (func.CallOp, llvm.CallOp, llvm.CallIntrinsicOp, llvm.InlineAsmOp)
"""What they wait for cannot be seen: a callee, an intrinsic or assembly may hold a barrier."""


def _synchronized_threads(op: Operation, block_threads: int, cluster_ctas: int = 1) -> int:
    """How many threads `op` makes wait for one another (0: none it is known to): a
    barrier's count, the whole block for a block barrier, a block-wide arrival or reduction,
    a wait on an mbarrier (whose arrivals may come from any thread of the block); a warpgroup
    for its `.aligned` wgmma and register ops; every thread of the cluster's `cluster_ctas`
    blocks for a cluster barrier's wait and for a call, an intrinsic or inline assembly
    (which may hold any of them)."""
    if isinstance(op, _CLUSTER_WAITS + _OPAQUE):
        return block_threads * cluster_ctas
    if isinstance(op, gpu.BarrierOp | nvvm.Barrier0Op | nvvm.Barrier0OrOp | gpu.AllReduceOp
                  | tile.MBarrierWaitOp | nvvm.MBarrierTryWaitParityOp):
        return block_threads
    if isinstance(op, WARPGROUP_ALIGNED):
        return min(WARPGROUP_THREADS, block_threads)
    if isinstance(op, nvvm.BarrierSyncOp | nvvm.BarrierRedOrOp):
        return op.count.value.data
    if isinstance(op, tile.NamedBarrierOp):
        return block_threads if op.barrier_id is not None and op.barrier_id.value.data == 0 \
            else op.threads.value.data
    if isinstance(op, tile.ArriveOp):
        return block_threads if op.threads is None else op.threads.value.data
    return 0


_PASSING = (scf.ForOp, scf.IfOp, scf.YieldOp, scf.WhileOp, scf.ConditionOp)
"""Hand values on to their regions or results: where an entry is used, they do not touch it."""


def _handed_to(op: Operation) -> list[tuple[SSAValue, list[SSAValue]]]:
    """Where an op that hands values on (`_PASSING`) puts each operand: a loop's initial
    values go to its body's arguments (and its results, where it runs no iteration), a yield
    to the next iteration's arguments and the results."""
    parent = op.parent_op()
    if isinstance(op, scf.ForOp):
        return [(init, [arg, result]) for init, arg, result in
                zip(op.iter_args, op.body.block.args[1:], op.results, strict=True)]
    if isinstance(op, scf.WhileOp):
        return [(init, [arg]) for init, arg in
                zip(op.arguments, op.before_region.block.args, strict=True)]
    if isinstance(op, scf.ConditionOp) and isinstance(parent, scf.WhileOp):
        return [(value, [arg, result]) for value, arg, result in
                zip(op.args, parent.after_region.block.args, parent.results, strict=True)]
    if isinstance(op, scf.YieldOp) and isinstance(parent, scf.ForOp):
        return [(value, [arg, result]) for value, arg, result in
                zip(op.operands, parent.body.block.args[1:], parent.results, strict=True)]
    if isinstance(op, scf.YieldOp) and isinstance(parent, scf.WhileOp):
        return [(value, [arg]) for value, arg in
                zip(op.operands, parent.before_region.block.args, strict=True)]
    if isinstance(op, scf.YieldOp) and parent is not None:
        return [(value, [result]) for value, result in
                zip(op.operands, parent.results, strict=False)]
    return []


STALE = None
"""The ticket of an entry address handed out of the iteration or branch that held it (the next
iteration's, or the code after a branch, names another ticket by the same value): no worker
holds it there."""


def _ticket_handed_on(ticket: SSAValue | None, op: Operation,
                      handed: list[tuple[SSAValue, list[SSAValue]]], kind: int) -> SSAValue | None:
    """What names `ticket` at the `kind`-th target of `handed` (`_handed_to(op)`): the target
    of the position that hands the ticket itself on (a loop carrying it, a branch yielding
    it); else the ticket, where it was defined outside what `op` leaves (a yield leaves its
    block); else STALE (and STALE stays so)."""
    if ticket is STALE:
        return STALE
    for value, targets in handed:
        if _ticket_identity(value) == ticket and kind < len(targets):
            return targets[kind]
    if isinstance(op, scf.YieldOp | scf.ConditionOp):
        region_op = op.parent_op()
        owner = ticket.owner if isinstance(ticket, OpResult) else ticket.owner.parent_op()
        while owner is not None and owner is not region_op:
            owner = owner.parent_op()
        if owner is region_op:  # defined in the iteration or side the yield ends
            return STALE
    return ticket


def entry_addresses(kernel: gpu.FuncOp) -> dict[SSAValue, set[tuple[SSAValue, SSAValue | None]]]:
    """Every value of `kernel` that addresses a queue entry, with the (queue, ticket) entries it
    may address (the ticket as `_ticket_identity` names it where the address is, STALE where
    nothing does): `dataflow.entry` results, what side-effect-free ops compute from them
    (views, the address as an index), and where loops and branches hand them on, the ticket
    renamed as they hand it on beside the address."""
    found: dict[SSAValue, set[tuple[SSAValue, SSAValue | None]]] = {}

    def add(value: SSAValue, entries: set) -> bool:
        known = found.setdefault(value, set())
        grown = not entries <= known
        known |= entries
        return grown

    changed = True
    while changed:  # a loop's yield hands an address back to its body's arguments
        changed = False
        for op in kernel.walk():
            if isinstance(op, dataflow.EntryOp):
                changed |= add(op.buffer, {(op.queue, _ticket_identity(op.slot))})
            elif isinstance(op, _PASSING):
                handed = _handed_to(op)
                for value, targets in handed:
                    for kind, target in enumerate(targets):
                        changed |= add(target, {
                            (queue, _ticket_handed_on(ticket, op, handed, kind))
                            for queue, ticket in found.get(value, ())})
            elif is_side_effect_free(op):
                taken = set().union(*(found.get(v, set()) for v in op.operands))
                for result in op.results:
                    changed |= add(result, taken)
    return {value: entries for value, entries in found.items() if entries}


def _touches_entries(op: Operation, addresses: dict[SSAValue, set]) -> set:
    """The entries `op` reads or writes: those of its operands that address an entry, where it
    may touch memory (an op of unknown effects may; one that only hands values on does not)."""
    if isinstance(op, (*_PASSING, dataflow.EntryOp)) or is_side_effect_free(op):
        return set()
    return set().union(*(addresses.get(v, set()) for v in op.operands))


@dataclass
class _Held:
    queue: SSAValue
    ticket: SSAValue  # _ticket_identity of the acquired ticket
    acquire: Operation


class _TicketWalk:
    """Follows one stage kernel's queue ops in program order, region by region, with the
    tickets a worker holds (see check_kernel_tickets)."""

    def __init__(self, stage: dataflow.StageOp, names: dict[SSAValue, str], workers: int,
                 per_cta: int, block_threads: int, worker_threads: int, inputs: frozenset[str],
                 cluster_ctas: int,
                 addresses: dict[SSAValue, set[tuple[SSAValue, SSAValue | None]]]):
        self.stage, self.names, self.workers = stage, names, workers
        self.addresses = addresses  # entry_addresses: what check_entry_use holds to tickets
        self.per_cta, self.block_threads, self.inputs = per_cta, block_threads, inputs
        self.worker_threads = worker_threads
        self.cluster_ctas = cluster_ctas
        # loops that carry a held ticket and branches whose sides each acquire the one a
        # result hands on: the positions whose yields stay held at the end of their blocks
        self.handed_on: dict[Operation, set[int]] = {}
        self.name = stage.sym_name.data

    def refuse(self, op: Operation, message: str) -> OpDiagnostic:
        return _refuse(op, f"stage @{self.name}: {message}")

    def block(self, block: Block, outer: list[_Held], taken: list[tuple] | None = None,
              own: list[_Held] | None = None, pending: list[SSAValue] | None = None) -> None:
        own = list(own or [])
        taken = list(taken or [])
        # tickets drawn and not acquired yet: the queue waits for this worker on them too
        pending = list(pending or []) + _drawn_carried(block)
        for op in block.ops:
            if isinstance(op, scf.ForOp) and self.carries_held(op, own):
                self.loop_holding(op, own, outer, taken)
                continue
            if isinstance(op, scf.IfOp) and self.released_on_both_sides(op, own, outer, taken):
                continue
            if isinstance(op, scf.IfOp) and self.acquired_on_both_sides(op, own, outer, taken):
                continue
            if isinstance(op, _ACQUIRES):
                self.acquire(op, outer + own, taken)
                own.append(_Held(op.queue, _ticket_identity(op.slot), op))
                taken.append((op.queue, _ticket_identity(op.slot)))
                if op.ticket is not None:
                    given = set(dataflow.ticket_sources(op.ticket)) | {op.ticket}
                    pending = [v for v in pending if v not in given]
            elif isinstance(op, _RELEASES):
                self.release(op, own, outer)
            elif isinstance(op, _DRAWS):
                self.draw(op)
                pending.append(op.ticket)
            else:
                self.check_wait(op, outer + own, pending)
                self.check_entry_use(op, outer + own)
            for region in op.regions:
                if len(region.blocks) > 1 and any(isinstance(inner, dataflow.TICKET_OPS)
                                                  for inner in region.walk()):
                    raise self.refuse(op, f"'{op.name}' holds queue operations in a region "
                                      "of several blocks: dataflow-verify follows structured "
                                      "control flow (scf) only")
                for inner in region.blocks:
                    self.block(inner, outer + own, taken, pending=pending)
            if isinstance(op, scf.IfOp):  # a guarded draw ahead, taken after the branch
                pending += [r for r in op.results if _drawn(r)]
        parent = block.parent_op()
        if parent in self.handed_on and isinstance(block.last_op, scf.YieldOp):
            # each ticket handed on is one the worker still holds, once: it is released after
            # the branch or in the next iteration
            for index in sorted(self.handed_on[parent]):
                ticket = _ticket_identity(block.last_op.operands[index])
                held = next((h for h in own if h.ticket == ticket), None)
                if held is None:
                    raise self.refuse(block.last_op, f"'scf.yield' hands on (result {index} of "
                                      f"'{parent.name}') a ticket the worker no longer holds "
                                      "here (released already, or handed on at another "
                                      "result): released again after, its entry's count "
                                      "would run ahead of the tickets")
                own.remove(held)
        if own:
            op = own[0].acquire
            where = "the branch or loop body it is in" if block.parent_op() is not None and \
                not isinstance(block.parent_op(), gpu.FuncOp) else "the kernel"
            raise self.refuse(op, f"'{op.name}' on @{self.names[op.queue]}: the ticket is not "
                              f"released in {where}, so some path keeps its entry (a release "
                              "in the same block, after the acquire, on every path)")

    def check_wait(self, op: Operation, holding: list[_Held], pending: list[SSAValue]
                   ) -> None:
        """No wait of several workers for each other while a worker holds a ticket, or has
        drawn one it has not acquired yet (a worker waiting for a later ticket behind it
        never arrives)."""
        if not holding and not pending:
            return
        waiting = _synchronized_threads(op, self.block_threads, self.cluster_ctas)
        workers = self.per_cta * (self.cluster_ctas if isinstance(op, _CLUSTER_WAITS + _OPAQUE)
                                  else 1)
        if workers <= 1 or waiting <= self.worker_threads:
            return
        if holding:
            what = f"holds a ticket of @{self.names[holding[0].queue]}"
        else:
            owner = next((v.owner for v in dataflow.ticket_sources(pending[0])
                          if isinstance(v, OpResult) and isinstance(v.owner, _DRAWS)), None)
            queue = self.names.get(owner.queue, "?") if owner is not None else "?"
            what = f"has drawn a ticket of @{queue} it has not acquired yet"
        scope = "cluster's" if isinstance(op, _CLUSTER_WAITS + _OPAQUE) and \
            self.cluster_ctas > 1 else "block's"
        raise self.refuse(op, f"'{op.name}' makes threads of more than one worker ({waiting} "
                          f"of the {scope}, a worker being {self.worker_threads}) wait for each "
                          f"other while a worker {what}: another worker may be waiting for a "
                          "ticket behind it, and never arrive")

    def check_entry_use(self, op: Operation, holding: list[_Held]) -> None:
        """An entry is read or written only while the worker holds its ticket: after the
        acquire that takes it and before its release (before, the producer of the ticket, or
        the consumers of the entry's last round, may still be at it; after, the next round's
        may)."""
        # a value may address several entries: the one named first is the same every run
        # (one handed on stale first, then by queue)
        for queue, ticket in sorted(_touches_entries(op, self.addresses),
                                    key=lambda e: (e[1] is not STALE, self.names.get(e[0], ""))):
            if ticket is not STALE and any(h.queue == queue and h.ticket == ticket
                                           for h in holding):
                continue
            which = "handed on from the iteration or branch that held it" if ticket is STALE \
                else "that the worker does not hold here"
            raise self.refuse(op, f"'{op.name}' uses the entry of a ticket of "
                              f"@{self.names.get(queue, '?')} {which} (before the acquire "
                              "that takes it, or after its release): an entry is the worker's "
                              "only between the two, else another worker may be writing or "
                              "reading it")

    def released_on_both_sides(self, branch: scf.IfOp, own: list[_Held], outer: list[_Held],
                               taken: list[tuple]) -> bool:
        """Where each side of `branch` gives back a ticket held before it (once in each side's
        own block), the branch releases it: each side is walked as owning it (and must release
        it exactly once). False, and nothing walked, where no ticket is so."""
        sides = [region.blocks.first for region in branch.regions if region.blocks]
        if len(sides) != 2:
            return False

        def released(block: Block) -> set:
            return {(op.queue, _ticket_identity(op.slot)) for op in block.ops
                    if isinstance(op, _RELEASES)}

        both = released(sides[0]) & released(sides[1])
        given = [h for h in own if (h.queue, h.ticket) in both]
        if not given:
            return False
        for held in given:
            own.remove(held)
        for side in sides:
            self.block(side, outer + own, taken, given)
        return True

    def acquired_on_both_sides(self, branch: scf.IfOp, own: list[_Held], outer: list[_Held],
                               taken: list[tuple]) -> bool:
        """Where each side of `branch` yields, at one result, a ticket it acquired in its own
        block on one queue, the result is held after the branch (one acquire on every path).
        False, and nothing walked, where no result is so."""
        sides = [region.blocks.first for region in branch.regions if region.blocks]
        held = {index: acquire for index in range(len(branch.results))
                if (acquire := _acquired_in_each_side(branch, index)) is not None}
        if not held:
            return False
        self.handed_on[branch] = set(held)
        for side in sides:
            self.block(side, outer + own, taken)
        own += [_Held(op.queue, branch.results[index], op) for index, op in held.items()]
        return True

    def carries_held(self, loop: scf.ForOp, own: list[_Held]) -> bool:
        """Whether `loop` carries a ticket held when it starts (a worker that takes its next
        tile before it gives the current one back)."""
        return any(_ticket_identity(init) == h.ticket for init in loop.iter_args for h in own)

    def loop_holding(self, loop: scf.ForOp, own: list[_Held], outer: list[_Held],
                     taken: list[tuple]) -> None:
        """A loop that carries held tickets: each iteration starts holding the one its
        iteration argument names and must give it back, and ends holding the ticket it
        yields in its place (acquired in the iteration, of the same queue); after the loop
        its result is held (the init, where the loop does not run)."""
        body = loop.body.block
        last = body.last_op
        carried: list[tuple[int, _Held]] = []
        for index, init in enumerate(loop.iter_args):
            held = next((h for h in own if h.ticket == _ticket_identity(init)), None)
            if held is None:
                continue
            own.remove(held)
            carried.append((index, held))
            yielded = last.operands[index] if isinstance(last, scf.YieldOp) else None
            source = _ticket_identity(yielded) if yielded is not None else None
            owner = source.owner if isinstance(source, OpResult) else None
            # acquired in the iteration: by an acquire of its block, or in each side of a
            # branch of its block that hands it on
            if isinstance(owner, scf.IfOp) and owner.parent_block() is body:
                owner = _acquired_in_each_side(owner, source.index)  # type: ignore[union-attr]
            elif owner is not None and owner.parent_block() is not body:
                owner = None
            if not (isinstance(owner, _ACQUIRES) and owner.queue == held.queue):
                raise self.refuse(loop, f"'{loop.name}' carries a ticket of "
                                  f"@{self.names[held.queue]} it holds, but an iteration does "
                                  "not hand on one it acquired on that queue in its place")
        self.handed_on[loop] = {index for index, _ in carried}
        entering = [_Held(h.queue, body.args[index + 1], h.acquire) for index, h in carried]
        self.block(body, outer + own, taken, entering)
        own += [_Held(h.queue, loop.results[index], h.acquire) for index, h in carried]

    def queue(self, op: Operation) -> str:
        name = self.names.get(op.queue)
        if name is None:
            owner = op.queue.owner
            where = owner.parent_op() if isinstance(op.queue, BlockArgument) else owner
            raise self.refuse(op, f"'{op.name}' takes a queue carried by "
                              f"'{where.name if where is not None else '?'}', not one of the "
                              "kernel's queue arguments: dataflow-verify follows a queue from "
                              "the argument the stage binds")
        return name

    def ticket_operand(self, op: Operation, value: SSAValue, what: str) -> None:
        """`value` (an `at` or a release's ticket) names a ticket a queue handed out (an
        acquire's or a draw's): a placeholder constant only beside a ticket in a loop-carried
        value, whose draws check_draws_ahead holds to the iterations that take them."""
        queue = self.names[op.queue]
        sources = dataflow.ticket_sources(value)
        identity = _ticket_identity(value)
        carried = isinstance(identity, BlockArgument) and \
            isinstance(identity.owner.parent_op(), scf.ForOp) and identity.index >= 1
        placeholder_ok = carried and any(_is_ticket(v) for v in sources)
        bad = next((v for v in sources if not _is_ticket(v) and not (
            placeholder_ok and _constant(v) is not None)), None)
        if bad is not None:
            raise self.refuse(op, f"'{op.name}' on @{queue} {what} a ticket that may be "
                              f"{_describe(bad)}, not one a queue handed out: tickets come "
                              "from an acquire or a draw")

    def draw(self, op: Operation) -> None:
        """A draw is taken on every path that makes it: by an acquire after it in its block,
        or as the then side of a guard check_draws_ahead holds to the loop's iterations."""
        queue = self.queue(op)
        block = op.parent_block()
        if any(isinstance(use.operation, _ACQUIRES) and use.operation.parent_block() is block
               for use in op.ticket.uses):
            return
        guard = block.parent_op() if block is not None else None
        yielded = block.last_op if block is not None else None
        if isinstance(guard, scf.IfOp) and block is guard.true_region.blocks.first and \
                isinstance(yielded, scf.YieldOp) and op.ticket in yielded.operands:
            result = guard.results[list(yielded.operands).index(op.ticket)]
            if any(isinstance(use.operation, scf.ForOp)
                   or (isinstance(use.operation, scf.YieldOp)
                       and isinstance(use.operation.parent_op(), scf.ForOp))
                   for use in result.uses):
                return
        raise self.refuse(op, f"'{op.name}' on @{queue} draws a ticket no acquire in its block "
                          "takes, nor a loop's next iteration (drawn under a guard that the "
                          "iteration runs): a path that skips the acquire leaves it untaken, "
                          "and every later ticket of the queue waits for it")

    def acquire(self, op: Operation, holding: list[_Held], taken: list[tuple]) -> None:
        queue = self.queue(op)
        drawn = op.ticket is None
        if op.ticket is not None:
            self.ticket_operand(op, op.ticket, "is given")
            identity = _ticket_identity(op.slot)
            if (op.queue, identity) in taken:
                raise self.refuse(op, f"'{op.name}' on @{queue} takes a ticket this worker "
                                  "took already: its entry would be filled, or freed, twice")
            loop = _innermost_loop(op)
            if loop is not None and not _defined_in(identity, loop):
                raise self.refuse(op, f"'{op.name}' on @{queue} takes, in every iteration of "
                                  f"the '{loop.name}' around it, a ticket drawn outside it: "
                                  "the same ticket each time (carry a ticket drawn for each "
                                  "iteration)")
            sources = dataflow.ticket_sources(op.ticket)
            drawn = not _given_by_another_queue(op)
            given = {v.owner.queue for v in sources if _is_ticket(v)
                     and isinstance(v.owner, _ACQUIRES) and v.owner.queue != op.queue}
            for source in [op.queue, *given]:
                if self.names.get(source) in self.inputs and \
                        reads_per_tile(self.stage, self.names[source]) > 1:
                    raise self.refuse(op, f"'{op.name}' on @{queue} is given the ticket of "
                                      f"another queue, but a tile of @{self.name} takes "
                                      f"{reads_per_tile(self.stage, self.names[source])} "
                                      f"entries of @{self.names[source]}: the two queues' "
                                      "tickets count different things")
        same = [h for h in holding if h.queue == op.queue]
        entries = op.queue.type.num_entries
        if len(same) + 1 > entries:
            raise self.refuse(op, f"'{op.name}' on @{queue} while a worker holds {len(same)} "
                              f"of its tickets: the queue has {entries} "
                              f"entr{'y' if entries == 1 else 'ies'}, so the ticket it waits "
                              "for needs an entry the worker holds")
        # A worker that holds only input tickets may wait for an output ticket it draws: the
        # lowest unfilled output ticket's holder has its inputs and waits for an entry that
        # lower, filled tickets free. Any other wait while holding can close a cycle.
        blocking = holding if queue in self.inputs else \
            [h for h in holding if self.names[h.queue] not in self.inputs]
        if drawn and self.workers > 1 and blocking:
            held = self.names[blocking[0].queue]
            if held == queue:
                raise self.refuse(op, f"each of its {self.workers} queue workers draws "
                                  f"{len(same) + 1} tickets of @{queue} for a tile, one at a "
                                  "time: two workers holding part of their tiles can wait for "
                                  "each other forever (one worker per stage, or one ticket a "
                                  "tile)")
            raise self.refuse(op, f"each of its {self.workers} queue workers draws a ticket of "
                              f"@{held} and one of @{queue} on its own: a worker can hold one "
                              "while it waits for the other's, held by a worker that waits "
                              "for its own; draw one and give it to the other (`at`)")

    def release(self, op: Operation, own: list[_Held], outer: list[_Held]) -> None:
        queue = self.queue(op)
        self.ticket_operand(op, op.slot, "releases")
        ticket = _ticket_identity(op.slot)
        match = next((h for h in own if h.queue == op.queue and h.ticket == ticket), None)
        if match is not None:
            own.remove(match)
            return
        if any(h.queue == op.queue and h.ticket == ticket for h in outer):
            raise self.refuse(op, f"'{op.name}' on @{queue} inside a branch or loop releases a "
                              "ticket acquired outside it: a path that skips it keeps the "
                              "entry, one that repeats it releases it twice")
        raise self.refuse(op, f"'{op.name}' on @{queue} releases a ticket the worker does not "
                          "hold here (never acquired on this path, or released already): its "
                          "entry's count would run ahead of the tickets")


def _acquired_in_each_side(branch: scf.IfOp, index: int) -> Operation | None:
    """The then side's acquire where each side of `branch` yields, at result `index`, a
    ticket it acquired in its own block, both on one queue; None else."""
    sides = [region.blocks.first for region in branch.regions if region.blocks]
    if len(sides) != 2 or not all(isinstance(b.last_op, scf.YieldOp) for b in sides):
        return None
    pair = []
    for block in sides:
        value = _ticket_identity(block.last_op.operands[index])  # type: ignore[union-attr]
        owner = value.owner if isinstance(value, OpResult) else None
        if not (isinstance(owner, _ACQUIRES) and owner.parent_block() is block):
            return None
        pair.append(owner)
    return pair[0] if pair[0].queue == pair[1].queue else None


def _drawn_carried(block: Block) -> list[SSAValue]:
    """The iteration arguments of a loop body `block` that carry a ticket drawn ahead (drawn
    in the previous iteration, or before the loop, and acquired in this one)."""
    loop = block.parent_op()
    if not isinstance(loop, scf.ForOp) or block is not loop.body.block:
        return []
    last = block.last_op
    yielded = list(last.operands) if isinstance(last, scf.YieldOp) else []
    return [arg for index, arg in enumerate(block.args[1:])
            if _drawn(loop.iter_args[index])
            or (index < len(yielded) and _drawn(yielded[index]))]


def _drawn(value: SSAValue) -> bool:
    """Whether `value` may be a ticket a draw handed out (directly, or through scf values)."""
    return any(isinstance(v, OpResult) and isinstance(v.owner, _DRAWS)
               for v in dataflow.ticket_sources(value))


def _innermost_loop(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, gpu.FuncOp):
        if isinstance(parent, scf.ForOp | scf.WhileOp | scf.ParallelOp):
            return parent
        parent = parent.parent_op()
    return None


def _defined_in(value: SSAValue, loop: Operation) -> bool:
    """Whether `value` is defined inside `loop`'s regions (its own iteration arguments
    included): a new value each iteration."""
    owner = value.owner.parent_op() if isinstance(value, BlockArgument) else value.owner
    return owner is loop or (owner is not None and loop.is_ancestor(owner))


def _describe(value: SSAValue) -> str:
    if isinstance(value, BlockArgument):
        parent = value.owner.parent_op()
        if isinstance(parent, scf.ForOp) and value.index == 0:
            return "the loop's induction variable"
        return f"argument {value.index} of a block of '{parent.name if parent else '?'}'"
    return f"the result of '{value.owner.name}'"


@dataclass
class _Followed:
    """A stage kernel whose tickets check_kernel_tickets followed: its queue arguments' names,
    its workers, and the most tickets of each queue one worker spans (`ticket_spans`)."""

    kernel: gpu.FuncOp
    names: dict[SSAValue, str]
    kinds: dataflow.QueueWorkers
    spans: dict[str, int]


@dataclass
class _Drawn:
    """One worker's tickets as its draws number them: draws so far on each queue (the
    counter that numbers a ticket, its `domain`), and each ticket it holds or drew and has not
    acquired yet, (queue, ticket identity) -> (domain, number)."""

    count: dict[SSAValue, int]
    open: dict[tuple[SSAValue, SSAValue], tuple[SSAValue, int]]

    def copy(self) -> _Drawn:
        return _Drawn(dict(self.count), dict(self.open))


class _TicketSpans:
    """The most tickets of each queue one worker spans at a wait: from the oldest it holds (or
    drew and has not acquired) to the one it waits for. A worker's draws take consecutive
    tickets of a queue where it is the queue end's one worker, so the span is counted in its
    own draws; a ticket given (`at`) another queue's is numbered by that queue's draws. Loops
    are followed as their last iteration, with what the earlier ones drew before it (constant
    trip counts); a ticket held across a loop that may run any number of times while drawing
    on its queue has no bound, and is refused."""

    def __init__(self, kernel: gpu.FuncOp, refuse: Callable[[Operation, str], OpDiagnostic],
                 names: dict[SSAValue, str]):
        self.refuse, self.names = refuse, names
        self.spans: dict[SSAValue, int] = {}
        self.numbers: dict[SSAValue, tuple[SSAValue, int]] = {}  # ticket -> (domain, number)
        self.around_tickets = {ancestor for op in kernel.walk()
                               if isinstance(op, dataflow.TICKET_OPS)
                               for ancestor in _ancestors(op)}

    def block(self, block: Block, state: _Drawn) -> None:
        for op in block.ops:
            if isinstance(op, _DRAWS):
                self.draw(op.queue, op.ticket, state)
            elif isinstance(op, _ACQUIRES):
                self.acquire(op, state)
            elif isinstance(op, _RELEASES):
                state.open.pop((op.queue, _ticket_identity(op.slot)), None)
            elif op not in self.around_tickets:
                continue
            elif isinstance(op, scf.IfOp):
                self.branch(op, state)
            elif isinstance(op, scf.ForOp):
                self.loop(op, state)
            else:  # a while loop or another region: run any number of times
                self.repeated(op, state)

    def draw(self, queue: SSAValue, ticket: SSAValue, state: _Drawn) -> int:
        number = state.count.get(queue, 0) + 1
        state.count[queue] = number
        state.open[(queue, ticket)] = self.numbers[ticket] = (queue, number)
        return number

    def acquire(self, op: Operation, state: _Drawn) -> None:
        if op.ticket is None:
            number = self.draw(op.queue, op.slot, state)
        else:
            identity = _ticket_identity(op.slot)
            key = (op.queue, identity)
            if key not in state.open:  # given another queue's ticket: numbered by its draws
                state.open[key] = self.numbers.get(
                    identity, (op.queue, state.count.get(op.queue, 0)))
            number = state.open[key][1]
        oldest = min(n for (queue, _), (_, n) in state.open.items() if queue == op.queue)
        self.spans[op.queue] = max(self.spans.get(op.queue, 1), number - oldest + 1)

    def branch(self, op: scf.IfOp, state: _Drawn) -> None:
        sides = []
        for region in (op.true_region, op.false_region):
            side = state.copy()
            if region.blocks:
                self.block(region.blocks.first, side)
                self.rename_yielded(region.blocks.first.last_op, op.results, state, side)
            sides.append(side)
        state.count = {d: max(s.count.get(d, 0) for s in sides)
                       for d in {d for s in sides for d in s.count}}
        state.open = {}
        for side in sides:
            for key, (domain, number) in side.open.items():
                known = state.open.get(key)
                state.open[key] = (domain, number if known is None else min(known[1], number))

    def rename_yielded(self, last: Operation | None, results, before: _Drawn,
                       after: _Drawn) -> None:
        """Tickets drawn inside a region and handed out by its yield are named by the result
        after it."""
        if not isinstance(last, scf.YieldOp):
            return
        for value, result in zip(last.operands, results, strict=False):
            identity = _ticket_identity(value)
            for key in [k for k in after.open if k[1] == identity and k not in before.open]:
                after.open[(key[0], result)] = self.numbers[result] = after.open.pop(key)

    def loop(self, op: scf.ForOp, state: _Drawn) -> None:
        lb, ub, step = _constant(op.lb), _constant(op.ub), _constant(op.step)
        trips = max(1, -(-(ub - lb) // step)) if None not in (lb, ub, step) and step > 0 \
            else None
        body = op.body.block
        carried: dict[int, tuple[SSAValue, SSAValue]] = {}
        for index, init in enumerate(op.iter_args):
            # a ticket open on several queues (one given another's) is carried by each
            # queue's own value
            owner = init.owner if isinstance(init, OpResult) else None
            queue = owner.queue if isinstance(owner, _ACQUIRES + _DRAWS) else None
            key = next((k for k in state.open if k[1] == _ticket_identity(init)
                        and queue in (None, k[0]) and k not in carried.values()), None)
            if key is not None:
                carried[index] = key

        def entering(numbers: dict[int, int]) -> _Drawn:
            inside = state.copy()
            for index, key in carried.items():
                inside.open.pop(key)
                arg = body.args[index + 1]
                inside.open[(key[0], arg)] = self.numbers[arg] = (state.open[key][0],
                                                                  numbers[index])
            return inside

        # first the iteration's draws, with each carried ticket as the loop takes it
        trial = entering({index: state.open[key][1] for index, key in carried.items()})
        self.block(body, trial)
        drew = {d: n - state.count.get(d, 0) for d, n in trial.count.items()
                if n != state.count.get(d, 0)}
        last = body.last_op
        numbers = {}
        for index, key in carried.items():
            domain, first = state.open[key]
            yielded = _ticket_identity(last.operands[index]) \
                if isinstance(last, scf.YieldOp) else None
            after = trial.open.get((key[0], yielded)) if yielded is not None else None
            if after is None or yielded == body.args[index + 1]:
                numbers[index] = first - (trips - 1 if trips else 0) * drew.get(domain, 0)
            else:  # handed on from the iteration before: drawn that much before this one
                numbers[index] = min(first, after[1] - drew.get(domain, 0))
        # then the last iteration, the tickets held since before the loop as far behind as
        # every earlier iteration's draws put them
        inside = entering(numbers)
        for key, (domain, number) in list(inside.open.items()):
            if key in state.open and domain in drew:
                if trips is None:
                    raise self.refuse(op, f"'{op.name}' draws tickets of "
                                      f"@{self.names.get(domain, '?')} as many times as it runs "
                                      "while the worker holds one from before it: the tickets "
                                      "it spans have no bound, and no ring holds them (give it "
                                      "back first, or carry it through the iterations)")
                inside.open[key] = (domain, number - (trips - 1) * drew[domain])
        self.block(body, inside)
        for domain, n in drew.items():
            state.count[domain] = state.count.get(domain, 0) + (trips or 1) * n
        for index, key in carried.items():
            domain, _ = state.open.pop(key)
            yielded = _ticket_identity(last.operands[index]) \
                if isinstance(last, scf.YieldOp) else None
            result = op.results[index]
            ending = inside.open.get((key[0], yielded), (domain, numbers[index]))
            shift = (trips - 1 if trips else 0) * drew.get(domain, 0)
            state.open[(key[0], result)] = self.numbers[result] = (domain, ending[1] + shift)

    def repeated(self, op: Operation, state: _Drawn) -> None:
        for region in op.regions:
            for inner in region.blocks:
                inside = state.copy()
                self.block(inner, inside)
                drew = {d for d, n in inside.count.items() if n != state.count.get(d, 0)}
                held = next((d for (_, _), (d, _) in state.open.items() if d in drew), None)
                if held is not None:
                    raise self.refuse(op, f"'{op.name}' draws tickets of "
                                      f"@{self.names.get(held, '?')} as many times as it runs "
                                      "while the worker holds one from before it: the tickets "
                                      "it spans have no bound, and no ring holds them (give it "
                                      "back first)")
                for domain in drew:
                    state.count[domain] = inside.count[domain]


def _ancestors(op: Operation) -> list[Operation]:
    found, parent = [], op.parent_op()
    while parent is not None and not isinstance(parent, gpu.FuncOp):
        found.append(parent)
        parent = parent.parent_op()
    return found


def ticket_spans(kernel: gpu.FuncOp, names: dict[SSAValue, str],
                 refuse: Callable[[Operation, str], OpDiagnostic]) -> dict[str, int]:
    """{queue: the most of its tickets one worker of `kernel` spans at a wait} (`_TicketSpans`,
    1 where it never holds one while it waits for another)."""
    walk = _TicketSpans(kernel, refuse, names)
    walk.block(kernel.body.blocks.first, _Drawn({}, {}))
    return {name: walk.spans.get(arg, 1) for arg, name in names.items()}


def check_kernel_tickets(module: Operation, stage: dataflow.StageOp) -> _Followed | None:
    """The kernel of `stage` keeps the tickets' discipline the induction assumes (the
    module docstring's third point says which), or a VerifyError says where it does not. None
    for a kernel it cannot follow: one already lowered (its queues are parameters the runtime
    binds), whose pipeline the pass refuses unless it was proved before the lowering."""
    kernel = SymbolTable.lookup_symbol(module, stage.kernel)
    name = stage.sym_name.data
    if not isinstance(kernel, gpu.FuncOp) or not kernel.body.blocks:
        function_type = kernel.get_attr_or_prop("function_type") if kernel else None
        if isinstance(function_type, FunctionType) and any(
                isinstance(t, dataflow.QueueType) for t in function_type.inputs):
            what = "a declaration without a body" if isinstance(kernel, gpu.FuncOp) \
                else f"a '{kernel.name}'"
            raise _refuse(stage, f"stage @{name}: its kernel {stage.kernel} takes queues but "
                          f"is {what}: dataflow-verify follows the tickets of a gpu.func "
                          "kernel's body only")
        return None
    queue_args = [a for a in kernel.body.blocks.first.args
                  if isinstance(a.type, dataflow.QueueType)]
    inputs = [r.root_reference.data for r in stage.inputs]
    outputs = [r.root_reference.data for r in stage.outputs]
    if len(queue_args) != len(inputs) + len(outputs):
        return None  # not bound to its queues yet (the stage's own verifier says so)
    if len(kernel.body.blocks) > 1 and any(isinstance(op, dataflow.TICKET_OPS)
                                           for op in kernel.walk()):
        raise _refuse(kernel, f"stage @{name}: its kernel {stage.kernel} is made of several "
                      "blocks: dataflow-verify follows structured control flow (scf) only")
    for arg in queue_args:
        other = next((use.operation for use in arg.uses
                      if not use.operation.name.startswith("dataflow.")), None)
        if other is not None:
            raise _refuse(other, f"stage @{name}: '{other.name}' takes one of the kernel's "
                          "queues: only the queue ops may (what it does with the tickets "
                          "cannot be followed)")
    try:
        kinds = dataflow.queue_workers(kernel)
    except dataflow.QueueWorkersError as error:
        raise _refuse(error.op, f"stage @{name}: {error}") from None
    # the workers that take one ring's tickets: a cluster queue is a ring per cluster, which
    # only the workers of the stage's one CTA in that cluster take
    workers = kinds.count * (1 if _in_cluster_queues(stage) else stage.num_ctas)
    position = {op: i for i, op in enumerate(kernel.walk())}
    sides = (("input", inputs, queue_args[:len(inputs)], _CONSUMER_OPS),
             ("output", outputs, queue_args[len(inputs):], _PRODUCER_OPS))
    drawing: dict[str, list] = {}
    for side, names, args, ends in sides:
        drawing[side] = []
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
            for draw in (op for op in users if isinstance(op, _DRAWS)):
                if not any(isinstance(use.operation, _ACQUIRES) and use.operation.queue == arg
                           for use in dataflow.drawn_ticket_uses(draw.ticket)):
                    raise _refuse(draw, f"stage @{name}: '{draw.name}' on @{queue} draws a "
                                  "ticket no acquire takes: nobody fills or frees its entry, "
                                  "and every ticket after it waits for it")
            reads = reads_per_tile(stage, queue) if side == "input" else 1
            drawn = [op for op in acquires if not _given_by_another_queue(op)]
            relayed = [op for op in acquires if op.ticket is not None and any(
                _is_ticket(v) and v.owner.queue != op.queue  # type: ignore[union-attr]
                for v in dataflow.ticket_sources(op.ticket))]
            if relayed and len(relayed) < len(acquires):
                given = relayed[0]
                raise _refuse(given, f"stage @{name}: '{given.name}' on @{queue} takes the "
                              "ticket of another queue (`at`) where another acquire of the "
                              "kernel draws its own: the queue's counter moves only on draws, "
                              "so a ticket taken `at` is drawn again by the next one (take "
                              "every ticket of a queue one way)")
            if workers > 1 and drawn and reads > 1:
                raise _refuse(drawn[-1], f"stage @{name}: each of its {workers} queue workers "
                              f"draws {reads} tickets of @{queue} for a tile, one at a time: "
                              "two workers holding part of their tiles can wait for each "
                              "other forever (one worker per stage, or one ticket a tile)")
            drawing[side] += [(queue, op) for op in drawn]
    known_block = kernel.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
    divergent = divergent_barrier(kernel, None if known_block is None
                                  else tuple(known_block.get_values()))
    if divergent is not None:  # a worker stuck there holds its tickets, its CTA its slot
        raise _refuse(divergent[0], f"stage @{name}: {divergent[1]}")
    # a kernel without a declared block runs its queue ops as one worker a CTA (queue_workers)
    block_threads = _block_threads(kernel) or 1
    cluster = kernel.attributes.get(CLUSTER_DIMS_ATTR)
    cluster_ctas = math.prod(cluster.get_values()) if cluster is not None else 1
    walk = _TicketWalk(stage, {arg: q for q, arg in zip(inputs + outputs, queue_args,
                                                         strict=True)},
                       workers, kinds.count, block_threads, kinds.threads or block_threads,
                       frozenset(inputs), cluster_ctas, entry_addresses(kernel))
    walk.block(kernel.body.blocks.first, [])
    check_draws_ahead(kernel, walk.refuse)
    check_async_copies(kernel, walk.addresses, walk.names, walk.refuse)
    for side, drawn_on in drawing.items():
        if workers > 1 and len({queue for queue, _ in drawn_on}) > 1:
            (first, _), (second, op) = drawn_on[0], next(
                (q, o) for q, o in drawn_on if q != drawn_on[0][0])
            what = "tickets of one worker's tile would name different tiles of the two" \
                if side == "output" else "the tiles a worker joins would not match"
            raise _refuse(op, f"stage @{name}: each of its {workers} queue workers draws a "
                          f"ticket of @{first} and one of @{second} on its own: {what} "
                          "(another worker may draw between its two); draw one and give it "
                          "to the other (`at`)")
    return _Followed(kernel, walk.names, kinds, ticket_spans(kernel, walk.names, walk.refuse))


def check_launch_tickets(stage: dataflow.StageOp, followed: _Followed,
                         launch_counts: bool = False) -> LaunchTickets | None:
    """The kernel, launched with the stage's CTAs, takes each queue's tickets as often as the
    stage's `tiles` say (the balance is checked on them): a consumer that acquires fewer
    leaves tickets whose entries no one frees, one that acquires more waits forever; the
    counts. Without `tiles` the counts are still the kernel's where it can be counted
    (check_counted_tickets balances them). None where the count is left to the launch: a
    count the kernel's arguments decide, with `launch_counts` or no `tiles` declared."""
    declared = _int_attr(stage, TILES_ATTR)
    name = stage.sym_name.data
    try:
        counts = tickets_per_launch(followed.kernel, stage.num_ctas, followed.kinds.count,
                                    followed.kinds.threads)
    except Unproven as error:
        if launch_counts or declared is None:
            return None
        raise _refuse(error.op, f"stage @{name}: the tickets its kernel takes a launch cannot "
                      f"be counted against its {declared} '{TILES_ATTR}': '{error.op.name}' "
                      f"{error}") from None
    inputs = {r.root_reference.data for r in stage.inputs}
    for queue, queue_name in followed.names.items():
        drawn, acquired = counts.drawn.get(queue, 0), counts.drawn_acquired.get(queue, 0)
        if drawn != acquired:
            raise _refuse(stage, f"stage @{name}: its kernel, launched with "
                          f"{stage.num_ctas} CTA(s), draws {drawn} ticket(s) of "
                          f"@{queue_name} ahead a launch but acquires {acquired} of them: a "
                          "drawn ticket no one takes keeps its entry, and every later ticket "
                          "of the queue waits for it")
        if declared is None:
            continue
        expected = declared * (reads_per_tile(stage, queue_name) if queue_name in inputs
                               else 1)
        taken = counts.acquired.get(queue, 0)
        if taken != expected:
            raise _refuse(stage, f"stage @{name}: its kernel, launched with "
                          f"{stage.num_ctas} CTA(s), acquires {taken} ticket(s) of "
                          f"@{queue_name} a launch, but the stage declares {declared} "
                          f"'{TILES_ATTR}' ({expected} ticket(s)): a launch would "
                          f"{'leave' if taken < expected else 'wait forever for'} "
                          f"{abs(taken - expected)} of them")
    return counts


def _queue_names(refs) -> list[str]:
    return [r.root_reference.data for r in refs]


def check_counted_tickets(pipeline: dataflow.PipelineOp,
                          counted: list[tuple[dataflow.StageOp, _Followed,
                                              LaunchTickets | None]]) -> bool:
    """Each queue's producer kernel fills as many tickets a launch as each consumer kernel
    takes, where the kernels' counts are known (a pipeline whose stages declare no `tiles`
    is balanced on what its kernels do); whether every queue was so balanced."""
    taken: dict[tuple[str, bool], list[tuple[str, int | None]]] = {}
    for stage, followed, counts in counted:
        inputs = set(_queue_names(stage.inputs))
        for arg, queue in followed.names.items():
            count = counts.acquired.get(arg, 0) if counts is not None else None
            taken.setdefault((queue, queue in inputs), []).append((stage.sym_name.data, count))
    balanced = True
    for queue in pipeline.queues:
        name = queue.sym_name.data
        producers, consumers = taken.get((name, False), []), taken.get((name, True), [])
        if not producers or not consumers:
            balanced = False
            continue
        producer, given = producers[0]
        for consumer, count in consumers:
            if given is None or count is None:
                balanced = False
            elif given != count:
                stage = next(s for s in pipeline.stages if s.sym_name.data == consumer)
                raise _refuse(stage, f"queue @{name}: the kernel of stage @{producer} fills "
                              f"{given} tickets per launch but that of stage @{consumer} takes "
                              f"{count}: a launch would "
                              f"{'wait forever for' if count > given else 'leave'} "
                              f"{abs(count - given)} ticket(s)")
    return balanced


def check_depths(pipeline: dataflow.PipelineOp,
                 followed: list[tuple[dataflow.StageOp, _Followed | None]]) -> None:
    """Every ring holds what its two ends may hold at once: N >= P + C - 1, where a worker of
    the producer spans at most P tickets at a wait (from the oldest it holds to the one it
    waits for, `ticket_spans`) and one of a consumer stage at most C.

    Why: the producer waits for ticket v <= a + P - 1 while holding a (so every ticket below
    a is filled); its entry frees once consumers gave back v - N. A consumer holding b (every
    ticket below b given back) waits for an unfilled u <= b + C - 1, so u >= a. Both wait
    forever iff v - N >= b >= a - C + 1, possible iff N <= P + C - 2. A stage of several
    workers on a ring spans one ticket each (a worker there draws nothing while it holds a
    ticket of the queue): between one worker's draws, others draw any number. A kernel not
    followed (none to follow) is counted as a tile takes: one entry, `dataflow.reads` of an
    input."""
    spans: dict[tuple[str, str], int] = {}
    for stage, kernel in followed:
        name = stage.sym_name.data
        workers = 1 if kernel is None or _in_cluster_queues(stage) else \
            kernel.kinds.count * stage.num_ctas
        for queue in (*_queue_names(stage.inputs), *_queue_names(stage.outputs)):
            declared = reads_per_tile(stage, queue) if queue in _queue_names(stage.inputs) \
                else 1
            span = kernel.spans.get(queue, declared) if kernel is not None else declared
            if span > 1 and workers > 1:
                raise _refuse(stage, f"stage @{name}: each of its {workers} queue workers "
                              f"spans {span} tickets of @{queue} at once, but other workers "
                              "draw between its draws: no ring depth bounds what it holds "
                              "(one worker per stage, or one ticket at a time)")
            spans[name, queue] = span
    for queue in pipeline.queues:
        name, entries = queue.sym_name.data, queue.queue_type.num_entries
        producer = next((s for s in pipeline.stages if name in _queue_names(s.outputs)), None)
        consumers = [s for s in pipeline.stages if name in _queue_names(s.inputs)]
        if producer is None or not consumers:
            continue
        held = spans.get((producer.sym_name.data, name), 1)
        consumer = max(consumers, key=lambda s: spans.get((s.sym_name.data, name), 1))
        taken = spans.get((consumer.sym_name.data, name), 1)
        if entries < held + taken - 1:
            raise _refuse(queue, f"queue @{name} has {entries} "
                          f"entr{'y' if entries == 1 else 'ies'}, but a worker of its producer "
                          f"@{producer.sym_name.data} holds up to {held} of its tickets at "
                          f"once and one of its consumer @{consumer.sym_name.data} up to "
                          f"{taken}: it needs at least {held + taken - 1} (producer + "
                          "consumer - 1), else each end can hold the entries the other waits "
                          "for")


def check_joined_tickets(pipeline: dataflow.PipelineOp,
                         followed: list[tuple[dataflow.StageOp, _Followed | None]]) -> None:
    """The inputs a tile joins name the same tiles: ticket t of one is tile t of the other.

    A queue's tickets follow those of the queue they come from: an output given (`at`) an
    input's ticket (a relay), or another output's (a fan-out), names the same tiles; an
    output a single queue worker of its stage draws while it holds its inputs names them in
    the order it takes them (tile k of its first input is ticket k). Any other draw numbers
    tiles in the order the stage's workers come: a worker holding ticket 3 of its input may
    draw ticket 6 of its output. A join then pairs tile t of one input with another tile of
    the other, and where their queues are short the tile a joiner waits for is held up behind
    the one it holds (the queue simulator found a four-stage pipeline so stuck). A join is an
    input taken `at` another input's ticket, or, in a stage of one queue worker, two inputs
    each drawn (in order, so paired by their counts). Stages whose kernels were lowered
    already (not followed) name no stream: their joins were checked before."""
    producer = {queue: stage for stage in pipeline.stages
                for queue in _queue_names(stage.outputs)}
    known: dict[str, tuple[dict[str, str], bool, gpu.FuncOp, dict[SSAValue, str]]] = {}
    for stage, kernel in followed:
        if kernel is not None:
            # a launch of one tile is taken by one worker: the launches run in stream order
            tiles = _int_attr(stage, TILES_ATTR)
            one_worker = min(stage.num_ctas * kernel.kinds.count, tiles or math.inf) == 1
            known[stage.sym_name.data] = (dataflow.given_tickets(stage, kernel.kernel),
                                          one_worker, kernel.kernel, kernel.names)
    streams: dict[str, tuple | None] = {}

    def stream(queue: str) -> tuple | None:
        """What names the queue's tiles: a queue whose tickets name the same tiles has the
        same stream; None where a stage's kernel was not followed."""
        if queue in streams:
            return streams[queue]
        stage = producer[queue]
        name = stage.sym_name.data
        streams[queue] = None  # the graph is acyclic: a guard, not a result
        result: tuple | None = None
        if name in known:
            given, one_worker, _, _ = known[name]
            inputs = _queue_names(stage.inputs)
            source = given.get(queue)
            drawn_inputs = [q for q in inputs if q not in given]
            if source is not None and (source not in inputs
                                       or reads_per_tile(stage, source) == 1):
                result = stream(source)
            elif source is None and one_worker and drawn_inputs and \
                    reads_per_tile(stage, drawn_inputs[0]) == 1:
                result = stream(drawn_inputs[0])
            else:  # drawn in the order the workers come, or a group of tickets a tile
                result = ("drawn", name, None if one_worker else queue, bool(inputs))
        streams[queue] = result
        return result

    for stage in pipeline.stages:
        name = stage.sym_name.data
        if name not in known:
            continue
        given, one_worker, kernel, names = known[name]
        inputs = [q for q in _queue_names(stage.inputs) if reads_per_tile(stage, q) == 1]
        drawn = [q for q in inputs if q not in given]
        pairs = [(q, given[q]) for q in inputs if given.get(q) in inputs]
        if one_worker:
            pairs += [(q, drawn[0]) for q in drawn[1:]]
        for queue, other in pairs:
            mine, theirs = stream(queue), stream(other)
            if mine is None or theirs is None or mine == theirs:
                continue
            op = next((o for o in kernel.walk() if isinstance(o, dataflow.ACQUIRE_OPS)
                       and names.get(o.queue) == queue), stage)
            how = f"takes the ticket of @{other} (`at`)" if given.get(queue) == other else \
                f"draws its tickets in step with @{other}'s (one queue worker)"
            raise _refuse(op, f"stage @{name}: @{queue} {how}, but the two queues' tickets "
                          f"do not name the same tiles: @{other}'s tiles are numbered where "
                          f"{_numbered(theirs)}, @{queue}'s where {_numbered(mine)}; the "
                          "join would pair different tiles and can wait forever behind the "
                          "one it holds (give each queue on the way the ticket of the input "
                          "it comes from, `at`)")


def _numbered(stream: tuple) -> str:
    _, stage, queue, holds = stream
    if not holds:
        return f"@{stage} draws them (a source)"
    if queue is None:
        return f"@{stage}'s one queue worker draws them"
    return (f"@{stage}'s queue workers draw them in the order they come, each holding a tile "
            "of its inputs that need not be the one the ticket names")


def _in_cluster_queues(stage: dataflow.StageOp) -> bool:
    """Whether the stage's queues are all cluster queues (a pipeline's queues are in clusters
    all or none, the dialect's verifier says)."""
    pipeline = stage.parent_op()
    names = {r.root_reference.data for r in (*stage.inputs, *stage.outputs)}
    return isinstance(pipeline, dataflow.PipelineOp) and bool(names) and all(
        q.in_cluster for q in pipeline.queues if q.sym_name.data in names)


def check_cluster_lanes(pipeline: dataflow.PipelineOp,
                        counted: list[tuple[dataflow.StageOp, _Followed, LaunchTickets]]
                        ) -> None:
    """In clusters each queue is a ring per cluster: the producer's CTA of cluster c must fill
    as many tickets a launch as the consumer's CTA of cluster c takes (the stages' totals
    balancing is not enough: one cluster's consumer would wait forever while another's
    producer spins on a full ring). Tickets on both sides: a consumer tile of `dataflow.reads`
    r acquires r of them."""
    lanes: dict[str, dict[bool, tuple[str, tuple[int, ...]]]] = {}
    for stage, followed, counts in counted:
        inputs = {r.root_reference.data for r in stage.inputs}
        for arg, queue in followed.names.items():
            per_cta = counts.acquired_by_cta.get(arg, (0,) * stage.num_ctas)
            lanes.setdefault(queue, {})[queue in inputs] = (stage.sym_name.data, per_cta)
    for queue, sides in lanes.items():
        if len(sides) < 2:
            continue
        (producer, given), (consumer, taken) = sides[False], sides[True]
        for cluster, (g, t) in enumerate(zip(given, taken, strict=True)):
            if g != t:
                raise _refuse(pipeline, f"cluster queue @{queue}: in cluster {cluster}, stage "
                              f"@{producer} fills {g} ticket(s) a launch but @{consumer} "
                              f"takes {t}: a launch would "
                              f"{'wait forever for' if t > g else 'leave'} {abs(t - g)}")


def _constant(value: SSAValue) -> int | None:
    if isinstance(value, OpResult) and isinstance(value.owner, arith.ConstantOp) and \
            isinstance(value.owner.value, IntegerAttr):
        return value.owner.value.value.data
    return None


def _same(a: SSAValue, b: SSAValue) -> bool:
    return a == b or (_constant(a) is not None and _constant(a) == _constant(b))


_NOT_NEGATIVE_IDS = (gpu.BlockIdOp, gpu.ThreadIdOp, gpu.GridDimOp, gpu.BlockDimOp,
                     gpu.LaneIdOp)
_NOT_NEGATIVE_OF_NOT_NEGATIVE = (arith.AddiOp, arith.MuliOp, arith.DivUIOp, arith.RemUIOp,
                                 arith.MinUIOp, arith.MaxUIOp)


def _not_negative(value: SSAValue) -> bool:
    """Whether an index `value` is known not to be negative from how it is made: a constant
    (below 2^32, so that sums of a few stay far from wrapping), a block or thread index or
    extent, sums, products, unsigned quotients, remainders, minima and maxima of such, a signed
    maximum with one such, a select of two, a loop's induction variable from one."""
    if not isinstance(value.type, IndexType):
        return False  # a narrower integer wraps sooner (and an i1's true is -1 signed)
    owner = value.owner
    if isinstance(value, BlockArgument):
        # a loop's induction variable runs up from its lower bound (scf.for's step is
        # positive)
        loop = owner.parent_op()
        return isinstance(loop, scf.ForOp) and value.index == 0 and _not_negative(loop.lb)
    if isinstance(owner, arith.ConstantOp):
        constant = _constant(value)
        return constant is not None and 0 <= constant < 1 << 32
    if isinstance(owner, _NOT_NEGATIVE_IDS):
        return True
    if isinstance(owner, arith.MaxSIOp | arith.MaxUIOp):
        return any(_not_negative(operand) for operand in owner.operands)
    if isinstance(owner, arith.SelectOp):
        return _not_negative(owner.lhs) and _not_negative(owner.rhs)
    return isinstance(owner, _NOT_NEGATIVE_OF_NOT_NEGATIVE) and \
        all(_not_negative(operand) for operand in owner.operands)


def _less_than(cond: SSAValue, lhs: SSAValue, rhs: SSAValue, loop: scf.ForOp) -> bool:
    """Whether `cond` is `lhs < rhs` (slt, or rhs > lhs: sgt; ult and ugt where the loop
    starts at a value known not to be negative, so that its values compare alike signed or
    not)."""
    op = cond.owner
    if not isinstance(op, arith.CmpiOp):
        return False
    predicate = op.predicate.value.data
    if predicate in (6, 8) and not _not_negative(loop.lb):
        return False
    return (predicate in (2, 6) and _same(op.lhs, lhs) and _same(op.rhs, rhs)) or \
        (predicate in (4, 8) and _same(op.lhs, rhs) and _same(op.rhs, lhs))


def _next_step(value: SSAValue, loop: scf.ForOp) -> bool:
    """Whether `value` is the loop's induction variable plus its step."""
    op = value.owner
    iv = loop.body.block.args[0]
    return isinstance(op, arith.AddiOp) and any(
        a == iv and _same(b, loop.step) for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)))


def _drawn_when(value: SSAValue, queue: SSAValue, holds: Callable[[SSAValue], bool]) -> bool:
    """Whether `value` is a ticket drawn on `queue` wherever `holds` says a draw is due:
    a draw itself where a draw is always due (`holds(None)`), or an scf.if on a condition
    `holds` accepts whose then side yields such a draw (its else side a placeholder)."""
    owner = value.owner
    if isinstance(value, OpResult) and isinstance(owner, _DRAWS):
        return owner.queue == queue and holds(None)
    if not (isinstance(value, OpResult) and isinstance(owner, scf.IfOp) and holds(owner.cond)):
        return False
    last = owner.true_region.blocks.first.last_op if owner.true_region.blocks else None
    drawn = last.operands[value.index] if isinstance(last, scf.YieldOp) else None
    return drawn is not None and isinstance(drawn, OpResult) and \
        isinstance(drawn.owner, _DRAWS) and drawn.owner.queue == queue and \
        drawn.owner.parent_block() is owner.true_region.blocks.first


def check_draws_ahead(kernel: gpu.FuncOp, refuse: Callable[[Operation, str], OpDiagnostic]
                      ) -> None:
    """A ticket drawn ahead and carried by a loop to the iteration that acquires it is drawn
    exactly when that iteration runs: the first before the loop where the loop runs (a
    draw, with constant bounds that run it, or an scf.if on lb < ub), each next one in the
    body where a next iteration runs (an scf.if on iv + step < ub). A draw in every
    iteration leaves the last one's ticket never acquired (every later ticket of its queue
    waits for it); a guard that misses an iteration leaves it acquiring the placeholder."""
    for loop in [op for op in kernel.walk() if isinstance(op, scf.ForOp)]:
        body = loop.body.block
        drawn = _drawn_carried(body)  # not a held ticket carried on (a relay's)
        for index, carried in enumerate(body.args[1:]):
            acquires = [use.operation for use in dataflow.drawn_ticket_uses(carried)
                        if isinstance(use.operation, _ACQUIRES)
                        and use.operation.ticket is not None]
            if not acquires or carried not in drawn:
                continue
            init = loop.iter_args[index]
            last = body.last_op
            yielded = last.operands[index] if isinstance(last, scf.YieldOp) else None
            queue = acquires[0].queue
            lb, ub = _constant(loop.lb), _constant(loop.ub)
            runs = lb is not None and ub is not None and lb < ub

            def first(cond: SSAValue | None, loop: scf.ForOp = loop, runs: bool = runs) -> bool:
                return runs if cond is None else _less_than(cond, loop.lb, loop.ub, loop)

            def following(cond: SSAValue | None, loop: scf.ForOp = loop) -> bool:
                op = cond.owner if cond is not None else None
                return isinstance(op, arith.CmpiOp) and any(
                    _next_step(value, loop) and _less_than(cond, value, loop.ub, loop)
                    for value in (op.lhs, op.rhs))

            if not _drawn_when(init, queue, first) or (
                    isinstance(init, OpResult) and init.owner.parent_block() is not
                    loop.parent_block()):
                raise refuse(acquires[0], f"'{acquires[0].name}' takes a ticket the loop "
                             "carries, but the ticket the first iteration takes is not drawn "
                             "exactly where the loop runs (a draw before the loop under "
                             "`lb < ub`, or unguarded where the bounds make it run)")
            if yielded is None or not _drawn_when(yielded, queue, following):
                raise refuse(acquires[0], f"'{acquires[0].name}' takes a ticket the loop "
                             "carries, but the next iteration's is not drawn exactly where "
                             "one follows (a draw under `iv + step < ub`): a draw in every "
                             "iteration leaves the last one's never acquired, and every later "
                             "ticket of the queue waits for it")


_COPY_GROUPS = {tile.CpAsyncOp: "cp.async", tile.BulkStoreOp: "bulk",
                nvvm.CpAsyncOp: "cp.async", nvvm.CpAsyncBulkStoreOp: "bulk"}
"""Asynchronous copies that complete in a thread's groups: cp.async (global to shared, closed
by tile.cp_async_commit, waited by tile.cp_async_wait) and bulk stores (shared to global,
closed by tile.tma_store_commit, their writes waited by tile.tma_store_wait ... writes)."""
_COMMITS = {tile.CpAsyncCommitOp: "cp.async", tile.TmaStoreCommitOp: "bulk",
            nvvm.CpAsyncCommitGroupOp: "cp.async", nvvm.CpAsyncBulkCommitGroupOp: "bulk"}
_GROUP_WAITS = {tile.CpAsyncWaitOp: "cp.async", nvvm.CpAsyncWaitGroupOp: "cp.async",
                nvvm.CpAsyncBulkWaitGroupOp: "bulk"}
"""Waits that complete a group's copies (tile.tma_store_wait completes a bulk store's writes
only with `writes`; nvvm's `.read` form never)."""
_ASYNC_COPIES = (*_COPY_GROUPS, tile.BulkLoadOp, nvvm.CpAsyncBulkLoadOp)
"""A bulk load completes on its transaction barrier: tile.bulk_load at a tile.mbarrier_wait
on the same element; nvvm's, whose waits are loops of try_wait, at none the check follows."""
MAX_GROUPS_COUNTED = 16
"""Groups committed after a copy's, counted up to this (a wait names at most 7 pending)."""
_BULK_READS = (*tile.BULK_READS, nvvm.CpAsyncBulkLoadOp)
"""The copies that read an entry in the async proxy (tile.BULK_READS and nvvm's 1-D bulk load:
a tensor map is no entry, so of these only the 1-D copies reach one)."""
_BULK_WRITES = (*tile.BULK_WRITES, nvvm.CpAsyncBulkStoreOp)
"""The copies that write an entry in the async proxy."""


def _proxy_fence(op: Operation) -> bool:
    """A fence that orders the thread's generic accesses of global memory with its bulk
    copies': `tile.fence_proxy_async global`, nvvm's `fence.proxy.async` of global or of every
    state space."""
    if isinstance(op, tile.FenceProxyAsyncOp):
        return op.global_memory is not None
    return isinstance(op, nvvm.FenceProxyAsyncOp) and \
        op.space.data in (nvvm.ProxySpace.GLOBAL, nvvm.ProxySpace.ALL)


IN_FLIGHT, LANDED, ACQUIRED = 0, 1, 2
"""What an `_InFlight` says about its entry on the thread's path: a copy of it still in flight;
a bulk write of it complete, with no proxy fence since (its release would not publish it); its
ticket acquired, with no proxy fence since (a bulk copy of it would not be ordered after the
acquire). The last two are followed only in kernels that bulk-copy entries."""


@dataclass(frozen=True)
class _InFlight:
    """An asynchronous copy touching the entry of (queue, ticket), the ticket as named where
    the walk is (STALE past the iteration or branch that held it); with `kind` LANDED the bulk
    write `copy` complete and not fenced yet, with ACQUIRED the acquire `copy` not fenced yet."""

    copy: Operation
    queue: SSAValue
    ticket: SSAValue | None
    kind: int = IN_FLIGHT


class _AsyncCopies:
    """Which asynchronous copies of entries a thread may still have in flight at each op of a
    kernel (a forward walk of its structured control flow: the join of a branch's sides, a
    loop's iterations to a fixpoint), for `check_async_copies`. A copy is complete after a
    wait that covers it on the thread's path: for a group copy, a wait for at most N pending
    groups once N + 1 groups were committed from the one that holds it; for a bulk load, a
    wait on the transaction barrier element its bytes complete (the phase the wait names is
    the kernel's to get right, as for every mbarrier wait). Where a loop guards a copy with
    `iv + c < ub`, or a copy before it with `c < ub`, the iterations that follow it are counted
    before it may leave the loop.

    In a kernel that bulk-copies entries, the same walk follows the proxy fences the bulk
    copies need (`check_async_copies` says which): the tickets acquired with no proxy fence
    since (ACQUIRED, checked at each bulk copy of their entries) and the bulk writes complete
    with no proxy fence since (LANDED, checked at the release)."""

    def __init__(self, kernel: gpu.FuncOp, addresses: dict[SSAValue, set],
                 refuse: Callable[[Operation, str], OpDiagnostic], names: dict[SSAValue, str]):
        self.addresses, self.refuse, self.names = addresses, refuse, names
        # what the walk looks at: the ops that copy an entry, complete or count a copy, or
        # release a ticket, and the ops around them (the rest cannot change what is in flight)
        self.copies: dict[Operation, set] = {}
        self.relevant: set[Operation] = set()
        self.holds_copies: set[Operation] = set()
        for op in kernel.walk():
            touched = _touches_entries(op, addresses) if isinstance(op, _ASYNC_COPIES) \
                else set()
            if touched:
                self.copies[op] = touched
        # only a kernel that bulk-copies an entry follows its acquires and proxy fences
        self.bulk = any(isinstance(op, (*_BULK_READS, *_BULK_WRITES)) for op in self.copies)
        for op in kernel.walk():
            touched = op in self.copies
            starts = touched or (self.bulk and isinstance(op, _ACQUIRES))
            if starts or isinstance(op, (*_COMMITS, *_GROUP_WAITS, tile.TmaStoreWaitOp,
                                         tile.MBarrierWaitOp, *_RELEASES)) \
                    or (self.bulk and _proxy_fence(op)):
                around: Operation | None = op
                while around is not None and around not in self.relevant:
                    self.relevant.add(around)
                    around = around.parent_op()
            if starts:
                around = op
                while around is not None and around not in self.holds_copies:
                    self.holds_copies.add(around)
                    around = around.parent_op()

    def block(self, block: Block, state: dict[_InFlight, int], issue: bool = True
              ) -> dict[_InFlight, int]:
        state = dict(state)
        for op in block.ops:
            if op in self.relevant and (state or (issue and op in self.holds_copies)):
                state = self.op(op, state, issue)
        return state

    def op(self, op: Operation, state: dict[_InFlight, int], issue: bool
           ) -> dict[_InFlight, int]:
        if isinstance(op, _ASYNC_COPIES):
            if issue:
                if self.bulk and isinstance(op, (*_BULK_READS, *_BULK_WRITES)):
                    self.check_acquire_fence(op, state)
                for queue, ticket in self.copies.get(op, ()):
                    state[_InFlight(op, queue, ticket)] = 0
            return state
        if isinstance(op, _ACQUIRES):
            if issue and self.bulk:
                state[_InFlight(op, op.queue, _ticket_identity(op.slot), ACQUIRED)] = 0
            return state
        if _proxy_fence(op):  # the acquires before it order the bulk copies after it, and the
            # bulk writes complete before it are published by the releases after it
            return {k: n for k, n in state.items() if k.kind == IN_FLIGHT}
        if isinstance(op, tuple(_COMMITS)):
            group = _COMMITS[type(op)]
            return {k: min(n + (k.kind == IN_FLIGHT and _COPY_GROUPS.get(type(k.copy)) == group),
                           MAX_GROUPS_COUNTED)
                    for k, n in state.items()}
        if isinstance(op, (tile.TmaStoreWaitOp, *_GROUP_WAITS)):
            group = _GROUP_WAITS.get(type(op), "bulk")
            if isinstance(op, tile.TmaStoreWaitOp) and op.writes is None:
                return state  # the sources read, the writes not complete
            pending = (op.n if isinstance(op, nvvm.CpAsyncWaitGroupOp
                                          | nvvm.CpAsyncBulkWaitGroupOp) else op.pending).value.data
            return self.completed(state, lambda k, n: _COPY_GROUPS.get(type(k.copy)) == group
                                  and n >= pending + 1)
        if isinstance(op, tile.MBarrierWaitOp):
            return self.completed(state, lambda k, n: _completes(op, k.copy))
        if isinstance(op, _RELEASES):
            if issue:
                self.check_release(op, state)
            return state
        if isinstance(op, scf.IfOp):
            return self.branch(op, state, issue)
        if isinstance(op, scf.ForOp):
            return self.loop(op, state, issue)
        if isinstance(op, scf.WhileOp):
            return self.while_loop(op, state, issue)
        if isinstance(op, scf.YieldOp | scf.ConditionOp):
            return state
        for region in op.regions:  # any other region: run any number of times
            for inner in region.blocks:
                state = self.fixpoint(lambda s, inner=inner: self.block(inner, s, issue), state)
        return state

    def completed(self, state: dict[_InFlight, int],
                  done: Callable[[_InFlight, int], bool]) -> dict[_InFlight, int]:
        """`state` after a wait that completes the copies in flight it is `done` for: gone,
        but a bulk write's, LANDED until a proxy fence (where the kernel follows them)."""
        after: dict[_InFlight, int] = {}
        for k, n in state.items():
            if k.kind != IN_FLIGHT or not done(k, n):
                after[k] = n
            elif self.bulk and isinstance(k.copy, _BULK_WRITES):
                after[_InFlight(k.copy, k.queue, k.ticket, LANDED)] = 0
        return after

    def check_acquire_fence(self, op: Operation, state: dict[_InFlight, int]) -> None:
        """A bulk copy of an entry whose ticket was acquired, on the thread's path, with no
        proxy fence since: the generic acquire does not order the async proxy's accesses."""
        for queue, ticket in sorted(self.copies.get(op, ()),
                                    key=lambda e: self.names.get(e[0], "")):
            acquire = next((k.copy for k in state if k.kind == ACQUIRED and k.queue == queue
                            and k.ticket == ticket), None)
            if acquire is None:
                continue
            if isinstance(op, _BULK_READS):
                what, risk = "reads", "may read the bytes the entry held before the acquire"
            else:
                what, risk = "writes", ("may write before the accesses the acquire waited for "
                                        "(the entry's previous round) are done")
            raise self.refuse(op, f"'{op.name}' {what} the entry of a ticket of "
                              f"@{self.names.get(queue, '?')} in the async proxy with no "
                              f"tile.fence_proxy_async global since the '{acquire.name}'"
                              f"{_where(acquire)} that takes it: the generic acquire does not "
                              f"order the async proxy, so the copy {risk} (put a "
                              "tile.fence_proxy_async global between the acquire and the "
                              "copy, in the thread issuing the copy)")

    def check_release(self, op: Operation, state: dict[_InFlight, int]) -> None:
        ticket = _ticket_identity(op.slot)
        flying = sorted((k for k in state if k.kind == IN_FLIGHT and k.queue == op.queue
                         and k.ticket == ticket), key=lambda k: k.copy.name)
        if not flying:
            landed = sorted((k for k in state if k.kind == LANDED and k.queue == op.queue
                             and k.ticket == ticket), key=lambda k: k.copy.name)
            if landed:
                copy = landed[0].copy
                raise self.refuse(op, f"'{op.name}' gives back the ticket of "
                                  f"@{self.names.get(op.queue, '?')} after the bulk write "
                                  f"'{copy.name}'{_where(copy)} of its entry completed, with "
                                  "no tile.fence_proxy_async global since: the generic release "
                                  "does not publish the async proxy's writes, so the entry's "
                                  "next holder may see its previous bytes (put a "
                                  "tile.fence_proxy_async global after the tile.tma_store_wait "
                                  "... writes, in the thread that issued the copy, before the "
                                  "release)")
            return
        copy = flying[0].copy
        how = {"cp.async": "tile.cp_async_wait after its tile.cp_async_commit",
               "bulk": "tile.tma_store_wait ... writes after its tile.tma_store_commit"
               }.get(_COPY_GROUPS.get(type(copy), ""), "a tile.mbarrier_wait on the "
                                                       "barrier its bytes complete")
        raise self.refuse(op, f"'{op.name}' gives back the ticket of "
                          f"@{self.names.get(op.queue, '?')} while the asynchronous copy "
                          f"'{copy.name}'{_where(copy)} of its entry may still be in flight: "
                          f"the next round's worker would be at the same bytes (wait for it "
                          f"first: {how})")

    def branch(self, op: scf.IfOp, state: dict[_InFlight, int], issue: bool
               ) -> dict[_InFlight, int]:
        sides = []
        for region in (op.true_region, op.false_region):
            if not region.blocks:
                sides.append(state)
                continue
            out = self.block(region.blocks.first, state, issue)
            last = region.blocks.first.last_op
            sides.append(_renamed(out, last, 0) if isinstance(last, scf.YieldOp) else out)
        return _join(*sides)

    def loop(self, op: scf.ForOp, state: dict[_InFlight, int], issue: bool
             ) -> dict[_InFlight, int]:
        body = op.body.block
        last = body.last_op
        entry = _renamed(state, op, 0)

        def iteration(head: dict[_InFlight, int]) -> dict[_InFlight, int]:
            out = self.block(body, head, issue)
            return _renamed(out, last, 0) if isinstance(last, scf.YieldOp) else out

        head = self.fixpoint(iteration, entry)
        ended = self.block(body, head, issue)
        leaving = _join(_renamed(state, op, 1),
                        _renamed(ended, last, 1) if isinstance(last, scf.YieldOp) else ended)
        # a copy followed by iterations that must run is complete before it can leave (a
        # bulk write's LANDED unless those iterations fence it)
        for key, commits in list(leaving.items()):
            runs = self.iterations_after(op, key.copy) if key.kind == IN_FLIGHT else 0
            if not runs:
                continue
            after = self.after_iterations(body, key, commits, runs)
            if key not in after:
                del leaving[key]
                leaving = _join(leaving, after)
        return leaving

    def iterations_after(self, loop: scf.ForOp, copy: Operation) -> int:
        """Iterations of `loop` known to run after the copy's: `c` where the copy in the body
        is guarded by `iv + c < ub`; before the loop, its count from constant bounds, or
        `c - lb + 1` where the copy is guarded by `c < ub` with a constant lb."""
        iv = loop.body.block.args[0]
        inside = loop.is_ancestor(copy)
        lb, ub, step = _constant(loop.lb), _constant(loop.ub), _constant(loop.step)
        if not inside and None not in (lb, ub, step) and step > 0 and ub > lb:
            return min(-(-(ub - lb) // step), MAX_GROUPS_COUNTED + 1)
        guard = copy.parent_op()
        while guard is not None and guard is not loop:
            if isinstance(guard, scf.IfOp) and guard.true_region.is_ancestor(copy):
                cond = guard.cond.owner
                for value in (cond.lhs, cond.rhs) if isinstance(cond, arith.CmpiOp) else ():
                    if not _less_than(guard.cond, value, loop.ub, loop):
                        continue
                    ahead = _ahead_of(value, iv) if inside else None
                    if inside and ahead is not None and _constant(loop.step) == 1:
                        return min(ahead, MAX_GROUPS_COUNTED + 1)
                    if not inside and lb is not None and _constant(value) is not None \
                            and step == 1:
                        return min(_constant(value) - lb + 1, MAX_GROUPS_COUNTED + 1)
            guard = guard.parent_op()
        return 0

    def after_iterations(self, body: Block, key: _InFlight, commits: int, runs: int
                         ) -> dict[_InFlight, int]:
        """What is left of the copy after `runs` more iterations (no copy issued nor ticket
        acquired in them: only its own groups, waits and proxy fences are followed): `key`
        itself where it may still be in flight."""
        state = {key: commits}
        for _ in range(runs):
            state = self.block(body, state, issue=False)
            if not state:
                break
        return state

    def while_loop(self, op: scf.WhileOp, state: dict[_InFlight, int], issue: bool
                   ) -> dict[_InFlight, int]:
        before, after = op.before_region.blocks.first, op.after_region.blocks.first
        condition, yielded = before.last_op, after.last_op

        def iteration(head: dict[_InFlight, int]) -> dict[_InFlight, int]:
            out = self.block(before, head, issue)
            out = _renamed(out, condition, 0) if isinstance(condition, scf.ConditionOp) else out
            out = self.block(after, out, issue)
            return _renamed(out, yielded, 0) if isinstance(yielded, scf.YieldOp) else out

        head = self.fixpoint(iteration, _renamed(state, op, 0))
        leaving = self.block(before, head, issue)
        return _renamed(leaving, condition, 1) if isinstance(condition, scf.ConditionOp) \
            else leaving

    @staticmethod
    def fixpoint(step: Callable[[dict], dict], state: dict[_InFlight, int]
                 ) -> dict[_InFlight, int]:
        """The join of `state` and every state `step` reaches from it, repeatedly (finite:
        copies only join, group counts only fall)."""
        head = dict(state)
        while True:
            grown = _join(head, step(head))
            if grown == head:
                return head
            head = grown


def _join(*states: dict[_InFlight, int]) -> dict[_InFlight, int]:
    """Copies in flight on any path, each with the fewest groups committed after it."""
    joined: dict[_InFlight, int] = {}
    for state in states:
        for key, commits in state.items():
            joined[key] = min(commits, joined.get(key, commits))
    return joined


def _renamed(state: dict[_InFlight, int], op: Operation, kind: int) -> dict[_InFlight, int]:
    """`state` past `op` (a yield, a loop's entry or exit): each ticket as named on the other
    side (`_ticket_handed_on`: the iteration argument or result that carries it, STALE where
    the iteration or branch that held it ends)."""
    handed = _handed_to(op)
    return _join(*({_InFlight(k.copy, k.queue, _ticket_handed_on(k.ticket, op, handed, kind),
                              k.kind): n} for k, n in state.items())) if state else {}


def _ahead_of(value: SSAValue, iv: SSAValue) -> int | None:
    """c where `value` is `iv + c` for a constant c >= 1."""
    op = value.owner
    if not isinstance(op, arith.AddiOp):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if a == iv and (_constant(b) or 0) >= 1:
            return _constant(b)
    return None


def _completes(wait: tile.MBarrierWaitOp, copy: Operation) -> bool:
    """Whether a wait on a transaction barrier is one the bulk load's bytes complete: the
    same barrier array and element."""
    return isinstance(copy, tile.BulkLoadOp) and wait.bars == copy.bars and \
        len(wait.indices) == len(copy.bar_indices) and \
        all(_same(a, b) for a, b in zip(wait.indices, copy.bar_indices, strict=True))


def _where(op: Operation) -> str:
    """` (at line L)` where the op came from a source with locations."""
    location = location_of(op)
    return f" (at line {location.line})" if location is not None else ""


def check_async_copies(kernel: gpu.FuncOp, addresses: dict[SSAValue, set],
                       names: dict[SSAValue, str],
                       refuse: Callable[[Operation, str], OpDiagnostic]) -> None:
    """No ticket is released while an asynchronous copy of its entry (a cp.async or bulk load
    reading it, a bulk store writing it) may still be in flight on the releasing thread's
    path (`_AsyncCopies`): issued while the ticket was held, it would read or write the entry
    after the next round's worker took it. And a bulk copy of an entry (the async proxy) is
    fenced as the generic acquire and release need (the module docstring's rules 1-4): a
    `tile.fence_proxy_async global` after the acquire of its ticket and before the copy, and
    for a bulk write one after its completion and before the release, on every path of the
    thread that issues it. A refusal names the copy (a fence missing after the acquire) or the
    release (after the completion)."""
    walk = _AsyncCopies(kernel, addresses, refuse, names)
    if walk.copies:
        walk.block(kernel.body.blocks.first, {})


def _given_by_another_queue(op: Operation) -> bool:
    """An acquire whose ticket is another queue's (not drawn on its own queue)."""
    if op.ticket is None:
        return False
    return not any(_is_ticket(v) and isinstance(v.owner, _DRAWS) and v.owner.queue == op.queue
                   for v in dataflow.ticket_sources(op.ticket))


def check_cluster_queue_ops(module: Operation, pipeline: dataflow.PipelineOp) -> None:
    """Each stage kernel uses its cluster queues as they allow (one worker a CTA at each end,
    tickets in acquisition order, entries by generic address:
    `dataflow.cluster_queue_refusal`), in a block of whole warps (a warp arrives for its
    lanes)."""
    in_cluster = {q.sym_name.data for q in pipeline.queues if q.in_cluster}
    for stage in pipeline.stages:
        kernel = SymbolTable.lookup_symbol(module, stage.kernel)
        if not isinstance(kernel, gpu.FuncOp) or not kernel.body.blocks:
            continue
        args = [a for a in kernel.body.blocks.first.args
                if isinstance(a.type, dataflow.QueueType)]
        names = [r.root_reference.data for r in (*stage.inputs, *stage.outputs)]
        threads = _block_threads(kernel)
        for arg, queue in zip(args, names):
            if queue not in in_cluster:
                continue
            if threads is None or threads % SM_90.warp_size:
                raise _refuse(stage, f"stage @{stage.sym_name.data}: cluster queue @{queue}'s "
                              "barriers count the warps of a block: its kernel declares a "
                              "block of whole warps (gpu.known_block_size)")
            for use in list(arg.uses):
                why = dataflow.cluster_queue_refusal(use.operation, queue)
                if why is not None:
                    raise _refuse(use.operation, f"stage @{stage.sym_name.data}: {why}")


def _block_threads(kernel: gpu.FuncOp) -> int | None:
    """Threads of the kernel's block (gpu.known_block_size), None where it declares none."""
    block = kernel.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
    if block is None:
        return None
    sizes = tuple(block.get_values())
    if min(sizes, default=0) < 1:
        raise _refuse(kernel, f"kernel @{kernel.sym_name.data}: {KNOWN_BLOCK_SIZE_ATTR} "
                      f"{list(sizes)} has a dimension below 1: a block has threads")
    return math.prod(sizes)


@dataclass(frozen=True)
class VerifyPipelinePass(ModulePass):
    """Prove every dataflow.pipeline co-resident and deadlock-free, or refuse it."""

    name = PASS

    sms: int = 132
    arch: str = "sm_90"
    # False: the queues and the kernels' tickets only, co-residency left to the launch, and
    # the tickets a launch to its arguments where the stages declare no `tiles` or a kernel's
    # count depends on them (the compile driver's check of a hand-written pipeline, whose
    # kernels' resources are not known yet: one persistent kernel is launched cooperatively,
    # resident or refused)
    residency: bool = True

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
            # kernels are named from the module around the pipeline (a nested one: its own)
            scope = pipeline.parent_op() or op
            resident = "co-resident: left to the launch"
            if pipeline.clustered:
                check_cluster_queue_ops(scope, pipeline)
            if self.residency:
                residency = [stage_residency(scope, s, self.arch) for s in stages]
                fits = co_residency(residency, self.sms) if not pipeline.clustered else \
                    cluster_residency(Residency(len(stages),
                                                min(r.blocks_per_sm for r in residency)))
                if not fits:
                    per_stage = ", ".join(f"@{s.sym_name.data} {r.blocks} x 1/"
                                          f"{r.blocks_per_sm} SM"
                                          for s, r in zip(stages, residency))
                    raise _refuse(pipeline, f"pipeline @{pipeline.sym_name.data} cannot run: "
                                  f"{fits.reason} ({per_stage}); a CTA spinning on a queue "
                                  "holds the slot its producer needs")
                resident = f"co-resident: {fits.reason}"
            tickets = check_tickets(pipeline, launch_counts=not self.residency)
            # every kernel's discipline first: the counts below assume it
            followed = [(stage, check_kernel_tickets(scope, stage)) for stage in stages]
            unfollowed = next((stage for stage, kernel in followed if kernel is None
                               and (stage.inputs.data or stage.outputs.data)), None)
            if unfollowed is not None:
                if VERIFIED_ATTR in pipeline.attributes:
                    continue  # proved before its kernels were lowered: that proof stands
                raise _refuse(unfollowed, f"stage @{unfollowed.sym_name.data}: its kernel "
                              f"{unfollowed.kernel} does not take its queues as queue "
                              "arguments (lowered already, or not a gpu.func with a body), so "
                              "the tickets it takes cannot be followed: dataflow-verify proves "
                              "a pipeline before convert-dataflow-to-nvvm lowers its kernels")
            check_joined_tickets(pipeline, followed)
            check_depths(pipeline, followed)
            counted = [(stage, kernel, check_launch_tickets(stage, kernel,
                                                            launch_counts=not self.residency))
                       for stage, kernel in followed if kernel is not None]
            if check_counted_tickets(pipeline, counted) and tickets.startswith(LAUNCH_TICKETS):
                tickets = f"tickets balanced on {len(pipeline.queues)} queue(s), as its " \
                    "kernels take them"
            if not all(counts is not None for _, _, counts in counted) and \
                    not tickets.startswith(LAUNCH_TICKETS):
                tickets = f"{LAUNCH_TICKETS} ({len(pipeline.queues)} queue(s))"
            elif pipeline.clustered and all(counts is not None for _, _, counts in counted):
                check_cluster_lanes(pipeline, counted)  # type: ignore[arg-type]
                tickets += ", in every cluster"
            pipeline.attributes[VERIFIED_ATTR] = StringAttr(f"{resident}; {tickets}")
