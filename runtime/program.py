"""Runs a compiled stage program: its host plan of `sync.launch` / `sync.wait_kernel` ops.

The user passes each stage's own kernel arguments; the program binds the parameters that sync
passes appended (by their `sync.args` roles): semaphore arrays, the epoch, start flags, tile
counters and order tables. It owns that device state across runs: semaphores are never reset,
each run is one epoch, so a program can be run any number of times without a memset.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp, StringAttr

from tilesync.analysis.forward_progress import COUNTED, Residency, analyze, program_facts
from tilesync.analysis.stage_graph import HostStep, Launch, StageGraph, one_launch_groups
from tilesync.contract import (
    CLUSTER_QUEUE_SYMBOL_PREFIX,
    DEBUG_RECORD,
    DEBUG_RECORD_FIELDS,
    DEBUG_RECORD_WORDS,
    NEXT_EPOCH_KERNEL,
    ONE_LAUNCH_KERNEL_ATTR,
    PROGRESS_ATTR,
    SPIN_SITE_CLUSTER_QUEUE_FREE,
    SPIN_SITE_CLUSTER_QUEUE_FULL,
    SPIN_SITE_MBARRIER,
    SPIN_SITE_QUEUE_FULL,
    SPIN_SITE_SEMAPHORE,
    START_FLAG,
    WAIT_KERNEL,
    CompiledProgram,
    CompileError,
    KernelSignature,
    NoProgressOnDeviceError,
    Role,
    RoleKind,
    SpinTimeoutError,
    kernel_tag,
)
from tilesync.dialects import sync
from tilesync.runtime.buffers import DeviceBuffer, HostMappedBuffer
from tilesync.runtime.errors import TilesyncRuntimeError
from tilesync.runtime.launch import checked_argument, checked_user_args, launch
from tilesync.runtime.module import load_ptx
from tilesync.runtime.stream import (
    Event,
    RunOrder,
    Stream,
    capture_graph,
    is_capturing,
    priority_range,
    synchronize_streams,
)

GRAPH_NEEDS_DEVICE_EPOCH = (
    "needs kernels that read the epoch from device memory (compile with the "
    "sync-epoch-in-memory pass): a graph replays its kernel parameters, so a by-value epoch "
    "would repeat and from the second replay on every wait would pass at once")


def as_i32(count: int) -> int:
    """`count` modulo 2^32 as a signed i32, as the device counts: epochs and wait targets
    grow without end, and the waits compare them modulo 2^32 (SyncBuilder.short_of)."""
    return (count + 2**31) % 2**32 - 2**31


__all__ = ["GRAPH_NEEDS_DEVICE_EPOCH", "CapturedRun", "DeviceCounts", "NoProgressOnDeviceError",
           "OneLaunch", "SpinTimeoutError", "StageProgram", "check_progress_on_device",
           "describe_timeout", "launchable_arguments", "module_symbols", "one_launches",
           "read_plan", "recorded_kernel", "timed_out_epoch"]


def _dims3(values: Sequence[int]) -> tuple[int, int, int]:
    v = list(values) + [1] * (3 - len(values))
    return v[0], v[1], v[2]


@dataclass
class Stage:
    name: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    num_semaphores: int
    posts_per_semaphore: int


@dataclass
class _State:
    semaphores: dict[str, DeviceBuffer] = field(default_factory=dict)
    flags: dict[str, DeviceBuffer] = field(default_factory=dict)
    counters: dict[str, DeviceBuffer] = field(default_factory=dict)
    tables: dict[str, DeviceBuffer] = field(default_factory=dict)
    epoch_word: DeviceBuffer | None = None


def read_plan(compiled: CompiledProgram) -> tuple[dict[str, Stage], list[HostStep]]:
    """The stages to launch and the host plan (without `sync.launch` ops: every stage on
    stream 0 in program order)."""
    graph = StageGraph.of(compiled.module)
    stages: dict[str, Stage] = {}
    for name, op in graph.stages.items():
        sems, posts = op.semaphores
        stages[name] = Stage(name, _kernel_name(op),
                             _dims3(op.grid_shape), _dims3(op.block_shape), sems, posts)
    return stages, graph.plan


@dataclass(frozen=True)
class OneLaunch:
    """A launch that others join: the kernel that runs its stages, and the stages."""

    kernel: str
    stages: tuple[str, ...]


def one_launches(steps: Sequence[HostStep]) -> dict[str, OneLaunch]:
    """By its first stage, each launch that others join (`sync.launch ... fused`), with the
    kernel sync-fuse-launches made of them."""
    found: dict[str, OneLaunch] = {}
    for group in one_launch_groups(steps):
        if len(group) < 2:
            continue
        head = group[0]
        kernel = head.op.attributes.get(ONE_LAUNCH_KERNEL_ATTR) if head.op is not None else None
        if kernel is None:
            raise ValueError(f"@{group[1].stage} joins the launch of @{head.stage}, but no "
                             f"kernel runs them together (sync-fuse-launches did not run)")
        found[head.stage] = OneLaunch(kernel.nested_references.data[-1].data,
                                      tuple(member.stage for member in group))
    return found


@dataclass(frozen=True)
class DeviceCounts:
    """What the forward-progress rules count on the device a program is loaded on: its SMs and
    each stage's blocks per SM (of the kernel its launch runs)."""

    sms: int
    blocks_per_sm: Callable[[str], int]
    name: str = "this device"


def check_progress_on_device(compiled: CompiledProgram,
                             counts: Callable[[], DeviceCounts]) -> None:
    """Refuse (NoProgressOnDeviceError) a program one of whose verified dependencies loses its
    guarantee with the SMs of the device it is loaded on and the real blocks per SM of each
    stage's launched kernel (`counts()`, asked only where some verified dependency's guarantee
    counts them).

    sync-verify proves forward progress from the `blocks_per_sm` on the stages and its `sms`
    option; those come from a pass's options or the registers a driver recorded, and a program
    may be loaded on a device with fewer SMs (a PCIe H100, a MIG slice) than it was proved for.
    The rules are the same (`analysis.forward_progress.analyze`); only the counts are this
    device's. Dependencies whose consumer was not verified (no `sync.progress`) are not checked:
    the program runs as it was compiled, its spins timing out into a named error."""
    graph = StageGraph.of(compiled.module)
    verified = [(p, c) for p, c in graph.dependent_pairs()
                if PROGRESS_ATTR in graph.stages[c].attributes]
    starting = {name for name, stage in graph.stages.items()
                if START_FLAG in compiled.kernels[_kernel_name(stage)].sync_args} \
        if WAIT_KERNEL in compiled.kernels else set()
    uncounted = analyze(program_facts(graph, {}, 0, working_wait_kernels=starting))
    if all((g := uncounted.guarantees[pair]) is not None and g.kind not in COUNTED
           for pair in verified):
        return
    device = counts()
    residency = {name: Residency(math.prod(stage.grid_shape), device.blocks_per_sm(name))
                 for name, stage in graph.stages.items()}
    report = analyze(program_facts(graph, residency, device.sms,
                                   working_wait_kernels=starting))
    for producer, consumer in verified:
        if report.guarantees[(producer, consumer)] is None:
            described = ", ".join(f"@{name} {r.blocks} blocks, {r.blocks_per_sm} per SM"
                                  for name, r in residency.items())
            proof = graph.stages[consumer].attributes[PROGRESS_ATTR]
            raise NoProgressOnDeviceError(
                f"@{consumer} waiting on @{producer} has no forward-progress guarantee on "
                f"{device.name} ({device.sms} SMs; {described}): "
                f"{report.reasons[(producer, consumer)]}; sync-verify proved it by "
                f"{proof.data}. Compile it for this device (sync-annotate-occupancy{{sms="
                f"{device.sms}}} with the registers tilesync.api.annotate_resources records) "
                f"or keep its wait-kernel")


def _kernel_name(stage: sync.StageOp) -> str:
    return stage.kernel.nested_references.data[-1].data


def _step_stage(step: HostStep) -> str:
    """The stage whose state a step binds: the launched one, or a wait-kernel's producer."""
    return step.stage if isinstance(step, Launch) else step.producer


def _step_priority(step: HostStep) -> int:
    return step.priority if isinstance(step, Launch) else 0  # a wait-kernel: the default


class CapturedRun:
    """A run of a StageProgram as an instantiated CUDA graph."""

    def __init__(self, program: StageProgram, graph: Any, executable: Any, stream: Stream):
        self.program, self._graph, self._exec, self.stream = program, graph, executable, stream

    def launch(self) -> None:
        """Launch the graph: a run, after the program's last run (RunOrder)."""
        from cuda.bindings import driver

        from tilesync.runtime.errors import check

        program = self.program
        program._refuse_after_failed_run()
        program._order.begin(self.stream)
        check(driver.cuGraphLaunch(self._exec, self.stream.handle), "cuGraphLaunch")
        program.epoch += 1  # the device bumps its own epoch word in the graph
        program._order.end(self.stream)

    def close(self) -> None:
        from cuda.bindings import driver

        if self._exec is not None:
            driver.cuGraphExecDestroy(self._exec)
            driver.cuGraphDestroy(self._graph)
            self._exec = None


class StageProgram:
    """A stage program loaded on the device, ready to run any number of times."""

    # How runs follow one another (set by __init__; None: a program that has run nothing)
    _order: RunOrder | None = None
    # Why the program cannot run until reset(): a run that failed part-way (None: it can)
    _failed_run: str | None = None

    def __init__(self, compiled: CompiledProgram, *, cubin_dir: str | Path | None = None):
        """`cubin_dir`: where compiled cubins are kept (load_ptx's cache_dir; None: its
        default)."""
        if not isinstance(compiled, CompiledProgram):
            raise CompileError("StageProgram takes a CompiledProgram (what tilesync.compile "
                               f"returns), got {type(compiled).__name__}")
        self.compiled = compiled
        self.stages, self.steps = read_plan(compiled)
        self.kernels: dict[str, Any] = {}
        self.signatures: dict[str, KernelSignature] = dict(compiled.kernels)
        for module_name, ptx in compiled.ptx_by_module.items():
            module = load_ptx(ptx, module_name, cache_dir=cubin_dir)
            for sig in compiled.kernels.values():
                if sig.module == module_name:
                    self.kernels[sig.name] = module.function(sig.name, sig.params)
        for stage in self.stages.values():
            if stage.kernel not in self.kernels:
                raise ValueError(f"stage @{stage.name}: kernel {stage.kernel} not compiled")
        self.one_launches = one_launches(self.steps)
        for name, together in self.one_launches.items():
            if together.kernel not in self.kernels:
                raise ValueError(f"the launch of @{name}: kernel {together.kernel} not compiled")
        self._check_progress()
        self.epoch = 0
        self._state = _State()
        self._streams: dict[int, Stream] = {}
        self._order = RunOrder()
        self._debug_record: HostMappedBuffer | None = None
        if any(DEBUG_RECORD in sig.sync_args for sig in self.signatures.values()):
            self._debug_record = HostMappedBuffer(DEBUG_RECORD_WORDS, np.int32)

    def _check_progress(self) -> None:
        """The verified dependencies keep their guarantee with this device's SMs and each
        launched kernel's real blocks per SM (a stage of a launch that others join: the one
        kernel of that launch, in its largest block)."""
        from tilesync.runtime.device import get_device, occupancy

        def blocks_per_sm(name: str) -> int:
            stage = self.stages[name]
            kernel, block = stage.kernel, stage.block
            for together in self.one_launches.values():
                if name in together.stages:
                    kernel = together.kernel
                    block = max((self.stages[n].block for n in together.stages), key=math.prod)
            dynamic = self.signatures[kernel].dynamic_shared_bytes
            if dynamic:  # past 48 KiB a kernel must opt in before occupancy counts its blocks
                self.kernels[kernel].ensure_dynamic_shared_memory(dynamic)
            return occupancy(self.kernels[kernel], math.prod(block), dynamic)

        def counts() -> DeviceCounts:
            device = get_device()
            return DeviceCounts(device.sm_count, blocks_per_sm, device.name)

        check_progress_on_device(self.compiled, counts)

    # -- device state, created on first use and kept across runs --------------------------
    def semaphores(self, stage: str) -> DeviceBuffer:
        if stage not in self._state.semaphores:
            self._state.semaphores[stage] = DeviceBuffer.zeros(
                max(1, self.stages[stage].num_semaphores), np.int32)
        return self._state.semaphores[stage]

    def _epoch_word(self) -> DeviceBuffer:
        """The device-side epoch (sync-epoch-in-memory), bumped by tilesync_next_epoch."""
        if self._state.epoch_word is None:
            self._state.epoch_word = DeviceBuffer.zeros(1, np.int32)
        return self._state.epoch_word

    @property
    def device_epoch(self) -> bool:
        """Kernels read the epoch from device memory: the program can be captured in a graph."""
        return NEXT_EPOCH_KERNEL in self.kernels

    @property
    def epoch_by_value(self) -> bool:
        """Some kernel takes the epoch, or a wait target made of it, as a parameter: a graph
        would replay it. (A program of no waits has none, and may be captured as it is.)"""
        return any(role.kind in (RoleKind.EPOCH, RoleKind.WAIT_TARGET)
                   for sig in self.signatures.values() for role in sig.sync_args)

    def _flag(self, stage: str) -> DeviceBuffer:
        if stage not in self._state.flags:
            self._state.flags[stage] = DeviceBuffer.zeros(1, np.int32)
        return self._state.flags[stage]

    def _counter(self, stage: str) -> DeviceBuffer:
        if stage not in self._state.counters:
            self._state.counters[stage] = DeviceBuffer.zeros(1, np.int64)
        return self._state.counters[stage]

    def _table(self, stage: str, sig: KernelSignature) -> DeviceBuffer:
        if stage not in self._state.tables:
            if sig.order_table is None:
                raise ValueError(f"kernel {sig.name} takes an order table but has none")
            table = np.asarray(sig.order_table, dtype=np.int32)
            self._state.tables[stage] = DeviceBuffer.from_numpy(table)
        return self._state.tables[stage]

    def _debug_record_ptr(self, stage: str) -> Any:
        assert self._debug_record is not None
        return self._debug_record.ptr

    # What each role binds to, for a launch of `stage` (a wait-kernel's stage is its producer):
    # the flags count every producer block's start once a launch, so the wait-kernel's target is
    # epoch × producer blocks (or the block count, with the epoch read on the device).
    _BINDERS: dict[RoleKind, Any] = {
        RoleKind.EPOCH: lambda self, role, stage: as_i32(self.epoch),
        RoleKind.SEMAPHORES: lambda self, role, stage: self.semaphores(role.stage),
        RoleKind.START_FLAG: lambda self, role, stage: self._flag(stage),
        RoleKind.WAIT_FLAG: lambda self, role, stage: self._flag(stage),
        RoleKind.WAIT_TARGET:
            lambda self, role, stage: as_i32(self.epoch * math.prod(self.stages[stage].grid)),
        RoleKind.WAIT_BLOCKS: lambda self, role, stage: math.prod(self.stages[stage].grid),
        RoleKind.EPOCH_COUNTER: lambda self, role, stage: self._epoch_word(),
        RoleKind.TILE_COUNTER: lambda self, role, stage: self._counter(stage),
        RoleKind.ORDER_TABLE:
            lambda self, role, stage: self._table(stage,
                                                  self.signatures[self.stages[stage].kernel]),
        RoleKind.DEBUG_RECORD: lambda self, role, stage: self._debug_record_ptr(stage),
        RoleKind.QUEUE: lambda self, role, stage: _queue_outside_pipeline(role),
    }
    assert set(_BINDERS) == set(RoleKind), "every parameter role needs a binding"

    def _bind(self, role: Role, stage: str) -> Any:
        return self._BINDERS[role.kind](self, role, stage)

    def _stream(self, index: int, priority: int) -> Stream:
        if index not in self._streams:
            least, greatest = priority_range()
            clamped = max(greatest, min(least, priority))
            self._streams[index] = Stream(priority=clamped)
        return self._streams[index]

    def reset(self) -> None:
        """Zero all semaphores, flags and counters and restart the epoch: rarely needed, but
        after a run that failed part-way the only way to run again. Every run enqueued so far
        finishes first: the memsets run on the legacy default stream, which the program's
        non-blocking streams (and a caller's) do not wait for."""
        self.synchronize()
        for group in (self._state.semaphores, self._state.flags, self._state.counters):
            for buffer in group.values():
                buffer.fill_bytes(0)
        if self._state.epoch_word is not None:
            self._state.epoch_word.fill_bytes(0)
        self.epoch = 0
        self._failed_run = None

    # -- running ---------------------------------------------------------------------------
    # Every run checks all its stages' arguments before it changes anything (the epoch, a
    # launch): a launch of one stage and none of the next would leave the semaphores an epoch
    # out of step, and every later run's waits short of their posts until they trap.
    def run(self, args: Mapping[str, Sequence[Any]]) -> Event:
        """Enqueue one run (one epoch); returns an event recorded when every stream is done.

        `args` maps each stage to its kernel's own arguments (without the sync parameters).
        The run starts after the program's last run, wherever that was enqueued (RunOrder).
        """
        self._refuse_after_failed_run()
        users = self._checked_arguments(args)
        main, _ = self._plan_streams()
        self._order.begin(main)
        end = self._enqueued(lambda: self._enqueue(users))
        self._order.end(main, end)
        return end

    def _enqueue(self, users: Mapping[str, list[Any]]) -> Event:
        """One run's launches on the program's streams (what capture records too)."""
        self.epoch += 1
        main, others = self._plan_streams()
        start = Event().record(main)
        self.last_start = start  # with the returned event, times the run
        fork = start
        if self.device_epoch:
            launch(self.kernels[NEXT_EPOCH_KERNEL], 1, 1, [self._epoch_word()], stream=main)
            # the other streams' kernels and wait-kernels read the epoch the bump wrote: they
            # fork after it (from `start` they could compare against the last run's epoch)
            fork = Event().record(main)
        for stream in others:
            stream.wait_event(fork)
        for step in self.steps:
            self._launch_step(step, users, self._stream(step.stream, _step_priority(step)))
        for stream in others:
            main.wait_event(Event().record(stream))
        return Event().record(main)

    def main_stream(self) -> Stream:
        """The stream every run starts and ends on: work held there holds the runs behind it."""
        return self._plan_streams()[0]

    def run_on(self, args: Mapping[str, Sequence[Any]], stream: Any) -> None:
        """Enqueue one run on the caller's stream (a foreign one, e.g. torch's current stream):
        no streams or events of its own, so a stream capture (torch.cuda.graph) records exactly
        the launches. The plan must use one stream (PDL or stream order). The run starts after
        the program's last run (RunOrder); a stream being captured only records it, which a
        program whose epoch is passed by value cannot be (its graph would replay one epoch)."""
        if len({step.stream for step in self.steps}) > 1:
            raise ValueError("run_on needs a plan on one stream (sync-use-pdl or stream "
                             "order); this one forks streams: use run()")
        self._refuse_after_failed_run()
        users = self._checked_arguments(args)
        if is_capturing(stream):
            if self.epoch_by_value:
                raise ValueError(f"run_on a stream being captured into a graph "
                                 f"{GRAPH_NEEDS_DEVICE_EPOCH}")
            self._enqueued(lambda: self._enqueue_on(users, stream), recorded=True)
            return
        self._order.begin(stream)
        self._enqueued(lambda: self._enqueue_on(users, stream))
        self._order.end(stream)

    def _enqueue_on(self, users: Mapping[str, list[Any]], stream: Any) -> None:
        self.epoch += 1
        if self.device_epoch:
            launch(self.kernels[NEXT_EPOCH_KERNEL], 1, 1, [self._epoch_word()], stream=stream)
        for step in self.steps:
            self._launch_step(step, users, stream)

    def _checked_arguments(self, args: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
        """Each launched stage's own arguments, checked (launchable_arguments)."""
        return {step.stage: launchable_arguments(
                    step.stage, self.signatures[self.stages[step.stage].kernel], args)
                for step in self.steps if isinstance(step, Launch)}

    def _enqueued(self, enqueue: Callable[[], Any], recorded: bool = False) -> Any:
        """What `enqueue` returns. Where it fails (a driver call), launches it enqueued before
        the failure may already run: they post or wait for an epoch whose other half never
        comes, so the program refuses to run again until reset(); where a graph only recorded
        them (`recorded`), nothing ran, and the epoch goes back."""
        epoch = self.epoch
        try:
            return enqueue()
        except BaseException as err:
            if recorded:
                self.epoch = epoch
            else:
                self._failed_run = (f"run {epoch + 1} of this program failed part-way "
                                    f"({type(err).__name__}: {err})")
            raise

    def _refuse_after_failed_run(self) -> None:
        if self._failed_run is not None:
            raise TilesyncRuntimeError(
                f"{self._failed_run}; the launches it enqueued before the failure left the "
                "semaphores and flags out of step with the epoch, so a later run would wait "
                "for posts that never come: call reset() before running again")

    def _launch_step(self, step: HostStep, users: Mapping[str, list[Any]],
                     stream: Any) -> None:
        if not isinstance(step, Launch):
            sig = self.signatures[WAIT_KERNEL]
            launch(self.kernels[WAIT_KERNEL], 1, 1,
                   [self._bind(role, step.producer) for role in sig.sync_args], stream=stream)
            return
        if step.fused:
            return  # its blocks run in the launch it joins
        together = self.one_launches.get(step.stage)
        if together is not None:
            self._launch_together(step, together, users, stream)
            return
        stage = self.stages[step.stage]
        sig = self.signatures[stage.kernel]
        bound = [self._bind(role, step.stage) for role in sig.sync_args]
        launch(self.kernels[stage.kernel], stage.grid, stage.block, [*users[step.stage], *bound],
               stream=stream, pdl=step.pdl, shared_mem=sig.dynamic_shared_bytes)

    def _launch_together(self, step: Launch, together: OneLaunch,
                         users: Mapping[str, list[Any]], stream: Any) -> None:
        """One grid of every block of the launch's stages (one dimension: tickets) in blocks
        of the largest stage's, each stage's own arguments in stage order, the kernel's roles
        bound as the first stage's."""
        sig = self.signatures[together.kernel]
        user = [value for name in together.stages for value in users[name]]
        blocks = sum(math.prod(self.stages[name].grid) for name in together.stages)
        bound = [self._bind(role, step.stage) for role in sig.sync_args]
        block = max((self.stages[name].block for name in together.stages), key=math.prod)
        launch(self.kernels[together.kernel], (blocks, 1, 1), block,
               [*user, *bound], stream=stream, pdl=step.pdl,
               shared_mem=sig.dynamic_shared_bytes)

    def _plan_streams(self) -> tuple[Stream, list[Stream]]:
        """The run's first stream (it forks and joins the others) and the others; each at the
        highest priority any of its launches asks for."""
        used = sorted({s.stream for s in self.steps})
        streams = [self._stream(i, min(_step_priority(s) for s in self.steps if s.stream == i))
                   for i in used]
        return streams[0], streams[1:]

    def prepare(self) -> None:
        """Create every stream and every piece of device state the runs bind (before a stream
        capture, during which nothing may be allocated)."""
        self._prepare()

    def _prepare(self) -> None:
        """Create every stream and every piece of device state the steps bind."""
        self._plan_streams()
        for step in self.steps:
            kernel = self.stages[step.stage].kernel if isinstance(step, Launch) else WAIT_KERNEL
            if isinstance(step, Launch) and step.stage in self.one_launches:
                kernel = self.one_launches[step.stage].kernel
            for role in self.signatures[kernel].sync_args:
                self._bind(role, _step_stage(step))
        if self.device_epoch:
            self._epoch_word()

    def capture(self, args: Mapping[str, Sequence[Any]]) -> CapturedRun:
        """One run captured as a CUDA graph; each `launch()` of it is a new epoch.

        Needs kernels that read the epoch on the device (sync-epoch-in-memory): a graph
        replays the parameters it was captured with.
        """
        if self.epoch_by_value:
            raise ValueError(f"capturing a graph {GRAPH_NEEDS_DEVICE_EPOCH}")
        users = self._checked_arguments(args)
        self._prepare()  # no allocation may happen while a stream captures
        main, _ = self._plan_streams()
        epoch = self.epoch
        try:
            graph, executable = capture_graph(main, lambda: self._enqueue(users))
        finally:
            self.epoch = epoch  # capturing ran nothing
        return CapturedRun(self, graph, executable, main)

    def synchronize(self) -> None:
        """Wait for every stream and the last run (run_on's on the caller's stream); a
        timed-out spin raises SpinTimeoutError saying which."""
        order = [] if self._order is None else [self._order]
        synchronize_streams([*self._streams.values(), *order], self.timed_out_wait)

    def timeout_report(self) -> str | None:
        """What the first timed-out wait recorded, in words (None if none timed out)."""
        timeout = self.timed_out_wait()
        return None if timeout is None else timeout[0]

    def timed_out_wait(self) -> tuple[str, str, tuple[int, int, int]] | None:
        """The first timed-out wait's report, kernel and block (None if none timed out): its
        stage (a wait-kernel's producer and consumer) and the epoch whose target it waited
        for (runs enqueued after it may be ahead)."""
        if self._debug_record is None:
            return None
        words = self._debug_record.read()
        record = dict(zip(DEBUG_RECORD_FIELDS, (int(w) for w in words)))
        where_of = {s.kernel: f"stage @{s.name}" for s in self.stages.values()}
        for together in self.one_launches.values():  # its block: a ticket of the launch
            where_of[together.kernel] = f"stage @{', @'.join(together.stages)} (one launch)"
        kernel = recorded_kernel(record, self.signatures)
        expected = record["expected"]
        if kernel == WAIT_KERNEL:
            where_of[kernel], when = self._wait_kernel_timeout(expected)
        else:
            sig = self.signatures.get(kernel)
            role = sig.role_of(record["param"]) if sig is not None else None
            producer = self.stages.get(role.stage) if role is not None and \
                role.kind is RoleKind.SEMAPHORES and role.stage is not None else None
            # (a record of no stage of this program's: the host's latest epoch, as it has)
            when = f"epoch {self.epoch}" if producer is None else self._epoch_words(
                timed_out_epoch(expected, producer.posts_per_semaphore, self.epoch))
        return describe_timeout(words, self.signatures, where_of, when,
                                lambda: module_symbols(self.compiled.module))

    def _epoch_words(self, epoch: int | None) -> str:
        """The epoch of a timed-out wait (timed_out_epoch), in words."""
        if epoch is None:
            return f"the target of no epoch up to the latest enqueued, {self.epoch}"
        return f"epoch {epoch}"

    def _wait_kernel_timeout(self, expected: int) -> tuple[str, str]:
        """(where, when) of a timed-out wait-kernel: the plan's wait-kernels (one kernel
        for all, which its record does not tell apart) narrowed to those whose producer's
        blocks make `expected` an epoch's target (epoch × blocks), each named by its producer
        and the consumer launched after it on its stream."""
        found = []
        for index, step in enumerate(self.steps):
            if isinstance(step, Launch):
                continue
            consumer = next((later.stage for later in self.steps[index + 1:]
                             if isinstance(later, Launch) and later.stream == step.stream),
                            None)
            blocks = math.prod(self.stages[step.producer].grid)
            found.append((step.producer, consumer, timed_out_epoch(expected, blocks,
                                                                   self.epoch)))
        fitting = [f for f in found if f[2] is not None] or found
        where = " or ".join(f"the wait-kernel before @{consumer} (waiting for every block of "
                            f"@{producer} to start)" for producer, consumer, _ in fitting)
        epochs = {epoch for _, _, epoch in fitting}
        return where or "a wait-kernel", self._epoch_words(epochs.pop() if len(epochs) == 1
                                                           else None)


def _queue_outside_pipeline(role: Role) -> Any:
    raise ValueError(f"a kernel takes the ring of {role}: run its dataflow.pipeline with "
                     "tilesync.runtime.dataflow.DataflowProgram")


_HALVES = ("f16", "bf16")


def launchable_arguments(stage: str, sig: KernelSignature,
                         args: Mapping[str, Sequence[Any]]) -> list[Any]:
    """A stage's own arguments from `args` (stage name -> arguments), checked as its launch
    checks them (their count, then each by the launch's own check of its kind: a device
    pointer, an integer in range, ...), a wrong one raising one ValueError naming the stage,
    kernel and argument. A pointer comes back as its device address, which the launch takes
    as it is; a half as given (the launch takes its bits from the value)."""
    values = checked_user_args(stage, sig, args)
    for position, (kind, value) in enumerate(zip(sig.user_params, values)):
        if kind == "ptr" and type(value) is int and value >= 0:
            continue  # an address already (a tensor's data_ptr())
        try:
            checked = checked_argument(kind, value, position)
        except (TypeError, ValueError, OverflowError) as err:
            raise ValueError(f"stage @{stage}: kernel {sig.name} {err}") from err
        if kind not in _HALVES:
            values[position] = checked
    return values


def timed_out_epoch(expected: int, per_epoch: int, latest: int) -> int | None:
    """The epoch whose target a timed-out wait expected: target = epoch × `per_epoch` modulo
    2^32 (the posts of a semaphore, or a wait-kernel's producer blocks, each epoch), the
    latest such epoch up to `latest`, the latest the host enqueued (runs enqueued after the
    one that timed out need not have started); None where no epoch has that target."""
    behind, rest = divmod((latest * per_epoch - expected) % 2**32, per_epoch)
    return latest - behind if rest == 0 and behind < latest else None


def recorded_kernel(record: Mapping[str, int], signatures: Mapping[str, KernelSignature]
                    ) -> str:
    """The kernel a debug record names by its kernel_tag (`#tag` where none is known)."""
    tag = record["kernel_tag"]
    return next((name for name in signatures if kernel_tag(name) == tag), f"#{tag}")


def module_symbols(module: ModuleOp) -> list[str]:
    """The symbols of a program and of its gpu.modules (kernels, shared arrays): the names a
    debug record gives by kernel_tag."""
    names = []
    for op in module.ops:
        inner = op.body.ops if isinstance(op, gpu.ModuleOp) else ()
        for symbol in (op, *inner):
            name = symbol.properties.get("sym_name")
            if isinstance(name, StringAttr):
                names.append(name.data)
    return names


def describe_timeout(words: Sequence[int], signatures: Mapping[str, KernelSignature],
                     where_of: Mapping[str, str], when: str,
                     symbols: Callable[[], Iterable[str]] = tuple
                     ) -> tuple[str, str, tuple[int, int, int]] | None:
    """What a debug record (DEBUG_RECORD_FIELDS) says in words, with the kernel and block;
    None when no spin timed out. `where_of`: what runs each kernel, in words (`stage @a`).
    A semaphore wait names the semaphore, a queue spin the queue, the ticket and whether it
    waited for a free or a full entry, an mbarrier wait the barrier (its array's name among
    `symbols()`, asked for only then) and the parity of the phase."""
    record = dict(zip(DEBUG_RECORD_FIELDS, (int(w) for w in words)))
    if record["claimed"] == 0:
        return None
    if record.get("complete", 1) == 0:  # (a record of fewer words has no such field)
        held = ", ".join(f"{name} {value}" for name, value in record.items()
                         if name not in ("claimed", "complete"))
        return (f"spin-wait timed out, but its debug record is incomplete: the grid stopped "
                f"before the block that claimed it finished writing it (it holds {held}) "
                f"({when})", recorded_kernel(record, signatures),
                (record["block_x"], record["block_y"], record["block_z"]))
    param, index = record["param"], record["index"]
    expected, seen = record["expected"], record["seen"]
    block = (record["block_x"], record["block_y"], record["block_z"])
    kernel = recorded_kernel(record, signatures)
    sig = signatures.get(kernel)
    role = sig.role_of(param) if sig is not None else None
    where = f"{where_of[kernel]} " if kernel in where_of else ""
    # a queue's tickets are 64-bit; the record keeps their low 32 bits
    ticket = f"ticket {index % 2**32} (modulo 2^32)"
    site = record.get("site", SPIN_SITE_SEMAPHORE)
    if site == SPIN_SITE_SEMAPHORE:
        what = f"parameter {param}" if role is None else f"{role} (parameter {param})"
        waited = f"semaphore {what}[{index}] expected >= {expected}, saw {seen}"
    elif site in (SPIN_SITE_CLUSTER_QUEUE_FREE, SPIN_SITE_CLUSTER_QUEUE_FULL):
        array = next((n for n in symbols() if kernel_tag(n) == param), None)
        queue = (f"@{array.removeprefix(CLUSTER_QUEUE_SYMBOL_PREFIX)}" if array is not None
                 else f"#{param}")
        peer = "the producer to fill" if site == SPIN_SITE_CLUSTER_QUEUE_FULL else \
            "the consumer to free"
        waited = (f"cluster queue {queue} {ticket} waited for {peer} its entry (the "
                  f"barrier's phase of parity {expected} never completed)")
    elif site == SPIN_SITE_MBARRIER:
        array = next((n for n in symbols() if kernel_tag(n) == param), None)
        named = array if array is not None else "(unnamed)" if param < 0 else f"#{param}"
        waited = (f"mbarrier {named}[{index}] never completed its phase of parity "
                  f"{expected}")
    else:
        queue = f"@{role.stage}" if role is not None else f"of parameter {param}"
        if site == SPIN_SITE_QUEUE_FULL:
            waited = (f"queue {queue} {ticket} waited for a full entry: the producer "
                      f"filled it {seen} time(s), expected {expected}")
        else:
            waited = (f"queue {queue} {ticket} waited for a free entry: consumer stages "
                      f"released it {seen} time(s), expected {expected}")
    text = f"spin-wait timed out in {where}kernel {kernel}, block {block}: {waited} ({when})"
    return text, kernel, block
