"""`tilesync bench dataflow`: Kitsune's queues on a real GPU.

Queue bandwidth as in Kitsune's Fig. 5: aggregate SM-to-SM bandwidth (payload bytes delivered
per second by all producer-consumer pairs) for payloads of 1 KB to 1 MB, with the queue's
synchronization and with the same transfers unsynchronized, against the rate of a 1 GiB
device-to-device copy (bytes copied per second), all measured in one run. Each payload moves
by the threads' 16-byte accesses (transport "threads") and, at 16-64 KB, also by one bulk
copy through shared memory (transport "bulk", kernels/queue_bench.py), and at 1-64 KB through a
queue in distributed shared memory (transport "cluster": each producer-consumer pair a cluster,
the ring in the consumer's shared memory; its twin stores into the peer's ring through
`tile.cluster_map` with no waits). Every synchronized
configuration is checked first: the consumers' checksum must equal the sum of every ticket's
payload (fresh tickets each run, the output poisoned before), after one run, after the timed
repetitions and after CUDA-graph replays (no memset between any of them).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np

GIB = 1 << 30
RUN_BYTES = 4 * GIB
"""Payload bytes one timed run of a configuration delivers (all pairs): a launch's fixed costs
(its start, a cluster's prologue, the rings' fill and drain) are then a small part of it. On an
H100 at 5051236 the cluster transport's 16 KB shape delivered 2.32 TB/s in runs of 1 GiB and
2.42 in runs of 4 GiB."""
PAYLOADS = (1 << 10, 4 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20)
# (pairs, threads per CTA, words a thread loads before using them): from half a pair to three
# pairs per SM; shapes whose CTAs cannot all be resident are refused (and reported so)
SHAPES = ((132, 256, 8), (264, 128, 8), (396, 128, 8), (132, 512, 2), (264, 256, 2),
          (264, 512, 2), (132, 1024, 2), (66, 1024, 2))
# the bulk transport: payloads that fit its staging buffer, shapes whose CTAs (a 16-64 KB
# buffer each) can be resident
# (pairs, threads a worker, unroll, workers a CTA, draw ahead, entries a worker): several queue
# workers a CTA, each drawing its next ticket while it moves the current one, so that the
# tickets' round trips to L2 overlap the payloads (16-64 KB, where they cost the most against
# the transfers); the ring as large as one worker's of 4 entries (a larger one outgrows L2)
WORKER_PAYLOADS = (16 << 10, 32 << 10, 64 << 10)
WORKER_SHAPES = ((132, 128, 8, 2, True, 2), (132, 128, 8, 4, True, 1), (132, 256, 4, 2, True, 2),
                 (132, 512, 2, 2, True, 2), (132, 128, 8, 2, False, 2),
                 (132, 256, 4, 2, False, 2))
BULK_PAYLOADS = (16 << 10, 32 << 10, 64 << 10)
BULK_SHAPES = ((132, 256, 8), (132, 512, 2), (264, 256, 2))
# the cluster transport (a ring per producer-consumer pair in the consumer's shared memory):
# (pairs, threads, unroll, workers, draw ahead, entries); 132 pairs put two CTAs on an SM
# where their rings fit, 66 pairs one (a 64 KB payload's ring of 3 takes 192 KB); clusters
# wait on no other, so pairs whose rings do not fit at once run one after another
CLUSTER_PAYLOADS = (1 << 10, 4 << 10, 16 << 10, 32 << 10, 64 << 10)
CLUSTER_SHAPES = ((132, 256, 8, 1, False, 3), (132, 512, 2, 1, False, 3),
                  (132, 256, 8, 1, False, 6), (66, 512, 2, 1, False, 3),
                  (66, 256, 8, 1, False, 2))
GOAL_RATIO = 1.6  # queue bandwidth at 16-64 KB over the copy's bytes per second
GOAL_SYNC_COST = 1.2  # unsynchronized over synchronized bandwidth, same transfers


def _events_ms(run, warmup: int, reps: int, stream=None) -> list[float]:
    from tilesync.runtime.stream import Event, elapsed_ms

    for _ in range(warmup):
        run()
    samples = []
    for _ in range(reps):
        start = Event().record(stream)
        run()
        end = Event().record(stream)
        end.synchronize()
        samples.append(elapsed_ms(start, end))
    return samples


def copy_rate(nbytes: int = GIB, warmup: int = 3, reps: int = 10) -> dict[str, Any]:
    """Bytes copied per second by cuMemcpyDtoDAsync of `nbytes` (median of `reps`)."""
    from cuda.bindings import driver

    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.errors import check
    from tilesync.runtime.stream import Stream

    src, dst = DeviceBuffer(nbytes, np.uint8), DeviceBuffer(nbytes, np.uint8)
    src.fill_bytes(0x5A)
    stream = Stream()

    def run() -> None:
        check(driver.cuMemcpyDtoDAsync(dst.ptr, src.ptr, nbytes, stream.handle),
              "cuMemcpyDtoDAsync")

    samples = _events_ms(run, warmup, reps, stream)
    median = statistics.median(samples)
    src.close()
    dst.close()
    return {"bytes": nbytes, "samples_ms": samples, "median_ms": median,
            "bytes_per_s": nbytes / (median * 1e-3)}


def consumers_checksum(out) -> int:
    """The consumers' accumulators (i128 little-endian pairs of u64) summed modulo 2^128."""
    from tilesync.kernels.queue_bench import checksum

    words = out.to_numpy().view(np.uint64).reshape(-1, 2)
    return checksum(int(lo) | (int(hi) << 64) for lo, hi in words)


def queue_config(cfg, warmup: int, reps: int, graph_replays: int = 0, repeats: int = 0,
                 total_bytes: int = RUN_BYTES, pipeline: str | None = None) -> dict[str, Any]:
    """Time one configuration (synchronized or not); check the synchronized one's data.
    `pipeline`: a `-p` spec compiling it instead of the default lowering."""
    import tilesync
    from tilesync.kernels.queue_bench import queue_bench_module, run_checksum
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.dataflow import DataflowProgram

    iters = max(4, total_bytes // (cfg.producers * cfg.payload_bytes))
    delivered = cfg.producers * iters * cfg.payload_bytes
    compiled = tilesync.compile(queue_bench_module(cfg), pipeline=pipeline)
    out = DeviceBuffer(cfg.pairs * cfg.block_threads * 2, np.uint64)
    row: dict[str, Any] = {"payload_bytes": cfg.payload_bytes, "pairs": cfg.pairs,
                           "threads": cfg.threads, "unroll": cfg.unroll, "depth": cfg.depth,
                           "iters": iters, "delivered_bytes": delivered,
                           "synchronized": cfg.synchronized, "transport": cfg.transport,
                           "workers": cfg.workers, "draw_ahead": cfg.draw_ahead}
    if cfg.synchronized:
        program = DataflowProgram(compiled)
        args = {"produce": [iters], "consume": [out, iters]}
        checks = []

        def checked_run(label: str) -> None:
            out.fill_bytes(0xFF)
            expected = run_checksum(cfg, program.runs, iters)
            program.run(args)
            program.synchronize()
            checks.append({"after": label, "ok": consumers_checksum(out) == expected})

        checked_run("first run")
        samples = _events_ms(lambda: program.run(args), warmup, reps,
                             program._streams["produce"])
        for _ in range(repeats):
            program.run(args)
        program.synchronize()
        checked_run(f"{warmup + reps + repeats} more runs")
        if graph_replays:
            graph = program.capture(args)
            for _ in range(graph_replays - 1):
                graph.launch()
            program.synchronize()  # the replays still write out
            out.fill_bytes(0xFF)
            expected = run_checksum(cfg, program.runs, iters)
            graph.launch()
            program.synchronize()
            checks.append({"after": f"{graph_replays} graph replays",
                           "ok": consumers_checksum(out) == expected})
            graph.close()
        row["checks"] = checks
        row["l2_window_bytes"] = program.l2_window[1] if program.l2_window else 0
    elif cfg.transport == "cluster":  # the rings are the consumers' shared memory
        program = DataflowProgram(compiled)
        args = {"produce": [iters], "consume": [out, iters]}
        samples = _events_ms(lambda: program.run(args), warmup, reps,
                             program._streams["produce"])
        program.synchronize()
    else:
        ring = DeviceBuffer(cfg.entries * cfg.words * 2, np.uint64)
        ring.fill_bytes(0)
        program = DataflowProgram(compiled)
        args = {"produce": [ring, iters], "consume": [ring, out, iters]}
        samples = _events_ms(lambda: program.run(args), warmup, reps,
                             program._streams["produce"])
        program.synchronize()
    row["co_residency"] = program.co_residency
    row["persistent"] = program.persistent is not None
    program.close()
    median = statistics.median(samples)
    row.update({"samples_ms": samples, "median_ms": median,
                "bytes_per_s": delivered / (median * 1e-3)})
    return row


def _configurations(payloads, shapes, bulk_payloads, bulk_shapes, worker_payloads=(),
                    worker_shapes=(), cluster_payloads=(), cluster_shapes=()):
    """(transport, payload, (pairs, threads, unroll, workers, draw ahead, depth)) of the sweep,
    threads first (one worker a CTA, then several)."""
    from tilesync.kernels.queue_bench import QueueBenchConfig as Config

    defaults = (Config.workers, Config.draw_ahead, Config.depth)  # where a form is shorter
    for transport, sizes, forms in (("threads", payloads, shapes),
                                    ("threads", worker_payloads, worker_shapes),
                                    ("bulk", bulk_payloads, bulk_shapes),
                                    ("cluster", cluster_payloads, cluster_shapes)):
        for payload in sizes:
            for form in forms:
                pairs, threads, unroll, workers, ahead, depth = (*form, *defaults[len(form) - 3:])
                if unroll == 2 and payload // 16 < threads * unroll:
                    continue  # too few words for these CTAs: the first shapes cover it
                yield transport, payload, (pairs, threads, unroll, workers, ahead, depth)


def _twin(rows: list[dict[str, Any]], top: dict[str, Any]) -> float:
    """The unsynchronized rate of `top`'s transfers: the same CTAs and workers (nothing is
    drawn without a queue); rows from before workers were swept read as the config's
    defaults."""
    from tilesync.kernels.queue_bench import QueueBenchConfig as Config

    same = (("payload_bytes", None), ("pairs", None), ("threads", None), ("unroll", None),
            ("workers", Config.workers), ("depth", Config.depth))
    return next((r["bytes_per_s"] for r in rows
                 if not r["synchronized"] and "refused" not in r
                 and _transport(r) == _transport(top)
                 and all(r.get(k, d) == top.get(k, d) for k, d in same)), float("nan"))


def queue_bandwidth(payloads=PAYLOADS, shapes=SHAPES, warmup: int = 3, reps: int = 10,
                    graph_replays: int = 100, bulk_payloads=BULK_PAYLOADS,
                    bulk_shapes=BULK_SHAPES, worker_payloads=WORKER_PAYLOADS,
                    worker_shapes=WORKER_SHAPES, cluster_payloads=CLUSTER_PAYLOADS,
                    cluster_shapes=CLUSTER_SHAPES) -> dict[str, Any]:
    """Fig. 5 on this device: every payload × shape × transport, synchronized and not (the
    same transfers once per workers a CTA), and the copy."""
    from tilesync.contract import TilesyncRuntimeError
    from tilesync.kernels.queue_bench import CLUSTER_MAX_RING, QueueBenchConfig

    copy = copy_rate()
    rows: list[dict[str, Any]] = []
    for transport, payload, (pairs, threads, unroll, workers, ahead, depth) in _configurations(
            payloads, shapes, bulk_payloads, bulk_shapes, worker_payloads, worker_shapes,
            cluster_payloads, cluster_shapes):
        if transport == "cluster" and depth * payload > CLUSTER_MAX_RING:
            continue  # its ring does not fit in the consumer's shared memory
        for synchronized in (True, False):
            form = {"payload_bytes": payload, "pairs": pairs, "threads": threads,
                    "unroll": unroll, "synchronized": synchronized, "transport": transport,
                    "workers": workers, "draw_ahead": ahead and synchronized, "depth": depth}
            if not synchronized and any(all(r.get(k) == v for k, v in form.items())
                                        for r in rows):
                continue  # these transfers unsynchronized are measured already
            cfg = QueueBenchConfig(payload, pairs=pairs, threads=threads, unroll=unroll,
                                   synchronized=synchronized, transport=transport,
                                   workers=workers, draw_ahead=ahead and synchronized,
                                   depth=depth, pin_l2=transport != "cluster")
            replays = graph_replays if synchronized and payload == 64 << 10 else 0
            try:
                rows.append(queue_config(cfg, warmup, reps, replays, repeats=replays))
            except TilesyncRuntimeError as err:  # a shape whose CTAs cannot all be resident
                if err.is_device_fault:
                    raise
                rows.append(form | {"refused": str(err)})
    return summarize({"experiment": "queue_bandwidth", "copy": copy, "rows": rows,
                      "goal": f">= {GOAL_RATIO}x the copy's bytes/s at 16-64 KB, "
                              f"synchronization <= {GOAL_SYNC_COST}x"})


CLUSTER_ARRIVAL_CASES = ((16 << 10, 3, 132, 256, 8), (16 << 10, 6, 132, 256, 8),
                         (32 << 10, 3, 132, 256, 8), (32 << 10, 3, 132, 512, 2),
                         (64 << 10, 3, 66, 256, 8), (64 << 10, 2, 66, 512, 2))


def cluster_arrivals_ab(cases=CLUSTER_ARRIVAL_CASES, warmup: int = 2,
                        reps: int = 7) -> dict[str, Any]:
    """The cluster transport lowered with each `cluster_arrivals` of convert-dataflow-to-nvvm
    (payload, entries, pairs, threads, unroll), in one run: what chose its default
    (bench/results/dataflow-cluster-arrivals-ab-*)."""
    from tilesync.kernels.queue_bench import QueueBenchConfig
    from tilesync.lowering.dataflow_to_nvvm import CLUSTER_ARRIVALS
    from tilesync.lowering.pipeline import KERNEL_TO_LLVM

    copy = copy_rate()
    rows = []
    for payload, depth, pairs, threads, unroll in cases:
        for arrivals in CLUSTER_ARRIVALS:
            cfg = QueueBenchConfig(payload, pairs=pairs, depth=depth, threads=threads,
                                   unroll=unroll, transport="cluster", pin_l2=False)
            spec = ",".join(f"{name}{{cluster_arrivals={arrivals}}}"
                            if name == "convert-dataflow-to-nvvm" else name
                            for name in KERNEL_TO_LLVM)
            rows.append(queue_config(cfg, warmup, reps, pipeline=spec) |
                        {"cluster_arrivals": arrivals})
    return {"experiment": "cluster_arrivals_ab", "copy": copy, "rows": rows}


DEPTH_SWEEP = ((16384, (396, 128, 8)), (16384, (264, 256, 2)), (32768, (264, 128, 8)),
               (65536, (132, 256, 8)), (65536, (264, 256, 2)), (65536, (132, 512, 2)))


def queue_depth_sweep(depths=(2, 3, 4, 8, 16), cases=DEPTH_SWEEP, warmup: int = 3,
                      reps: int = 10) -> dict[str, Any]:
    """Entries per producer-consumer pair against bandwidth, synchronized and not: a deeper
    ring lets producers run further ahead but, once the rings outgrow L2, costs more than it
    gives (bench/results/dataflow-depth-sweep-*)."""
    from tilesync.contract import TilesyncRuntimeError
    from tilesync.kernels.queue_bench import QueueBenchConfig

    copy = copy_rate()
    rows = []
    for payload, (pairs, threads, unroll) in cases:
        for depth in depths:
            for synchronized in (True, False):
                cfg = QueueBenchConfig(payload, pairs=pairs, threads=threads, unroll=unroll,
                                       depth=depth, synchronized=synchronized)
                try:
                    rows.append(queue_config(cfg, warmup, reps))
                except TilesyncRuntimeError as err:
                    if err.is_device_fault:
                        raise
    return {"experiment": "queue_depth_sweep", "copy": copy, "rows": rows}


def _transport(row: dict[str, Any]) -> str:
    return row.get("transport", "threads")  # results from before the bulk transport


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Per payload and transport: the best synchronized shape, its unsynchronized twin, the
    ratios."""
    copy = result["copy"]["bytes_per_s"]
    best = []
    for payload, transport in sorted({(r["payload_bytes"], _transport(r))
                                      for r in result["rows"]},
                                     key=lambda k: (k[0], k[1] != "threads")):
        same = [r for r in result["rows"] if r["payload_bytes"] == payload
                and _transport(r) == transport and "refused" not in r]
        synced = [r for r in same if r["synchronized"]]
        if not synced:
            continue
        top = max(synced, key=lambda r: r["bytes_per_s"])
        twin = _twin(same, top)
        best.append({"payload_bytes": payload, "transport": transport,
                     "pairs": top["pairs"], "threads": top["threads"],
                     "unroll": top["unroll"], "workers": top.get("workers", 1),
                     "draw_ahead": top.get("draw_ahead", False),
                     "sync_bytes_per_s": top["bytes_per_s"],
                     "unsync_bytes_per_s": twin,
                     "over_copy": top["bytes_per_s"] / copy,
                     "sync_cost": twin / top["bytes_per_s"],
                     "checks_ok": all(c["ok"] for r in synced for c in r.get("checks", []))})
    result["best"] = best
    return result


def _or_dash(value: float, width: int, digits: int) -> str:
    """A number, or "-" where it was not measured (NaN: no unsynchronized twin)."""
    return f"{'-':>{width}}" if math.isnan(value) else f"{value:>{width}.{digits}f}"


def queue_table(result: dict[str, Any]) -> str:
    copy = result["copy"]["bytes_per_s"]
    lines = [f"queue bandwidth (Kitsune Fig. 5): 1 GiB device copy {copy / 1e12:.3f} TB/s "
             f"(bytes copied per second); each configuration's runs deliver "
             f"{RUN_BYTES >> 30} GiB of payload",
             f"{'payload':>8} {'transport':>9} {'pairs':>5} {'thr':>4} {'unr':>3} "
             f"{'wk':>2} {'ahead':>5} "
             f"{'sync TB/s':>10} "
             f"{'unsync TB/s':>12} "
             f"{'/copy':>6} {'sync cost':>9} {'checks':>6}"]
    for b in result["best"]:
        size = b["payload_bytes"]
        label = f"{size >> 20}M" if size >= 1 << 20 else f"{size >> 10}K"
        lines.append(f"{label:>8} {_transport(b):>9} {b['pairs']:>5} {b['threads']:>4} "
                     f"{b['unroll']:>3} {b.get('workers', 1):>2} "
                     f"{'yes' if b.get('draw_ahead') else 'no':>5} "
                     f"{b['sync_bytes_per_s'] / 1e12:>10.3f} "
                     f"{_or_dash(b['unsync_bytes_per_s'] / 1e12, 12, 3)} {b['over_copy']:>6.2f} "
                     f"{_or_dash(b['sync_cost'], 9, 2)} {'ok' if b['checks_ok'] else 'FAIL':>6}")
    lines.append(f"goal: {result['goal']}")
    lines.append("unsynchronized consumers read the ring cached at L2 only (tile.load_l2), as "
                 "a synchronized one reads after its acquire; cluster: the queue in "
                 "distributed shared memory, a ring per pair in the consumer's shared memory "
                 "(-: no unsynchronized twin measured)")
    lines.append("every configuration (TB/s delivered; refused: its CTAs cannot all be "
                 "resident):")
    for r in result["rows"]:
        rate = "refused" if "refused" in r else f"{r['bytes_per_s'] / 1e12:.3f}"
        workers = (f" workers {r['workers']}" if r.get("workers", 1) > 1 else "") + \
            (" ahead" if r.get("draw_ahead") else "")
        lines.append(f"  {r['payload_bytes'] >> 10:>5}K pairs {r['pairs']:>4} threads "
                     f"{r['threads']:>4} unroll {r['unroll']}{workers} {_transport(r):<7} "
                     f"{'sync' if r['synchronized'] else 'unsync':<6} {rate}")
    return "\n".join(lines)


def queue_plot(result: dict[str, Any], out_dir: Path, name: str) -> Path | None:
    from tilesync.bench.report import pyplot, save_figure

    plt = pyplot()
    if plt is None:
        return None
    best = [b for b in result["best"] if _transport(b) == "threads"]
    bulk = [b for b in result["best"] if _transport(b) == "bulk"]
    sizes = [b["payload_bytes"] / 1024 for b in best]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(sizes, [b["sync_bytes_per_s"] / 1e12 for b in best], "o-", label="queue (synchronized)")
    ax.plot(sizes, [b["unsync_bytes_per_s"] / 1e12 for b in best], "s--",
            label="same transfers, no synchronization")
    if bulk:
        ax.plot([b["payload_bytes"] / 1024 for b in bulk],
                [b["sync_bytes_per_s"] / 1e12 for b in bulk], "^-",
                label="queue, bulk copies (synchronized)")
    cluster = [b for b in result["best"] if _transport(b) == "cluster"]
    if cluster:
        ax.plot([b["payload_bytes"] / 1024 for b in cluster],
                [b["sync_bytes_per_s"] / 1e12 for b in cluster], "D-",
                label="queue in distributed shared memory (synchronized)")
    copy = result["copy"]["bytes_per_s"] / 1e12
    ax.axhline(copy, color="gray", linestyle=":", label=f"1 GiB device copy ({copy:.2f} TB/s)")
    ax.axhline(copy * GOAL_RATIO, color="red", linestyle=":", label=f"goal {GOAL_RATIO}x copy")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")  # unsynchronized, small entries are served by the consumer's L1
    ax.set_xlabel("payload per entry (KB)")
    ax.set_ylabel("payload delivered, all SMs (TB/s)")
    ax.set_title(f"queue bandwidth on {result['device']['name']}")
    ax.legend(fontsize=8)
    return save_figure(plt, fig, result, out_dir, name)
