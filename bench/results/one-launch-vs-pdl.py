"""What one launch costs over PDL in the conv bench's records, measured against what the cost
model charges for it (a constant: `MechanismCosts.joined_launch_ms`).

For each row: the TMA kernels' tiles a stage (one grid holds both stages' tiles in one launch),
the measured median of each one-launch mode less its PDL twin's, and the model's predicted
difference from the row's recorded choice. Rows with the same tiles in the same waves that
differ in sign say that no constant per launch nor per ticket (tile) explains the difference.

    python bench/results/one-launch-vs-pdl.py bench/results/conv-*.json
"""

from __future__ import annotations

import json
import re
import sys

TWINS = (("tma:row+one_launch", "tma:row+pdl"), ("tma:tile+one_launch", "tma:tile+pdl"),
         ("tma:tile+R+one_launch", "tma:tile+pdl"))


def tma_tiles(config: str) -> int:
    """Tiles a stage of the TMA kernels, from the row's config line ('tma_ws: ... AxB tiles',
    bench.conv.config_label): what ran when the record was made, which the tiles
    `bench.conv.mode_spec` gives today need not be for an older record."""
    found = re.search(r"tma_ws: [^;]*?(\d+)x(\d+) tiles", config)
    if found is None:
        raise ValueError(f"no tma_ws tiles in {config!r}")
    return int(found.group(1)) * int(found.group(2))


def rows(path: str):
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    sms = result["device"]["sm_count"]
    for row in result["rows"]:
        measured = {m: r["median_ms"] for m, r in row["modes"].items() if "median_ms" in r}
        predicted = row["mode_choice"]["predicted_ms"]
        tiles = tma_tiles(row["config"])
        for one, pdl in TWINS:
            if one in measured and pdl in measured:
                yield (result["device"]["name"], result.get("tilesync_commit"), row["N"], row["C"],
                       tiles, 2 * tiles / sms, one, (measured[one] - measured[pdl]) * 1e3,
                       (predicted[one] - predicted[pdl]) * 1e3 if one in predicted else None)


def main(paths: list[str]) -> int:
    print("device, commit | N | C | tiles a stage | one grid's waves | mode | measured one launch "
          "- PDL (us) | predicted (us)")
    for path in paths:
        try:
            found = list(rows(path))
        except OSError as err:
            print(f"{path}: error: cannot read it: {err.strerror or err}", file=sys.stderr)
            return 1
        except (ValueError, KeyError, TypeError) as err:
            print(f"{path}: error: not a bench conv result: {type(err).__name__}: {err}",
                  file=sys.stderr)
            return 1
        for device, commit, n, c, tiles, waves, mode, measured, predicted in found:
            said = "-" if predicted is None else f"{predicted:+.2f}"
            print(f"{device}, {commit} | {n} | {c} | {tiles} | {waves:.2f} | {mode} | "
                  f"{measured:+.2f} | {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
