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
queues): what the synchronization costs is the difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

WORD_BYTES = 16  # one i128: a 16-byte access per thread


@dataclass(frozen=True)
class QueueBenchConfig:
    payload_bytes: int
    pairs: int = 132
    depth: int = 4  # entries per producer-consumer pair: the queue has pairs × depth
    threads: int = 256
    unroll: int = 8
    synchronized: bool = True
    pin_l2: bool = True

    def __post_init__(self) -> None:
        if self.payload_bytes % WORD_BYTES:
            raise ValueError(f"payload must be a multiple of {WORD_BYTES} bytes")
        words = self.payload_bytes // WORD_BYTES
        if words % (self.block_threads * self.block_unroll):
            raise ValueError(f"{words} words do not split over {self.block_threads} threads "
                             f"x {self.block_unroll}")

    @property
    def words(self) -> int:
        return self.payload_bytes // WORD_BYTES

    @property
    def block_threads(self) -> int:
        return min(self.threads, self.words)

    @property
    def block_unroll(self) -> int:
        return max(1, min(self.unroll, self.words // self.block_threads))

    @property
    def entries(self) -> int:
        return self.pairs * self.depth

    @property
    def queue_type(self) -> str:
        return f"!dataflow.queue<{self.entries} x memref<{self.words}xi128>>"


def _header(cfg: QueueBenchConfig, name: str, params: str) -> str:
    return (f"    gpu.func @{name}({params}) kernel attributes "
            f"{{gpu.known_block_size = array<i32: {cfg.block_threads}, 1, 1>}} {{\n")


def _word_index(cfg: QueueBenchConfig, u: int, base: str) -> list[str]:
    return [f"      %o{u} = arith.constant {u * cfg.block_threads} : index",
            f"      %j{u} = arith.addi {base}, %o{u} : index"]


def _produce_body(cfg: QueueBenchConfig, entry: str, ticket: str) -> list[str]:
    step = cfg.block_threads * cfg.block_unroll
    lines = [f"      %t64 = arith.index_cast {ticket} : index to i64",
             "      %t128 = arith.extui %t64 : i64 to i128",
             "      %c40 = arith.constant 40 : i128",
             "      %tag = arith.shli %t128, %c40 : i128",
             f"      %step = arith.constant {step} : index",
             f"      %words = arith.constant {cfg.words} : index",
             "      scf.for %w = %tid to %words step %step {"]
    for u in range(cfg.block_unroll):
        lines += [f"  {line}" for line in _word_index(cfg, u, "%w")]
        lines += [f"        %j{u}w = arith.index_cast %j{u} : index to i128",
                  f"        %v{u} = arith.addi %tag, %j{u}w : i128",
                  f"        memref.store %v{u}, {entry}[%j{u}] : memref<{cfg.words}xi128>"]
    lines.append("      }")
    return lines


def _consume_body(cfg: QueueBenchConfig, entry: str, accs: list[str]) -> tuple[list[str],
                                                                              list[str]]:
    """Loads of `unroll` words first, then their sums: several loads in flight per thread."""
    step = cfg.block_threads * cfg.block_unroll
    news = [f"%n{u}" for u in range(cfg.block_unroll)]
    lines = [f"      %step = arith.constant {step} : index",
             f"      %words = arith.constant {cfg.words} : index",
             f"      {', '.join(news)} = scf.for %w = %tid to %words step %step "
             f"iter_args({', '.join(f'%a{u} = {acc}' for u, acc in enumerate(accs))}) -> "
             f"({', '.join(['i128'] * cfg.block_unroll)}) {{"]
    for u in range(cfg.block_unroll):
        lines += [f"  {line}" for line in _word_index(cfg, u, "%w")]
    for u in range(cfg.block_unroll):
        lines.append(f"        %l{u} = memref.load {entry}[%j{u}] : memref<{cfg.words}xi128>")
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


def queue_bench_mlir(cfg: QueueBenchConfig) -> str:
    """The pipeline's MLIR: producer(iters), consumer(out, iters), and `@fig5` (or, without
    synchronization, the two kernels over a plain `ring` buffer)."""
    q = cfg.queue_type
    zero = ["      %c0 = arith.constant 0 : index", "      %c1 = arith.constant 1 : index",
            "      %tid = gpu.thread_id x"]
    accs0 = ["      %z = arith.constant 0 : i128"]
    acc_names = ["%z"] * cfg.block_unroll
    if cfg.synchronized:
        producer = _header(cfg, "producer", f"%q: {q}, %iters: index")
        producer += "\n".join([*zero, "      scf.for %i = %c0 to %iters step %c1 {",
                               f"        %t = dataflow.acquire_empty %q : {q}",
                               f"        %e = dataflow.entry %q, %t : {q} -> "
                               f"memref<{cfg.words}xi128>",
                               *[f"  {line}" for line in _produce_body(cfg, "%e", "%t")],
                               f"        dataflow.release_full %q, %t : {q}",
                               "      }", "      gpu.return", "    }"]) + "\n"
        body, news = _consume_body(cfg, "%e", [f"%acc{u}" for u in range(cfg.block_unroll)])
        consumer = _header(cfg, "consumer", f"%q: {q}, %out: memref<?xi128>, %iters: index")
        consumer += "\n".join([
            *zero, *accs0,
            f"      {', '.join(f'%r{u}' for u in range(cfg.block_unroll))} = scf.for %i = %c0 "
            f"to %iters step %c1 iter_args("
            f"{', '.join(f'%acc{u} = %z' for u in range(cfg.block_unroll))}) -> "
            f"({', '.join(['i128'] * cfg.block_unroll)}) {{",
            f"        %t = dataflow.acquire_full %q : {q}",
            f"        %e = dataflow.entry %q, %t : {q} -> memref<{cfg.words}xi128>",
            *[f"  {line}" for line in body],
            f"        dataflow.release_empty %q, %t : {q}",
            f"        scf.yield {', '.join(news)} : {', '.join(['i128'] * cfg.block_unroll)}",
            "      }",
            *_store_accumulators(cfg, [f"%r{u}" for u in range(cfg.block_unroll)]),
            "      gpu.return", "    }"]) + "\n"
        pin = " pin_l2" if cfg.pin_l2 else ""
        pipeline = (
            "  dataflow.pipeline @fig5 {\n"
            f"    dataflow.queue @q{pin} : {q}\n"
            "    dataflow.stage @produce {kernel = @queue_bench::@producer, resource = "
            f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [], outputs = [@q]}}\n"
            "    dataflow.stage @consume {kernel = @queue_bench::@consumer, resource = "
            f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [@q], outputs = []}}\n"
            "  }\n")
        return ("builtin.module {\n  gpu.module @queue_bench {\n" + producer + consumer +
                "  }\n" + pipeline + "}\n")

    # The same transfers, unsynchronized: slot = cta + pairs * (i mod depth) of `ring`.
    def slot_of() -> list[str]:
        return ["        %cta = gpu.block_id x",
                f"        %depth = arith.constant {cfg.depth} : index",
                f"        %pairs = arith.constant {cfg.pairs} : index",
                "        %round = arith.remui %i, %depth : index",
                "        %lane = arith.muli %round, %pairs : index",
                "        %t = arith.addi %cta, %lane : index",
                f"        %wpe = arith.constant {cfg.words} : index",
                "        %first = arith.muli %t, %wpe : index"]

    def shifted(lines: list[str]) -> list[str]:
        out = []
        for line in lines:
            if "memref.store %v" in line or "memref.load %e" in line:
                line = line.replace("%e[%j", "%ring[%jr").replace(
                    f": memref<{cfg.words}xi128>", ": memref<?xi128>")
            out.append(line)
            if "= arith.addi %w, %o" in line:
                u = line.split("%j")[1].split(" ")[0]
                out.append(f"{line[:len(line) - len(line.lstrip())]}%jr{u} = arith.addi "
                           f"%first, %j{u} : index")
        return out

    producer = _header(cfg, "producer", "%ring: memref<?xi128>, %iters: index")
    producer += "\n".join([*zero, "      scf.for %i = %c0 to %iters step %c1 {", *slot_of(),
                           *[f"  {line}" for line in shifted(_produce_body(cfg, "%e", "%t"))],
                           "      }", "      gpu.return", "    }"]) + "\n"
    body, news = _consume_body(cfg, "%e", [f"%acc{u}" for u in range(cfg.block_unroll)])
    consumer = _header(cfg, "consumer", "%ring: memref<?xi128>, %out: memref<?xi128>, "
                                        "%iters: index")
    consumer += "\n".join([
        *zero, *accs0,
        f"      {', '.join(f'%r{u}' for u in range(cfg.block_unroll))} = scf.for %i = %c0 "
        f"to %iters step %c1 iter_args("
        f"{', '.join(f'%acc{u} = %z' for u in range(cfg.block_unroll))}) -> "
        f"({', '.join(['i128'] * cfg.block_unroll)}) {{",
        *slot_of(),
        *[f"  {line}" for line in shifted(body)],
        f"        scf.yield {', '.join(news)} : {', '.join(['i128'] * cfg.block_unroll)}",
        "      }",
        *_store_accumulators(cfg, [f"%r{u}" for u in range(cfg.block_unroll)]),
        "      gpu.return", "    }"]) + "\n"
    del acc_names
    pipeline = (
        "  dataflow.pipeline @fig5 {\n"
        "    dataflow.stage @produce {kernel = @queue_bench::@producer, resource = "
        f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [], outputs = []}}\n"
        "    dataflow.stage @consume {kernel = @queue_bench::@consumer, resource = "
        f"#dataflow.resource<simt>, ctas = {cfg.pairs} : i64, inputs = [], outputs = []}}\n"
        "  }\n")
    return ("builtin.module {\n  gpu.module @queue_bench {\n" + producer + consumer + "  }\n"
            + pipeline + "}\n")


def expected_checksum(first_ticket: int, tickets: int, words: int) -> int:
    """The sum modulo 2^128 of every word of tickets [first, first + tickets): what the
    consumers' accumulators add up to when every ticket arrived once, filled."""
    ticket_sum = (2 * first_ticket + tickets - 1) * tickets // 2
    return (words * (ticket_sum << 40) + tickets * (words * (words - 1) // 2)) % (1 << 128)


def checksum(out_words: Iterable[int]) -> int:
    """The sum modulo 2^128 of the consumers' accumulators (`out`, as Python ints)."""
    return sum(out_words) % (1 << 128)
