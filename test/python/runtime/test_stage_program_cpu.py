"""A StageProgram's runs without a GPU: the GPT-3 MLP example compiled for real and loaded by
StageProgram itself, on an emulated device whose launches apply each kernel's effect in the
order they are enqueued (a producer's posts and start flags add, a wait that its posts have not
reached would spin until its timeout traps: `Hang`), and whose streams and events log what is
enqueued on them. What it checks: a run with a wrong argument changes nothing, a run that
failed part-way is refused until reset(), reset() waits for the runs first, a graph of a
by-value epoch is refused, runs on different streams follow one another, and a timed-out wait
is reported with its own epoch and, for a wait-kernel, its producer and consumer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
import pytest
from cuda.bindings import driver

import tilesync
from tilesync.api import default_pipeline
from tilesync.contract import (
    DEBUG_RECORD_FIELDS,
    EPOCH,
    EPOCH_COUNTER,
    NEXT_EPOCH_KERNEL,
    SPIN_SITE_QUEUE_FULL,
    WAIT_BLOCKS,
    WAIT_FLAG,
    WAIT_KERNEL,
    WAIT_TARGET,
    KernelSignature,
    Role,
    RoleKind,
    kernel_tag,
)
from tilesync.runtime import program as program_module
from tilesync.runtime import stream as stream_module
from tilesync.runtime.errors import TilesyncRuntimeError
from tilesync.runtime.launch import pack_args
from tilesync.runtime.program import (
    GRAPH_NEEDS_DEVICE_EPOCH,
    StageProgram,
    as_i32,
    describe_timeout,
    timed_out_epoch,
)

COMMON = ("sync-generate-policies", "sync-insert-post-wait")
PLANS = {
    "wait-kernel": (*COMMON, "sync-insert-wait-kernel", "sync-verify"),  # two streams
    "pdl": (*COMMON, "sync-use-pdl", "sync-verify"),  # one stream, the epoch by value
    "pdl+device-epoch": (*COMMON, "sync-use-pdl", "sync-verify", "sync-epoch-in-memory"),
}
GOOD = {"gemm1": [0x1000, 0x2000, 0x3000], "gemm2": [0x3000, 0x4000, 0x5000]}


@pytest.fixture(scope="module")
def compiled():
    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    return {name: tilesync.compile(text, pipeline=default_pipeline(before=passes))
            for name, passes in PLANS.items()}


class Hang(Exception):
    """A wait the device would spin in until its timeout traps."""


@dataclass
class Device:
    """The emulated device: what was enqueued, in order, and the program loaded on it."""

    log: list[tuple] = field(default_factory=list)
    capturing: bool = False  # what is_capturing answers
    failing: str | None = None  # a kernel whose launch fails, as a driver error would
    program: Any = None

    def launches(self) -> list[tuple]:
        return [entry for entry in self.log if entry[0] == "launch"]


def key(stream: Any) -> int:
    return stream_module.stream_key(stream)


def emulate(monkeypatch, compiled) -> Device:
    """`compiled` loaded by StageProgram on an emulated device."""
    device = Device()
    log = device.log

    class Buffer:
        address = 0x7000_0000

        def __init__(self, count: int, dtype: Any = np.int32):
            self.array = np.zeros(max(1, count), dtype)
            self.ptr = Buffer.address
            Buffer.address += 0x1000

        @classmethod
        def zeros(cls, count, dtype=np.int32):
            return cls(count, dtype)

        @classmethod
        def from_numpy(cls, values):
            made = cls(values.size, values.dtype)
            made.array[:] = values.ravel()
            return made

        def fill_bytes(self, value):
            log.append(("memset", self.ptr))
            self.array[:] = 0 if value == 0 else -1

        @property
        def __cuda_array_interface__(self):
            return {"shape": self.array.shape, "typestr": self.array.dtype.str,
                    "data": (self.ptr, False), "strides": None, "version": 3}

    class Event:
        def __init__(self, timing: bool = True):
            self.at: tuple[int, int] | None = None

        def record(self, stream=None):
            self.at = (key(stream), len(log))  # the stream, and after what on the log
            log.append(("record", key(stream)))
            return self

        def synchronize(self):
            log.append(("event synchronize", self.at))

    class Stream:
        made = 0

        def __init__(self, priority=None):
            Stream.made += 1
            self.handle = driver.CUstream(0x5000 + Stream.made)

        def wait_event(self, event):
            log.append(("wait", key(self), event.at))

        def synchronize(self):
            log.append(("stream synchronize", key(self)))

    class Module:
        def function(self, name, params):
            return name

    def launch(kernel, grid, block, args, stream=None, **options):
        sig = device.program.signatures[kernel]
        pack_args(sig.params, args)  # the checks the real launch makes
        if kernel == device.failing:
            raise TilesyncRuntimeError(f"cuLaunchKernelEx (launch of '{kernel}') failed: "
                                       "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                                       "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "cuLaunchKernelEx")
        log.append(("launch", key(stream), kernel))
        if device.capturing:
            return  # recorded into a graph: runs nothing now
        apply(device.program, kernel, grid, sig, args)

    monkeypatch.setattr(program_module, "DeviceBuffer", Buffer)
    monkeypatch.setattr(program_module, "Event", Event)
    monkeypatch.setattr(program_module, "Stream", Stream)
    monkeypatch.setattr(program_module, "priority_range", lambda: (0, -5))
    monkeypatch.setattr(program_module, "launch", launch)
    monkeypatch.setattr(program_module, "load_ptx", lambda *args, **kwargs: Module())
    monkeypatch.setattr(program_module, "is_capturing", lambda stream: device.capturing)

    def capture_graph(stream, record):
        log.append(("capture", key(stream)))
        device.capturing = True
        try:
            record()
        finally:
            device.capturing = False
        return "graph", "executable"

    monkeypatch.setattr(program_module, "capture_graph", capture_graph)
    monkeypatch.setattr(StageProgram, "_check_progress", lambda self: None)
    monkeypatch.setattr(stream_module, "Event", Event)
    monkeypatch.setattr(stream_module, "stream_wait_event",
                        lambda stream, event: log.append(("wait", key(stream), event.at)))
    device.program = StageProgram(compiled)
    return device


def short_of(seen: int, target: int) -> bool:
    """As the device compares counts: modulo 2^32 (SyncBuilder.short_of)."""
    return as_i32(seen - target) < 0


def apply(program: StageProgram, kernel: str, grid, sig: KernelSignature, args) -> None:
    """What `kernel` does to the program's state, or Hang where it would spin."""
    bound = dict(zip(sig.sync_args, args[len(args) - len(sig.sync_args):]))
    if kernel == NEXT_EPOCH_KERNEL:
        args[0].array[0] = as_i32(int(args[0].array[0]) + 1)
        return
    device_epoch = int(bound[EPOCH_COUNTER].array[0]) if EPOCH_COUNTER in bound else None
    epoch = bound.get(EPOCH, device_epoch)
    if kernel == WAIT_KERNEL:
        target = bound[WAIT_TARGET] if WAIT_TARGET in bound else epoch * bound[WAIT_BLOCKS]
        if short_of(int(bound[WAIT_FLAG].array[0]), target):
            raise Hang(f"the wait-kernel spins: flag {bound[WAIT_FLAG].array[0]} < {target}")
        return
    stage = next(s for s in program.stages.values() if s.kernel == kernel)
    for role, value in bound.items():
        if role.kind is RoleKind.START_FLAG:
            value.array[0] = as_i32(int(value.array[0]) + math.prod(grid))
    for role, value in bound.items():
        if role.kind is RoleKind.SEMAPHORES and role.stage != stage.name:
            target = epoch * program.stages[role.stage].posts_per_semaphore
            if any(short_of(int(seen), target) for seen in value.array):
                raise Hang(f"@{stage.name} spins: semaphore {value.array.min()} < {target}")
    for role, value in bound.items():
        if role.kind is RoleKind.SEMAPHORES and role.stage == stage.name:
            value.array[:] = value.array + stage.posts_per_semaphore


def state(program: StageProgram) -> tuple:
    buffers = program._state
    return (program.epoch, *(tuple(b.array) for group in (buffers.semaphores, buffers.flags)
                             for b in group.values()))


# -- A run with a wrong argument changes nothing --------------------------------------------

BAD = {
    "a count short for the first stage": ({"gemm1": [0x1000, 0x2000], "gemm2": GOOD["gemm2"]},
                                          r"stage @gemm1: kernel gemm1 takes 3 argument"),
    "a bad pointer for the second stage": ({"gemm1": GOOD["gemm1"],
                                            "gemm2": [0x3000, -8, 0x5000]},
                                           r"stage @gemm2: kernel gemm2 argument 1 \(ptr\): "
                                           "negative device pointer -8"),
}


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("plan, how", [("wait-kernel", "run"), ("pdl", "run_on"),
                                       ("pdl+device-epoch", "run_on"),
                                       ("pdl+device-epoch", "capture")])
def test_a_run_with_a_wrong_argument_changes_nothing(monkeypatch, compiled, plan, how, bad):
    """Every stage's arguments are checked before the epoch moves or anything is launched:
    the next good run's waits expect the posts of runs that happened (before, the epoch moved
    and, for a wrong second stage, the first was launched: the next run's waits spun)."""
    device = emulate(monkeypatch, compiled[plan])
    program = device.program
    start = getattr(program, how)

    def go(args):
        return start(args, 0xA) if how == "run_on" else start(args)

    go(GOOD)
    before, logged = state(program), len(device.log)
    args, message = BAD[bad]
    with pytest.raises(ValueError, match=message):
        go(args)
    assert device.log[logged:] == [] and state(program) == before
    for _ in range(2):
        go(GOOD)  # no Hang
    if how == "capture":
        assert program.epoch == 0  # capturing runs nothing
    else:
        assert program.epoch == 3


def test_a_run_that_failed_part_way_is_refused_until_reset(monkeypatch, compiled):
    """A launch that fails after others of its run were enqueued (a driver error) leaves the
    program's semaphores out of step with its epoch: later runs are refused, saying to
    reset(), instead of spinning until the trap; after reset() the program runs again."""
    device = emulate(monkeypatch, compiled["wait-kernel"])
    program = device.program
    program.run(GOOD)
    device.failing = "gemm2"
    with pytest.raises(TilesyncRuntimeError, match="OUT_OF_RESOURCES"):
        program.run(GOOD)  # @gemm1 and the wait-kernel are enqueued already
    device.failing = None
    with pytest.raises(TilesyncRuntimeError, match=r"run 2 of this program failed part-way .*"
                                                   r"call reset\(\) before running again"):
        program.run(GOOD)
    program.reset()
    program.run(GOOD)
    assert program.epoch == 1


def test_reset_waits_for_every_run_before_its_memsets(monkeypatch, compiled):
    """reset() zeroes the state on the legacy default stream, which the program's streams and
    a caller's do not wait for: it synchronizes them all first."""
    device = emulate(monkeypatch, compiled["pdl"])
    program = device.program
    program.run(GOOD)
    program.run_on(GOOD, 0xB)  # the last run, on the caller's stream
    logged = len(device.log)
    program.reset()
    after = device.log[logged:]
    first_memset = next(i for i, entry in enumerate(after) if entry[0] == "memset")
    waited = after[:first_memset]
    assert ("stream synchronize", key(program.main_stream())) in waited
    assert any(entry[0] == "event synchronize" and entry[1][0] == 0xB for entry in waited)
    assert program.epoch == 0 and not program._state.semaphores["gemm1"].array.any()


def test_a_by_value_epoch_is_refused_in_a_caller_s_capture(monkeypatch, compiled):
    """run_on on a stream being captured, with the epoch passed by value: the graph would
    replay one epoch (from its second replay on every wait passes at once); refused as
    capture() refuses it, in the same words. With the epoch on the device it is recorded."""
    device = emulate(monkeypatch, compiled["pdl"])
    program = device.program
    program.run_on(GOOD, 0xA)
    device.capturing = True
    for refused in (lambda: program.run_on(GOOD, 0xC), lambda: program.capture(GOOD)):
        with pytest.raises(ValueError) as info:
            refused()
        assert GRAPH_NEEDS_DEVICE_EPOCH in str(info.value)
        assert "sync-epoch-in-memory" in str(info.value)
    assert program.epoch == 1 and device.launches() == [("launch", 0xA, "gemm1"),
                                                        ("launch", 0xA, "gemm2")]
    device = emulate(monkeypatch, compiled["pdl+device-epoch"])
    device.program.run_on(GOOD, 0xA)
    device.capturing = True
    logged = len(device.log)
    device.program.run_on(GOOD, 0xC)
    # recorded: the launches alone, no wait on (nor record of) the order's event
    assert [entry[0] for entry in device.log[logged:]] == ["launch"] * 3


def test_runs_on_different_streams_follow_one_another(monkeypatch, compiled):
    """Runs share the semaphores: a run on another stream than the last run's waits for that
    run's end (on the same stream nothing is enqueued for it), and synchronize() after
    run_on waits for it."""
    device = emulate(monkeypatch, compiled["pdl"])
    program, log = device.program, device.log

    def waits_for_last_run(stream: int, previous: int) -> bool:
        """`stream` waits, before its next launch, for an event recorded on `previous`
        after its last launch."""
        last = max(i for i, entry in enumerate(log) if entry[:2] == ("launch", previous))
        return any(entry[:2] == ("wait", stream) and entry[2][0] == previous and
                   entry[2][1] > last for entry in log[last:])

    program.run_on(GOOD, 0xA)
    logged = len(log)
    program.run_on(GOOD, 0xA)
    assert not [entry for entry in log[logged:] if entry[0] == "wait"]  # stream order
    program.run_on(GOOD, 0xB)
    assert waits_for_last_run(0xB, 0xA)
    main = key(program.main_stream())
    program.run(GOOD)
    assert waits_for_last_run(main, 0xB)
    program.run_on(GOOD, 0xA)
    assert waits_for_last_run(0xA, main)
    logged = len(log)
    program.synchronize()
    assert any(entry[0] == "event synchronize" and entry[1][0] == 0xA for entry in log[logged:])


# -- what a timed-out wait reports -----------------------------------------------------------


class Record:
    """The host-mapped record as a debug build's timed-out wait leaves it (written in full,
    unless `complete=0`)."""

    def __init__(self, **fields: int):
        fields = {"complete": 1, **fields}
        self.words = [fields.get(name, 0) for name in DEBUG_RECORD_FIELDS]

    def read(self):
        return self.words


def test_a_timed_out_wait_names_its_own_epoch_and_a_wait_kernel_its_stages(monkeypatch,
                                                                           compiled):
    """Runs enqueued after the one that timed out move the host's epoch on: the report gives
    the epoch whose target the wait expected (expected / posts a epoch, modulo 2^32), and a
    wait-kernel's report the producer whose blocks it waited for and the consumer it holds."""
    program = emulate(monkeypatch, compiled["wait-kernel"]).program
    program.epoch = 63
    sems = program.signatures["gemm2"]
    param = len(sems.params) - len(sems.sync_args) + sems.sync_args.index(Role.semaphores("gemm1"))
    program._debug_record = Record(claimed=1, kernel_tag=kernel_tag("gemm2"), param=param,
                                   index=5, expected=3 * 48, seen=2 * 48 + 47, block_x=5)
    text = program.timeout_report()
    assert text == ("spin-wait timed out in stage @gemm2 kernel gemm2, block (5, 0, 0): "
                    f"semaphore sems:@gemm1 (parameter {param})[5] expected >= 144, saw 143 "
                    "(epoch 3)")
    blocks = math.prod(program.stages["gemm1"].grid)
    program._debug_record = Record(claimed=1, kernel_tag=kernel_tag(WAIT_KERNEL),
                                   expected=as_i32(3 * blocks), seen=2 * blocks + 100)
    text = program.timeout_report()
    assert text.startswith("spin-wait timed out in the wait-kernel before @gemm2 (waiting for "
                           "every block of @gemm1 to start) kernel tilesync_wait_kernel")
    assert text.endswith("(epoch 3)")
    program._debug_record = Record(claimed=1, kernel_tag=kernel_tag("gemm2"), param=param,
                                   expected=3 * 48 + 1)
    assert program.timeout_report().endswith(
        "(the target of no epoch up to the latest enqueued, 63)")


def test_the_epoch_of_a_target_counts_modulo_2_32():
    assert timed_out_epoch(3 * 48, 48, 63) == 3
    assert timed_out_epoch(as_i32(2**32 // 384 * 384 + 384), 384, 2**32 // 384 + 2) == \
        2**32 // 384 + 1  # its target wrapped
    assert timed_out_epoch(3 * 48 + 1, 48, 63) is None
    assert timed_out_epoch(70 * 48, 48, 63) is None  # not enqueued yet


def test_a_queue_ticket_is_shown_as_the_record_keeps_it():
    """The record keeps a 64-bit ticket's low 32 bits (as an i32): shown unsigned, saying so,
    not as a negative number."""
    sig = KernelSignature("m", "consume", ("ptr", "ptr"),
                          sync_args=(Role(RoleKind.QUEUE, "q"),))
    words = Record(claimed=1, kernel_tag=kernel_tag("consume"), param=1,
                   index=as_i32(2**31 + 12345), expected=3, seen=2,
                   site=SPIN_SITE_QUEUE_FULL).read()
    text, _, _ = describe_timeout(words, {"consume": sig}, {"consume": "stage @c"}, "run 1")
    assert "queue @q ticket 2147495993 (modulo 2^32) waited for a full entry" in text


def test_a_record_claimed_but_not_complete_says_so(monkeypatch, compiled):
    """The grid stopped (another block's trap) before the block that claimed the record
    finished writing it: the report says the record is incomplete, not a wait on zeros."""
    program = emulate(monkeypatch, compiled["wait-kernel"]).program
    program._debug_record = Record(claimed=1, complete=0, kernel_tag=kernel_tag("gemm2"))
    text = program.timeout_report()
    assert text.startswith("spin-wait timed out, but its debug record is incomplete: the grid "
                           "stopped before the block that claimed it finished writing it (it "
                           f"holds kernel_tag {kernel_tag('gemm2')}, param 0, index 0,")


def test_a_program_without_waits_is_captured_as_it_is(monkeypatch):
    """No kernel takes an epoch where nothing waits: a graph replaying its parameters repeats
    nothing, so a caller's capture records the launches (refusing it broke the torch front
    end's graphs of its persistent forms)."""
    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    lines = [line for line in text.splitlines()
             if "sync.dependency" not in line and "sync.wait_kernel" not in line]
    text = "\n".join(line.replace("sync.launch @gemm2 {stream = 1 : i64}", "sync.launch @gemm2")
                     for line in lines)
    device = emulate(monkeypatch, tilesync.compile(text))
    assert not device.program.epoch_by_value
    device.capturing = True
    device.program.run_on(GOOD, 0xC)
    assert device.launches() == [("launch", 0xC, "gemm1"), ("launch", 0xC, "gemm2")]
    device.program.capture(GOOD)
