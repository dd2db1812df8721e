"""bench/dataflow.py without a GPU: the sweep's configurations, the best shape per payload and
transport with its unsynchronized twin, and the table naming the transport."""

from __future__ import annotations

from tilesync.bench import dataflow


def _row(payload, transport, synchronized, rate, pairs=132, threads=256, unroll=8):
    return {"payload_bytes": payload, "transport": transport, "synchronized": synchronized,
            "pairs": pairs, "threads": threads, "unroll": unroll, "bytes_per_s": rate,
            "checks": [{"after": "first run", "ok": True}] if synchronized else []}


def test_the_sweep_adds_bulk_configurations_that_fit_shared_memory():
    configs = list(dataflow._configurations(dataflow.PAYLOADS, dataflow.SHAPES,
                                            dataflow.BULK_PAYLOADS, dataflow.BULK_SHAPES))
    bulk = [c for c in configs if c[0] == "bulk"]
    assert {payload for _, payload, _ in bulk} == {16 << 10, 32 << 10, 64 << 10}
    assert [c for c in configs if c[0] == "threads"] == list(dataflow._configurations(
        dataflow.PAYLOADS, dataflow.SHAPES, (), ()))


def test_best_per_payload_and_transport_with_its_twin():
    rows = [_row(16 << 10, "threads", True, 3e12), _row(16 << 10, "threads", False, 3.3e12),
            _row(16 << 10, "bulk", True, 4e12, threads=512, unroll=2),
            _row(16 << 10, "bulk", False, 4.4e12, threads=512, unroll=2),
            _row(16 << 10, "bulk", True, 2e12),
            {"payload_bytes": 64 << 10, "transport": "bulk", "synchronized": True,
             "pairs": 264, "threads": 256, "unroll": 2, "refused": "not resident"}]
    result = dataflow.summarize({"copy": {"bytes_per_s": 2e12}, "rows": rows,
                                 "goal": "1.6x"})
    best = {(b["payload_bytes"], b["transport"]): b for b in result["best"]}
    assert list(best) == [(16 << 10, "threads"), (16 << 10, "bulk")]
    bulk = best[(16 << 10, "bulk")]
    assert (bulk["threads"], bulk["over_copy"]) == (512, 2.0)
    assert abs(bulk["sync_cost"] - 1.1) < 1e-9 and bulk["checks_ok"]
    table = dataflow.queue_table(result)
    assert "transport" in table.splitlines()[1]
    assert any(line.split()[:2] == ["16K", "bulk"] for line in table.splitlines())
    assert "unroll 2 bulk    sync   refused" in table


def test_results_from_before_the_bulk_transport_read_as_threads():
    row = _row(1 << 10, "threads", True, 1e12)
    del row["transport"]
    result = dataflow.summarize({"copy": {"bytes_per_s": 1e12}, "rows": [row], "goal": ""})
    assert result["best"][0]["transport"] == "threads"


def test_the_twin_of_several_workers_drawing_ahead_is_their_transfers_unsynchronized():
    rows = [_row(32 << 10, "threads", True, 2.6e12, threads=128) | {"workers": 2,
                                                                   "draw_ahead": True},
            _row(32 << 10, "threads", False, 2.9e12, threads=128) | {"workers": 2,
                                                                    "draw_ahead": False},
            _row(32 << 10, "threads", False, 2.0e12, threads=128) | {"workers": 4},
            _row(32 << 10, "threads", True, 2.0e12)]
    result = dataflow.summarize({"copy": {"bytes_per_s": 2e12}, "rows": rows, "goal": ""})
    (best,) = result["best"]
    assert (best["workers"], best["draw_ahead"], best["over_copy"]) == (2, True, 1.3)
    assert abs(best["sync_cost"] - 2.9 / 2.6) < 1e-9
    table = dataflow.queue_table(result)
    assert "unroll 8 workers 2 ahead threads sync   2.600" in table
    assert "unroll 8 workers 4 threads unsync 2.000" in table


def test_the_sweep_measures_each_unsynchronized_transfer_once(monkeypatch):
    seen = []

    def fake_config(cfg, warmup, reps, replays=0, repeats=0):
        seen.append((cfg.workers, cfg.draw_ahead, cfg.synchronized))
        return {"payload_bytes": cfg.payload_bytes, "pairs": cfg.pairs, "threads": cfg.threads,
                "unroll": cfg.unroll, "synchronized": cfg.synchronized,
                "transport": cfg.transport, "workers": cfg.workers,
                "draw_ahead": cfg.draw_ahead, "depth": cfg.depth, "bytes_per_s": 1e12,
                "checks": []}

    monkeypatch.setattr(dataflow, "copy_rate", lambda: {"bytes_per_s": 1e12})
    monkeypatch.setattr(dataflow, "queue_config", fake_config)
    dataflow.queue_bandwidth(payloads=(), bulk_payloads=(), worker_payloads=(16 << 10,),
                             worker_shapes=((132, 128, 8, 2, True, 2), (132, 128, 8, 2, False, 2)),
                             cluster_payloads=())
    assert seen == [(2, True, True), (2, False, False), (2, False, True)]
    shapes = {form for _, _, form in dataflow._configurations((16 << 10,), ((132, 256, 8),), (),
                                                              (), (), ())}
    assert shapes == {(132, 256, 8, 1, False, 4)}  # one worker, no draws ahead, 4 entries


def test_the_cluster_transport_is_measured_where_its_ring_fits(monkeypatch):
    """A cluster queue's ring is in the consumer's shared memory: a 64 KB payload's ring of 3
    fits (192 KB), none of 4; synchronized and not, as the other transports; a row without
    a twin shows "-"."""
    seen = []

    def fake_config(cfg, warmup, reps, replays=0, repeats=0):
        seen.append((cfg.transport, cfg.payload_bytes, cfg.depth, cfg.synchronized,
                     cfg.pin_l2))
        return _row(cfg.payload_bytes, cfg.transport, cfg.synchronized, 3e12, cfg.pairs,
                    cfg.threads, cfg.unroll) | {"depth": cfg.depth}

    monkeypatch.setattr(dataflow, "copy_rate", lambda: {"bytes_per_s": 1.5e12})
    monkeypatch.setattr(dataflow, "queue_config", fake_config)
    result = dataflow.queue_bandwidth(
        payloads=(), bulk_payloads=(), worker_payloads=(), cluster_payloads=(64 << 10,),
        cluster_shapes=((66, 512, 2, 1, False, 3), (66, 512, 2, 1, False, 4)))
    assert seen == [("cluster", 64 << 10, 3, True, False), ("cluster", 64 << 10, 3, False, False)]
    (best,) = result["best"]
    assert best["transport"] == "cluster" and best["over_copy"] == 2.0
    assert best["sync_cost"] == 1.0
    result["rows"] = [r for r in result["rows"] if r["synchronized"]]
    line = next(x for x in dataflow.queue_table(dataflow.summarize(result)).splitlines()
                if x.split()[:2] == ["64K", "cluster"])
    assert line.split()[-4:] == ["-", "2.00", "-", "ok"]
