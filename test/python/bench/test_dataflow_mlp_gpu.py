"""The MLP-stack pipeline on the GPU (bench/dataflow_mlp.py, kernels/mlp_pipeline.py).

A 4-layer stack (64 -> 256 x 4) on 4096 rows through 3 queues in five forms: 64 tiles of 64
rows with two queue workers (warpgroups) per CTA; 32 tiles of 128 rows with the CTA as the
worker; two workers drawing each next ticket ahead (dataflow.draw_full / draw_empty); two
workers with NeRF's skip into layer 2 (cat([X, h]): X's rows read beside the entry); and
MeshGraphNets' edge MLP (384 -> 128 x 3, the last Linear without ReLU, then a layer-norm stage:
a SIMT stage reading one more queue; four workers a CTA). The pipeline's output is poisoned
with NaN before each checked run and compared with an fp32 reference: after the first run,
after 20 more runs and after 20 CUDA-graph replays, with no memset of the rings between them
(tickets continue across runs, so a tile stored to the rows of another run's ticket, or a read
of an entry before its producer released it, fails the check). The same stages
bulk-synchronously and the allotment from their measured rates are checked too. NeRF's heads
in small: layers of 256, 128 and 16 columns, a density dot head taken from a layer's input
entries, and a side input concatenated into the last layer (the check reads cat([Y, S])). Two
stages of two layers each (`fused`: the tile between them stays in the worker's A ring), the
second's 16-wide weights resident beside its 128-wide ones.
"""

from __future__ import annotations

import dataclasses

import pytest

ROWS = 4096
WIDTHS = (64, 256, 256, 256, 256)


@pytest.mark.gpu
@pytest.mark.parametrize("form", [
    {}, {"groups": 1, "tile_rows": 128}, {"draw_ahead": True}, {"skips": (2,)},
    {"widths": (384, 128, 128, 128), "plain_layers": (2,), "layer_norm": True, "groups": 4},
    {"widths": (64, 256, 256, 256, 128, 16), "skips": (1,), "dot_head": 3,
     "side_inputs": ((4, 64),), "plain_layers": (3, 4)},
    {"widths": (64, 256, 256, 128, 16), "fused": (1, 3), "plain_layers": (3,)},
    {"widths": (384, 128, 128, 128), "plain_layers": (2,), "layer_norm": True, "groups": 4,
     "fused": (2,)},
], ids=["two-workers", "one-worker", "draw-ahead", "skip", "meshgraphnets", "nerf-heads",
        "fused", "meshgraphnets-fused"])
def test_pipeline_matches_the_reference_across_runs_and_replays(gpu_device, form):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from tilesync.bench import dataflow_mlp
    from tilesync.kernels.mlp_pipeline import fitting_stack

    form = dict(form)
    stack = fitting_stack(ROWS, form.pop("widths", WIDTHS), **form)
    data = dataflow_mlp.StackData(torch, stack)
    bulk = dataflow_mlp.run_bulk_sync(stack, data, warmup=1, reps=3)
    assert bulk["rel_error"] < 2e-2 and len(bulk["layer_ms"]) == stack.layers + stack.layer_norm
    ctas = dataflow_mlp.allotted_ctas(stack, bulk["layer_ms"])
    assert len(ctas) == stack.stage_count and sum(ctas) <= stack.sms
    record = dataflow_mlp.run_pipeline(dataclasses.replace(stack, ctas=ctas), data, warmup=1,
                                       reps=3, repeats=20, graph_replays=20)
    first, repeated, replayed = (c["after"] for c in record["checks"])
    assert (first, replayed) == ("first run", "20 graph replays")
    assert repeated.endswith(" more runs") and int(repeated.split()[0]) >= 24
    assert all(c["rel_error"] < 2e-2 for c in record["checks"])
    assert "co-resident" in record["co_residency"]
