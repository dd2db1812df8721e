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

from collections.abc import Iterable
from dataclasses import dataclass

from tilesync.contract import DYNAMIC_SHARED_ATTR, MIN_BLOCKS_PER_SM_ATTR, SM_90
from tilesync.kernels.config import H100_SMS

WORD_BYTES = 16  # one i128: a 16-byte access per thread
TRANSPORTS = ("threads", "bulk", "cluster")
BULK_MAX_PAYLOAD = 64 << 10  # the bulk transport's staging buffer, in shared memory
CLUSTER_MAX_RING = 192 << 10  # a cluster queue's ring, in the consumer's shared memory


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
    def entry_type(self) -> str:
        """A cluster queue's entry is the consumer's shared memory by its generic address."""
        space = ", 0 : i64" if self.transport == "cluster" else ""
        return f"memref<{self.words}xi128{space}>"

    @property
    def queue_type(self) -> str:
        return f"!dataflow.queue<{self.entries} x {self.entry_type}>"


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


def _header(cfg: QueueBenchConfig, name: str, params: str) -> str:
    blocks = blocks_per_sm(cfg)
    bound = f", {MIN_BLOCKS_PER_SM_ATTR} = {blocks} : i32" if blocks is not None else ""
    return (f"    gpu.func @{name}({params}) kernel attributes "
            f"{{gpu.known_block_size = array<i32: {cfg.block_threads}, 1, 1>{bound}}} {{\n")


def _word_index(cfg: QueueBenchConfig, u: int, base: str) -> list[str]:
    return [f"      %o{u} = arith.constant {u * cfg.worker_threads} : index",
            f"      %j{u} = arith.addi {base}, %o{u} : index"]


def _produce_body(cfg: QueueBenchConfig, entry: str, ticket: str,
                  entry_type: str | None = None) -> list[str]:
    entry_type = entry_type or cfg.entry_type
    step = cfg.worker_threads * cfg.block_unroll
    lines = [f"      %t64 = arith.index_cast {ticket} : index to i64",
             "      %t128 = arith.extui %t64 : i64 to i128",
             "      %c40 = arith.constant 40 : i128",
             "      %tag = arith.shli %t128, %c40 : i128",
             f"      %step = arith.constant {step} : index",
             f"      %words = arith.constant {cfg.words} : index",
             f"      scf.for %w = {_lane(cfg)} to %words step %step {{"]
    for u in range(cfg.block_unroll):
        lines += [f"  {line}" for line in _word_index(cfg, u, "%w")]
        lines += [f"        %j{u}w = arith.index_cast %j{u} : index to i128",
                  f"        %v{u} = arith.addi %tag, %j{u}w : i128",
                  f"        memref.store %v{u}, {entry}[%j{u}] : {entry_type}"]
    lines.append("      }")
    return lines


def _consume_body(cfg: QueueBenchConfig, entry: str, accs: list[str],
                  entry_type: str | None = None, at_l2: bool = False
                  ) -> tuple[list[str], list[str]]:
    """Loads of `unroll` words first, then their sums: several loads in flight per thread
    (`at_l2`: `tile.load_l2`, which no stale L1 line answers)."""
    entry_type = entry_type or cfg.entry_type
    step = cfg.worker_threads * cfg.block_unroll
    news = [f"%n{u}" for u in range(cfg.block_unroll)]
    lines = [f"      %step = arith.constant {step} : index",
             f"      %words = arith.constant {cfg.words} : index",
             f"      {', '.join(news)} = scf.for %w = {_lane(cfg)} to %words step %step "
             f"iter_args({', '.join(f'%a{u} = {acc}' for u, acc in enumerate(accs))}) -> "
             f"({', '.join(['i128'] * cfg.block_unroll)}) {{"]
    for u in range(cfg.block_unroll):
        lines += [f"  {line}" for line in _word_index(cfg, u, "%w")]
    for u in range(cfg.block_unroll):
        lines.append(f"        %l{u} = tile.load_l2 {entry}[%j{u}] : {entry_type} -> i128"
                     if at_l2 else f"        %l{u} = memref.load {entry}[%j{u}] : {entry_type}")
    for u in range(cfg.block_unroll):
        lines.append(f"        %x{u} = arith.addi %a{u}, %l{u} : i128")
    lines.append(f"        scf.yield {', '.join(f'%x{u}' for u in range(cfg.block_unroll))} : "
                 f"{', '.join(['i128'] * cfg.block_unroll)}")
    lines.append("      }")
    return lines, news


def _store_accumulators(cfg: QueueBenchConfig, accs: list[str]) -> list[str]:
    lines = ["      %cta = gpu.block_id x",
             f"      %bt = arith.constant {cfg.block_threads} : index",
             "      %row = arith.muli %cta, %bt : index",
             "      %slot = arith.addi %row, %tid : index"]
    total = accs[0]
    for u, acc in enumerate(accs[1:], 1):
        lines.append(f"      %s{u} = arith.addi {total}, {acc} : i128")
        total = f"%s{u}"
    lines.append(f"      memref.store {total}, %out[%slot] : memref<?xi128>")
    return lines


def _lane(cfg: QueueBenchConfig) -> str:
    """The thread's index within its worker."""
    return "%lane" if cfg.workers > 1 else "%tid"


def _prelude(cfg: QueueBenchConfig) -> list[str]:
    lines = ["      %c0 = arith.constant 0 : index", "      %c1 = arith.constant 1 : index",
             "      %tid = gpu.thread_id x"]
    if cfg.workers > 1:
        lines += [f"      %wt = arith.constant {cfg.worker_threads} : index",
                  "      %lane = arith.remui %tid, %wt : index",
                  "      %worker = arith.divui %tid, %wt : index"]
    return lines


def _ticket_loop(cfg: QueueBenchConfig, end: str, body: list[str], results: str = "",
                 carried: list[tuple[str, str]] = (), types: str = "",
                 yielded: str = "") -> list[str]:
    """`scf.for %i = 0 to %iters` around `body`, carrying `carried` ((argument, initial
    value), of `types`) as `body` computes `yielded`, acquiring ticket %t of end `end`
    ("empty": producer, "full": consumer) first and releasing it last; with draw_ahead the
    first ticket is drawn before the loop where it runs, each next one right after the acquire
    where one follows, and carried to the iteration that takes it."""
    q, th = cfg.queue_type, f" threads {cfg.worker_threads}" if cfg.workers > 1 else ""
    release = "release_full" if end == "empty" else "release_empty"
    draw = f"dataflow.draw_{end} %q{th} : {q}"
    carried = list(carried)
    lines: list[str] = []
    if cfg.draw_ahead:
        lines += ["      %runs = arith.cmpi ult, %c0, %iters : index",
                  "      %d0 = scf.if %runs -> (index) {", f"        %dr = {draw}",
                  "        scf.yield %dr : index", "      } else {",
                  "        scf.yield %c0 : index", "      }"]
        carried = [("%d", "%d0"), *carried]
        types = ", ".join(["index", *([types] if types else [])])
    head = f"      {results + ' = ' if results else ''}scf.for %i = %c0 to %iters step %c1"
    if carried:
        head += f" iter_args({', '.join(f'{a} = {b}' for a, b in carried)}) -> ({types})"
    lines.append(head + " {")
    if cfg.draw_ahead:
        lines += [f"        %t = dataflow.acquire_{end} %q at %d{th} : {q}",
                  "        %i1 = arith.addi %i, %c1 : index",
                  "        %more = arith.cmpi ult, %i1, %iters : index",
                  "        %dn = scf.if %more -> (index) {", f"          %dr = {draw}",
                  "          scf.yield %dr : index", "        } else {",
                  "          scf.yield %c0 : index", "        }"]
    else:
        lines.append(f"        %t = dataflow.acquire_{end} %q{th} : {q}")
    lines.append(f"        %e = dataflow.entry %q, %t : {q} -> {cfg.entry_type}")
    lines += body
    lines.append(f"        dataflow.{release} %q, %t{th} : {q}")
    values = ", ".join(v for v in ("%dn" if cfg.draw_ahead else "", yielded) if v)
    if values:
        lines.append(f"        scf.yield {values} : {types}")
    lines.append("      }")
    return lines


def queue_bench_mlir(cfg: QueueBenchConfig) -> str:
    """The pipeline's MLIR: producer(iters), consumer(out, iters), and `@fig5` (or, without
    synchronization, the two kernels over a plain `ring` buffer)."""
    if cfg.transport == "bulk":
        return _bulk_mlir(cfg)
    if cfg.transport == "cluster" and not cfg.synchronized:
        return _cluster_twin_mlir(cfg)
    q = cfg.queue_type
    zero = _prelude(cfg)
    accs0 = ["      %z = arith.constant 0 : i128"]
    unroll = cfg.block_unroll
    i128s = ", ".join(["i128"] * unroll)
    results = ", ".join(f"%r{u}" for u in range(unroll))
    if cfg.draw_ahead:  # the loop's first result is the ticket it carries
        results = f"%dlast, {results}"
    if cfg.synchronized:
        producer = _header(cfg, "producer", f"%q: {q}, %iters: index")
        producer += "\n".join([*zero, *_ticket_loop(cfg, "empty", [
            f"  {line}" for line in _produce_body(cfg, "%e", "%t")]),
            "      gpu.return", "    }"]) + "\n"
        body, news = _consume_body(cfg, "%e", [f"%acc{u}" for u in range(unroll)])
        consumer = _header(cfg, "consumer", f"%q: {q}, %out: memref<?xi128>, %iters: index")
        consumer += "\n".join([
            *zero, *accs0,
            *_ticket_loop(cfg, "full", [f"  {line}" for line in body], results,
                          [(f"%acc{u}", "%z") for u in range(unroll)], i128s, ", ".join(news)),
            *_store_accumulators(cfg, [f"%r{u}" for u in range(unroll)]),
            "      gpu.return", "    }"]) + "\n"
        return ("builtin.module {\n  gpu.module @queue_bench {\n" + producer + consumer +
                "  }\n" + _pipeline(cfg) + "}\n")

    def shifted(lines: list[str]) -> list[str]:
        return _onto_ring(cfg, lines, "%ring", "memref<?xi128>")

    producer = _header(cfg, "producer", "%ring: memref<?xi128>, %iters: index")
    producer += "\n".join([*zero, "      scf.for %i = %c0 to %iters step %c1 {",
                           *_ring_slot(cfg),
                           *[f"  {line}" for line in shifted(_produce_body(cfg, "%e", "%t"))],
                           "      }", "      gpu.return", "    }"]) + "\n"
    body, news = _consume_body(cfg, "%e", [f"%acc{u}" for u in range(unroll)], at_l2=True)
    consumer = _header(cfg, "consumer", "%ring: memref<?xi128>, %out: memref<?xi128>, "
                                        "%iters: index")
    consumer += "\n".join([
        *zero, *accs0,
        f"      {', '.join(f'%r{u}' for u in range(unroll))} = scf.for %i = %c0 "
        f"to %iters step %c1 iter_args("
        f"{', '.join(f'%acc{u} = %z' for u in range(unroll))}) -> ({i128s}) {{",
        *_ring_slot(cfg),
        *[f"  {line}" for line in shifted(body)],
        f"        scf.yield {', '.join(news)} : {i128s}",
        "      }",
        *_store_accumulators(cfg, [f"%r{u}" for u in range(unroll)]),
        "      gpu.return", "    }"]) + "\n"
    return ("builtin.module {\n  gpu.module @queue_bench {\n" + producer + consumer + "  }\n"
            + _pipeline(cfg) + "}\n")


def _onto_ring(cfg: QueueBenchConfig, lines: list[str], ring: str, ring_type: str,
               entry_type: str | None = None) -> list[str]:
    """A payload's accesses to entry %e (of `entry_type`) as accesses to `ring` (of
    `ring_type`) from word %first on."""
    entry_type = entry_type or f"memref<{cfg.words}xi128>"
    out = []
    for line in lines:
        if "memref.store %v" in line or " %e[%j" in line:
            line = line.replace("%e[%j", f"{ring}[%jr").replace(f": {entry_type}",
                                                                 f": {ring_type}")
        out.append(line)
        if "= arith.addi %w, %o" in line:
            u = line.split("%j")[1].split(" ")[0]
            out.append(f"{line[:len(line) - len(line.lstrip())]}%jr{u} = arith.addi "
                       f"%first, %j{u} : index")
    return out


def _cluster_twin_mlir(cfg: QueueBenchConfig) -> str:
    """The cluster transport's transfers without the queue: each pair a cluster (the pipeline
    `cluster`), the ring of `depth` payloads in the consumer CTA's shared memory; iteration i
    of the producer stores into slot i mod depth of its peer's ring (`tile.cluster_map` to
    rank 1), the consumer reads its own, with no barriers or waits between them."""
    words = cfg.depth * cfg.words
    shared = f"memref<{words}xi128, 3 : i64>"
    generic = f"memref<{words}xi128, 0 : i64>"
    ring = (f'    "memref.global"() <{{sym_name = "ring", type = {shared}, initial_value, '
            f'sym_visibility = "private", alignment = 128 : i64}}> {{{DYNAMIC_SHARED_ATTR}}} : '
            "() -> ()\n")
    slot = [f"        %depth = arith.constant {cfg.depth} : index",
            "        %t = arith.remui %i, %depth : index",
            f"        %wpe = arith.constant {cfg.words} : index",
            "        %first = arith.muli %t, %wpe : index"]
    unroll = cfg.block_unroll
    i128s = ", ".join(["i128"] * unroll)
    producer = _header(cfg, "producer", "%iters: index")
    producer += "\n".join([
        *_prelude(cfg), f"      %local = memref.get_global @ring : {shared}",
        f"      %peer = tile.cluster_map %local cta %c1 : {shared} -> {generic}",
        "      scf.for %i = %c0 to %iters step %c1 {", *slot,
        *[f"  {line}" for line in _onto_ring(cfg, _produce_body(cfg, "%e", "%t",
                                                                 cfg.entry_type),
                                             "%peer", generic, cfg.entry_type)],
        "      }", "      gpu.return", "    }"]) + "\n"
    body, news = _consume_body(cfg, "%e", [f"%acc{u}" for u in range(unroll)], cfg.entry_type)
    consumer = _header(cfg, "consumer", "%out: memref<?xi128>, %iters: index")
    consumer += "\n".join([
        *_prelude(cfg), "      %z = arith.constant 0 : i128",
        f"      %ring = memref.get_global @ring : {shared}",
        f"      {', '.join(f'%r{u}' for u in range(unroll))} = scf.for %i = %c0 to %iters "
        f"step %c1 iter_args({', '.join(f'%acc{u} = %z' for u in range(unroll))}) -> "
        f"({i128s}) {{", *slot,
        *[f"  {line}" for line in _onto_ring(cfg, body, "%ring", shared, cfg.entry_type)],
        f"        scf.yield {', '.join(news)} : {i128s}", "      }",
        *_store_accumulators(cfg, [f"%r{u}" for u in range(unroll)]),
        "      gpu.return", "    }"]) + "\n"
    return ("builtin.module {\n  gpu.module @queue_bench {\n" + ring + producer + consumer +
            "  }\n" + _pipeline(cfg) + "}\n")


def _pipeline(cfg: QueueBenchConfig) -> str:
    """`@fig5`: the producers and the consumers, through the queue `@q` when synchronized."""
    if not cfg.synchronized:
        in_clusters = " cluster" if cfg.transport == "cluster" else ""
        return (
            f"  dataflow.pipeline @fig5{in_clusters} {{\n"
            "    dataflow.stage @produce {kernel = @queue_bench::@producer, resource = "
            f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [], outputs = []}}\n"
            "    dataflow.stage @consume {kernel = @queue_bench::@consumer, resource = "
            f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [], outputs = []}}\n"
            "  }\n")
    pin = " pin_l2" if cfg.pin_l2 else " cluster" if cfg.transport == "cluster" else ""
    return (
        "  dataflow.pipeline @fig5 {\n"
        f"    dataflow.queue @q{pin} : {cfg.queue_type}\n"
        "    dataflow.stage @produce {kernel = @queue_bench::@producer, resource = "
        f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [], outputs = [@q]}}\n"
        "    dataflow.stage @consume {kernel = @queue_bench::@consumer, resource = "
        f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [@q], outputs = []}}\n"
        "  }\n")


def _ring_slot(cfg: QueueBenchConfig) -> list[str]:
    """Unsynchronized, iteration %i's slot %t = worker + producers × (i mod depth) of `ring`
    (the worker counted over the grid: the CTA with one a CTA) and its first word %first."""
    own = ["        %cta = gpu.block_id x"]
    if cfg.workers > 1:
        own = ["        %block = gpu.block_id x",
               f"        %per = arith.constant {cfg.workers} : index",
               "        %first_worker = arith.muli %block, %per : index",
               "        %cta = arith.addi %first_worker, %worker : index"]
    return [*own,
            f"        %depth = arith.constant {cfg.depth} : index",
            f"        %pairs = arith.constant {cfg.producers} : index",
            "        %round = arith.remui %i, %depth : index",
            "        %offset = arith.muli %round, %pairs : index",
            "        %t = arith.addi %cta, %offset : index",
            f"        %wpe = arith.constant {cfg.words} : index",
            "        %first = arith.muli %t, %wpe : index"]


def _bulk_mlir(cfg: QueueBenchConfig) -> str:
    """The pipeline with the bulk transport: each payload one bulk copy between the entry (or
    the ring slot) and a staging buffer in shared memory."""
    words, nbytes = cfg.words, cfg.payload_bytes
    staged = f"memref<{words}xi128, 3>"
    landed = "memref<1xi64, 3>"
    # The staging buffer is dynamic shared memory (64 KiB does not fit the static 48).
    globals_ = [
        f'    "memref.global"() {{sym_name = "staged", sym_visibility = "private", type = '
        f'{staged}, initial_value, alignment = 128 : i64, tilesync.dynamic_shared}} : () -> ()',
        f'    "memref.global"() {{sym_name = "landed", sym_visibility = "private", type = '
        f'{landed}, initial_value, alignment = 8 : i64}} : () -> ()']
    prelude = ["      %c0 = arith.constant 0 : index", "      %c1 = arith.constant 1 : index",
               "      %tid = gpu.thread_id x",
               f"      %buf = memref.get_global @staged : {staged}",
               "      %lead = arith.cmpi eq, %tid, %c0 : index"]
    unroll = cfg.block_unroll
    accs = ", ".join(f"%acc{u} = %z" for u in range(unroll))
    results = ", ".join(f"%r{u}" for u in range(unroll))
    i128s = ", ".join(["i128"] * unroll)
    if cfg.synchronized:
        q = cfg.queue_type
        params = f"%q: {q}, "
        acquire_empty = [f"        %t = dataflow.acquire_empty %q : {q}",
                         f"        %e = dataflow.entry %q, %t : {q} -> {cfg.entry_type}"]
        acquire_full = [f"        %t = dataflow.acquire_full %q : {q}",
                        f"        %e = dataflow.entry %q, %t : {q} -> {cfg.entry_type}"]
        entry, entry_type = "%e[%c0]", cfg.entry_type
        # The async proxy does not see the generic acquire (nor its writes the release).
        fence_global = ["          tile.fence_proxy_async global"]
        release_full = [f"        dataflow.release_full %q, %t : {q}"]
        release_empty = [f"        dataflow.release_empty %q, %t : {q}"]
    else:
        params = "%ring: memref<?xi128>, "
        acquire_empty = acquire_full = _ring_slot(cfg)
        entry, entry_type = "%ring[%first]", "memref<?xi128>"
        fence_global = []
        release_full = release_empty = ["        gpu.barrier"]  # the buffer is free again

    producer = _header(cfg, "producer", f"{params}%iters: index")
    producer += "\n".join([
        *prelude, "      scf.for %i = %c0 to %iters step %c1 {", *acquire_empty,
        *[f"  {line}" for line in _produce_body(cfg, "%buf", "%t", staged)],
        "        tile.fence_proxy_async", "        gpu.barrier",
        "        scf.if %lead {", *fence_global,
        f"          tile.bulk_store {entry}, %buf[%c0] bytes {nbytes} : {entry_type}, {staged}",
        "          tile.tma_store_commit", "          tile.tma_store_wait 0 writes",
        *fence_global, "          scf.yield", "        }", *release_full,
        "      }", "      gpu.return", "    }"]) + "\n"

    body, news = _consume_body(cfg, "%buf", [f"%acc{u}" for u in range(unroll)], staged)
    consumer = _header(cfg, "consumer", f"{params}%out: memref<?xi128>, %iters: index")
    consumer += "\n".join([
        *prelude, "      %z = arith.constant 0 : i128",
        f"      %landed = memref.get_global @landed : {landed}",
        "      scf.if %lead {", f"        tile.mbarrier_init %landed[%c0] count 1 : {landed}",
        "        scf.yield", "      }", "      gpu.barrier",
        f"      {results} = scf.for %i = %c0 to %iters step %c1 iter_args({accs}) -> "
        f"({i128s}) {{",
        *acquire_full,
        "        scf.if %lead {", *fence_global,
        f"          tile.mbarrier_arrive %landed[%c0] expect_tx {nbytes} : {landed}",
        f"          tile.bulk_load %buf[%c0], {entry}, %landed[%c0] bytes {nbytes} : {staged}, "
        f"{entry_type}, {landed}",
        "          scf.yield", "        }",
        "        %i64 = arith.index_cast %i : index to i64",
        "        %parity = arith.trunci %i64 : i64 to i1",
        f"        tile.mbarrier_wait %landed[%c0], %parity : {landed}",
        *[f"  {line}" for line in body],
        *release_empty,
        f"        scf.yield {', '.join(news)} : {i128s}",
        "      }",
        *_store_accumulators(cfg, [f"%r{u}" for u in range(unroll)]),
        "      gpu.return", "    }"]) + "\n"
    return ("builtin.module {\n  gpu.module @queue_bench {\n" + "\n".join(globals_) + "\n"
            + producer + consumer + "  }\n" + _pipeline(cfg) + "}\n")


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
