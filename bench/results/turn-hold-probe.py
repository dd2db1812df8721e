"""Probe (device): the first 4-6 timed runs of each turn of our 10-25 us conv chains at batch 1
are 5-10% slower than its last 4-5, with 1 or with 8 uncounted runs in front (so not a warm-up
after the hold kernel), and cuDNN's graph (one launch a run) not. Is it the host still
enqueueing a turn's runs when the device reaches them? The same rows with the hold kernel's
time per run (bench.mlp.HOLD_NS_PER_RUN) at 200 us (the bench's) and 2 ms, in alternating
rounds.

`python bench/results/turn-hold-probe.py` (torch; OUT names the folder of the JSON)."""
import json
import os
import statistics

SHAPES = [(1, 56, 64), (1, 56, 128), (1, 56, 256)]
ROUNDS = (200_000, 2_000_000, 200_000, 2_000_000)  # HOLD_NS_PER_RUN per round
REPS = 50


def main() -> None:
    from tilesync.bench import conv, mlp
    from tilesync.runtime.device import get_device

    out = os.environ.get("OUT", "/tmp")
    turn = REPS // mlp.TURNS  # timed runs a turn
    rounds = []
    for hold in ROUNDS:
        mlp.HOLD_NS_PER_RUN = hold
        result = conv.conv_benchmarks(SHAPES, warmup=10, reps=REPS)
        rows = {}
        for row in result["rows"]:
            choice = row.get("mode_choice", {})
            print(f"[hold {hold / 1e3:.0f} us a run] {row['shape']}: chose "
                  f"{choice.get('chosen')} best {choice.get('best')} within "
                  f"{choice.get('within', 0):.3f}", flush=True)
            modes = {}
            for name, record in row["modes"].items():
                s = record.get("samples_ms")
                if not s:
                    continue
                head = statistics.median(x for i, x in enumerate(s) if i % turn < 5) * 1e3
                tail = statistics.median(x for i, x in enumerate(s) if i % turn >= 5) * 1e3
                modes[name] = {"median_us": record["median_ms"] * 1e3, "first5_us": head,
                               "last5_us": tail, "samples_ms": s}
                print(f"    {name:22s} median {record['median_ms'] * 1e3:7.2f}  first 5 of a "
                      f"turn {head:7.2f}  last 5 {tail:7.2f} us", flush=True)
            rows[row["shape"]] = {"modes": modes, "mode_choice": choice}
        rounds.append({"hold_ns_per_run": hold, "rows": rows})
    json.dump({"device": get_device().name, "commit": os.environ.get("TILESYNC_COMMIT"),
               "rounds": rounds}, open(f"{out}/turn-hold-probe.json", "w"), indent=1,
              default=str)


if __name__ == "__main__":
    main()
