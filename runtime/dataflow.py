"""Runs a compiled `dataflow.pipeline`: every stage at once, its queues in L2.

The GPUs we run on have no pipeline-aware grid scheduler, so a pipeline runs as one persistent
kernel whose CTAs take stage roles (dataflow-persistent-kernel), launched cooperatively: the
hardware keeps all its CTAs resident or refuses the launch. A pipeline whose stages could not
be fused (block sizes that differ, kernels in several gpu.modules) is refused where its stages
pass entries through queues: co-launched kernels, one stream per stage, have no promise to run
at once, and an H100 serialized them in CUDA-graph replays (the producer filled its ring and
spun until the queue timeout); one without queues is co-launched so. The co-residency is
proven before the first launch (`forward_progress.co_residency`, the count
`contract.all_resident` makes) from the compiled kernels' real occupancy: queue CTAs spin while
holding their SM slot, so a pipeline that does not fit is refused rather than left to hang.
A pipeline in clusters (its queues in distributed shared memory) waits only inside a cluster,
whose CTAs the hardware starts together: its kernel is launched in clusters of one CTA a stage
(`.reqnctapercluster`), not cooperatively, and only one cluster needs to fit
(`forward_progress.cluster_residency`); it has no rings here.

The program owns the queues: one zeroed allocation holds every ring (`contract.QueueLayout`),
the pinned ones (`pin_l2`) first, covered by an access-policy window that keeps them persisting
in L2. Tickets and counts are never reset, so `run` can be called any number of times, and
`capture` records a run as a CUDA graph that replays without a memset. The kernels' debug
record (every queue spin has one by default) turns a spin that timed out into a
SpinTimeoutError naming the stage, kernel, block, queue, ticket and what it waited for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import SymbolRefAttr

from tilesync.analysis.forward_progress import Residency, cluster_residency, co_residency
from tilesync.contract import (
    DEBUG_RECORD,
    DEBUG_RECORD_WORDS,
    PERSISTENT_KERNEL_ATTR,
    UNBOUND_ATTR,
    CompiledProgram,
    CompileError,
    KernelSignature,
    NoProgressOnDeviceError,
    QueueLayout,
    RoleKind,
    cluster_queue_symbol,
)
from tilesync.dialects import dataflow

__all__ = ["CapturedPipeline", "DataflowProgram", "PipelinePlan", "PipelineStage",
           "read_pipeline"]

RING_ALIGNMENT = 256  # each ring starts on a cuMemAlloc-sized boundary
TIERED_PIPELINES = True
"""An MLP stack's pipeline starts on the kernels ptxas compiles at its fast-compile level
(`runtime.module.PTXAS_FAST_COMPILE`, what compile_stack_entry precompiles), while ptxas
compiles them in full on a thread (`full_compiles`); the runner moves to the full kernels, on
the same rings, at its first call after they land, or at once where a caller's stream capture
records the call (the graph would replay the fast ones for good, and those run slower: (2c0e138,
every pipeline at the fast level) the example 82-84 us to 89-95, NeRF's 2^16 rows 0.272 ms
to 0.339 and 2^18 0.908 to 1.184, MeshGraphNets' 2^16 0.066 to 0.128, bench dataflow-mlp);
a later process finds them in the disk cache. The front end's own captures (a measurement,
a replay of the whole graph) record the fast tier as it is: a measurement made so is cached
only where ours won (the full kernels only run faster), and a replay captures again after a
move (frontend.torch.ops.kernel_moves). NeRF's example, fresh caches, auto mode, to its first
result: on an H200 (43929ff) 4.74 s tiered, 5.61 s with the full kernels first; on an H100
(9c9cd15, forced mode) 4.74 s against 8.6 / 6.4 s (a72b099); bench compile on an H100 at
54e99a5 (bench/results/compile-nvidia-h100-80gb-hbm3): 3.72 s, 3.89 s for 2^16 rows. The GPU
tests of the tier (its move, a caller's capture on it, an auto compile on it) and the front
end's others with it on passed on that H200."""

_FULL_COMPILER: list[Any] = []


def full_compiles() -> Any:
    """The one thread that compiles pipelines' kernels in full, in the order asked (nvJitLink
    lets the interpreter run meanwhile)."""
    if not _FULL_COMPILER:
        from concurrent.futures import ThreadPoolExecutor

        _FULL_COMPILER.append(ThreadPoolExecutor(1, thread_name_prefix="tilesync-ptxas"))
    return _FULL_COMPILER[0]


def compile_in_full(ptx_by_module: dict[str, str], target: str, cubin_dir: Any) -> bool:
    """Compile every module's full cubin into the disk cache; False where one could not be."""
    from tilesync.runtime.module import precompile_ptx

    return all([precompile_ptx(ptx, target, cubin_dir) for ptx in ptx_by_module.values()])


def compiled_in_full(ptx_by_module: dict[str, str], target: str, cubin_dir: Any) -> bool:
    """Whether every module's full cubin is in the disk cache already."""
    from tilesync.runtime.module import is_precompiled

    return all(is_precompiled(ptx, target, cubin_dir) for ptx in ptx_by_module.values())


@dataclass(frozen=True)
class PipelineStage:
    name: str
    kernel: str
    ctas: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    resource: str


@dataclass(frozen=True)
class PipelineQueue:
    name: str
    layout: QueueLayout
    pin_l2: bool
    in_cluster: bool = False  # its rings are in its consumers' shared memory, not here


@dataclass(frozen=True)
class PipelinePlan:
    """What the host needs of one pipeline: stages in producer-first order, queues, and the
    persistent kernel that runs every stage (dataflow-persistent-kernel), whose parameters
    take the stages' arguments in `declared` order."""

    name: str
    stages: tuple[PipelineStage, ...]
    queues: dict[str, PipelineQueue]
    persistent: str | None = None
    declared: tuple[str, ...] = ()
    clustered: bool = False
    """The pipeline runs in clusters of one CTA a stage, its queues in their shared memory."""

    def ring_offsets(self) -> tuple[dict[str, int], int, int]:
        """(byte offset of each ring in one allocation, bytes in all, bytes of the pinned
        rings, which come first); a cluster queue has none."""
        offsets, end = {}, 0
        ordered = sorted((q for q in self.queues.values() if not q.in_cluster),
                         key=lambda q: not q.pin_l2)
        pinned = 0
        for queue in ordered:
            offsets[queue.name] = end
            end += -(-queue.layout.total_bytes // RING_ALIGNMENT) * RING_ALIGNMENT
            if queue.pin_l2:
                pinned = end
        return offsets, end, pinned


def read_pipeline(compiled: CompiledProgram, name: str | None = None) -> PipelinePlan:
    """The pipeline called `name` (or the program's only one) of a compiled program."""
    pipelines = [op for op in compiled.module.walk() if isinstance(op, dataflow.PipelineOp)]
    if name is not None:
        pipelines = [p for p in pipelines if p.sym_name.data == name]
    if len(pipelines) != 1:
        found = "no" if not pipelines else str(len(pipelines))
        which = f" called @{name}" if name else ""
        raise ValueError(f"the program has {found} dataflow.pipeline{which}; name one")
    pipeline = pipelines[0]
    unbound = [s.sym_name.data for s in pipeline.stages if UNBOUND_ATTR in s.attributes]
    if unbound:
        raise ValueError(f"pipeline @{pipeline.sym_name.data}: the kernels of "
                         f"{', '.join('@' + n for n in unbound)} do not take their queues yet")
    consumers: dict[str, int] = {q.sym_name.data: 0 for q in pipeline.queues}
    for stage in pipeline.stages:
        for ref in stage.inputs:
            consumers[ref.root_reference.data] += 1
    queues = {
        q.sym_name.data: PipelineQueue(
            q.sym_name.data,
            QueueLayout(q.queue_type.num_entries, q.queue_type.payload_bytes,
                        consumers[q.sym_name.data]),
            q.pin_l2 is not None, q.in_cluster)
        for q in pipeline.queues
    }
    stages = [PipelineStage(s.sym_name.data, s.kernel.nested_references.data[-1].data
                            if s.kernel.nested_references.data else s.kernel.root_reference.data,
                            s.num_ctas,
                            tuple(r.root_reference.data for r in s.inputs),
                            tuple(r.root_reference.data for r in s.outputs),
                            s.resource.data.value)
              for s in pipeline.stages]
    fused = pipeline.attributes.get(PERSISTENT_KERNEL_ATTR)
    persistent = (fused.nested_references.data[-1].data if isinstance(fused, SymbolRefAttr)
                  else None)
    if pipeline.clustered and persistent is None:
        raise ValueError(f"pipeline @{pipeline.sym_name.data} runs in clusters, which takes "
                         "its stages in one kernel (dataflow-persistent-kernel), and they "
                         "could not be fused (one block size, one gpu.module)")
    return PipelinePlan(pipeline.sym_name.data, tuple(_producers_first(stages)), queues,
                        persistent, tuple(s.name for s in stages), pipeline.clustered)


def _producers_first(stages: list[PipelineStage]) -> list[PipelineStage]:
    """Stages ordered so each queue's producer comes before its consumers (the pipeline
    verifier already refused cycles)."""
    producer = {q: s.name for s in stages for q in s.outputs}
    done: set[str] = set()
    ordered: list[PipelineStage] = []
    by_name = {s.name: s for s in stages}

    def visit(stage: PipelineStage) -> None:
        if stage.name in done:
            return
        done.add(stage.name)
        for queue in stage.inputs:
            visit(by_name[producer[queue]])
        ordered.append(stage)

    for stage in stages:
        visit(stage)
    return ordered


class PipelineNotResidentError(NoProgressOnDeviceError):
    """The stages of a pipeline do not all fit on the device at once: their spinning CTAs
    could wait forever for a slot."""


class DataflowProgram:
    """A compiled program's pipeline loaded on the device, ready to run any number of times."""

    def __init__(self, compiled: CompiledProgram, pipeline: str | None = None, *,
                 pin_l2: bool = True, plan: PipelinePlan | None = None,
                 cubin_dir: str | Path | None = None, fast: bool = False):
        """`plan`: the pipeline as read_pipeline read it at compile time (a program kept
        without its IR, e.g. in a cache), instead of reading `compiled.module`. `cubin_dir`:
        where compiled cubins are kept (load_ptx's cache_dir; None: its default). `fast`:
        the kernels ptxas compiled at its fast-compile level (TIERED_PIPELINES)."""
        if not isinstance(compiled, CompiledProgram):
            raise CompileError("DataflowProgram takes a CompiledProgram (what tilesync.compile "
                               f"returns), got {type(compiled).__name__}")
        if plan is None:  # no (such) pipeline, or one not compiled to run: one line
            try:
                plan = read_pipeline(compiled, pipeline)
            except ValueError as err:
                raise CompileError(str(err)) from None
        if plan.persistent is None and plan.queues:
            raise CompileError(
                f"pipeline @{plan.name} passes entries through queues, but its stages could "
                "not be fused into one persistent kernel (dataflow-persistent-kernel takes "
                "kernels of one gpu.known_block_size in one gpu.module, after "
                "convert-dataflow-to-nvvm): kernels launched on separate streams need not run "
                "at once (an H100 ran them one after the other), and a producer would spin on "
                "its full queue until it timed out")
        from tilesync.runtime.buffers import DeviceBuffer, HostMappedBuffer
        from tilesync.runtime.device import get_device
        from tilesync.runtime.stream import RunOrder, Stream

        self.compiled = compiled
        self.plan = plan if plan is not None else read_pipeline(compiled, pipeline)
        self.signatures: dict[str, KernelSignature] = dict(compiled.kernels)
        self.blocks: dict[str, tuple[int, int, int]] = {}
        for stage in self.plan.stages:
            sig = self.signatures.get(stage.kernel)
            if sig is None:
                raise ValueError(f"stage @{stage.name}: kernel {stage.kernel} not compiled")
            if sig.block is None:
                raise ValueError(f"stage @{stage.name}: kernel {stage.kernel} declares no "
                                 "block size (gpu.known_block_size): its CTAs cannot be "
                                 "counted")
            self.blocks[stage.name] = (*sig.block, 1, 1)[:3]  # type: ignore[assignment]
        self.device = get_device()
        # One cooperative launch of the persistent kernel where there is one: the hardware
        # then keeps every CTA resident. Kernels co-launched on streams need not overlap.
        # (Its stage kernels, bodies moved into it, only declare their stages' parameters.)
        self.persistent = self.plan.persistent
        self.load_kernels(fast, cubin_dir)  # kernels, residency, co_residency, fast

        offsets, total, pinned = self.plan.ring_offsets()
        self._rings = DeviceBuffer.zeros(max(total, 1), np.uint8)
        self.ring_ptr = {name: self._rings.ptr + off for name, off in offsets.items()}
        self._set_aside = 0  # bytes of persisting L2 the window needs (_pin)
        self.l2_window = self._pin(pinned) if pin_l2 and pinned else None
        self._debug_record = None
        kernels = [s.kernel for s in self.plan.stages]
        if self.persistent is not None:
            kernels.append(self.persistent)
        if any(DEBUG_RECORD in self.signatures[k].sync_args for k in kernels):
            self._debug_record = HostMappedBuffer(DEBUG_RECORD_WORDS, np.int32)
        self._streams = {stage.name: Stream() for stage in self.plan.stages}
        self._order = RunOrder()  # runs take tickets of the same rings: one after another
        self.runs = 0

    def load_kernels(self, fast: bool, cubin_dir: str | Path | None = None) -> None:
        """Run on the kernels ptxas compiled at its fast-compile level (`fast`) or in full, on
        the same rings: the tickets carry on, and a graph captured on the others still runs.
        Raises PipelineNotResidentError, keeping the kernels it had, where the new ones cannot
        all be resident at once. Only loads modules: a stream capture (in relaxed mode, see
        stream.relaxed_capture_mode) may call it."""
        from tilesync.runtime.device import occupancy
        from tilesync.runtime.module import load_ptx

        kernels: dict[str, Any] = {}
        for module_name, ptx in self.compiled.ptx_by_module.items():
            module = load_ptx(ptx, module_name, cache_dir=cubin_dir, fast=fast)
            for sig in self.signatures.values():
                if sig.module == module_name:
                    kernels[sig.name] = module.function(sig.name, sig.params)
                    # past 48 KiB a kernel must opt in before occupancy can count its blocks
                    if sig.dynamic_shared_bytes:
                        kernels[sig.name].ensure_dynamic_shared_memory(
                            sig.dynamic_shared_bytes)
        if self.persistent is not None:
            first = self.plan.stages[0].name
            sig = self.signatures[self.persistent]
            total = sum(stage.ctas for stage in self.plan.stages)
            per_sm = occupancy(kernels[self.persistent], int(np.prod(self.blocks[first])),
                               sig.dynamic_shared_bytes)
            if self.plan.clustered:
                total = len(self.plan.stages)
            residency = {f"{self.plan.name} (persistent)": Residency(total, per_sm)}
        else:
            residency = {
                stage.name: Residency(stage.ctas, occupancy(
                    kernels[stage.kernel], int(np.prod(self.blocks[stage.name])),
                    self.signatures[stage.kernel].dynamic_shared_bytes))
                for stage in self.plan.stages
            }
        fits = cluster_residency(*residency.values()) if self.plan.clustered else \
            co_residency(list(residency.values()), self.device.sm_count)
        if not fits:
            per_stage = ", ".join(f"@{n}: {r.blocks} CTAs, {r.blocks_per_sm} per SM"
                                  for n, r in residency.items())
            raise PipelineNotResidentError(
                f"pipeline @{self.plan.name} cannot run: {fits.reason} ({per_stage}); its "
                "consumer CTAs would spin in the slots their producers need")
        self.kernels, self.residency, self.co_residency = kernels, residency, fits.reason
        self.fast = fast

    def _pin(self, nbytes: int) -> tuple[int, int, float] | None:
        """An access-policy window over the first `nbytes` of the rings, with the persisting
        L2 set-aside it needs (None where the device has none)."""
        from tilesync.runtime.device import _attribute

        handle = self.device.handle
        most = _attribute(handle, "CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE") or 0
        window = _attribute(handle, "CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE") or 0
        if most <= 0 or window <= 0:
            return None
        self._set_aside = min(nbytes, most)
        self.set_aside_l2()
        covered = min(nbytes, window)
        return self._rings.ptr, covered, min(1.0, self._set_aside / covered)

    def set_aside_l2(self) -> None:
        """Set aside the persisting L2 the window needs (a context-wide limit: done when the
        program loads, and again after give_back_l2)."""
        from cuda.bindings import driver

        from tilesync.runtime.errors import check

        if not self._set_aside:
            return
        check(driver.cuCtxSetLimit(driver.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
                                   self._set_aside), "cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE)")

    def give_back_l2(self) -> None:
        """Give the persisting L2 set-aside back to the context and make the lines kept
        persisting normal again, so that other work (a benchmark's other forms between this
        pipeline's turns) has the whole L2; set_aside_l2 takes it again. Call it between
        runs (after a synchronize): the limit is the context's."""
        from cuda.bindings import driver

        from tilesync.runtime.errors import check

        if not self._set_aside:
            return
        check(driver.cuCtxSetLimit(driver.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0),
              "cuCtxSetLimit(PERSISTING_L2_CACHE_SIZE)")
        check(driver.cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache")

    # -- binding -------------------------------------------------------------------------------
    def _bind(self, stage: str, sig: KernelSignature) -> list[Any]:
        bound = []
        for role in sig.sync_args:
            if role.kind is RoleKind.QUEUE:
                if role.stage not in self.ring_ptr:
                    raise ValueError(f"stage @{stage}: kernel {sig.name} takes {role}, "
                                     f"which is not a queue of pipeline @{self.plan.name}")
                bound.append(self.ring_ptr[role.stage])
            elif role.kind is RoleKind.DEBUG_RECORD:
                assert self._debug_record is not None
                bound.append(self._debug_record.ptr)
            else:
                raise ValueError(f"stage @{stage}: kernel {sig.name} takes {role}, which a "
                                 "pipeline stage cannot bind (no cuSync state in pipelines)")
        return bound

    # -- running -------------------------------------------------------------------------------
    def main_stream(self) -> Any:
        """The stream every run starts and ends on: work held there holds the runs behind it."""
        return self._streams[self.plan.stages[0].name]

    def run(self, args: Mapping[str, Sequence[Any]]) -> Any:
        """Enqueue one run of every stage; returns an event recorded when all are done.

        `args` maps each stage to its kernel's own arguments (the queues are bound here).
        The run starts after the program's last run, wherever that was enqueued (RunOrder)."""
        first = self._streams[self.plan.stages[0].name]
        users = self._users(args)
        self._order.begin(first)
        end = self._enqueue(users)
        self._order.end(first, end)
        return end

    def _enqueue(self, users: dict[str, list[Any]]) -> Any:
        """One run's launches on the program's streams (what capture records too)."""
        from tilesync.runtime.launch import launch
        from tilesync.runtime.stream import Event

        first = self._streams[self.plan.stages[0].name]
        start = Event().record(first)
        self.last_start = start
        for stage in self.plan.stages:
            stream = self._streams[stage.name]
            if stream is not first:
                stream.wait_event(start)
        if self.persistent is not None:
            self._launch_persistent(users, first)
        for stage in self.plan.stages if self.persistent is None else ():
            sig = self.signatures[stage.kernel]
            launch(self.kernels[stage.kernel], stage.ctas, self.blocks[stage.name],
                   [*users[stage.name], *self._bind(stage.name, sig)],
                   stream=self._streams[stage.name], shared_mem=sig.dynamic_shared_bytes,
                   l2_window=self.l2_window)
        for stage in self.plan.stages:
            stream = self._streams[stage.name]
            if stream is not first:
                first.wait_event(Event().record(stream))
        self.runs += 1
        return Event().record(first)

    def run_on(self, args: Mapping[str, Sequence[Any]], stream: Any) -> None:
        """Enqueue one run on the caller's stream (a foreign one, e.g. torch's current stream):
        the persistent kernel's one cooperative launch, so that a stream capture
        (torch.cuda.graph) records exactly it, after the program's last run (RunOrder).
        Co-launched stages need streams of their own."""
        from tilesync.runtime.stream import is_capturing

        if self.persistent is None:
            raise ValueError(f"pipeline @{self.plan.name} runs on one stream only as one "
                             "persistent kernel (dataflow-persistent-kernel); its stages are "
                             "co-launched kernels: use run()")
        users = self._users(args)
        recorded = is_capturing(stream)  # its replays are ordered where they are launched
        if not recorded:
            self._order.begin(stream)
        self._launch_persistent(users, stream)
        if not recorded:
            self._order.end(stream)
        self.runs += 1

    def _users(self, args: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
        """Each stage's own arguments, checked against its kernel's parameters."""
        from tilesync.runtime.launch import checked_user_args

        return {stage.name: checked_user_args(stage.name, self.signatures[stage.kernel], args)
                for stage in self.plan.stages}

    def _launch_persistent(self, users: dict[str, list[Any]], stream: Any) -> None:
        from tilesync.runtime.launch import launch

        assert self.persistent is not None
        sig = self.signatures[self.persistent]
        flat = [a for name in self.plan.declared for a in users[name]]
        launch(self.kernels[self.persistent], sum(s.ctas for s in self.plan.stages),
               self.blocks[self.plan.stages[0].name],
               [*flat, *self._bind(self.plan.name, sig)], stream=stream,
               shared_mem=sig.dynamic_shared_bytes, cooperative=not self.plan.clustered,
               l2_window=self.l2_window)

    def capture(self, args: Mapping[str, Sequence[Any]]) -> CapturedPipeline:
        """One run as an instantiated CUDA graph; every replay is a new run (no memset)."""
        from tilesync.runtime.stream import capture_graph

        first = self._streams[self.plan.stages[0].name]
        users = self._users(args)
        try:
            graph, executable = capture_graph(first, lambda: self._enqueue(users))
        finally:
            self.runs -= 1  # capturing ran nothing
        return CapturedPipeline(self, graph, executable, first)

    def synchronize(self) -> None:
        """Wait for every stage and the last run (run_on's on the caller's stream); a
        timed-out spin raises SpinTimeoutError saying which."""
        from tilesync.runtime.stream import synchronize_streams

        synchronize_streams([*self._streams.values(), self._order], self.timed_out_wait)

    def timed_out_wait(self) -> tuple[str, str, tuple[int, int, int]] | None:
        """The first timed-out spin's report, kernel and block (None if none timed out)."""
        from tilesync.runtime.program import describe_timeout, module_symbols

        if self._debug_record is None:
            return None
        where_of = {s.kernel: f"stage @{s.name}" for s in self.plan.stages}
        in_cluster = [cluster_queue_symbol(q.name) for q in self.plan.queues.values()
                      if q.in_cluster]  # their arrays are the module's dynamic shared memory
        return describe_timeout(self._debug_record.read(), self.signatures, where_of,
                                f"run {self.runs} of pipeline @{self.plan.name}",
                                lambda: [*module_symbols(self.compiled.module), *in_cluster])

    def close(self) -> None:
        """Give back the persisting L2 set-aside (the rings are freed with the program)."""
        if self.l2_window is not None:
            from cuda.bindings import driver

            driver.cuCtxSetLimit(driver.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)
            self.l2_window = None


class CapturedPipeline:
    """A run of a DataflowProgram as an instantiated CUDA graph."""

    def __init__(self, program: DataflowProgram, graph: Any, executable: Any, stream: Any):
        self.program, self._graph, self._exec, self.stream = program, graph, executable, stream

    def launch(self) -> None:
        from cuda.bindings import driver

        from tilesync.runtime.errors import check

        self.program._order.begin(self.stream)
        check(driver.cuGraphLaunch(self._exec, self.stream.handle), "cuGraphLaunch")
        self.program._order.end(self.stream)
        self.program.runs += 1

    def close(self) -> None:
        from cuda.bindings import driver

        if self._exec is not None:
            driver.cuGraphExecDestroy(self._exec)
            driver.cuGraphDestroy(self._graph)
            self._exec = None
