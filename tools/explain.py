"""`python -m tilesync.tools.explain FILE [--sms 132] [--arch sm_90]`: the wave model of a program.

For every `sync.stage`: grid, blocks, blocks per SM and what limits them, waves, the last
wave's utilization and the average utilization over all waves (paper Table I), its order and
its policy (the stage's `policy`, or what its dependencies read); then, for every group of
dependent stages, the predicted time in tile-time units with stream synchronization
(Σ ⌈waves⌉) and with per-tile synchronization (⌈Σ waves⌉), the predicted speedup, and whether
the optimizations W (drop the wait-kernel) and T (drop the custom order) are legal.

Blocks per SM come from the stage's `blocks_per_sm` attribute (sync-annotate-occupancy);
without it they are computed here from `registers` / `shared_bytes` and the stage's block,
with 32 registers and no shared memory assumed where those are missing, and the output says
so.

For every `dataflow.pipeline` (Kitsune): its queues (entries, bytes, pinned in L2 or not), its
stages (resource, CTAs, tickets a launch, queues read and written, the measured
bulk-synchronous rate where `bsp_rate` records one), the time the allotment's model gives (a
stage's rate scales with its share of the SMs; the slowest stage bounds the pipeline) against
the stages one after another, and dataflow-verify's co-residency proof or why there is none.
The model sizes stages against each other; its absolute time is an upper bound: a stage in a
pipeline reads and writes L2, not DRAM, and keeps its weights resident, and on an H100 the
benched NeRF and MeshGraphNets pipelines took 0.53-0.84 of it (bench/results, 5573f3f).

Where the mode cost model's choice is recorded on the program (bench mlp and bench conv record
it on the program of each row's mode predicted fastest: analysis/mode_cost.py), the report
ends with it: the mode chosen and why, every mode's predicted time and the library's measured
one, the tile times and mechanism costs the prediction read, and this program predicted again
from the record alone (the simulated makespan and the launches' part), said to match the
record or not.

A program whose dependencies form a cycle is refused as sync-verify refuses it (the wave
model of a program that can never make progress would be a rosy fiction). A graph-level
program is explained as the stage program `tilesync compile` makes of it first.

Bad input is one line on stderr and exit status 1, never a traceback; Ctrl-C is one line and
exit status 130.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from fractions import Fraction

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute

from tilesync.analysis import mode_cost
from tilesync.analysis.forward_progress import Residency, program_facts, wait_kernel_removal
from tilesync.analysis.pipeline_model import items_per_second
from tilesync.analysis.stage_graph import StageGraph, one_launch_groups
from tilesync.analysis.wave_model import StageWaves, predict_chain, tile_order_legality
from tilesync.contract import (
    BLOCKS_PER_SM_ATTR,
    DEFAULT_TARGET,
    DYNAMIC_SHARED_BYTES_STAGE_ATTR,
    LIMITER_ATTR,
    REGISTERS_ATTR,
    SHARED_BYTES_ATTR,
    TARGETS,
    TILES_ATTR,
    CompileError,
)
from tilesync.dialects import dataflow
from tilesync.dialects.locations import OpDiagnostic, diagnostic
from tilesync.dialects.sync import DependencyOp, StageOp, format_affine_map
from tilesync.tools.errors import (
    check_environment,
    flushed,
    interrupted,
    output_closed,
    report,
    source_name,
)
from tilesync.transforms.dataflow.allot_ctas import stage_rates
from tilesync.transforms.dataflow.verify import VERIFIED_ATTR, VerifyPipelinePass
from tilesync.transforms.sync.annotate_occupancy import (
    int_attribute,
    stage_label,
    stage_occupancy,
)
from tilesync.transforms.sync.optimize import tile_order_group
from tilesync.transforms.sync.verify import VerifySyncPass


def _num(value: Fraction | float) -> str:
    text = f"{float(value):.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _pct(value: Fraction) -> str:
    return f"{float(value) * 100:.1f} %"


def _shape(values: Sequence[int]) -> str:
    return "(" + ", ".join(str(v) for v in values) + ")"


def _policy_text(stage: StageOp) -> str | None:
    policy: Attribute | None = getattr(stage, "policy", None)
    if policy is None:
        policy = stage.attributes.get("policy")
    if policy is None:
        return None
    text = str(policy)
    return text.removeprefix("#sync.policy<").removesuffix(">") if text.startswith("#") else text


def _stage_waves(stage: StageOp, sms: int, arch: str) -> tuple[StageWaves | None, str]:
    """The stage's waves and a note on where its blocks per SM come from."""
    bpsm = int_attribute(stage, BLOCKS_PER_SM_ATTR, "explain")
    if bpsm is not None and bpsm < 1:
        raise diagnostic("explain", stage, f"{stage_label(stage)} has {BLOCKS_PER_SM_ATTR} = "
                         f"{bpsm}: it cannot run (a stage runs at least 1 block per SM)")
    if bpsm is not None:
        limiter = stage.attributes.get(LIMITER_ATTR)
        note = f" ({limiter.data})" if limiter is not None and hasattr(limiter, "data") else ""
    else:
        occupancy, registers, _ = stage_occupancy(stage, arch)
        bpsm = occupancy.blocks_per_sm
        assumed = []
        if int_attribute(stage, REGISTERS_ATTR, "explain") is None:
            assumed.append(f"{registers} registers")
        if int_attribute(stage, SHARED_BYTES_ATTR, "explain") is None and not int_attribute(
            stage, DYNAMIC_SHARED_BYTES_STAGE_ATTR, "explain"
        ):
            assumed.append("no shared memory")
        note = f" ({occupancy.limiter}; computed"
        note += f", assuming {' and '.join(assumed)})" if assumed else ")"
        if bpsm == 0:
            return None, note
    return StageWaves(math.prod(stage.grid_shape), bpsm, sms), note


def _components(names: list[str], deps: list[DependencyOp]) -> list[list[str]]:
    """Groups of stages connected by dependencies, each in program order."""
    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for dep in deps:
        a, b = find(dep.producer.root_reference.data), find(dep.consumer.root_reference.data)
        parent[a] = b
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(find(n), []).append(n)
    return [g for g in groups.values() if len(g) > 1]


def explain(module: ModuleOp, sms: int = 132, arch: str = "sm_90") -> str:
    """The wave-model report of `module` (see the module doc) as text; a VerifyError for a
    dependency cycle, at the dependency that closes it, a CompileError for any other
    attribute or argument it cannot read."""
    from tilesync.api import check_target, expect_module

    expect_module(module, "explain")
    if isinstance(sms, bool) or not isinstance(sms, int) or sms < 1:
        raise CompileError(f"sms must be a positive integer, got {sms!r}")
    check_target(arch)
    try:
        return _report(module, sms, arch)
    except OpDiagnostic as err:  # about one of the program's ops: the user's error, located
        raise err.kind(err.message, err.location) from None


def _report(module: ModuleOp, sms: int, arch: str) -> str:
    graph = StageGraph.of(module)
    _refuse_cycles(graph)
    stages, deps = graph.stages, graph.dependencies
    pipelines = [op for op in module.walk() if isinstance(op, dataflow.PipelineOp)]
    if pipelines and not stages:
        return "\n".join(explain_pipelines(module, pipelines, sms, arch)) + "\n"
    lines = [f"wave model on {sms} SMs ({arch}); times in tile-time units"]
    if not stages:
        lines.append("no sync.stage or dataflow.pipeline in this module")
        return "\n".join(lines) + "\n"
    lines.append(_occupancy_source(list(stages.values())))
    waves: dict[str, StageWaves] = {}
    for name, stage in stages.items():
        blocks = math.prod(stage.grid_shape)
        lines.append("")
        lines.append(
            f"stage @{name}: grid {_shape(stage.grid_shape)} = {blocks} blocks of "
            f"{math.prod(stage.block_shape)} threads"
        )
        sw, note = _stage_waves(stage, sms, arch)
        if sw is None:
            lines.append(f"  blocks per SM: 0{note}: this stage cannot run")
        else:
            waves[name] = sw
            lines.append(
                f"  blocks per SM: {sw.blocks_per_sm}{note}, {sw.blocks_per_wave} per wave"
            )
            lines.append(
                f"  waves: {_num(sw.waves)} ({sw.wave_count} when alone); last wave "
                f"{sw.last_wave_blocks}/{sw.blocks_per_wave} blocks = "
                f"{_pct(sw.last_wave_utilization)}; average utilization {_pct(sw.utilization)}"
            )
        order = stage.order
        lines.append(f"  order: {'none (block ids)' if order is None else _order_text(order)}")
        policy = _policy_text(stage)
        if policy is not None:
            lines.append(f"  policy: {policy}")
        elif any(d.producer.root_reference.data == name for d in deps):
            lines.append("  policy: none yet (sync-generate-policies derives it from the reads)")
        for dep in deps:
            if dep.consumer.root_reference.data != name:
                continue
            producer = stages.get(dep.producer.root_reference.data)
            ppolicy = _policy_text(producer) if producer is not None else None
            lines.append(
                f"  reads @{dep.producer.root_reference.data} (operand {dep.operand.data}): "
                f"tiles {format_affine_map(dep.tiles_map)}"
                + "".join(f", s{i} in [{lo}, {hi})" for i, (lo, hi) in enumerate(dep.ranges))
                + (f"; waits by {ppolicy}" if ppolicy else "")
            )
    for group in _components(list(stages), deps):
        lines.append("")
        lines.append("dependent stages " + ", ".join(f"@{n}" for n in group) + ":")
        if any(n not in waves for n in group):
            lines.append("  no prediction: a stage of this group cannot run")
            continue
        prediction = predict_chain([waves[n] for n in group])
        parts = " + ".join(str(waves[n].wave_count) for n in group)
        sums = " + ".join(_num(waves[n].waves) for n in group)
        lines.append(f"  stream sync:   {prediction.stream_sync} ({parts})")
        lines.append(
            f"  per-tile sync: {prediction.fine_grained} (ceil({sums}) = "
            f"ceil({_num(prediction.total_waves)}))"
        )
        lines.append(f"  predicted speedup: {_num(prediction.speedup)}x")
        for together in one_launch_groups(graph.plan):
            if len(together) > 1 and together[0].stage in group:
                lines.append("  one launch: " + ", ".join(f"@{s.stage}" for s in together)
                             + " (one grid, tickets in that order)")
        for wait in graph.wait_kernels():
            producer = wait.producer
            launch = graph.guarded_launch(wait)
            if producer not in group or launch is None:
                continue
            consumer = launch.stage
            if consumer not in waves:
                continue
            if any(name not in waves for name in stages):
                lines.append(f"  W (drop the wait-kernel @{producer} -> @{consumer}): unknown: "
                             f"a stage of the program cannot run")
                continue
            verdict = wait_kernel_removal(program_facts(
                graph, {n: Residency(w.blocks, w.blocks_per_sm) for n, w in waves.items()},
                sms), wait)
            lines.append(
                f"  W (drop the wait-kernel @{producer} -> @{consumer}): "
                f"{'legal' if verdict else 'not legal'}: {verdict.reason}"
            )
        for name in group:
            stage = stages[name]
            if stage.order is None or stage.order.kind.data == "row_major":
                continue
            if not any(d.consumer.root_reference.data == name for d in deps):
                continue
            involved = tile_order_group(name, deps)
            verdict = tile_order_legality([waves[n] for n in involved])
            lines.append(
                f"  T (drop the {stage.order.kind.data} order of @{name}): "
                f"{'legal' if verdict else 'not legal'}: {verdict.reason}"
            )
    if (record := mode_cost.recorded(module)) is not None:
        lines.append("")
        lines.extend(explain_choice(module, record, stages))
    return "\n".join(lines) + "\n"


def _refuse_cycles(graph: StageGraph) -> None:
    """sync-verify's own check, raised as the VerifyError compile's user gets."""
    try:
        VerifySyncPass.refuse_cycles(graph)
    except OpDiagnostic as err:
        raise err.kind(err.message, err.location) from None


def _ms(value: float) -> str:
    return _seconds(value / 1e3)


def explain_choice(module: ModuleOp, record: mode_cost.ChoiceRecord,
                   stages: dict[str, StageOp]) -> list[str]:
    """The mode cost model's recorded choice (see the module doc)."""
    choice, costs = record.choice, record.costs
    device = f"{record.device} with " if record.device else ""
    lines = [f"mode choice (the cost model, on {device}{record.sms} SMs): chosen "
             f"{choice.mode}; this program is {record.mode}",
             f"  why: {choice.reason}"]
    predicted = ", ".join(f"{mode} {_ms(ms)}" for mode, ms in
                          sorted(choice.predicted_ms.items(), key=lambda item: item[1]))
    library = "" if choice.library_ms is None else \
        f"; the library {_ms(choice.library_ms)} measured"
    lines.append(f"  predicted: {predicted}{library}")
    tiles = ", ".join(f"@{name} {_ms(ms)}" for name, ms in record.tile_ms.items())
    lines.append(f"  tile times (from {record.baseline}, measured {_ms(record.baseline_ms)}): "
                 f"{tiles}")
    lines.append(f"  mechanism costs: {_ms(costs.stream_gap_ms)} a stream-ordered launch, "
                 f"{_ms(costs.wait_kernel_ms)} a wait-kernel, {_ms(costs.wait_ms)} a semaphore "
                 f"wait, ordered tiles x{1 + costs.order_slowdown:.3f}, "
                 f"{_ms(costs.joined_launch_ms)} a launch joining another")
    blocks = {name: value for name, stage in stages.items()
              if (value := int_attribute(stage, BLOCKS_PER_SM_ATTR, "explain")) is not None}
    missing = [f"@{name}" for name in stages if name not in record.tile_ms]
    if missing:
        lines.append(f"  this program not predicted again: no tile time for "
                     f"{', '.join(missing)}")
        return lines
    try:
        shape = mode_cost.mode_shape(module, blocks)
        makespan, launches = mode_cost.prediction_parts(shape, record.tile_ms, record.sms,
                                                        costs)
    except ValueError as error:
        lines.append(f"  this program not predicted again: {error}")
        return lines
    again = makespan + launches
    waits = sum(sum(per_tile.values()) for per_tile in shape.waits.values())
    said = choice.predicted_ms.get(record.mode)
    if said is not None and math.isclose(again, said, rel_tol=1e-6, abs_tol=1e-9):
        verdict = "as recorded"
    else:
        verdict = ("NOT as recorded (" + ("no prediction recorded for it" if said is None
                   else f"recorded {_ms(said)}") + "): the program or its record changed since")
    lines.append(f"  this program predicted again: {_ms(again)} = {_ms(makespan)} simulated "
                 f"({waits} semaphore waits) + {_ms(launches)} launches "
                 f"({shape.stream_launches} stream-ordered, {shape.wait_kernels} "
                 f"wait-kernel{'' if shape.wait_kernels == 1 else 's'}, "
                 f"{shape.joined_launches} joining another); {verdict}")
    return lines


def _seconds(value: float) -> str:
    return f"{value * 1e3:.4g} ms" if value >= 1e-3 else f"{value * 1e6:.4g} us"


def explain_pipelines(module: ModuleOp, pipelines: list[dataflow.PipelineOp], sms: int,
                      arch: str) -> list[str]:
    """The dataflow report (see the module doc), a pipeline after another."""
    lines: list[str] = []
    for pipeline in pipelines:
        name, stages = pipeline.sym_name.data, pipeline.stages
        queues = [op for op in pipeline.body.block.ops if isinstance(op, dataflow.QueueOp)]
        ctas = sum(stage.num_ctas for stage in stages)
        if lines:
            lines.append("")
        lines.append(f"dataflow pipeline @{name} on {sms} SMs ({arch}): {len(stages)} stages, "
                     f"{len(queues)} queue{'' if len(queues) == 1 else 's'}, {ctas} CTAs")
        for queue in queues:
            kind = queue.queue_type
            pinned = "pinned in L2" if queue.pin_l2 is not None else "not pinned"
            lines.append(f"  queue @{queue.sym_name.data}: {kind.num_entries} entries of "
                         f"{kind.payload} ({kind.payload_bytes} bytes, {kind.ring_bytes} bytes "
                         f"in all), {pinned}")
        # the rates dataflow-allot-ctas reads, where every stage records one; items are the
        # last stage's tiles a launch
        items = int_attribute(stages[-1], TILES_ATTR, "explain")
        try:
            rates = stage_rates(pipeline) if items else None
        except OpDiagnostic:
            rates = None
        times: dict[str, float] = {}
        for i, stage in enumerate(stages):
            reads = ", ".join(f"@{q.root_reference.data}" for q in stage.inputs) or "-"
            writes = ", ".join(f"@{q.root_reference.data}" for q in stage.outputs) or "-"
            tiles = int_attribute(stage, TILES_ATTR, "explain")
            line = (f"  stage @{stage.sym_name.data}: {stage.resource.data.value}, "
                    f"{stage.num_ctas} CTAs, {tiles if tiles is not None else 'unknown'} "
                    f"tickets a launch; reads {reads}, writes {writes}")
            if rates is not None:
                rate = rates[i]
                share = items_per_second(rate, stage.num_ctas, sms) * rate.tiles_per_item
                times[rate.name] = items / items_per_second(rate, stage.num_ctas, sms)
                on_chip = f" (x{1 / rate.utilization:.3g} on chip)" if rate.utilization < 1 \
                    else ""
                line += (f"; bulk-synchronous {rate.bsp_rate:.4g} tiles/s on the whole GPU, "
                         f"so {share:.4g}{on_chip} with {stage.num_ctas} CTAs of {sms}: "
                         f"{_seconds(times[rate.name])} a launch")
            lines.append(line)
        if rates is not None:
            bound = max(times, key=times.get)
            alone = sum(items * rate.tiles_per_item / rate.bsp_rate for rate in rates)
            lines.append(f"  allotment model: {_seconds(times[bound])} a launch at most, bound by "
                         f"@{bound}; the stages one after another on all SMs {_seconds(alone)} "
                         f"(x{alone / times[bound]:.2f})")
        else:
            lines.append("  allotment model: none without every stage's bsp_rate and tiles "
                         "(dataflow-allot-ctas reads the same)")
        lines.append(f"  co-residency: {_pipeline_proof(module, pipeline, sms, arch)}")
    return lines


def _pipeline_proof(module: ModuleOp, pipeline: dataflow.PipelineOp, sms: int,
                    arch: str) -> str:
    """dataflow-verify's proof for `pipeline` alone (on a copy), or why it has none."""
    copy = module.clone()
    for other in [op for op in copy.walk() if isinstance(op, dataflow.PipelineOp)]:
        if other.sym_name.data != pipeline.sym_name.data:
            other.detach()
    try:
        VerifyPipelinePass(sms=sms, arch=arch).apply(Context(), copy)
    except OpDiagnostic as refusal:
        return f"not proved: {refusal.message}"
    mine = next(op for op in copy.walk() if isinstance(op, dataflow.PipelineOp))
    return mine.attributes[VERIFIED_ATTR].data


def _occupancy_source(stages: list[StageOp]) -> str:
    """Up front: whether the blocks per SM below are measured or assumed, so the reader knows
    whether to trust the prediction."""
    guessed = [f"@{s.sym_name.data}" for s in stages
               if int_attribute(s, BLOCKS_PER_SM_ATTR, "explain") is None
               and int_attribute(s, REGISTERS_ATTR, "explain") is None]
    if not guessed:
        return ("occupancy: from the compiled kernels' registers and shared memory (or the "
                "stages' blocks_per_sm): this prediction is the one to trust")
    return (f"occupancy: ASSUMED for {', '.join(guessed)} (32 registers per thread, no shared "
            "memory): an estimate only; `tilesync explain --measure` compiles the kernels and "
            "gives the prediction to trust")


def _order_text(order: Attribute) -> str:
    text = str(order).removeprefix("#sync.order<").removesuffix(">")
    if text.startswith("table<"):
        values = text.removeprefix("table<").removesuffix(">").split(", ")
        shown = ", ".join(values[:8]) + (", ..." if len(values) > 8 else "")
        return f"table of {len(values)} tiles <{shown}>"
    return text


def load(path: str) -> ModuleOp:
    """The program in `path`, a graph-level one as its stage program (what compile makes)."""
    from tilesync.api import parse, to_stage_program
    from tilesync.tools.cli import read_source

    module = parse(read_source(path), name=source_name(path))
    to_stage_program(module)
    return module


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tilesync.tools.explain",
        description="Wave model of a tilesync program: waves, utilization, predicted speedup.",
    )
    parser.add_argument("file", help="MLIR file with sync.stage ops (- reads standard input)")
    parser.add_argument("--sms", type=int, default=132, help="SMs of the device (132)")
    parser.add_argument("--arch", default=DEFAULT_TARGET, help=", ".join(TARGETS))
    args = parser.parse_args(argv)
    try:
        check_environment()
        if args.sms < 1:
            raise CompileError(f"--sms must be positive, got {args.sms}")
        sys.stdout.write(explain(load(args.file), args.sms, args.arch))
        flushed(0)
    except KeyboardInterrupt as error:
        return interrupted("explain", error)
    except BrokenPipeError as error:
        return output_closed(error)
    except SystemExit:
        raise
    except Exception as error:  # one readable line, never a traceback
        return report("explain", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
