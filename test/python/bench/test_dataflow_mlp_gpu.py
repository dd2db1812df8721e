"""The MLP-stack pipeline on the GPU (bench/dataflow_mlp.py, kernels/mlp_pipeline.py).

A 4-layer stack (64 -> 256 x 4) on 4096 rows through 3 queues: 64 tiles of 64 rows with two
queue workers (warpgroups) per CTA, and 32 tiles of 128 rows with the CTA as the worker; and
the two-worker form drawing each next ticket ahead (dataflow.draw_full / draw_empty), and the
two-worker form with NeRF's skip into layer 2 (cat([X, h]): X's rows read beside the entry). The
pipeline's output is poisoned with NaN before each checked run and compared with an fp32
reference: after
the first run, after 20 more runs and after 20 CUDA-graph replays, with no memset of the rings
between them (tickets continue across runs, so a tile stored to the rows of another run's
ticket, or a read of an entry before its producer released it, fails the check). The same
layers bulk-synchronously and the allotment from their measured rates are checked too.
"""

from __future__ import annotations

import dataclasses

import pytest

ROWS = 4096
WIDTHS = (64, 256, 256, 256, 256)


@pytest.mark.gpu
@pytest.mark.parametrize(("groups", "draw_ahead", "skips"),
                         [(2, False, ()), (1, False, ()), (2, True, ()), (2, False, (2,))])
def test_pipeline_matches_the_reference_across_runs_and_replays(gpu_device, groups,
                                                                draw_ahead, skips):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from tilesync.bench import dataflow_mlp
    from tilesync.kernels.mlp_pipeline import MlpStack

    stack = MlpStack(ROWS, WIDTHS, groups=groups, tile_rows=128 // groups,
                     stages=5 if groups == 2 and not skips else 4, draw_ahead=draw_ahead,
                     skips=skips)
    data = dataflow_mlp.StackData(torch, ROWS, WIDTHS, skips=skips)
    bulk = dataflow_mlp.run_bulk_sync(stack, data, warmup=1, reps=3)
    assert bulk["rel_error"] < 2e-2 and len(bulk["layer_ms"]) == stack.layers
    ctas = dataflow_mlp.allotted_ctas(stack, bulk["layer_ms"])
    assert len(ctas) == stack.layers and sum(ctas) <= stack.sms
    record = dataflow_mlp.run_pipeline(dataclasses.replace(stack, ctas=ctas), data, warmup=1,
                                       reps=3, repeats=20, graph_replays=20)
    assert [c["after"] for c in record["checks"]] == ["first run", "24 more runs",
                                                      "20 graph replays"]
    assert all(c["rel_error"] < 2e-2 for c in record["checks"])
    assert "co-resident" in record["co_residency"]
