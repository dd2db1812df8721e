"""`tilesync bench dataflow-mlp`: stacks of Linear layers as Kitsune pipelines.

NeRF's MLP (`WORKLOADS["nerf"]`: the trunk of 8 layers of 256 with its skip, the density as a
dot head, the feature, colour-hidden and colour layers, the viewing directions concatenated
into the colour-hidden layer) and MeshGraphNets' edge MLP, on 2^16 and 2^18 rows, timed in one
run, the forms below taking turns (bench.mlp.time_forms; the bulk-synchronous layers are first
timed alone: their per-layer times are the measured rates dataflow-allot-ctas sizes the
pipeline's stages from):

  - `pipeline`: kernels.mlp_pipeline, every layer a stage resident at once, activations
    passed in queues kept in L2 (one cooperative launch), two queue workers (warpgroups) per
    CTA; the faster of two allotments measured in the run: `pipeline_allotted` (the ILP of
    dataflow-allot-ctas from the bulk-synchronous layers' rates) and `pipeline_even`
    (`default_ctas`: as many CTAs for every layer, the SMs left over to the widest);
  - `bulk_sync`: the same layers (kernels.mlp_pipeline's `layer_config` with all rows) as one
    kernel per layer, activations through device memory, each block computing what a
    pipeline CTA does at once (`bulk_form`: 2 x 64 rows as one 128-row tile, the faster form
    bulk-synchronously);
  - `torch_eager` / `torch_graph`: the same model in torch (F.linear per layer on cuBLAS,
    relu, cat, layer_norm), eager and replayed from a CUDA graph;

against the floor (the stack's multiply-adds at the run's peak rate, or X, the weights and Y
once at its copy bandwidth, the highest rates measured in the run: report.settle_floors).
Every form is checked against an fp32 reference on poisoned outputs (every output a form
writes, the bulk form's activations too), poisoned in each turn after its untimed runs; the
pipeline also after 100 more runs and after 100 CUDA-graph replays, without a memset in between
(tickets continue from run to run). A pipeline sets aside the persisting L2 its queues are
pinned in for its own turns only (DataflowProgram.give_back_l2 after each), so that the other
forms run with the whole L2, as they would alone.
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from typing import Any

from tilesync.bench import mlp as mlp_bench
from tilesync.bench.experiments import summarize
from tilesync.bench.report import check_floors, floor_rates_text, settle_floors
from tilesync.transforms.graph.graph_to_dataflow import allotted_ctas

NERF_TRUNK = (64,) + (256,) * 8
NERF_SKIPS = (5,)
NERF_HEADS = (256, 128, 16)
"""NeRF's heads after its trunk: the feature (a plain Linear of 256), the colour's hidden layer
(128, ReLU) of cat([viewing directions, feature]), the colour (3, padded to 16, plain); the
density is the dot head of the trunk's output (the feature layer's input)."""
WORKLOADS: dict[str, dict[str, Any]] = {
    # NeRF's MLP (Mildenhall et al.): the 63-wide position encoding (padded to 64) through 8
    # layers of 256, cat([x, h]) into the sixth; density = Linear(256, 1) of the trunk's
    # output; feature = Linear(256, 256); colour = Linear(128, 3) of ReLU(Linear(283, 128)) of
    # cat([the 27-wide direction encoding (padded to 64), feature]); out: cat([colour, density])
    # The first layer (K = 64) and the colour (N = 16) are fused into the stages of the layers
    # next to them (on an H100 at 2^18 rows: 0.871 ms, against 0.98 with either alone fused
    # and 1.03 with neither, each with the ILP's allotment)
    "nerf": {"widths": NERF_TRUNK + NERF_HEADS, "skips": NERF_SKIPS,
             "side_inputs": ((len(NERF_TRUNK), 64),), "plain_layers": (8, 10),
             "dot_head": len(NERF_TRUNK) - 1, "fused": (1, len(NERF_TRUNK) + 1)},
    "nerf_trunk": {"widths": NERF_TRUNK, "skips": NERF_SKIPS},
    # MeshGraphNets' edge MLP: the edge's and its two nodes' 128-wide latents in, Linear+ReLU,
    # Linear+ReLU, Linear, LayerNorm; four queue workers a CTA, as 64 x 128 tiles allow (on an
    # H100 at 2^18 rows: 0.253 ms, against 0.321 with two); its last two layers in one stage
    # (0.191 ms, against 0.223 unfused, 0.207 with all three layers in one stage, which leaves
    # room for 2 stages of A only, and 0.47-1.7 with the first two)
    "meshgraphnets": {"widths": (384, 128, 128, 128), "plain_layers": (2,),
                      "layer_norm": True, "groups": 4, "fused": (2,)},
}
"""The MLP stacks the bench runs: MlpStack's arguments beside the rows."""
NATIVE = {"nerf": (63, (27,), 3)}
"""The widths a workload has as written in torch, where the stack pads them (X's columns, each
side input's, the last layer's outputs): NeRF's 63-wide position and 27-wide direction
encodings and its 3 colours. The bench zeroes the padding of the inputs, so that the padded
stack and the model as written compute the same, and times both in torch."""
BENCHED = ("nerf", "meshgraphnets")
"""The workloads `tilesync bench dataflow-mlp` runs (the trunk alone was NeRF's until the heads
were built)."""
ROWS = (1 << 16, 1 << 18)
FORMS = ("pipeline", "bulk_sync", "torch_eager", "torch_graph", "torch_native_graph")


class StackData(mlp_bench.CheckedOutputs):
    """A stack's input, side inputs, weights (N x K, as nn.Linear keeps them), biases, the
    layer norm's gamma and beta, the dot head's (w, b, S), the output and its fp32 reference
    (with a dot head, of cat([Y, S]): NeRF's cat([colour, density]))."""

    def __init__(self, torch, stack, seed: int = 0, native=None, device: str = "cuda"):
        self.torch = torch
        self.stack = stack
        gen = torch.Generator(device=device).manual_seed(seed)
        half = torch.float16
        rows, width = stack.rows, stack.width

        def randn(*shape, scale=1.0, shift=0.0):
            return (torch.randn(*shape, device=device, generator=gen) * scale + shift).to(half)

        self.x = randn(rows, stack.widths[0])
        self.sides = [randn(rows, w) for _, w in stack.side_inputs]
        if native is not None:  # the padding of the model as written: zero columns
            self.x[:, native[0]:] = 0
            for v, cols in zip(self.sides, native[1], strict=True):
                v[:, cols:] = 0
        # He-scaled weights keep the activations' size from layer to layer under ReLU
        ins = [stack.in_width(layer) for layer in range(stack.layers)]
        self.weights = [randn(n, k, scale=(2 / k) ** 0.5) for n, k in zip(stack.widths[1:], ins)]
        self.biases = [randn(n, scale=0.1) for n in stack.widths[1:]]
        self.norm = (randn(width, scale=0.1, shift=1.0), randn(width, scale=0.1)) \
            if stack.layer_norm else None
        self.dot = None
        if stack.dot_head is not None:
            k = ins[stack.dot_head]
            self.dot = (randn(k, scale=(1 / k) ** 0.5), randn(1, scale=0.1),
                        torch.empty(rows, device=device, dtype=half))
        self.y = torch.empty(rows, width, device=device, dtype=half)
        self.h = self.y  # no middle tensor: the activations stay in the queues
        self.ref = self._forward(lambda t: t.float(),
                                 lambda h, w, b: h @ w.float().t() + b.float())

    def _forward(self, cast, linear, x=None, sides=None, weights=None, biases=None):
        """The stack in torch, its tensors through `cast` (fp32 for the reference); the model
        as written where `x`, `sides`, `weights` and `biases` are given (NativeModel's)."""
        torch, stack = self.torch, self.stack
        h = x = cast(self.x if x is None else x)
        sides = {layer: cast(v) for (layer, _), v in zip(stack.side_inputs,
                                                          self.sides if sides is None else sides)}
        density = None
        weights = self.weights if weights is None else weights
        biases = self.biases if biases is None else biases
        for layer, (w, b) in enumerate(zip(weights, biases)):
            if layer == stack.dot_head:
                density = linear(h, self.dot[0][None, :], self.dot[1])
            if layer in stack.skips:
                h = torch.cat([x, h], -1)
            elif layer in sides:
                h = torch.cat([sides[layer], h], -1)
            h = linear(h, w, b)
            if layer not in stack.plain_layers:
                h = torch.relu(h)
        if self.norm is not None:
            h = torch.nn.functional.layer_norm(h, (stack.width,), *map(cast, self.norm),
                                               eps=stack.layer_norm_eps)
        return h if density is None else torch.cat([h, density], -1)

    def output(self):
        """What the check reads: Y, or cat([Y, S]) with a dot head."""
        if self.dot is None:
            return self.y
        return self.torch.cat([self.y, self.dot[2][:, None]], -1)

    def poisoned(self) -> tuple:
        return (self.y, *(() if self.dot is None else (self.dot[2],)))

    def error(self, y=None) -> float:
        return super().error(self.output() if y is None else y)

    def torch_stack(self):
        return self._forward(lambda t: t, self.torch.nn.functional.linear)


class NativeModel(mlp_bench.CheckedOutputs):
    """The stack's model as written in torch (`NATIVE`: unpadded inputs and outputs), on
    StackData's inputs and weights without their padding, checked against the columns of
    StackData's reference it computes."""

    def __init__(self, data: StackData, native):
        torch, stack = data.torch, data.stack
        x_cols, side_cols, out_cols = native
        self.torch, self.data = torch, data
        heads = {layer: x_cols for layer in (0, *stack.skips)}
        heads.update({layer: cols for (layer, _), cols in zip(stack.side_inputs, side_cols)})
        self.weights, self.biases = [], []
        for layer, (w, b) in enumerate(zip(data.weights, data.biases)):
            keep = list(range(stack.in_width(layer)))
            if layer in heads:  # the concatenated (or first) input's own columns
                padded = stack.widths[0] if layer == 0 else stack.head_width(layer)
                keep = keep[:heads[layer]] + keep[padded:]
            rows = out_cols if layer == stack.layers - 1 else w.shape[0]
            self.weights.append(w[:rows, keep].contiguous())
            self.biases.append(b[:rows].contiguous())
        self.x = data.x[:, :x_cols].contiguous()
        self.sides = [v[:, :cols].contiguous() for v, cols in zip(data.sides, side_cols)]
        columns = list(range(out_cols)) + ([stack.width] if stack.dot_head is not None else [])
        self.ref = data.ref[:, columns]
        self.h = self.y = None

    def forward(self):
        return self.data._forward(lambda t: t, self.torch.nn.functional.linear, self.x,
                                  self.sides, self.weights, self.biases)


def compile_pipeline(stack, arch: str = "sm_90"):
    """The stack's pipeline compiled for `arch` (sm_90a where its wgmma kernels need it): what
    the bench runs, and what the PTX digests record."""
    import tilesync
    from tilesync.harness.compile import kernel_target
    from tilesync.kernels.mlp_pipeline import mlp_pipeline_module

    return tilesync.compile(mlp_pipeline_module(stack),
                            target=kernel_target(stack.layer_config(0), arch))


class LoadedPipeline:
    """The stack's pipeline compiled, loaded and bound to `data`: a form timed in turns
    (`form`; its persisting L2 set aside for its own turns only, so that the forms between
    them have the whole L2), then checked across repeated runs and graph replays
    (`repeated_checks`), all without a memset of its rings."""

    def __init__(self, stack, data: StackData):
        import time

        from tilesync.kernels.mlp_pipeline import stage_arguments
        from tilesync.runtime.dataflow import DataflowProgram
        from tilesync.runtime.device import get_device

        began = time.perf_counter()
        compiled = compile_pipeline(stack, get_device().arch)
        self.compile_s = time.perf_counter() - began
        self.stack, self.data = stack, data
        self.program = DataflowProgram(compiled)
        self.program.give_back_l2()
        self.args = stage_arguments(stack, data.x, data.weights, data.biases, data.y,
                                    data.norm, data.sides, data.dot)

    def form(self, name: str = "pipeline") -> mlp_bench.TimedForm:
        from tilesync.runtime.stream import elapsed_ms

        program, data = self.program, self.data

        def run():
            end = program.run(self.args)
            return program.last_start, end

        stream = program.main_stream()
        return mlp_bench.TimedForm(run, elapsed_ms, program.synchronize, stream,
                                   lambda: data.poison_on(stream),
                                   lambda: mlp_bench.check_error(name, data.error()),
                                   program.give_back_l2, program.set_aside_l2)

    def repeated_checks(self, repeats: int, graph_replays: int) -> list[dict[str, Any]]:
        """Checked after `repeats` more runs, then after `graph_replays` replays of a
        captured run (each check's run on poisoned outputs)."""
        program, data = self.program, self.data
        checks = []

        def checked(label: str, launch) -> None:
            data.poison()
            launch()
            program.synchronize()
            checks.append({"after": label, "rel_error": mlp_bench.check_error(
                f"pipeline ({label})", data.error())})

        program.set_aside_l2()
        try:
            for _ in range(repeats):
                program.run(self.args)
            checked(f"{repeats + 1} more runs", lambda: program.run(self.args))
            if graph_replays:
                graph = program.capture(self.args)
                for _ in range(graph_replays - 1):
                    graph.launch()
                checked(f"{graph_replays} graph replays", graph.launch)
                graph.close()
        finally:
            program.give_back_l2()
        return checks

    def record(self) -> dict[str, Any]:
        program = self.program
        return {"ctas": list(self.stack.stage_ctas()),
                "queue_entries": self.stack.queue_entries(),
                "co_residency": program.co_residency, "compile_s": self.compile_s,
                "l2_window_bytes": program.l2_window[1] if program.l2_window else 0}

    def close(self) -> None:
        self.program.close()


def finish_pipeline(pipeline: LoadedPipeline, timed: dict[str, Any], repeats: int,
                    graph_replays: int) -> dict[str, Any]:
    """The pipeline's record: its turns' timing (`timed`, time_forms'), its repeated checks
    (where the turns ran), what it is; the pipeline closed."""
    try:
        record = {**pipeline.record(), **timed}
        if "median_ms" in timed:
            checks = [{"after": f"the first run and each of {timed['turns']} turns",
                       "rel_error": timed["rel_error"]},
                      *pipeline.repeated_checks(repeats, graph_replays)]
            record.update(checks=checks, rel_error=max(c["rel_error"] for c in checks))
        return record
    finally:
        pipeline.close()


def run_pipeline(stack, data: StackData, warmup: int, reps: int, repeats: int,
                 graph_replays: int) -> dict[str, Any]:
    """The pipeline alone: compiled, loaded, checked, timed (time_forms), checked again
    after `repeats` runs and after `graph_replays` replays of a captured run."""
    pipeline = LoadedPipeline(stack, data)
    timed = mlp_bench.time_forms({"pipeline": pipeline.form()}, warmup, reps)["pipeline"]
    if "error" in timed:
        pipeline.close()
        raise RuntimeError(f"pipeline: {timed['error']}")
    return finish_pipeline(pipeline, timed, repeats, graph_replays)


def bulk_form(stack):
    """The stack bulk-synchronously: one worker per block, whose tile has the rows a pipeline
    CTA works on at once (on an H100 at 2^18 rows the NeRF trunk took 1.05 ms with 128-row
    tiles, 1.24 with 64-row ones), with as many of the pipeline's stages as fit beside a ring
    of B (which a pipeline CTA does not need: its weights stay resident)."""
    for stages in range(stack.stages, 1, -1):
        try:  # its rings of A and B may exceed the block's shared memory
            candidate = dataclasses.replace(stack, groups=1, stages=stages,
                                            tile_rows=stack.groups * stack.tile_rows,
                                            resident_weights=False, fused=())
            candidate.layer_config(0, stack.rows)
        except ValueError:
            continue
        return candidate
    raise ValueError(f"no bulk-synchronous form of {stack} fits a block's shared memory")


class BulkSyncStack:
    """The same layers (`bulk_form`), one kernel per layer (and the layer norm's, and the dot
    head's before its layer's) over all rows, activations in memory, on one stream."""

    def __init__(self, stack, data: StackData):
        from tilesync.harness.runner import GemmRunner, LayerNormRunner, RowDotRunner
        from tilesync.kernels.config import RowDotConfig
        from tilesync.runtime.stream import Stream

        torch = data.torch
        self.stack = stack = bulk_form(stack)
        self.data = data
        self.runners = [GemmRunner(stack.layer_config(layer, stack.rows))
                        for layer in range(stack.layers)]
        self.hidden = [torch.empty(stack.rows * max(stack.widths[1:]), device="cuda",
                                   dtype=torch.float16) for _ in range(2)]
        self.stream = Stream()
        self.norm = LayerNormRunner(stack.norm_config(stack.rows)) if stack.layer_norm \
            else None
        self.dot = None
        if stack.dot_head is not None:
            self.dot = RowDotRunner(RowDotConfig(stack.rows, stack.in_width(stack.dot_head)))
        self.heads = {layer: data.x for layer in stack.skips}
        self.heads.update({layer: v for (layer, _), v in zip(stack.side_inputs, data.sides)})

    def run(self) -> list:
        """One run; an event after each stage."""
        from tilesync.runtime.stream import Event

        stack, data, stream = self.stack, self.data, self.stream
        source, marks = data.x, []
        for layer, runner in enumerate(self.runners):
            last = layer == stack.layers - 1 and self.norm is None
            width = stack.widths[layer + 1]
            target = data.y if last else self.hidden[layer % 2][:stack.rows * width].view(
                stack.rows, width)
            if layer == stack.dot_head:
                self.dot.launch(source, *data.dot, stream=stream)
            runner.launch(source, data.weights[layer], target, data.biases[layer],
                          stream=stream, a_head=self.heads.get(layer))
            marks.append(Event().record(stream))
            source = target
        if self.norm is not None:
            self.norm.launch(source, *data.norm, data.y, stream=stream)
            marks.append(Event().record(stream))
        return marks

    def layer_times(self, warmup: int, reps: int) -> dict[str, Any]:
        """Checked, then timed in one block (its outputs poisoned between the warm-up and the
        timed runs, checked after): `layer_ms`, each layer's median time (the dot head's in
        its layer's), then the layer norm's: the measured rates dataflow-allot-ctas sizes the
        pipeline's stages from."""
        from tilesync.harness.timing import hold_stream
        from tilesync.runtime.stream import Event, elapsed_ms

        data, stream = self.data, self.stream
        data.poison()
        self.run()
        stream.synchronize()
        first = mlp_bench.check_error("bulk_sync", data.error())
        samples = []
        hold_stream(mlp_bench.hold_ns(warmup + reps, lambda: (Event().record(stream),
                                                              self.run()),
                                      stream.synchronize), stream)
        for i in range(warmup + reps):
            if i == warmup:  # in stream order: the check reads what the timed runs wrote
                data.poison_on(stream, *self.hidden)
            start = Event().record(stream)
            marks = self.run()
            if i >= warmup:
                samples.append((start, marks))
        stream.synchronize()
        last = mlp_bench.check_error("bulk_sync (after timing)", data.error())
        layer_ms = [statistics.median(elapsed_ms(([s, *m])[k], m[k]) for s, m in samples)
                    for k in range(self.stack.layers + self.stack.layer_norm)]
        return {"rel_error": max(first, last), "layer_ms": layer_ms,
                **summarize([elapsed_ms(s, m[-1]) for s, m in samples], warmup)}

    def form(self) -> mlp_bench.TimedForm:
        from tilesync.runtime.stream import Event, elapsed_ms

        def run():
            start = Event().record(self.stream)
            return start, self.run()[-1]

        return mlp_bench.TimedForm(run, elapsed_ms, self.stream.synchronize, self.stream,
                                   lambda: self.data.poison_on(self.stream, *self.hidden),
                                   lambda: mlp_bench.check_error("bulk_sync", self.data.error()))


def run_bulk_sync(stack, data: StackData, warmup: int, reps: int) -> dict[str, Any]:
    """BulkSyncStack's layer_times."""
    return BulkSyncStack(stack, data).layer_times(warmup, reps)


def workload_stack(workload: str, rows: int):
    """WORKLOADS[workload] on `rows` rows, with the most stages that fit."""
    from tilesync.kernels.mlp_pipeline import fitting_stack

    spec = dict(WORKLOADS[workload])
    return fitting_stack(rows, tuple(spec.pop("widths")), **spec)


def stack_floor_work(stack) -> dict[str, int]:
    """The stack's flops (its multiply-adds x 2) and floor bytes (its inputs, weights and
    outputs once, fp16)."""
    shapes = [(stack.in_width(layer), stack.widths[layer + 1]) for layer in range(stack.layers)]
    if stack.dot_head is not None:
        shapes.append((stack.in_width(stack.dot_head), 1))
    outputs = stack.width + (stack.dot_head is not None)
    inputs = stack.widths[0] + sum(w for _, w in stack.side_inputs)
    elements = stack.rows * (inputs + outputs) + sum(k * n + n for k, n in shapes)
    return {"flops": 2 * stack.rows * sum(k * n for k, n in shapes), "floor_bytes": 2 * elements}


def stack_floor_ms(stack, rates: dict[str, float]) -> float:
    """The stack's multiply-adds at the peak rate, or its inputs, weights and outputs once at
    the copy bandwidth."""
    from tilesync.bench.report import floor_ms

    work = stack_floor_work(stack)
    return floor_ms(work["flops"], work["floor_bytes"], rates)


def stack_forms(stack, data: StackData, workload: str, warmup: int, reps: int,
                repeats: int, graph_replays: int) -> dict[str, Any]:
    """A row's forms: the bulk-synchronous layers timed alone first (their rates size the
    allotted pipeline), then every form in turns (time_forms: bulk_sync, both pipelines,
    torch eager and in a graph, the model as written where the stack pads it), each
    pipeline with its persisting L2 set aside for its own turns only; `pipeline` the faster
    pipeline."""
    bulk = BulkSyncStack(stack, data)
    rates = bulk.layer_times(warmup, reps)
    allotted = dataclasses.replace(stack, ctas=allotted_ctas(stack, rates["layer_ms"]))
    pipelines: dict[str, LoadedPipeline] = {}
    try:  # a pipeline that loaded is closed whatever fails after it
        pipelines["pipeline_allotted"] = LoadedPipeline(allotted, data)
        pipelines["pipeline_even"] = LoadedPipeline(stack, data)
        timed = {"bulk_sync": bulk.form(),
                 **{name: p.form(name) for name, p in pipelines.items()}}
        torch_timed, failed = mlp_bench.torch_forms(data, data.torch_stack)
        timed.update(torch_timed)
        if workload in NATIVE:
            native = NativeModel(data, NATIVE[workload])
            native_timed, native_failed = mlp_bench.torch_forms(native, native.forward,
                                                                 " (as written)")
            timed.update({f.replace("torch", "torch_native"): v
                          for f, v in native_timed.items()})
            failed.update({f.replace("torch", "torch_native"): v
                           for f, v in native_failed.items()})
        records = mlp_bench.time_forms(timed, warmup, reps)
    except BaseException:
        for pipeline in pipelines.values():
            pipeline.close()
        raise
    forms: dict[str, Any] = {**failed, **records}
    forms["bulk_sync"] = {**records["bulk_sync"], "layer_ms": rates["layer_ms"],
                          "layer_block": {k: v for k, v in rates.items() if k != "layer_ms"}}
    for name, pipeline in pipelines.items():
        forms[name] = finish_pipeline(pipeline, records[name], repeats, graph_replays)
    timed_pipelines = [name for name in pipelines if "median_ms" in forms[name]]
    if timed_pipelines:
        best = min(timed_pipelines, key=lambda name: forms[name]["median_ms"])
        forms["pipeline"] = {**forms[best], "allotment": best}
    return forms


def mlp_stack_benchmarks(rows=ROWS, workloads=BENCHED, warmup: int = 5,
                         reps: int = 30, repeats: int = 100, graph_replays: int = 100
                         ) -> dict[str, Any]:

    torch, why = mlp_bench._torch_or_none()
    if torch is None:
        raise RuntimeError(f"bench dataflow-mlp compares against torch: {why}")
    rates = mlp_bench.measured_rates(torch, warmup, reps)
    results = []
    for workload, count in itertools.product(workloads, rows):
        stack = workload_stack(workload, count)
        data = StackData(torch, stack, native=NATIVE.get(workload))
        forms = stack_forms(stack, data, workload, warmup, reps, repeats, graph_replays)
        results.append({"workload": workload, "rows": count, "widths": list(stack.widths),
                        "skips": list(stack.skips),
                        "side_inputs": [list(s) for s in stack.side_inputs],
                        "plain_layers": list(stack.plain_layers), "dot_head": stack.dot_head,
                        "layer_norm": stack.layer_norm, "stages": stack.stages,
                        **stack_floor_work(stack), "floor_ms": stack_floor_ms(stack, rates),
                        "forms": forms})
        del data
        torch.cuda.empty_cache()
    result = {"experiment": "dataflow_mlp", "rates": rates, "warmup": warmup, "reps": reps,
              "rows": results,
              "goal": "pipeline >= 1.5x the same kernels bulk-synchronous and >= 2.5x torch in "
                      "a CUDA graph (NeRF; torch_native: the model as written, unpadded); "
                      "MeshGraphNets measured against the same forms"}
    # every form counts with its row's work (torch_native's unpadded model does a little less)
    settle_floors(result, _row_label, _forms)
    check_floors(result, _row_label, _forms)
    return result


def _row_label(row: dict[str, Any]) -> str:
    return f"{row.get('workload', 'nerf')} {row['rows']} rows"


def _forms(row: dict[str, Any]) -> dict[str, Any]:
    return row["forms"]


RATIOS = ("bulk/pipe", "graph/pipe", "native/pipe", "pipe/floor")
"""The table's ratios: bulk_sync's, torch_graph's and torch_native_graph's medians over the
pipeline's (its speedups), then the pipeline's over the floor."""


def stack_table(result: dict[str, Any]) -> str:
    check_floors(result, _row_label, _forms)
    lines = ["MLP stacks (median ms; speedup of the pipeline over each form)"]
    if result.get("rates"):
        peak, copy = floor_rates_text(result, "cuBLAS probe")
        lines.append(f"floor = the longer of the flops at {peak} and X, the weights and Y once "
                     f"at {copy}")
    widths = {f: max(12, len(f)) for f in FORMS}
    shown = None
    for row in result["rows"]:
        workload = row.get("workload", "nerf")
        if workload != shown:  # a header per workload
            shown = workload
            lines += [f"{workload}: widths {row['widths']}" +
                      (f", skips {row['skips']}" if row.get("skips") else "") +
                      (f", side inputs {row['side_inputs']}" if row.get("side_inputs")
                       else "") +
                      (f", dot head at layer {row['dot_head']}"
                       if row.get("dot_head") is not None else "") +
                      (", layer norm" if row.get("layer_norm") else ""),
                      f"{'rows':>8} {'floor':>7} " + " ".join(f"{f:>{widths[f]}}" for f in FORMS)
                      + " " + " ".join(f"{r:>12}" for r in RATIOS)]
        forms = row["forms"]
        ms = {f: forms.get(f, {}).get("median_ms") for f in FORMS}
        cells = " ".join(f"{v:>{widths[f]}.4f}" if v else f"{'-':>{widths[f]}}"
                         for f, v in ms.items())
        pipe = ms["pipeline"]
        ratios = [(ms["bulk_sync"], pipe), (ms["torch_graph"], pipe),
                  (ms["torch_native_graph"], pipe), (pipe, row["floor_ms"])]
        lines.append(f"{row['rows']:>8} {row['floor_ms']:7.4f} {cells} " + " ".join(
            f"{top / bottom:>11.2f}x" if top and bottom else f"{'-':>12}"
            for top, bottom in ratios))
        if pipe:
            def timed(name, forms=forms):
                rec = forms.get(name, {})
                return f"{rec['median_ms']:.4f} ms" if "median_ms" in rec else \
                    f"not timed ({rec.get('error', 'missing')})"

            lines.append(f"{'':>8} pipeline: {forms['pipeline']['allotment']} (CTAs "
                         f"{forms['pipeline']['ctas']}); allotted "
                         f"{timed('pipeline_allotted')} with CTAs "
                         f"{forms.get('pipeline_allotted', {}).get('ctas')}, even "
                         f"{timed('pipeline_even')}")
    lines.append(f"goal: {result['goal']}")
    return "\n".join(lines)


def stack_plot(result: dict[str, Any], out_dir, name: str):
    from tilesync.bench.report import pyplot, save_figure, speedup_bars

    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    rows = result["rows"]

    def speed(row, form):
        rec = row["forms"].get(form, {})
        base = row["forms"].get("torch_graph", {}).get("median_ms")
        if "median_ms" not in rec or not base:
            return None
        return base / rec["median_ms"], rec

    speedup_bars(ax, rows, list(FORMS), speed)
    ax.set_xticks(range(len(rows)), [f"{r.get('workload', 'nerf')}\n{r['rows']}"
                                     for r in rows], fontsize=7)
    ax.set_xlabel("workload, rows")
    ax.set_ylabel("speedup over torch in a CUDA graph")
    ax.legend(fontsize=8)
    return save_figure(plt, fig, result, out_dir, name)


DRAM_METRIC = "dram__bytes.sum"


def one_run_each(rows: int, workload: str = "nerf") -> None:
    """One pipeline run and one bulk-synchronous run (checked): what `dram_bytes` profiles."""
    torch, why = mlp_bench._torch_or_none()
    if torch is None:
        raise SystemExit(f"needs torch on the GPU: {why}")
    stack = workload_stack(workload, rows)
    data = StackData(torch, stack)
    run_pipeline(stack, data, warmup=0, reps=1, repeats=0, graph_replays=0)
    run_bulk_sync(stack, data, warmup=0, reps=1)


def dram_bytes(rows: int, ncu: str = "ncu", run=None, workload: str = "nerf"
               ) -> dict[str, float]:
    """DRAM bytes (read + written) of one run of each form, measured by Nsight Compute on a
    child process running `one_run_each`: the pipeline's persistent kernel (its first
    launch) against the sum over the bulk-synchronous layers (their first run)."""
    import csv
    import io
    import subprocess
    import sys

    command = [ncu, "--target-processes", "all", "--csv", "--print-units", "base",
               "--metrics", DRAM_METRIC,
               "-k", "regex:^(mlp_persistent|layer[0-9]+|layer_norm|row_dot)$",
               sys.executable, "-m", "tilesync.bench.dataflow_mlp", "--one-run", str(rows),
               "--workload", workload]
    done = (run or subprocess.run)(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"ncu failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    header = done.stdout.find('"ID"')
    if header < 0:
        raise RuntimeError(f"ncu printed no metrics: {done.stdout.strip()[-500:]}")
    launches = [(row["Kernel Name"], float(row["Metric Value"].replace(",", "")))
                for row in csv.DictReader(io.StringIO(done.stdout[header:]))
                if row["Metric Name"] == DRAM_METRIC]
    pipeline = [b for name, b in launches if name == "mlp_persistent"]
    bulk = [b for name, b in launches if name != "mlp_persistent"]
    stack = workload_stack(workload, rows)
    layers = stack.layers + stack.layer_norm + (stack.dot_head is not None)  # bulk kernels
    if not pipeline or len(bulk) < layers:
        raise RuntimeError(f"expected the pipeline and {layers} stages, profiled {launches}")
    # the checked runs come first: the pipeline's first launch, the bulk form's first run
    return {"pipeline": pipeline[0], "bulk_sync": sum(bulk[:layers])}


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(description="DRAM bytes of the MLP-stack pipeline and "
                                                 "of its layers bulk-synchronous (ncu)")
    parser.add_argument("--one-run", type=int, metavar="ROWS",
                        help="run each form once (the child process ncu profiles)")
    parser.add_argument("--dram", type=int, nargs="*", metavar="ROWS",
                        help="profile DRAM bytes at these row counts (none given: 2^16 and "
                             "2^18, as without the option)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="nerf")
    args = parser.parse_args(argv)
    from tilesync.bench.report import missing_gpu

    if missing_gpu("dataflow_mlp"):
        return 1
    if args.one_run:
        one_run_each(args.one_run, args.workload)
        return 0
    out = {str(rows): dram_bytes(rows, workload=args.workload) for rows in args.dram or ROWS}
    print(json.dumps(out, indent=1))
    return 0


__all__ = [
    "NERF_TRUNK",
    "WORKLOADS",
    "StackData",
    "compile_pipeline",
    "dram_bytes",
    "mlp_stack_benchmarks",
    "stack_plot",
    "stack_table",
    "workload_stack",
]


if __name__ == "__main__":
    raise SystemExit(main())
