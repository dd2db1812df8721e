"""The queue-bandwidth experiment of Kitsune's Fig. 5 as a dataflow pipeline.

`pairs` producer CTAs fill entries of one queue and `pairs` consumer CTAs drain them; every CTA
moves `iters` payloads of `payload_bytes`, in 16-byte words (i128: `ld/st.global.v2.b64`). A
producer writes word j of ticket t as `(t << 40) + j` (no source read, so the bytes measured are
the queue's); a consumer adds every word it reads into `unroll` accumulators (modulo 2^128) and
writes them to `out` at the end, so the host can check that every ticket arrived exactly once,
after its producer wrote it (a read of an earlier round changes the sum).

`synchronized=False` gives the same transfers without the queue: CTA c's iteration i writes (and
its partner reads) word-for-word the same amount in ring slot `c + pairs × (i mod depth)` of a
plain buffer, with no tickets, spins or barriers, launched the same way (a pipeline without
queues): what the synchronization costs is the difference. Its consumers read the ring cached
at L2 only (`tile.load_l2`: the same 16-byte loads), as a synchronized consumer's loads after
its acquire find no line in L1: plain loads met the lines of the slot's previous round in their
SM's L1 (on an H100, 77d3ca7, 21.6 TB/s "unsynchronized" at 16 KB with two workers a CTA,
fourteen times the copy rate).

`workers=W` runs W queue workers a CTA (`threads N` on the queue ops, N = `threads`): each group
of N threads draws, fills (or drains) and releases tickets of its own, so one worker's round
trips to L2 (the ticket's atomic, the spin on its entry, the release) overlap another's payload.
`draw_ahead=True` has a worker draw its next ticket (`dataflow.draw_empty` / `draw_full`) right
after it acquires the current one, under the guard `i + 1 < iters` that dataflow-verify holds
draws ahead to, so the atomic's round trip overlaps the payload too. Unsynchronized, worker w of
CTA c uses ring slot `c W + w + pairs W (i mod depth)`.

`transport="cluster"` keeps the queue in distributed shared memory (`dataflow.queue @q cluster`):
producer CTA c and consumer CTA c share cluster c and its ring of `depth` entries in the
consumer's shared memory; the producer's threads store the words straight into it (generic
stores through the cluster's window), so a payload never goes to L2. A ticket is a cluster's
own, 0 to iters - 1 at every launch (`run_checksum`).

`transport="bulk"` moves each payload with one bulk copy (sm_90) instead of the threads' 16-byte
accesses, through a staging buffer in shared memory (so a payload is at most 64 KiB): a
producer's threads write the ticket's words there, fence them for the async proxy and meet at
a barrier; its first thread stores the buffer into the entry (`tile.bulk_store`) and waits for
the writes before the release. A consumer's first thread loads the entry into the buffer
(`tile.bulk_load`, completing on a transaction barrier) after the acquire; every thread waits
on the barrier (phase parity: the iteration's) and adds the words as before. Proxy fences of
global memory order the generic acquire before the copy and the copy's writes before the
generic release. With one copy a CTA has the whole payload in flight, where the threads have
`threads × unroll × 16` bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import NamedTuple

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from tilesync.compat.op_templates import TEMPLATES
from tilesync.contract import (
    GENERIC_ADDRESS_SPACE,
    MIN_BLOCKS_PER_SM_ATTR,
    SHARED_ADDRESS_SPACE,
    SM_90,
)
from tilesync.dialects import dataflow
from tilesync.dialects import tile as tl
from tilesync.kernels.builder import BlockBuilder
from tilesync.kernels.config import H100_SMS
from tilesync.kernels.gemm import named_args, shared_global

WORD_BYTES = 16  # one i128: a 16-byte access per thread
TRANSPORTS = ("threads", "bulk", "cluster")
BULK_MAX_PAYLOAD = 64 << 10  # the bulk transport's staging buffer, in shared memory
CLUSTER_MAX_RING = 192 << 10  # a cluster queue's ring, in the consumer's shared memory
MODULE = "queue_bench"  # the kernels' gpu.module
PIPELINE = "fig5"

_I128 = IntegerType(128)
_INDEX = IndexType()
_OUT_TYPE = MemRefType(_I128, [DYNAMIC_INDEX])  # `out` (and an unsynchronized `ring`)
_X = gpu.DimensionAttr(gpu.DimensionEnum.X)


@dataclass(frozen=True)
class QueueBenchConfig:
    payload_bytes: int
    pairs: int = 132
    depth: int = 4  # entries per producer-consumer pair: the queue has pairs × depth
    threads: int = 256
    unroll: int = 8
    synchronized: bool = True
    pin_l2: bool = True
    transport: str = "threads"  # "bulk": one bulk copy per payload through shared memory
    workers: int = 1  # queue workers a CTA, each of `threads` threads (the threads transport)
    draw_ahead: bool = False  # a worker draws its next ticket while it moves the current one

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.transport == "bulk" and (self.workers > 1 or self.draw_ahead):
            raise ValueError("the bulk transport runs one worker a CTA, without draws ahead")
        if self.workers > 1 and self.worker_threads % 32:
            raise ValueError(f"a worker is whole warps: {self.worker_threads} threads")
        if self.payload_bytes % WORD_BYTES:
            raise ValueError(f"payload must be a multiple of {WORD_BYTES} bytes")
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got "
                             f"{self.transport!r}")
        if self.transport == "cluster" and (self.workers > 1 or self.draw_ahead or
                                            self.pin_l2):
            raise ValueError("the cluster transport runs one worker a CTA, without draws "
                             "ahead, its rings in shared memory (pin_l2=False)")
        if self.transport == "cluster" and \
                self.depth * self.payload_bytes > CLUSTER_MAX_RING:
            raise ValueError(f"the cluster transport's ring is in the consumer's shared "
                             f"memory: at most {CLUSTER_MAX_RING >> 10} KiB, got {self.depth} "
                             f"x {self.payload_bytes} bytes")
        if self.transport == "bulk" and self.payload_bytes > BULK_MAX_PAYLOAD:
            raise ValueError(f"the bulk transport stages a payload in shared memory: at most "
                             f"{BULK_MAX_PAYLOAD >> 10} KiB, got {self.payload_bytes} bytes")
        words = self.payload_bytes // WORD_BYTES
        if words % (self.worker_threads * self.block_unroll):
            raise ValueError(f"{words} words do not split over {self.worker_threads} threads "
                             f"x {self.block_unroll}")

    @property
    def words(self) -> int:
        return self.payload_bytes // WORD_BYTES

    @property
    def worker_threads(self) -> int:
        """The threads that move one payload: a worker's."""
        return min(self.threads, self.words)

    @property
    def block_threads(self) -> int:
        return self.worker_threads * self.workers

    @property
    def block_unroll(self) -> int:
        return max(1, min(self.unroll, self.words // self.worker_threads))

    @property
    def producers(self) -> int:
        """The producer workers (as many consumers): each moves `iters` payloads."""
        return self.pairs * self.workers

    @property
    def entries(self) -> int:
        """The queue's entries: a ring for all pairs in L2, one ring a pair (its cluster's) with
        the cluster transport."""
        return self.depth if self.transport == "cluster" else self.producers * self.depth

    @property
    def entry_type(self) -> MemRefType:
        """A cluster queue's entry is the consumer's shared memory by its generic address."""
        space = IntegerAttr(GENERIC_ADDRESS_SPACE, i64) if self.transport == "cluster" \
            else NoneAttr()
        return MemRefType(_I128, [self.words], memory_space=space)

    @property
    def queue_type(self) -> dataflow.QueueType:
        return dataflow.QueueType(self.entries, self.entry_type)

    @property
    def group_threads(self) -> int | None:
        """The queue ops' `threads`: None where the CTA is one worker."""
        return self.worker_threads if self.workers > 1 else None


def blocks_per_sm(cfg: QueueBenchConfig) -> int | None:
    """The blocks an SM holds when every producer and consumer CTA is resident at once (on an
    H100's SMs), declared on both kernels (`.minnctapersm`) so that ptxas keeps their registers
    to it: synchronized, co-residency needs it; unsynchronized, the same transfers then run
    with as many CTAs side by side. None where the SM's threads cannot hold that many."""
    blocks = -(-2 * cfg.pairs // H100_SMS)
    if blocks * cfg.block_threads > SM_90.max_threads_per_sm or \
            blocks > SM_90.max_blocks_per_sm:
        return None
    return blocks


def queue_bench_module(cfg: QueueBenchConfig) -> ModuleOp:
    """The pipeline: producer(iters), consumer(out, iters) in gpu.module @queue_bench, and
    `@fig5` (or, without synchronization, the two kernels over a plain `ring` buffer)."""
    if cfg.transport == "bulk":
        kernels = _bulk_kernels(cfg)
    elif cfg.transport == "cluster" and not cfg.synchronized:
        kernels = _cluster_twin_kernels(cfg)
    elif cfg.synchronized:
        kernels = [_queue_producer(cfg), _queue_consumer(cfg)]
    else:
        kernels = [_ring_producer(cfg), _ring_consumer(cfg)]
    gpu_module = gpu.ModuleOp(StringAttr(MODULE),  # type: ignore[arg-type]
                              Region(Block(kernels)))
    return ModuleOp([gpu_module, _pipeline(cfg)])


# ----------------------------------------------------------------------------------------------
# What every kernel builds
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Kernel:
    """A kernel being built: its config, its builder (at the end of its body), its arguments
    by name, and what the blocks nested in it use: the constants 0 and 1, its thread, the
    thread's index in its worker (`lane`: the thread's own with one worker a CTA) and its
    worker in the CTA."""

    cfg: QueueBenchConfig
    b: BlockBuilder
    args: dict[str, SSAValue]
    zero: SSAValue
    one: SSAValue
    tid: SSAValue
    lane: SSAValue
    worker: SSAValue | None


def _constant(b: BlockBuilder, value: int, type_: Attribute = _INDEX) -> SSAValue:
    """An `arith.constant` of its own, where it is used: the benchmark's kernels keep the
    constants they had as MLIR text (their performance record is of that IR), not
    BlockBuilder.idx's one a value and block."""
    return b.emit(TEMPLATES.int_constant(arith.ConstantOp, value, type_))


def _kernel(cfg: QueueBenchConfig, name: str, params: Sequence[tuple[str, Attribute]]
            ) -> tuple[gpu.FuncOp, _Kernel]:
    """Kernel `name` of `params` (name, type), its block of the workers' threads and the
    blocks an SM holds declared, with its first values: 0, 1, the thread (and its lane and
    worker where a CTA has several)."""
    func = gpu.FuncOp(name, ([t for _, t in params], []), kernel=True,
                      known_block_size=[cfg.block_threads, 1, 1])
    blocks = blocks_per_sm(cfg)
    if blocks is not None:
        func.attributes[MIN_BLOCKS_PER_SM_ATTR] = IntegerAttr(blocks, i32)
    args = named_args(func, [n for n, _ in params])
    b = BlockBuilder(func.body.block)
    zero, one = _constant(b, 0), _constant(b, 1)
    tid = b.emit(gpu.ThreadIdOp(_X))
    lane, worker = tid, None
    if cfg.workers > 1:
        threads = _constant(b, cfg.worker_threads)
        lane, worker = b.remui(tid, threads), b.divui(tid, threads)
    return func, _Kernel(cfg, b, args, zero, one, tid, lane, worker)


_Body = Callable[[BlockBuilder, SSAValue, list[SSAValue]], list[SSAValue]]
"""(body's builder, induction variable, carried values) -> the values carried on."""


def _for(b: BlockBuilder, lower: SSAValue, upper: SSAValue, step: SSAValue,
         carried: Sequence[SSAValue], body: _Body) -> list[SSAValue]:
    """`scf.for` from `lower` to `upper` by `step` carrying `carried`, `body` its iteration;
    its results."""
    block = Block(arg_types=[_INDEX, *(value.type for value in carried)])
    inner = BlockBuilder(block)
    inner.insert(scf.YieldOp(*body(inner, block.args[0], list(block.args[1:]))))
    return list(b.insert(scf.ForOp(lower, upper, step, carried, Region(block))).results)


def _iterations(k: _Kernel, carried: Sequence[SSAValue], body: _Body) -> list[SSAValue]:
    """The kernel's loop of `iters` iterations (%i from 0), carrying `carried`."""
    return _for(k.b, k.zero, k.args["iters"], k.one, carried, body)


def _over_words(b: BlockBuilder, k: _Kernel, carried: Sequence[SSAValue], body: _Body
                ) -> list[SSAValue]:
    """The thread's loop over a payload's words: from its lane on, `block_unroll` words
    `worker_threads` apart an iteration."""
    step = _constant(b, k.cfg.worker_threads * k.cfg.block_unroll)
    words = _constant(b, k.cfg.words)
    return _for(b, k.lane, words, step, carried, body)


def _word(b: BlockBuilder, k: _Kernel, w: SSAValue, u: int, first: SSAValue | None
          ) -> tuple[SSAValue, SSAValue]:
    """Word `u` of the thread's iteration `w`: its index j in the payload, and where it is in
    memory: j, or `first` + j in a ring of payloads."""
    word = b.addi(w, _constant(b, u * k.cfg.worker_threads))
    return word, word if first is None else b.addi(first, word)


def _produce(b: BlockBuilder, k: _Kernel, ticket: SSAValue, payload: SSAValue,
             first: SSAValue | None = None) -> None:
    """The thread's words of `ticket`'s payload, word j `(ticket << 40) + j`, stored into
    `payload` (from word `first` on: a ring's slot)."""
    wide = b.emit(arith.ExtUIOp(b.emit(arith.IndexCastOp(ticket, i64)), _I128))
    tag = b.emit(arith.ShLIOp(wide, _constant(b, 40, _I128)))

    def store(wb: BlockBuilder, w: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        for u in range(k.cfg.block_unroll):
            word, at = _word(wb, k, w, u, first)
            value = wb.addi(tag, wb.emit(arith.IndexCastOp(word, _I128)))
            wb.insert(memref.StoreOp.get(value, payload, [at]))
        return []

    _over_words(b, k, [], store)


def _consume(b: BlockBuilder, k: _Kernel, payload: SSAValue, sums: Sequence[SSAValue],
             first: SSAValue | None = None, at_l2: bool = False) -> list[SSAValue]:
    """`sums` plus the thread's words of `payload` (from word `first` on), `block_unroll`
    accumulators: each iteration's loads first, then their sums, so that several loads are in
    flight a thread (`at_l2`: `tile.load_l2`, which no stale L1 line answers)."""

    def add(wb: BlockBuilder, w: SSAValue, partial: list[SSAValue]) -> list[SSAValue]:
        places = [_word(wb, k, w, u, first)[1] for u in range(k.cfg.block_unroll)]
        loaded = [wb.emit(tl.LoadL2Op(payload, [at]) if at_l2
                          else memref.LoadOp.get(payload, [at])) for at in places]
        return [wb.addi(s, v) for s, v in zip(partial, loaded, strict=True)]

    return _over_words(b, k, sums, add)


def _zero_sums(k: _Kernel) -> list[SSAValue]:
    """The consumer's accumulators at first: one i128 0 for all."""
    return [_constant(k.b, 0, _I128)] * k.cfg.block_unroll


def _store_sums(k: _Kernel, sums: Sequence[SSAValue]) -> None:
    """The thread's accumulators added up, into its own element of `out`; the kernel's end."""
    b = k.b
    cta = b.emit(gpu.BlockIdOp(_X))
    slot = b.addi(b.muli(cta, _constant(b, k.cfg.block_threads)), k.tid)
    b.insert(memref.StoreOp.get(reduce(b.addi, sums), k.args["out"], [slot]))
    b.insert(gpu.ReturnOp([]))


# ----------------------------------------------------------------------------------------------
# The threads and cluster transports through the queue
# ----------------------------------------------------------------------------------------------


class _End(NamedTuple):
    """A queue end's ops: the producers' (empty entries) or the consumers' (full ones)."""

    draw: type[dataflow.DrawEmptyOp | dataflow.DrawFullOp]
    acquire: type[dataflow.AcquireEmptyOp | dataflow.AcquireFullOp]
    release: type[dataflow.ReleaseFullOp | dataflow.ReleaseEmptyOp]


_PRODUCER_END = _End(dataflow.DrawEmptyOp, dataflow.AcquireEmptyOp, dataflow.ReleaseFullOp)
_CONSUMER_END = _End(dataflow.DrawFullOp, dataflow.AcquireFullOp, dataflow.ReleaseEmptyOp)

_TicketBody = Callable[[BlockBuilder, SSAValue, SSAValue, list[SSAValue]], list[SSAValue]]
"""(iteration's builder, entry, ticket, carried values) -> the values carried on."""


def _ticket_loop(k: _Kernel, end: _End, carried: Sequence[SSAValue], body: _TicketBody
                 ) -> list[SSAValue]:
    """The kernel's `iters` iterations around `body`, carrying `carried`, each acquiring a
    ticket of queue %q at `end` first and releasing it last; with draw_ahead the first ticket
    is drawn before the loop where it runs, each next one right after the acquire where one
    follows, and carried (first) to the iteration that takes it. The loop's results, the drawn
    ticket's left out."""
    queue, threads, iters = k.args["q"], k.cfg.group_threads, k.args["iters"]

    def draw_if(b: BlockBuilder, runs: SSAValue) -> SSAValue:
        """A ticket drawn where `runs` (an iteration takes it), else 0 (none takes it)."""
        drawn, none = Block(), Block()
        then = BlockBuilder(drawn)
        then.insert(scf.YieldOp(then.emit(end.draw(queue, threads))))
        BlockBuilder(none).insert(scf.YieldOp(k.zero))
        return b.emit(scf.IfOp(runs, [_INDEX], Region(drawn), Region(none)))

    ahead = [draw_if(k.b, k.b.ult(k.zero, iters))] if k.cfg.draw_ahead else []

    def iteration(b: BlockBuilder, i: SSAValue, values: list[SSAValue]) -> list[SSAValue]:
        ticket = b.emit(end.acquire(queue, values[0] if ahead else None, threads))
        following = [draw_if(b, b.ult(b.addi(i, k.one), iters))] if ahead else []
        entry = b.emit(dataflow.EntryOp(queue, ticket, k.cfg.entry_type))
        carried_on = body(b, entry, ticket, values[len(ahead):])
        b.insert(end.release(queue, ticket, threads))
        return [*following, *carried_on]

    return _iterations(k, [*ahead, *carried], iteration)[len(ahead):]


def _queue_producer(cfg: QueueBenchConfig) -> gpu.FuncOp:
    func, k = _kernel(cfg, "producer", [("q", cfg.queue_type), ("iters", _INDEX)])

    def fill(b: BlockBuilder, entry: SSAValue, ticket: SSAValue, _: list[SSAValue]
             ) -> list[SSAValue]:
        _produce(b, k, ticket, entry)
        return []

    _ticket_loop(k, _PRODUCER_END, [], fill)
    k.b.insert(gpu.ReturnOp([]))
    return func


def _queue_consumer(cfg: QueueBenchConfig) -> gpu.FuncOp:
    func, k = _kernel(cfg, "consumer", [("q", cfg.queue_type), ("out", _OUT_TYPE),
                                        ("iters", _INDEX)])

    def drain(b: BlockBuilder, entry: SSAValue, _: SSAValue, sums: list[SSAValue]
              ) -> list[SSAValue]:
        return _consume(b, k, entry, sums)

    _store_sums(k, _ticket_loop(k, _CONSUMER_END, _zero_sums(k), drain))
    return func


# ----------------------------------------------------------------------------------------------
# The same transfers unsynchronized: a plain ring buffer, or a cluster peer's shared memory
# ----------------------------------------------------------------------------------------------


def _ring_slot(b: BlockBuilder, k: _Kernel, i: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Unsynchronized, iteration `i`'s slot worker + producers × (i mod depth) of `ring` (the
    worker counted over the grid: the CTA with one a CTA) and its first word."""
    cfg = k.cfg
    worker = b.emit(gpu.BlockIdOp(_X))
    if cfg.workers > 1:
        worker = b.addi(b.muli(worker, _constant(b, cfg.workers)), k.worker)
    depth, producers = _constant(b, cfg.depth), _constant(b, cfg.producers)
    slot = b.addi(worker, b.muli(b.remui(i, depth), producers))
    return slot, b.muli(slot, _constant(b, cfg.words))


def _ring_producer(cfg: QueueBenchConfig) -> gpu.FuncOp:
    func, k = _kernel(cfg, "producer", [("ring", _OUT_TYPE), ("iters", _INDEX)])

    def fill(b: BlockBuilder, i: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        slot, first = _ring_slot(b, k, i)
        _produce(b, k, slot, k.args["ring"], first)
        return []

    _iterations(k, [], fill)
    k.b.insert(gpu.ReturnOp([]))
    return func


def _ring_consumer(cfg: QueueBenchConfig) -> gpu.FuncOp:
    """Its loads cached at L2 only: plain ones met the lines of the slot's previous round in
    their SM's L1 (see the module's docstring)."""
    func, k = _kernel(cfg, "consumer", [("ring", _OUT_TYPE), ("out", _OUT_TYPE),
                                        ("iters", _INDEX)])

    def drain(b: BlockBuilder, i: SSAValue, sums: list[SSAValue]) -> list[SSAValue]:
        _, first = _ring_slot(b, k, i)
        return _consume(b, k, k.args["ring"], sums, first, at_l2=True)

    _store_sums(k, _iterations(k, _zero_sums(k), drain))
    return func


def _cluster_twin_kernels(cfg: QueueBenchConfig) -> list:
    """The cluster transport's transfers without the queue: each pair a cluster (the pipeline
    `cluster`), the ring of `depth` payloads in the consumer CTA's shared memory; iteration i
    of the producer stores into slot i mod depth of its peer's ring (`tile.cluster_map` to
    rank 1), the consumer reads its own, with no barriers or waits between them."""
    shared = MemRefType(_I128, [cfg.depth * cfg.words],
                        memory_space=IntegerAttr(SHARED_ADDRESS_SPACE, i64))

    def slot_start(b: BlockBuilder, i: SSAValue) -> tuple[SSAValue, SSAValue]:
        slot = b.remui(i, _constant(b, cfg.depth))
        return slot, b.muli(slot, _constant(b, cfg.words))

    producer, p = _kernel(cfg, "producer", [("iters", _INDEX)])
    peer = p.b.emit(tl.ClusterMapOp(p.b.emit(memref.GetGlobalOp("ring", shared)), p.one))

    def fill(b: BlockBuilder, i: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        slot, first = slot_start(b, i)
        _produce(b, p, slot, peer, first)
        return []

    _iterations(p, [], fill)
    p.b.insert(gpu.ReturnOp([]))

    consumer, c = _kernel(cfg, "consumer", [("out", _OUT_TYPE), ("iters", _INDEX)])
    zeros = _zero_sums(c)
    ring = c.b.emit(memref.GetGlobalOp("ring", shared))

    def drain(b: BlockBuilder, i: SSAValue, sums: list[SSAValue]) -> list[SSAValue]:
        _, first = slot_start(b, i)
        return _consume(b, c, ring, sums, first)

    _store_sums(c, _iterations(c, zeros, drain))
    return [shared_global("ring", shared, dynamic=True), producer, consumer]


# ----------------------------------------------------------------------------------------------
# The bulk transport: each payload one bulk copy between the entry (or the ring slot) and a
# staging buffer in shared memory
# ----------------------------------------------------------------------------------------------

_SHARED = IntegerAttr(SHARED_ADDRESS_SPACE, i64)
_LANDED_TYPE = MemRefType(IntegerType(64), [1], memory_space=_SHARED)  # the consumer's barrier


def _staged_type(cfg: QueueBenchConfig) -> MemRefType:
    return MemRefType(_I128, [cfg.words], memory_space=_SHARED)


def _bulk_kernels(cfg: QueueBenchConfig) -> list:
    # the staging buffer is dynamic shared memory (64 KiB does not fit the static 48)
    return [shared_global("staged", _staged_type(cfg), dynamic=True),
            shared_global("landed", _LANDED_TYPE, alignment=8),
            _bulk_producer(cfg), _bulk_consumer(cfg)]


def _bulk_kernel(cfg: QueueBenchConfig, name: str, params: list[tuple[str, Attribute]]
                 ) -> tuple[gpu.FuncOp, _Kernel, SSAValue, SSAValue]:
    """The kernel of `params` after the queue (or the ring), with its staging buffer and
    whether its thread issues the copies (the first)."""
    source = ("q", cfg.queue_type) if cfg.synchronized else ("ring", _OUT_TYPE)
    func, k = _kernel(cfg, name, [source, *params])
    buffer = k.b.emit(memref.GetGlobalOp("staged", _staged_type(cfg)))
    lead = k.b.emit(arith.CmpiOp(k.tid, k.zero, "eq"))
    return func, k, buffer, lead


def _bulk_take(b: BlockBuilder, k: _Kernel, i: SSAValue,
               acquire: type[dataflow.AcquireEmptyOp | dataflow.AcquireFullOp]
               ) -> tuple[SSAValue, SSAValue, SSAValue]:
    """Iteration `i`'s ticket and where its payload is (memory, first word): the entry the
    queue gives it, or (unsynchronized) its ring slot."""
    if not k.cfg.synchronized:
        slot, first = _ring_slot(b, k, i)
        return slot, k.args["ring"], first
    ticket = b.emit(acquire(k.args["q"]))
    return ticket, b.emit(dataflow.EntryOp(k.args["q"], ticket, k.cfg.entry_type)), k.zero


def _bulk_give(b: BlockBuilder, k: _Kernel, ticket: SSAValue,
               release: type[dataflow.ReleaseFullOp | dataflow.ReleaseEmptyOp]) -> None:
    if k.cfg.synchronized:
        b.insert(release(k.args["q"], ticket))
    else:
        b.insert(gpu.BarrierOp())  # the buffer is free again


def _fence_global(b: BlockBuilder, k: _Kernel) -> None:
    """The async proxy does not see the generic acquire (nor its writes the release)."""
    if k.cfg.synchronized:
        b.insert(tl.FenceProxyAsyncOp(global_memory=True))


def _bulk_producer(cfg: QueueBenchConfig) -> gpu.FuncOp:
    """Its threads write the ticket's words into the buffer and meet; the first stores the
    buffer into the entry and waits for the writes before the release."""
    func, k, buffer, lead = _bulk_kernel(cfg, "producer", [("iters", _INDEX)])

    def fill(b: BlockBuilder, i: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
        ticket, payload, first = _bulk_take(b, k, i, dataflow.AcquireEmptyOp)
        _produce(b, k, ticket, buffer)
        b.insert(tl.FenceProxyAsyncOp())
        b.insert(gpu.BarrierOp())

        def store(sb: BlockBuilder) -> None:
            _fence_global(sb, k)
            sb.insert(tl.BulkStoreOp(payload, [first], buffer, [k.zero], cfg.payload_bytes))
            sb.insert(tl.TmaStoreCommitOp())
            sb.insert(tl.TmaStoreWaitOp(0, writes=True))
            _fence_global(sb, k)

        b.when(lead, store)
        _bulk_give(b, k, ticket, dataflow.ReleaseFullOp)
        return []

    _iterations(k, [], fill)
    k.b.insert(gpu.ReturnOp([]))
    return func


def _bulk_consumer(cfg: QueueBenchConfig) -> gpu.FuncOp:
    """Its first thread loads the entry into the buffer, completing on a transaction barrier
    that every thread waits on (phase parity: the iteration's) before it adds the words."""
    func, k, buffer, lead = _bulk_kernel(cfg, "consumer", [("out", _OUT_TYPE),
                                                           ("iters", _INDEX)])
    zeros = _zero_sums(k)
    landed = k.b.emit(memref.GetGlobalOp("landed", _LANDED_TYPE))
    k.b.when(lead, lambda ib: ib.insert(tl.MBarrierInitOp(landed, [k.zero], 1)))
    k.b.insert(gpu.BarrierOp())

    def drain(b: BlockBuilder, i: SSAValue, sums: list[SSAValue]) -> list[SSAValue]:
        ticket, payload, first = _bulk_take(b, k, i, dataflow.AcquireFullOp)

        def load(lb: BlockBuilder) -> None:
            _fence_global(lb, k)
            lb.insert(tl.MBarrierArriveOp(landed, [k.zero], expect_tx=cfg.payload_bytes))
            lb.insert(tl.BulkLoadOp(buffer, [k.zero], payload, [first], landed, [k.zero],
                                    cfg.payload_bytes))

        b.when(lead, load)
        parity = b.emit(arith.TruncIOp(b.emit(arith.IndexCastOp(i, i64)), i1))
        b.insert(tl.MBarrierWaitOp(landed, [k.zero], parity))
        summed = _consume(b, k, buffer, sums)
        _bulk_give(b, k, ticket, dataflow.ReleaseEmptyOp)
        return summed

    _store_sums(k, _iterations(k, zeros, drain))
    return func


def _pipeline(cfg: QueueBenchConfig) -> dataflow.PipelineOp:
    """`@fig5`: the producers and the consumers, through the queue `@q` when synchronized
    (unsynchronized, the cluster transport's pairs still run in clusters)."""
    queues = ["q"] if cfg.synchronized else []

    def stage(name: str, kernel: str, inputs: list[str], outputs: list[str]
              ) -> dataflow.StageOp:
        return dataflow.StageOp(name, SymbolRefAttr(MODULE, [kernel]), dataflow.Resource.SIMT,
                                cfg.pairs, inputs=inputs, outputs=outputs)

    ops: list = [dataflow.QueueOp("q", cfg.queue_type, pin_l2=cfg.pin_l2,
                                  cluster=cfg.transport == "cluster")] if queues else []
    ops += [stage("produce", "producer", [], queues), stage("consume", "consumer", queues, [])]
    return dataflow.PipelineOp(PIPELINE, ops, cluster=not queues and cfg.transport == "cluster")


def expected_checksum(first_ticket: int, tickets: int, words: int) -> int:
    """The sum modulo 2^128 of every word of tickets [first, first + tickets): what the
    consumers' accumulators add up to when every ticket arrived once, filled."""
    ticket_sum = (2 * first_ticket + tickets - 1) * tickets // 2
    return (words * (ticket_sum << 40) + tickets * (words * (words - 1) // 2)) % (1 << 128)


def run_checksum(cfg: QueueBenchConfig, runs_before: int, iters: int) -> int:
    """What the consumers' accumulators add up to after one more run of `iters` tickets a
    producer: in L2 the run's tickets follow the earlier runs' (`runs_before` of them); a
    cluster queue's tickets start at 0 in every cluster at every launch."""
    if cfg.transport == "cluster":
        return cfg.pairs * expected_checksum(0, iters, cfg.words) % (1 << 128)
    tickets = cfg.producers * iters
    return expected_checksum(runs_before * tickets, tickets, cfg.words)


def checksum(out_words: Iterable[int]) -> int:
    """The sum modulo 2^128 of the consumers' accumulators (`out`, as Python ints)."""
    return sum(out_words) % (1 << 128)
