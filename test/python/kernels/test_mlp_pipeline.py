"""kernels/mlp_pipeline.py: an MLP stack as a Kitsune pipeline, built and compiled (no GPU)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import gpu, memref, scf

import tilesync
from tilesync.dialects import dataflow
from tilesync.dialects import tile as tl
from tilesync.kernels.mlp_pipeline import (
    MlpStack,
    default_ctas,
    fitting_stack,
    mlp_pipeline_module,
    stage_arguments,
)


def _ops(kernel: gpu.FuncOp, kind) -> list:
    return [op for op in kernel.walk() if isinstance(op, kind)]


def _ticket_loop(kernel):
    """The CTA's loop over its tiles: the last loop of the kernel's body (the resident weights'
    load, a loop too, comes first)."""
    return [op for op in kernel.body.block.ops if isinstance(op, scf.ForOp)][-1]


def test_stack_refuses_shapes_one_tile_cannot_cover():
    with pytest.raises(ValueError, match="multiple of 16 up to 256"):
        MlpStack(256, (64, 512, 512))
    with pytest.raises(ValueError, match="multiple of 16 up to 256"):
        MlpStack(256, (64, 256, 8))  # a wgmma N, but not whole 16-column warp tiles
    with pytest.raises(ValueError, match="at least two stages"):
        MlpStack(256, (64, 256, 256), fused=(1,))
    with pytest.raises(ValueError, match="multiple of 32"):  # a warp's lanes over a row
        MlpStack(256, (64, 256, 16), layer_norm=True)
    with pytest.raises(ValueError, match="multiples of 64"):
        MlpStack(256, (48, 256, 256))
    with pytest.raises(ValueError, match="multiples of 64"):
        MlpStack(256, (64, 256, 256), side_inputs=((1, 27),))
    with pytest.raises(ValueError, match="multiple of the tile"):
        MlpStack(200, (64, 256, 256))
    with pytest.raises(ValueError, match="at least two layers"):
        MlpStack(256, (64, 256))
    with pytest.raises(ValueError, match="3 stages, 2 CTA counts"):
        MlpStack(256, (64, 256, 256, 256), ctas=(4, 4))
    with pytest.raises(ValueError, match="layers 1 to 2"):
        MlpStack(256, (64, 256, 256, 256), skips=(0,))
    with pytest.raises(ValueError, match="one concatenated input at most"):
        MlpStack(256, (64, 256, 256, 256), skips=(1,), side_inputs=((1, 64),))
    with pytest.raises(ValueError, match="one concatenated input at most"):
        MlpStack(256, (64, 256, 256, 256), side_inputs=((1, 64), (1, 64)))
    with pytest.raises(ValueError, match="one concatenated input at most"):
        MlpStack(256, (64, 256, 256, 256), side_inputs=((0, 64),))
    with pytest.raises(ValueError, match="plain layers are layers 0 to 2"):
        MlpStack(256, (64, 256, 256, 256), plain_layers=(3,))
    for layer in (0, 3):  # the first layer reads X, not an entry; no layer 3
        with pytest.raises(ValueError, match=rf"dot head .* got layer {layer}"):
            MlpStack(256, (64, 256, 256, 256), dot_head=layer)
    with pytest.raises(ValueError, match=r"dot head .* got layer 1"):  # concatenated input
        MlpStack(256, (64, 256, 128, 128), side_inputs=((1, 64),), dot_head=1)
    with pytest.raises(ValueError, match="shared memory for the rings of 5 stages"):
        MlpStack(256, (64, 256, 256, 256), skips=(2,))  # 5 k-tiles of weights resident


def test_fitting_stack_also_fits_a_layers_own_rings():
    """One 128-row worker a CTA: the layer's GemmConfig (A's and B's rings of 5 stages, 240
    KiB) does not fit a block, 4 stages do (the GPU test's one-worker form)."""
    assert fitting_stack(4096, (64, 256, 256, 256, 256), groups=1, tile_rows=128).stages == 4


def test_a_skip_layer_reads_the_input_beside_its_queue_entry():
    """NeRF's skip: layer 2 multiplies cat([X, h]) (K = 64 + 256), X's rows by the ticket;
    its weights, all five k-tiles, stay resident, so only four stages fit."""
    stack = fitting_stack(1024, (64, 256, 256, 256), skips=(2,))
    assert stack.stages == 4 and stack.layer_config(2).a_head == 64
    assert stack.layer_config(2).K == 320 and stack.layer_config(1).a_head == 0
    module = mlp_pipeline_module(stack)
    module.verify()
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    kernels = {k.sym_name.data: k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)}
    skip = kernels["layer2"]
    x = skip.body.block.args[1]  # q_in, X, W, bias, Y
    assert x.name_hint == "X" and x.type.get_shape() == (1024, 64)
    assert len(skip.body.block.args) == 5 and len(kernels["layer1"].body.block.args) == 4
    assert any(isinstance(op, tl.CpAsyncOp) and op.src is x for op in skip.walk())
    args = stage_arguments(stack, "x", ["w0", "w1", "w2"], ["b0", "b1", "b2"], "y")
    assert args["layer2"] == ["x", "w2", "b2", "y"] and args["layer1"] == ["w1", "b1"]
    compiled = tilesync.compile(module, target="sm_90a")
    assert compiled.kernels["mlp_persistent"].dynamic_shared_bytes <= 227 * 1024


def test_stages_and_queues_chain_the_layers():
    stack = MlpStack(1024, (64, 256, 256, 256), ctas=(3, 5, 4))
    module = mlp_pipeline_module(stack)
    module.verify()
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    stages = pipeline.stages
    assert [s.num_ctas for s in stages] == [3, 5, 4]
    assert [[r.root_reference.data for r in s.inputs] for s in stages] == [[], ["h1"], ["h2"]]
    assert [[r.root_reference.data for r in s.outputs] for s in stages] == [["h1"], ["h2"], []]
    # entries: two per worker (two a CTA) of the larger stage a queue joins; a payload is one
    # 64 x 256 tile
    assert [q.queue_type.num_entries for q in pipeline.queues] == [20, 20]
    assert {q.queue_type.payload_bytes for q in pipeline.queues} == {64 * 256 * 2}
    assert all(q.pin_l2 is not None for q in pipeline.queues)


def test_a_relaying_stage_passes_on_the_ticket_it_consumed():
    module = mlp_pipeline_module(MlpStack(1024, (64, 256, 256, 256)))
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    kernels = {k.sym_name.data: k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)}
    first, middle, last = kernels["layer0"], kernels["layer1"], kernels["layer2"]
    # the first layer draws tickets; the middle one relays the consumed ticket; the last
    # layer only consumes
    assert [op.ticket for op in _ops(first, dataflow.AcquireEmptyOp)] == [None]
    assert not _ops(first, dataflow.AcquireFullOp)
    full, = _ops(middle, dataflow.AcquireFullOp)
    empty, = _ops(middle, dataflow.AcquireEmptyOp)
    assert full.ticket is None and empty.ticket == full.slot
    release_full, = _ops(middle, dataflow.ReleaseFullOp)
    release_empty, = _ops(middle, dataflow.ReleaseEmptyOp)
    assert release_full.slot == full.slot and release_empty.slot == full.slot
    # the input entry goes back, and the output entry is waited for, once the multiply is
    # issued, before the wait for its last wgmmas (they read shared memory, not the entry)
    ops = list(middle.walk())
    assert ops.index(release_empty) < ops.index(empty) < ops.index(release_full)
    assert ops.index(empty) > max(ops.index(op) for op in ops if type(op).__name__ == "WgmmaOp")
    last_wait = max(ops.index(op) for op in ops if type(op).__name__ == "WgmmaWaitOp")
    assert ops.index(empty) < last_wait < ops.index(release_full)
    assert not _ops(last, dataflow.AcquireEmptyOp) and len(_ops(last, dataflow.AcquireFullOp)) == 1
    # every acquire sits in the CTA's ticket loop, after the weights were loaded once
    for kernel in (first, middle, last):
        load, loop = [op for op in kernel.body.block.ops if isinstance(op, scf.ForOp)]
        assert loop is _ticket_loop(kernel)
        assert all(op.parent_op() is loop for op in _ops(kernel, dataflow.AcquireFullOp))
        assert any(type(op).__name__ == "CpAsyncOp" for op in load.walk())
        assert not any(isinstance(op, dataflow.AcquireFullOp | dataflow.AcquireEmptyOp)
                       for op in load.walk())


def test_workers_can_draw_the_next_ticket_ahead():
    from tilesync.analysis.simulator.queues import pipeline_from_ir, simulate_pipeline

    stack = MlpStack(1024, (64, 256, 256, 256), ctas=(2, 3, 2), draw_ahead=True)
    module = mlp_pipeline_module(stack)
    module.verify()
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    kernels = {k.sym_name.data: k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)}
    for name, draw, acquire in (("layer0", dataflow.DrawEmptyOp, dataflow.AcquireEmptyOp),
                                ("layer1", dataflow.DrawFullOp, dataflow.AcquireFullOp),
                                ("layer2", dataflow.DrawFullOp, dataflow.AcquireFullOp)):
        kernel = kernels[name]
        loop = _ticket_loop(kernel)
        # one draw before the loop, one in it, each only when the worker has that tile
        first_draw, next_draw = _ops(kernel, draw)
        assert all(isinstance(op.parent_op(), scf.IfOp) for op in (first_draw, next_draw))
        assert first_draw.parent_op().parent_op() is kernel
        assert next_draw.parent_op().parent_op() is loop
        # the loop's acquire takes the ticket the loop carries (drawn the iteration before)
        taken, = [op for op in _ops(kernel, acquire) if op.parent_op() is loop]
        assert taken.ticket is loop.body.block.args[1]
        assert dataflow.drawn_acquires(kernel) == {taken}
    # the relay still hands on the ticket it consumed
    relay, = _ops(kernels["layer1"], dataflow.AcquireEmptyOp)
    assert relay not in dataflow.drawn_acquires(kernels["layer1"])
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    queues, stages = pipeline_from_ir(pipeline)
    assert [(s.draw_ahead, s.relay, s.workers) for s in stages] == [
        (True, False, 2), (True, True, 2), (True, False, 2)]
    stages = [dataclasses.replace(s, tiles=stack.tiles) for s in stages]
    result = simulate_pipeline(queues, stages, sms=8, scheduler="adversarial", launches=3,
                               persistent=True)
    assert result.ok and sorted(result.delivered["layer2"]) == list(range(3 * stack.tiles))


NERF_HEADS_FORM = {"widths": (64, 256, 256, 256, 128, 16), "skips": (1,), "dot_head": 3,
                   "side_inputs": ((4, 64),), "plain_layers": (3, 4)}
"""NeRF's heads in small: a skip, then a layer whose 256-wide input also feeds a dot head
(the density), a 128-wide layer, and a 16-wide plain layer of cat([V_0, h])."""


def test_nerfs_heads_layers_of_their_own_widths_a_dot_head_and_a_side_input():
    """Each layer's tile is its own width (256, 128, 16: the 16-wide one stores its
    accumulators directly, not through 64-column boxes), each queue's entries its producer's;
    layer 3 takes the dot of every row of its input entry only after it has handed its own
    tile on, and gives the entry back only after the dots; layer 4 reads V_0's rows beside
    its entry."""
    form = dict(NERF_HEADS_FORM)
    stack = fitting_stack(1024, form.pop("widths"), **form)
    assert [stack.layer_config(n).tile[1] for n in range(5)] == [256, 256, 256, 128, 16]
    assert [stack.layer_config(n).epilogue for n in range(5)] == \
        ["bias_relu"] * 3 + ["bias"] * 2
    assert stack.layer_config(4).staged_store is False and stack.layer_config(3).staged_store
    assert stack.layer_config(4).K == 64 + 128 and stack.layer_config(4).a_head == 64
    module = mlp_pipeline_module(stack)
    module.verify()
    queues = [op for op in next(op for op in module.ops
                                if isinstance(op, dataflow.PipelineOp)).body.block.ops
              if isinstance(op, dataflow.QueueOp)]
    assert [q.queue_type.payload.get_shape() for q in queues] == \
        [(64, 256), (64, 256), (64, 256), (64, 128)]
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    kernels = {k.sym_name.data: k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)}
    assert [a.name_hint for a in kernels["layer3"].body.block.args] == \
        ["q_in", "q_out", "W", "bias", "w_dot", "b_dot", "S"]
    assert [a.name_hint for a in kernels["layer4"].body.block.args] == \
        ["q_in", "V0", "W", "bias", "Y"]
    v0 = kernels["layer4"].body.block.args[1]
    assert any(isinstance(op, tl.CpAsyncOp) and op.src is v0 for op in kernels["layer4"].walk())
    ops = list(kernels["layer3"].walk())
    s_arg = kernels["layer3"].body.block.args[6]
    handed_on, = [i for i, op in enumerate(ops) if isinstance(op, dataflow.ReleaseFullOp)]
    given_back, = [i for i, op in enumerate(ops) if isinstance(op, dataflow.ReleaseEmptyOp)]
    dots = [i for i, op in enumerate(ops) if isinstance(op, memref.StoreOp)
            and op.memref is s_arg]
    assert len(dots) == 16  # a warp's 16 of the entry's 64 rows
    assert handed_on < dots[0] and dots[-1] < given_back
    args = stage_arguments(stack, "x", [f"w{n}" for n in range(5)], [f"b{n}" for n in range(5)],
                           "y", sides=["v"], dot=("wd", "bd", "s"))
    assert args["layer3"] == ["w3", "b3", "wd", "bd", "s"]
    assert args["layer4"] == ["v", "w4", "b4", "y"] and args["layer1"] == ["x", "w1", "b1"]
    with pytest.raises(ValueError, match="1 side inputs and a dot head"):
        stage_arguments(stack, "x", [f"w{n}" for n in range(5)], [f"b{n}" for n in range(5)],
                        "y")


def test_fused_layers_share_a_stage_their_tile_staying_in_the_ring():
    """NeRF's light layers fused into the stage of the layer before them: stages [0, 1] and
    [2, 3]; the 16-wide layer's weights resident in rows 128.. beside the 128-wide layer's;
    the second tile of a stage copies no A (it is in the ring) and the first writes no C
    (no copy out of the ring); one queue between the two stages, of the fused stage's
    output width."""
    stack = fitting_stack(1024, (64, 256, 256, 128, 16), fused=(1, 3), plain_layers=(3,))
    assert stack.stage_layers == [[0, 1], [2, 3]] and stack.stage_count == 2
    assert [stack.stage_name(n) for n in range(2)] == ["layers0_1", "layers2_3"]
    assert stack.resident_places([0, 1]) == [(0, 0), (1, 0)]
    assert stack.resident_places([2, 3]) == [(0, 0), (0, 128)]
    assert stack.resident_slots() == 5 and stack.shared_types()[1].get_shape() == (5, 256, 64)
    module = mlp_pipeline_module(stack)
    module.verify()
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    queue, = [op for op in pipeline.body.block.ops if isinstance(op, dataflow.QueueOp)]
    assert queue.queue_type.payload.get_shape() == (64, 256)
    assert [st.sym_name.data for st in pipeline.stages] == ["layers0_1", "layers2_3"]
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    kernels = {k.sym_name.data: k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)}
    assert [a.name_hint for a in kernels["layers0_1"].body.block.args] == \
        ["q_out", "X", "W0", "bias0", "W1", "bias1"]
    assert [a.name_hint for a in kernels["layers2_3"].body.block.args] == \
        ["q_in", "W2", "bias2", "W3", "bias3", "Y"]
    loop = next(op for op in kernels["layers2_3"].walk() if isinstance(op, scf.ForOp)
                and any(isinstance(o, dataflow.AcquireFullOp) for o in op.body.block.ops))
    ops = list(loop.walk())
    q_in, w3 = kernels["layers2_3"].body.block.args[0], kernels["layers2_3"].body.block.args[3]
    copies = [i for i, op in enumerate(ops) if isinstance(op, tl.CpAsyncOp)]
    assert copies and all(ops[i].src is q_in or isinstance(ops[i].src.owner,
                                                            dataflow.EntryOp) for i in copies)
    wgmmas = [i for i, op in enumerate(ops) if isinstance(op, tl.WgmmaOp)]
    assert len(wgmmas) == 4 + 4  # 4 k16 steps a k-loop, one k-loop each
    given_back, = [i for i, op in enumerate(ops) if isinstance(op, dataflow.ReleaseEmptyOp)]
    assert wgmmas[0] < given_back < wgmmas[4]  # the entry goes back after the first layer
    copy_outs = [op for op in ops if isinstance(op, tl.CopyOutOp)]
    assert copy_outs == []  # the 16-wide layer stores its accumulators; the 128-wide keeps its
    resident = [op for op in kernels["layers2_3"].body.block.ops
                if isinstance(op, scf.ForOp) and op is not loop
                and any(isinstance(o, tl.CpAsyncOp) and o.src is w3 for o in op.walk())]
    assert resident  # W3's copies into the weights' buffer, before the loop
    args = stage_arguments(stack, "x", ["w0", "w1", "w2", "w3"], ["b0", "b1", "b2", "b3"], "y")
    assert args == {"layers0_1": ["x", "w0", "b0", "w1", "b1"],
                    "layers2_3": ["w2", "b2", "w3", "b3", "y"]}
    compiled = tilesync.compile(module, target="sm_90a")
    assert set(compiled.kernels) >= {"layers0_1", "layers2_3", "mlp_persistent"}


@pytest.mark.parametrize("kwargs, message", [
    ({"skips": (1,), "fused": (1,)}, "no skip, side input or dot head"),
    ({"dot_head": 2, "fused": (2,)}, "no skip, side input or dot head"),
    ({"fused": (0,)}, "one of layers 1 to 3"),
    ({"fused": (1,), "resident_weights": False}, "its weights resident"),
    ({"fused": (1,), "staged_store": False}, "staged"),
    ({"fused": (1,), "stages": 3}, "at most 3"),  # 256 columns: 4 k-tiles in the ring
])
def test_a_fused_layer_reads_only_the_tile_before_it(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MlpStack(1024, (64, 256, 256, 256, 256), **kwargs)


def test_a_layer_norm_is_a_simt_stage_of_its_own():
    """MeshGraphNets' edge MLP: Linear+ReLU, Linear+ReLU, Linear (no ReLU), then the layer
    norm as a SIMT stage reading a fourth queue; its workers are the layers' (each warpgroup
    of a CTA), a warp normalizing a quarter of the entry's rows."""
    from xdsl.dialects import math

    stack = fitting_stack(1024, (384, 128, 128, 128), plain_layers=(2,), layer_norm=True)
    assert stack.stage_count == 4
    assert [stack.layer_config(n).epilogue for n in range(3)] == ["bias_relu"] * 2 + ["bias"]
    module = mlp_pipeline_module(stack)
    module.verify()
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    norm = pipeline.stages[-1]
    assert norm.sym_name.data == "layer_norm" and norm.resource.data == dataflow.Resource.SIMT
    assert [r.root_reference.data for r in norm.inputs] == ["h3"] and not list(norm.outputs)
    assert [r.root_reference.data for r in pipeline.stages[2].outputs] == ["h3"]
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    kernels = {k.sym_name.data: k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)}
    assert [a.name_hint for a in kernels["layer_norm"].body.block.args] == \
        ["q_in", "gamma", "beta", "Y"]
    assert "Y" not in [a.name_hint for a in kernels["layer2"].body.block.args]
    acquire, = _ops(kernels["layer_norm"], dataflow.AcquireFullOp)
    release, = _ops(kernels["layer_norm"], dataflow.ReleaseEmptyOp)
    assert acquire.threads.value.data == release.threads.value.data == 128
    # each warp: 16 of the entry's 64 rows at once, a lane's 4 columns of each loaded before
    # the first sum, stored into Y's rows of the ticket
    norm_ops = list(kernels["layer_norm"].walk())
    loads = [i for i, op in enumerate(norm_ops) if isinstance(op, memref.LoadOp)]
    first_sum = next(i for i, op in enumerate(norm_ops) if isinstance(op, tl.ShuffleOp))
    assert len(loads) == 8 + 64 and loads[-1] < first_sum  # gamma and beta, then the rows
    assert len(_ops(kernels["layer_norm"], math.RsqrtOp)) == 16
    assert len(_ops(kernels["layer_norm"], memref.StoreOp)) == 64
    args = stage_arguments(stack, "x", ["w0", "w1", "w2"], ["b0", "b1", "b2"], "y",
                           ("g", "b"))
    assert args["layer2"] == ["w2", "b2"] and args["layer_norm"] == ["g", "b", "y"]
    with pytest.raises(ValueError, match="norm=\\(gamma, beta\\)"):
        stage_arguments(stack, "x", ["w0", "w1", "w2"], ["b0", "b1", "b2"], "y")
    assert default_ctas(stack) == (33, 33, 33, 33)
    compiled = tilesync.compile(module, target="sm_90a")
    assert set(compiled.kernels) >= {"layer_norm", "mlp_persistent"}


def test_the_layer_norm_pipeline_never_deadlocks_in_the_simulator():
    """MeshGraphNets' form as the queue simulator reads it from the IR: four workers a CTA in
    every stage, the layers relaying, the layer norm only consuming; under adversarial CTA
    orders over three persistent launches every tile reaches the layer norm once a launch."""
    from tilesync.analysis.simulator.queues import pipeline_from_ir, simulate_pipeline

    stack = fitting_stack(1024, (384, 128, 128, 128), plain_layers=(2,), layer_norm=True,
                          groups=4, ctas=(2, 1, 2, 1))
    pipeline = next(op for op in mlp_pipeline_module(stack).ops
                    if isinstance(op, dataflow.PipelineOp))
    queues, stages = pipeline_from_ir(pipeline)
    assert [(s.name, s.relay, s.workers) for s in stages] == [
        ("layer0", False, 4), ("layer1", True, 4), ("layer2", True, 4),
        ("layer_norm", False, 4)]
    stages = [dataclasses.replace(s, tiles=stack.tiles) for s in stages]
    result = simulate_pipeline(queues, stages, sms=6, scheduler="adversarial", launches=3,
                               persistent=True)
    assert result.ok
    assert sorted(result.delivered["layer_norm"]) == list(range(3 * stack.tiles))


@pytest.mark.parametrize("kwargs", [
    {"widths": (64, 256, 256, 256), "skips": (2,)},
    NERF_HEADS_FORM,
    {"widths": (384, 128, 128, 128), "plain_layers": (2,), "layer_norm": True, "groups": 4,
     "ctas": (50, 27, 28, 27)},
], ids=["skip", "nerf-heads", "meshgraphnets"])
def test_dataflow_verify_proves_the_pipelines_co_resident_and_balanced(kwargs):
    """dataflow-verify on the compiled pipeline (registers and shared memory from nvJitLink):
    every stage declares its T tickets a launch, the 132 CTAs (one an SM: the rings take most
    of its shared memory) fit at once; ten more CTAs a stage do not, and it says which."""
    from xdsl.context import Context

    from tilesync.api import annotate_resources
    from tilesync.dialects.locations import OpDiagnostic
    from tilesync.transforms.dataflow.verify import VERIFIED_ATTR, VerifyPipelinePass

    kwargs = dict(kwargs)
    stack = fitting_stack(1 << 18, kwargs.pop("widths"), **kwargs)
    module = mlp_pipeline_module(stack)
    annotate_resources(module, "sm_90a")
    VerifyPipelinePass(sms=132).apply(Context(), module)
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    assert {s.attributes["tiles"].value.data for s in pipeline.stages} == {stack.tiles}
    proof = pipeline.attributes[VERIFIED_ATTR].data
    assert "all 132 blocks are co-resident" in proof and "1 blocks per SM" in proof
    assert f"balanced on {stack.stage_count - 1} queue(s)" in proof
    more = dataclasses.replace(stack, ctas=tuple(c + 10 for c in stack.stage_ctas()))
    module = mlp_pipeline_module(more)
    annotate_resources(module, "sm_90a")
    with pytest.raises(OpDiagnostic, match=f"not all {sum(more.stage_ctas())} blocks"):
        VerifyPipelinePass(sms=132).apply(Context(), module)


def test_default_ctas_fill_the_sms_evenly_the_widest_layers_taking_the_rest():
    trunk = (64,) + (256,) * 8
    assert default_ctas(MlpStack(1 << 18, trunk)) == (16, 17, 17, 17, 17, 16, 16, 16)
    assert default_ctas(MlpStack(1 << 18, trunk, sms=128)) == (16,) * 8
    assert sum(default_ctas(MlpStack(1 << 18, trunk, sms=264))) == 264
    # NeRF's skip: layer 5 multiplies 320 columns, and takes the 4 SMs left over
    assert default_ctas(fitting_stack(1 << 18, trunk, skips=(5,))) == (16,) * 5 + (20,) + (16,) * 2


def test_the_pipeline_compiles_to_one_persistent_kernel():
    stack = MlpStack(512, (64, 256, 256), ctas=(2, 2))
    compiled = tilesync.compile(mlp_pipeline_module(stack), target="sm_90a")
    assert set(compiled.kernels) == {"layer0", "layer1", "mlp_persistent"}
    fused = compiled.kernels["mlp_persistent"]
    # one layer's shared memory (A's rings and the resident 256 x 256 weights), not the sum
    assert fused.dynamic_shared_bytes < 227 * 1024
    assert fused.dynamic_shared_bytes >= (4 * 128 * 64 + 256 * 256) * 2
    assert "wgmma.mma_async" in compiled.ptx_by_module["mlp_stack"]
    # the stage kernels declare the stages' parameters; their code is compiled once, fused
    ptx = compiled.ptx_by_module["mlp_stack"]
    entries = ptx.split(".visible .entry ")[1:]
    assert sorted(e.split("(")[0] for e in entries) == ["layer0", "layer1", "mlp_persistent"]
    for entry in entries:
        assert ("wgmma.mma_async" in entry) == entry.startswith("mlp_persistent(")
    # what the runtime binds each stage's arguments by: together, the persistent kernel's
    kernels = compiled.kernels
    assert kernels["layer0"].user_params + kernels["layer1"].user_params \
        == kernels["mlp_persistent"].user_params


def test_a_fused_pipelines_stages_are_counted_with_the_persistent_kernels_resources():
    """Every CTA of a fused pipeline runs the persistent kernel, so its registers and shared
    memory are what decides how many fit on an SM, for every stage (the stage kernels, whose
    code moved into it, have almost none)."""
    from tilesync.api import annotate_resources

    module = mlp_pipeline_module(MlpStack(512, (64, 256, 256), ctas=(2, 2)))
    usage = annotate_resources(module, "sm_90a")
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    fused = usage["mlp_persistent"]
    assert fused[0] > usage["layer0"][0]  # the stub's registers are not the stage's
    for stage in pipeline.stages:
        assert (stage.attributes["registers"].value.data,
                stage.attributes["shared_bytes"].value.data) == fused


@pytest.mark.parametrize("staged", [True, False])
def test_a_tile_leaves_through_shared_memory_in_whole_chunks(staged):
    """By default a stage writes its queue entry (or Y) with 16-byte copies of whole rows
    from the staged tile; without staged_store, with the fragments' own stores."""

    stack = MlpStack(1024, (64, 256, 256, 256), staged_store=staged)
    cfg = stack.layer_config(1)
    assert cfg.staged_store is staged
    module = mlp_pipeline_module(stack)
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    for kernel in (k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)):
        copies = _ops(kernel, tl.CopyOutOp)
        stores = _ops(kernel, tl.StoreAccOp)
        shared = [op for op in stores if tl.memory_space(op.dst.type) == 3]
        assert (len(copies) == cfg.tile[0] * cfg.tile[1] // 8 // cfg.threads) is staged
        assert (len(shared) == len(stores)) is staged


@pytest.mark.parametrize("groups", [2, 1])
def test_each_warpgroup_is_a_queue_worker_of_its_own(groups):
    """groups=2: a 256-thread CTA whose warpgroups draw, multiply and hand on 64-row tiles
    each by itself: queue ops `threads 128`, an A ring each (smem_a's leading index), the
    group's named barrier in the k-loop and around the staged store, and no CTA barrier
    between an acquire and its release. groups=1: one worker, the CTA, as before."""
    from xdsl.dialects import memref


    stack = MlpStack(2048, (64, 256, 256, 256), groups=groups,
                     tile_rows=64 if groups == 2 else 128, stages=5 if groups == 2 else 4)
    assert stack.threads == 256
    module = mlp_pipeline_module(stack)
    module.verify()
    gmod = next(op for op in module.ops if isinstance(op, gpu.ModuleOp))
    ring, = [op for op in gmod.body.block.ops
             if isinstance(op, memref.GlobalOp) and op.sym_name.data == "smem_a"]
    shape = ring.type.get_shape()
    assert shape == ((2, stack.stages, 64, 64) if groups == 2 else (stack.stages, 128, 64))
    for kernel in (k for k in gmod.body.block.ops if isinstance(k, gpu.FuncOp)):
        assert kernel.known_block_size is not None
        assert tuple(kernel.known_block_size.get_values()) == (256, 1, 1)
        queue_ops = _ops(kernel, (dataflow.AcquireFullOp, dataflow.AcquireEmptyOp,
                                  dataflow.ReleaseFullOp, dataflow.ReleaseEmptyOp))
        assert queue_ops
        assert {None if op.threads is None else op.threads.value.data
                for op in queue_ops} == {128 if groups == 2 else None}
        loop = _ticket_loop(kernel)
        in_loop = list(loop.walk())
        named = [op for op in in_loop if isinstance(op, tl.NamedBarrierOp)]
        block_barriers = [op for op in in_loop if isinstance(op, gpu.BarrierOp)]
        if groups == 2:
            assert named and not block_barriers
            assert all(op.dynamic_id is not None and op.threads.value.data == 128
                       for op in named)
        else:
            assert block_barriers and not named


@st.composite
def _stack_specs(draw):
    """A stack of 2-6 layers, each option drawn: what MlpStack must refuse with a ValueError
    or build into a pipeline that verifies and runs."""
    layers = draw(st.integers(2, 6))
    widths = ([draw(st.sampled_from([64, 128, 256, 384]))]
              + [draw(st.sampled_from([64, 128, 256])) for _ in range(layers - 1)]
              + [draw(st.sampled_from([16, 32, 64, 128, 256]))])
    some = st.lists(st.integers(0, layers - 1), max_size=2).map(lambda xs: tuple(sorted(set(xs))))
    kwargs = {"skips": draw(some), "plain_layers": draw(some), "fused": draw(some),
              "groups": draw(st.sampled_from([1, 2, 4])), "layer_norm": draw(st.booleans()),
              "draw_ahead": draw(st.booleans()),
              "side_inputs": draw(st.lists(st.tuples(st.integers(0, layers - 1),
                                                     st.sampled_from([64, 128])),
                                           max_size=1).map(tuple)),
              "dot_head": draw(st.none() | st.integers(0, layers - 1))}
    return tuple(widths), kwargs, draw(st.integers(0, 2 ** 16))


@settings(max_examples=60, deadline=None)
@given(_stack_specs())
def test_any_stack_is_refused_in_words_or_runs_every_tile_in_the_simulator(spec):
    """No option combination crashes the generator (a ValueError names what is wrong, before
    any IR is built), and every stack it accepts verifies and, with 1-3 CTAs a stage under a
    random or adversarial order over two persistent launches, delivers every tile once a
    launch to its last stage."""
    import random

    from tilesync.analysis.simulator.queues import pipeline_from_ir, simulate_pipeline

    widths, kwargs, seed = spec
    try:
        stack = fitting_stack(2048, widths, **kwargs)
    except ValueError:
        return
    rng = random.Random(seed)
    stack = dataclasses.replace(stack, ctas=tuple(rng.randint(1, 3)
                                                  for _ in range(stack.stage_count)))
    module = mlp_pipeline_module(stack)
    module.verify()
    pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
    queues, stages = pipeline_from_ir(pipeline)
    result = simulate_pipeline(queues, stages, sms=sum(stack.ctas), seed=seed, launches=2,
                               scheduler=rng.choice(["adversarial", "random"]),
                               persistent=True)
    assert result.ok, (result.deadlock, result.violations[:2])
    last = stack.stage_name(stack.stage_count - 1)
    assert sorted(result.delivered[last]) == list(range(2 * stack.tiles))


def test_light_fusion_is_the_benched_stacks_choice():
    """The rule reproduces the fusions measured best on an H100 (bench/dataflow_mlp.py's
    workloads), and fuses nothing a stack refuses (a layer reading the skip)."""
    from tilesync.bench.dataflow_mlp import WORKLOADS
    from tilesync.kernels.mlp_pipeline import light_fusion

    for name in ("nerf", "meshgraphnets"):
        spec = dict(WORKLOADS[name])
        widths, fused = spec.pop("widths"), spec.pop("fused")
        assert light_fusion(1 << 16, widths, **spec) == fused
    # the first layer is light, but the second reads the skip: only the 16-wide last fuses
    assert light_fusion(1024, (64, 256, 256, 128, 16), skips=(1,)) == (3,)
    # no layer light against the others: nothing fused
    assert light_fusion(1024, (256, 256, 256, 256)) == ()


def test_a_stack_gets_the_most_queue_workers_its_widest_layer_allows():
    from tilesync.bench.dataflow_mlp import WORKLOADS
    from tilesync.kernels.mlp_pipeline import most_queue_groups

    # MeshGraphNets' 128-wide layers: four 64-row tiles a CTA, as the bench runs it
    assert most_queue_groups((384, 128, 128, 128)) == WORKLOADS["meshgraphnets"]["groups"] == 4
    assert most_queue_groups((64, 64, 64)) == 4
    # a 256-wide layer's accumulators fill a CTA's registers with two (NeRF)
    assert most_queue_groups((64, 256, 256, 16)) == 2
    for widths in ((384, 128, 128, 128), (64, 256, 256, 16)):
        fitting_stack(1024, widths, groups=most_queue_groups(widths))  # accepted
        with pytest.raises(ValueError, match="accumulators"):
            MlpStack(1024, widths, groups=most_queue_groups(widths) * 2)
