"""bench/dataflow_mlp.py without a GPU: its table (the allotment is graph-to-dataflow's)."""

from __future__ import annotations

import pytest

from tilesync.bench import dataflow_mlp
from tilesync.kernels.mlp_pipeline import MlpStack


def _form(ms: float) -> dict:
    return {"median_ms": ms, "p10_ms": ms, "p90_ms": ms}


def test_table_gives_the_pipelines_speedups():
    even = {**_form(0.5), "ctas": [2, 2]}
    result = {"goal": "g", "rows": [{
        "workload": "meshgraphnets", "rows": 65536, "widths": [64, 256], "floor_ms": 0.1,
        "skips": [], "layer_norm": True,
        "forms": {"pipeline": {**even, "allotment": "pipeline_even"},
                  "pipeline_even": even, "pipeline_allotted": {**_form(0.6), "ctas": [1, 3]},
                  "bulk_sync": _form(1.0), "torch_eager": _form(2.0),
                  "torch_graph": _form(1.5), "torch_native_graph": _form(2.0)}}]}
    table = dataflow_mlp.stack_table(result)
    header, line, which = table.splitlines()[1], *table.splitlines()[3:5]
    assert header == "meshgraphnets: widths [64, 256], layer norm"
    assert line.split()[0] == "65536"
    assert line.split()[-4:] == ["2.00x", "3.00x", "4.00x", "5.00x"]
    assert "pipeline_even (CTAs [2, 2])" in which and "allotted 0.6000 ms" in which


def test_bulk_form_runs_what_a_pipeline_cta_does_at_once():
    stack = MlpStack(1 << 16, (64, 256, 256))
    bulk = dataflow_mlp.bulk_form(stack)
    assert (stack.groups, stack.tile_rows, stack.stages) == (2, 64, 5)
    # 128-row tiles; 5 stages of A and B would not fit beside each other: 4
    assert (bulk.groups, bulk.tile_rows, bulk.stages) == (1, 128, 4)
    assert bulk.layer_config(1, bulk.rows).tile[0] == 128


def test_dram_bytes_reads_ncus_csv():
    """The pipeline's first launch against the first bulk-synchronous run's kernels: NeRF's
    eleven layers and its density head's row dot."""
    import subprocess

    bulk = [f"layer{i}" for i in range(8)] + ["row_dot"] + [f"layer{i}" for i in range(8, 11)]
    rows = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
    rows.append('"0","mlp_persistent","dram__bytes.sum","byte","1,000"')
    rows += [f'"{1 + i}","{name}","dram__bytes.sum","byte","{100 * (i + 1)}"'
             for i, name in enumerate(bulk)]
    rows += [f'"{13 + i}","{name}","dram__bytes.sum","byte","7"' for i, name in enumerate(bulk)]
    seen = []

    def fake_run(command, **_):
        seen.append(command)
        return subprocess.CompletedProcess(command, 0, "==PROF== noise\n" + "\n".join(rows),
                                           "")

    got = dataflow_mlp.dram_bytes(4096, run=fake_run)
    assert got == {"pipeline": 1000.0, "bulk_sync": 7800.0}
    assert seen[0][-4:] == ["--one-run", "4096", "--workload", "nerf"]


def test_floor_counts_nerfs_heads_and_its_density():
    """2 x rows x sum(K x N) multiply-adds, the density's K x 1 included; bytes: X, the
    directions, the 16-wide colour, the density, and every weight and bias once."""
    stack = dataflow_mlp.workload_stack("nerf", 1 << 16)
    assert (stack.layers, stack.dot_head, stack.side_inputs) == (11, 8, ((9, 64),))
    shapes = [(64, 256)] + [(256, 256)] * 4 + [(320, 256)] + [(256, 256)] * 3 + \
        [(320, 128), (128, 16), (256, 1)]
    flops = 2 * stack.rows * sum(k * n for k, n in shapes)
    elements = stack.rows * (64 + 64 + 16 + 1) + sum(k * n + n for k, n in shapes)
    rates = {"peak_tflops": 500.0, "copy_gbps": 2000.0}
    expected = max(flops / 500e12, 2 * elements / 2000e9) * 1e3
    assert abs(dataflow_mlp.stack_floor_ms(stack, rates) - expected) < 1e-12


def test_the_model_as_written_computes_the_padded_stacks_columns():
    """NeRF in small as torch users write it (a 63-wide input, 27-wide directions, 3 colours,
    cat([colour, density])) on the bench's inputs and weights without their padding: the same
    as the padded stack's columns, and checked against them."""
    torch = pytest.importorskip("torch")
    from tilesync.kernels.mlp_pipeline import fitting_stack

    stack = fitting_stack(128, (64, 256, 256, 128, 16), skips=(1,), side_inputs=((3, 64),),
                          plain_layers=(2, 3), dot_head=2)
    data = dataflow_mlp.StackData(torch, stack, native=(63, (27,), 3), device="cpu")
    assert not data.x[:, 63:].any() and not data.sides[0][:, 27:].any()
    native = dataflow_mlp.NativeModel(data, (63, (27,), 3))
    assert native.x.shape == (128, 63) and native.sides[0].shape == (128, 27)
    assert [tuple(w.shape) for w in native.weights] == [(256, 63), (256, 319), (128, 256),
                                                      (3, 155)]
    got = native.forward()
    assert got.shape == (128, 4) and native.error(got) < 1e-2
    padded = data.torch_stack()
    assert torch.allclose(got.float(), padded[:, [0, 1, 2, 16]].float(), atol=1e-2)


def test_the_hold_covers_the_hosts_enqueue_of_every_timed_run():
    """A run the host enqueues in under HOLD_NS_PER_RUN is held that long; a slower one twice
    its enqueue time (sleep: at least 1 ms), so the timed runs still queue up behind it."""
    import time

    from tilesync.bench import mlp

    synced = []
    assert mlp.hold_ns(10, lambda: None, lambda: synced.append(1)) == 10 * mlp.HOLD_NS_PER_RUN
    assert mlp.hold_ns(10, lambda: time.sleep(1e-3), lambda: synced.append(1)) >= 10 * 2_000_000
    assert synced == [1, 1]


def test_the_benched_pipelines_are_proved_and_never_deadlock_in_the_simulator():
    """What `tilesync bench dataflow-mlp` runs, fused stages and all: dataflow-verify proves
    each pipeline co-resident (registers and shared memory of the compiled kernels) and its
    queues balanced at 2^18 rows; the queue simulator, reading the same IR at 2^12 rows with 2
    CTAs a stage, delivers every tile to the last stage once a launch under adversarial CTA
    orders over three persistent launches."""
    import dataclasses

    from xdsl.context import Context

    from tilesync.analysis.simulator.queues import pipeline_from_ir, simulate_pipeline
    from tilesync.api import annotate_resources
    from tilesync.dialects import dataflow
    from tilesync.kernels.mlp_pipeline import mlp_pipeline_module
    from tilesync.transforms.dataflow.verify import VERIFIED_ATTR, VerifyPipelinePass

    for workload in dataflow_mlp.BENCHED:
        stack = dataflow_mlp.workload_stack(workload, 1 << 18)
        module = mlp_pipeline_module(stack)
        annotate_resources(module, "sm_90a")
        VerifyPipelinePass(sms=132).apply(Context(), module)
        pipeline = next(op for op in module.ops if isinstance(op, dataflow.PipelineOp))
        proof = pipeline.attributes[VERIFIED_ATTR].data
        assert f"all {sum(stack.stage_ctas())} blocks are co-resident" in proof, workload
        assert f"balanced on {stack.stage_count - 1} queue(s)" in proof, workload

        small = dataclasses.replace(stack, rows=1 << 12, ctas=(2,) * stack.stage_count)
        pipeline = next(op for op in mlp_pipeline_module(small).ops
                        if isinstance(op, dataflow.PipelineOp))
        queues, stages = pipeline_from_ir(pipeline)
        result = simulate_pipeline(queues, stages, sms=2 * stack.stage_count,  # all resident
                                   scheduler="adversarial", launches=3, persistent=True)
        last = stack.stage_name(stack.stage_count - 1)
        assert result.ok, workload
        assert sorted(result.delivered[last]) == list(range(3 * small.tiles)), workload


def test_dram_without_row_counts_profiles_the_bench_rows(monkeypatch, capsys):
    """`--dram` alone (as the README quotes it) takes the bench's row counts, as no option."""
    import tilesync.bench.report as report

    profiled = []
    monkeypatch.setattr(report, "missing_gpu", lambda _name: False)
    monkeypatch.setattr(dataflow_mlp, "dram_bytes",
                        lambda rows, workload: profiled.append((rows, workload)) or {})
    assert dataflow_mlp.main(["--dram"]) == 0
    assert profiled == [(rows, "nerf") for rows in dataflow_mlp.ROWS]


def test_the_tables_ratios_are_named_as_they_divide_and_sit_under_their_names():
    """bulk/pipe, graph/pipe and native/pipe are the other form's median over the pipeline's
    (the pipeline's speedups; they were headed pipe/bulk, ...), pipe/floor the pipeline's over
    the floor; every header ends where its column's cells end."""
    even = {**_form(0.5), "ctas": [2, 2]}
    result = {"goal": "g", "rows": [{
        "workload": "nerf", "rows": 65536, "widths": [64, 256], "floor_ms": 0.1,
        "forms": {"pipeline": {**even, "allotment": "pipeline_even"}, "pipeline_even": even,
                  "bulk_sync": _form(1.0), "torch_eager": _form(2.0),
                  "torch_graph": _form(1.5), "torch_native_graph": _form(2.0)}}]}
    header, line = dataflow_mlp.stack_table(result).splitlines()[2:4]
    names = header.split()
    assert names[-4:] == ["bulk/pipe", "graph/pipe", "native/pipe", "pipe/floor"]
    assert len(header) == len(line)
    for name, cell in zip(names, line.split(), strict=True):
        assert header.index(name) + len(name) == line.index(cell) + len(cell), name
        line = line.replace(cell, " " * len(cell), 1)  # a value twice: find the next
        header = header.replace(name, " " * len(name), 1)
    assert names[2:2 + len(dataflow_mlp.FORMS)] == list(dataflow_mlp.FORMS)


def test_the_bench_settles_its_floors_on_the_run(monkeypatch):
    """mlp_stack_benchmarks records each row's flops and floor bytes and settles the floors
    after the run at its highest measured rate (report.settle_floors); a form faster than a
    floor at the probes' rates sets it."""
    from types import SimpleNamespace

    from tilesync.bench import mlp

    stack = dataflow_mlp.workload_stack("meshgraphnets", 1 << 16)
    work = dataflow_mlp.stack_floor_work(stack)
    fast_ms = work["flops"] / 1e9 / 500.0  # at 500 TFLOP/s
    probe = {"peak_tflops": 100.0, "copy_gbps": 1e6, "peak_probe": "cuBLAS fp16 4096^3"}
    torch = SimpleNamespace(cuda=SimpleNamespace(empty_cache=lambda: None))
    monkeypatch.setattr(mlp, "_torch_or_none", lambda: (torch, ""))
    monkeypatch.setattr(mlp, "measured_rates", lambda torch, warmup, reps: dict(probe))
    monkeypatch.setattr(dataflow_mlp, "StackData", lambda torch, stack, native=None: None)
    monkeypatch.setattr(dataflow_mlp, "stack_forms", lambda *args: {
        "pipeline": {**_form(fast_ms), "allotment": "pipeline_even", "ctas": [1, 1]},
        "bulk_sync": _form(2 * fast_ms)})
    result = dataflow_mlp.mlp_stack_benchmarks(rows=(1 << 16,), workloads=("meshgraphnets",))
    (row,) = result["rows"]
    assert (row["flops"], row["floor_bytes"]) == (work["flops"], work["floor_bytes"])
    assert result["floor_rates"]["peak_tflops"] == pytest.approx(500.0)
    assert result["floor_rates"]["peak_from"] == "meshgraphnets 65536 rows pipeline"
    assert row["floor_ms"] == pytest.approx(fast_ms)
    table = dataflow_mlp.stack_table(result)
    assert "the run's highest: meshgraphnets 65536 rows pipeline" in table.splitlines()[1]
