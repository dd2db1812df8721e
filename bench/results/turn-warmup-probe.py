"""Probe (device): in the conv bench of record (H100, 035aa8d) our 10-25 us chains at batch 1
ran their first 4-6 timed runs of every turn 5-10% slower than the rest (10.8-11.3 against
9.9-10.3 us at C = 64), cuDNN's graph not (14.8 flat), so a median fell between two clusters
and which mode looked fastest could turn on it (tma:row+one_launch 10.16 against tma:row+pdl
10.62 us, their fastest runs 9.92 and 9.98). `tilesync bench conv` whole, in alternating
rounds with 1 uncounted run in front of each later turn (bench.mlp.TURN_WARMUP, the bench's)
and with 8: whether the slow runs are a warm-up the turns lack, and what the cost model's
choices become without them.

`python bench/results/turn-warmup-probe.py [ROUNDS]` (torch; writes each round's bench result
to $OUT/conv-turn-warmup-<N>-round<i>.json); `python bench/results/turn-warmup-probe.py
--compact DEVICE COMMIT RESULT.json...` prints them as one JSON of each row's choice and the
TMA modes' and cuDNN's samples (turn-warmup-probe-<device>.json; DEVICE and COMMIT for results
written before the rounds recorded them)."""
import json
import os
import statistics
import sys

ROUNDS = (1, 8, 1, 8)  # TURN_WARMUP per round
TURN = 10  # timed runs a turn (reps 50 / TURNS 5)
KEPT = ("tma:stream_sync", "tma:row+pdl", "tma:row+one_launch", "tma:persistent", "torch_graph")


def compact(device: str, commit: str, paths: list[str]) -> dict:
    """The rounds' results reduced to each row's mode choice and the KEPT modes' samples."""
    rounds = []
    for path in paths:
        result = json.load(open(path))
        device = result.get("device", device)
        rounds.append({"turn_warmup": result["turn_warmup"], "tilesync_commit":
                       result.get("tilesync_commit", commit),
                       "rows": {row["shape"]: {
                           "mode_choice": {k: row.get("mode_choice", {}).get(k)
                                           for k in ("chosen", "best", "within")},
                           "samples_ms": {m: row["modes"][m]["samples_ms"] for m in KEPT
                                          if "samples_ms" in row["modes"].get(m, {})}}
                           for row in result["rows"]}})
    return {"device": device, "rounds": rounds}


def main() -> None:
    if sys.argv[1:2] == ["--compact"]:
        print(json.dumps(compact(sys.argv[2], sys.argv[3], sys.argv[4:]), indent=1))
        return
    from tilesync.bench import conv, mlp
    from tilesync.runtime.device import get_device

    out = os.environ.get("OUT", "/tmp")
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else len(ROUNDS)
    for index, warm in enumerate(ROUNDS[:rounds]):
        mlp.TURN_WARMUP = warm
        result = conv.conv_benchmarks(warmup=10, reps=50)
        result.update(turn_warmup=warm, device=get_device().name,
                      tilesync_commit=os.environ.get("TILESYNC_COMMIT"))
        json.dump(result, open(f"{out}/conv-turn-warmup-{warm}-round{index}.json", "w"),
                  indent=1, default=str)
        for row in result["rows"]:
            choice = row.get("mode_choice", {})
            print(f"[turn warm-up {warm}] {row['shape']}: chose {choice.get('chosen')} best "
                  f"{choice.get('best')} within {choice.get('within', 0):.3f}", flush=True)
            for name, record in row["modes"].items():
                s = record.get("samples_ms")
                if not s or name not in KEPT:
                    continue
                head = statistics.median(x for i, x in enumerate(s) if i % TURN < 4) * 1e3
                rest = statistics.median(x for i, x in enumerate(s) if i % TURN >= 4) * 1e3
                print(f"    {name:22s} median {record['median_ms'] * 1e3:7.2f}  first 4 of a "
                      f"turn {head:7.2f}  the rest {rest:7.2f}  min {min(s) * 1e3:7.2f} us",
                      flush=True)


if __name__ == "__main__":
    main()
