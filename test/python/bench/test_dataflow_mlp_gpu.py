"""The MLP-stack pipeline on the GPU (bench/dataflow_mlp.py, kernels/mlp_pipeline.py).

A 4-layer stack (64 -> 256 x 4) on 4096 rows through 3 queues in five forms: 64 tiles of 64 rows
with two queue workers (warpgroups) per CTA; 32 tiles of 128 rows with the CTA as the worker;
two workers drawing each next ticket ahead (dataflow.draw_full / draw_empty); two workers with
NeRF's skip into layer 2 (cat([X, h]): X's rows read beside the entry); and MeshGraphNets' edge
MLP (384 -> 128 x 3, the last Linear without ReLU, then a layer-norm stage: a SIMT stage reading
one more queue; four workers a CTA). The pipeline's output is poisoned with NaN before each
checked run and compared with an fp32 reference: after the first run, after each of its timing
turns, after 20 more runs and after 20 CUDA-graph replays, with no memset of the rings between
them (tickets continue across runs, so a tile stored to the rows of another run's ticket, or a
read of an entry before its producer released it, fails the check). The same stages
bulk-synchronously and the allotment from their measured rates are checked too. NeRF's heads in
small: layers of 256, 128 and 16 columns, a density dot head taken from a layer's input entries,
and a side input concatenated into the last layer (the check reads cat([Y, S])). Two stages of
two layers each (`fused`: the tile between them stays in the worker's A ring), the second's
16-wide weights resident beside its 128-wide ones.
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
    assert (first, repeated, replayed) == ("the first run and each of 3 turns", "21 more runs",
                                           "20 graph replays")
    assert record["reps"] == 3 and record["turns"] == 3
    assert all(c["rel_error"] < 2e-2 for c in record["checks"])
    assert "co-resident" in record["co_residency"]


@pytest.mark.gpu
def test_a_rows_forms_take_turns_and_the_l2_set_aside_is_given_back(gpu_device, monkeypatch):
    """stack_forms: the bulk layers timed alone (layer_ms), then bulk_sync, both pipelines
    and torch eager and in a graph in turns, each checked; between a pipeline's turns the
    context has no persisting L2 set aside (the other forms get the whole L2), and none after
    the row."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from cuda.bindings import driver

    from tilesync.bench import dataflow_mlp, mlp
    from tilesync.kernels.mlp_pipeline import fitting_stack

    def set_aside() -> int:
        err, value = driver.cuCtxGetLimit(driver.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
        assert err == driver.CUresult.CUDA_SUCCESS
        return value

    seen = []  # the set-aside each form's turns ran with
    time_forms = mlp.time_forms

    def watched(forms, warmup, reps, turns=mlp.TURNS):
        def spy(name, run):
            def wrapped():
                seen.append((name, set_aside()))
                return run()
            return wrapped
        return time_forms({name: dataclasses.replace(form, run=spy(name, form.run))
                           for name, form in forms.items()}, warmup, reps, turns)

    stack = fitting_stack(ROWS, WIDTHS)
    data = dataflow_mlp.StackData(torch, stack)
    monkeypatch.setattr(mlp, "time_forms", watched)
    forms = dataflow_mlp.stack_forms(stack, data, "small", warmup=1, reps=4, repeats=5,
                                     graph_replays=5)
    for name in ("bulk_sync", "pipeline_allotted", "pipeline_even", "torch_eager",
                 "torch_graph"):
        assert forms[name]["reps"] == 4 and forms[name]["rel_error"] < 2e-2, (name, forms[name])
    assert len(forms["bulk_sync"]["layer_ms"]) == stack.layers
    assert forms["pipeline"]["allotment"] in ("pipeline_allotted", "pipeline_even")
    assert [c["after"] for c in forms["pipeline_even"]["checks"]] == [
        "the first run and each of 4 turns", "6 more runs", "5 graph replays"]
    pinned = {name: {v for n, v in seen if n == name} for name, _ in seen}
    if forms["pipeline_even"]["l2_window_bytes"]:  # a device with persisting L2
        assert all(v > 0 for v in pinned["pipeline_even"] | pinned["pipeline_allotted"])
    assert pinned["bulk_sync"] == pinned["torch_graph"] == {0}
    assert set_aside() == 0
