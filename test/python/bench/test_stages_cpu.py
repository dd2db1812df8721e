"""The stage benchmark's programs are valid and verified for every mode (no GPU needed)."""

import pytest

from tilesync.api import lower
from tilesync.bench.stages import MODES, chain_module, stream_sync_plan
from tilesync.dialects import sync


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("dependency", ["tile", "row"])
def test_every_mode_verifies(stages, dependency):
    for mode, passes in MODES.items():
        if dependency == "tile" and mode.startswith("row"):
            continue
        module = chain_module(stages, 33, dependency)
        if passes is None:
            stream_sync_plan(module)
            passes = ["sync-generate-policies", "sync-insert-post-wait"]
        lower(module, [*passes, "sync-verify"])
        found = {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}
        assert len(found) == stages
        assert all(tuple(s.grid.get_values()) == (33, 8) for s in found.values())
        last = found[f"s{stages}"]
        progress = last.attributes["sync.progress"].data
        expected = {"stream_sync": "stream order", "wait_kernel": "wait-kernel",
                    "pdl": "programmatic dependent launch"}
        assert expected[mode.rsplit("+", 1)[-1]] in progress, (mode, progress)
        policy = found["s1"].policy
        # the generated policy, unless the mode selects TileSync
        selected_tile = dependency == "tile" or mode.startswith("tile")
        assert policy.kind == ("TileSync" if selected_tile else "RowSync"), (mode, policy)
