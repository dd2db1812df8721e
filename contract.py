"""The contract between tilesync's compiler and its runtime, spelled once.

Everything here is plain data that both sides read: the roles of the kernel parameters that
passes append and the host binds, the attribute names passes leave on the IR, the names of the
kernels passes generate, the kinds of kernel parameters, the architectures we compile for with
their PTX features, the per-SM and per-block device limits (and which blocks fit on a device at
once), the layout of the record a timed-out spin-wait leaves, and the compiled program the
compiler hands the runtime.

It imports nothing of tilesync (and nothing but the standard library at import time), so that
every room of the project (dialects, analysis, transforms, lowering, runtime, kernels, tools)
can import it without an import cycle. docs/ARCHITECTURE.md shows where it sits.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the compiled program carries IR; the runtime never needs xDSL to load it
    from xdsl.dialects.builtin import ModuleOp

# ---------------------------------------------------------------------------------------------
# Errors: every error tilesync raises on purpose is a TilesyncError
# ---------------------------------------------------------------------------------------------
#
#   TilesyncError
#   ├── CompileError              bad input: syntax, IR that does not verify, a pass that refuses
#   │   └── VerifyError           sync-verify cannot prove the synchronization (or progress)
#   └── TilesyncRuntimeError      a CUDA driver call failed (the kernel, where one was launched)
#       ├── NoGPUError            no usable driver or device
#       └── DeviceFaultError      a kernel stopped on the device; the context is unusable
#           └── SpinTimeoutError  ... because a spin-wait timed out (the kernel and block)


@dataclass(frozen=True)
class SourceLocation:
    """Where in a source an error is: `file:line:column`, both counted from 1."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class TilesyncError(Exception):
    """The base of every error tilesync raises for its user (compile, verify, runtime)."""


class CompileError(TilesyncError):
    """A diagnostic for the user: bad input, failed verification, unknown pass or target.

    `message` is one line; `location` is where in the program (or pipeline spec) it points, or
    None for an argument that has no source (a target name, a timeout). `str()` is
    "location: message"."""

    def __init__(self, message: str, location: SourceLocation | None = None):
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location is not None else message)

    def __reduce__(self):  # picklable across process pools, with its location
        return (type(self), (self.message, self.location))


class VerifyError(CompileError):
    """sync-verify refused the program: a read tile no wait covers, an awaited count the posts
    never reach, or no forward-progress guarantee."""


# CUDA errors after which the context is unusable: the kernel stopped on the device (a `trap`,
# an illegal address or instruction). tilesync's spin-waits call `trap` when they time out.
DEVICE_FAULT_ERRORS = frozenset({
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
})


class TilesyncRuntimeError(TilesyncError, RuntimeError):
    """A CUDA driver call failed; `error_name` is the CUresult name, `call` the driver call,
    `kernel` and `block` the kernel and block it concerns where known (else None)."""

    def __init__(self, message: str, error_name: str | None = None, call: str | None = None,
                 kernel: str | None = None, block: tuple[int, int, int] | None = None):
        super().__init__(message)
        self.error_name = error_name
        self.call = call
        self.kernel = kernel
        self.block = block

    def __reduce__(self):
        return (type(self), (str(self), self.error_name, self.call, self.kernel, self.block))

    @property
    def is_device_fault(self) -> bool:
        return self.error_name in DEVICE_FAULT_ERRORS


class NoGPUError(TilesyncRuntimeError):
    """No usable NVIDIA driver or device; `reason` says which and why."""

    def __init__(self, reason: str):
        super().__init__(f"no usable NVIDIA GPU: {reason}")
        self.reason = reason

    def __reduce__(self):
        return (type(self), (self.reason,))


class NoProgressOnDeviceError(TilesyncRuntimeError):
    """A program cannot run safely on the device it is loaded on: a dependency's
    forward-progress proof counted more SMs or blocks per SM than this device and the compiled
    kernels give (or a pipeline's CTAs do not all fit at once), so waiting blocks could hold
    the slots their producers need."""


class DeviceFaultError(TilesyncRuntimeError):
    """A kernel stopped on the device (a trap, an illegal address or instruction): the CUDA
    context is unusable and the process must restart to use the GPU again."""


class SpinTimeoutError(DeviceFaultError):
    """A spin-wait timed out on the device (and trapped); the message says which wait and what
    it saw, `kernel` and `block` say where."""


# ---------------------------------------------------------------------------------------------
# Parameter roles: trailing kernel parameters that passes append and the host binds
# ---------------------------------------------------------------------------------------------


class RoleKind(str, Enum):
    """What a sync parameter holds. The value is how the role is spelled in `sync.args`."""

    EPOCH = "epoch"  # i32 by value: the launch count (semaphores are never reset)
    SEMAPHORES = "sems"  # i32 array: the semaphores of the stage the role names
    START_FLAG = "start_flag"  # a producer's flag, posted by each block on entry
    WAIT_FLAG = "wait_flag"  # the wait-kernel's view of that flag
    WAIT_TARGET = "wait_target"  # i32 by value: epoch × producer blocks
    WAIT_BLOCKS = "wait_blocks"  # i32 by value: producer blocks (epoch read on the device)
    EPOCH_COUNTER = "epoch_counter"  # one device word holding the epoch (graph replays)
    TILE_COUNTER = "tile_counter"  # the atomic counter an ordered sync.tile takes slots from
    ORDER_TABLE = "order_table"  # the tile order an ordered sync.tile reads (host uploads it)
    DEBUG_RECORD = "debug_record"  # host-mapped words a timed-out spin-wait fills in
    QUEUE = "queue"  # a dataflow queue's ring (QueueLayout), named like a stage: "queue:@h"

    def __str__(self) -> str:
        return self.value


# kinds that name a stage (or, for a queue, the queue): "sems:@P", "queue:@h"
STAGE_ROLE_KINDS = frozenset({RoleKind.SEMAPHORES, RoleKind.QUEUE})


@dataclass(frozen=True, order=True)
class Role:
    """The role of one sync parameter: a kind, and for per-stage state the stage it belongs to.

    Spelled `kind` or `kind:@stage` (`"epoch"`, `"sems:@gemm1"`); `Role.parse` reads that
    spelling back and refuses anything else.
    """

    kind: RoleKind
    stage: str | None = None

    def __post_init__(self) -> None:
        if (self.kind in STAGE_ROLE_KINDS) != (self.stage is not None):
            needs = "needs a" if self.kind in STAGE_ROLE_KINDS else "takes no"
            raise ValueError(f"parameter role '{self.kind}' {needs} stage")

    @classmethod
    def semaphores(cls, stage: str) -> Role:
        return cls(RoleKind.SEMAPHORES, stage)

    @classmethod
    def queue(cls, name: str) -> Role:
        return cls(RoleKind.QUEUE, name)

    @classmethod
    def parse(cls, text: str) -> Role:
        kind, sep, stage = text.partition(":@")
        try:
            role_kind = RoleKind(kind)
        except ValueError:
            known = ", ".join(k.value for k in RoleKind)
            raise ValueError(f"unknown parameter role '{text}' (known kinds: {known})") from None
        if sep and not stage:
            raise ValueError(f"parameter role '{text}' names no stage")
        return cls(role_kind, stage if sep else None)

    def __str__(self) -> str:
        return self.kind.value if self.stage is None else f"{self.kind.value}:@{self.stage}"


EPOCH = Role(RoleKind.EPOCH)
START_FLAG = Role(RoleKind.START_FLAG)
WAIT_FLAG = Role(RoleKind.WAIT_FLAG)
WAIT_TARGET = Role(RoleKind.WAIT_TARGET)
WAIT_BLOCKS = Role(RoleKind.WAIT_BLOCKS)
EPOCH_COUNTER = Role(RoleKind.EPOCH_COUNTER)
TILE_COUNTER = Role(RoleKind.TILE_COUNTER)
ORDER_TABLE = Role(RoleKind.ORDER_TABLE)
DEBUG_RECORD = Role(RoleKind.DEBUG_RECORD)

# ---------------------------------------------------------------------------------------------
# Attribute names passes leave on the IR
# ---------------------------------------------------------------------------------------------

# on a gpu.func
SYNC_ARGS_ATTR = "sync.args"  # roles of the trailing parameters passes appended
ORDER_TABLE_ATTR = "sync.order_table"  # the order table its host uploads
KNOWN_BLOCK_SIZE_ATTR = "gpu.known_block_size"
MIN_BLOCKS_PER_SM_ATTR = "tilesync.min_blocks_per_sm"  # launch bounds: nvvm.minctasm
CLUSTER_DIMS_ATTR = "tilesync.cluster_dims"  # CTAs per cluster: .reqnctapercluster
CLUSTER_QUEUES_ATTR = "dataflow.cluster_queues"  # the cluster queues its lowering bound
SYNC_NAMED_BARRIER = 1  # a sync.post or tile.arrive by part of a block (`threads N`)
STAGING_NAMED_BARRIER = 2  # a TMA-store epilogue's consumers around their staging buffer
# Queue ops run by groups of a block (`threads N`): group k synchronizes on named barrier
# QUEUE_GROUP_BARRIER_BASE + k, so a block has at most MAX_QUEUE_GROUPS of them.
QUEUE_GROUP_BARRIER_BASE = 3
# A ping-pong GEMM's warpgroups store tiles of their own: warpgroup g meets alone around its
# staging buffer, on the g-th of these (the kernel has no queue groups).
PINGPONG_STAGING_NAMED_BARRIERS = (STAGING_NAMED_BARRIER, QUEUE_GROUP_BARRIER_BASE)
NAMED_BARRIERS = 16  # per CTA, ids 0..15 (0 is the block's `bar.sync 0`)
MAX_QUEUE_GROUPS = NAMED_BARRIERS - QUEUE_GROUP_BARRIER_BASE
MAX_CLUSTER_BLOCKS = 8  # the portable cluster size
IM2COL_CORNERS = ((-1, -1), (-1, -1))
"""The window corners (lower, upper; H and W) of every im2col map: the runtime encodes them,
the kernels' coordinates and sync-verify's read boxes assume them. A 3 x 3 filter, stride 1,
padding 1: a window position is its output pixel moved by -1 (the padding) in each spatial
dimension, and lower == upper keeps one position per pixel, so the copy engine's walk over
positions is the row-major walk over the tensor's pixels."""
# on kernel-level ops
FILLED_ATTR = "sync.filled"  # a sync hook whose waits sync-insert-post-wait inserted
REORDERED_ATTR = "sync.reordered"  # a load that sync-reorder-loads moved above a wait
# on a memref.global in shared memory / on a gpu.module
DYNAMIC_SHARED_ATTR = "tilesync.dynamic_shared"  # packed into the module's dynamic array
DYNAMIC_SHARED_BYTES_ATTR = "tilesync.dynamic_shared_bytes"  # the launch size it needs
# The alignment the dynamic shared array's start is guaranteed (static shared memory comes
# first); buffers that need more start at its address rounded up at run time.
DYNAMIC_SHARED_BASE_ALIGNMENT = 16
# on a dataflow.pipeline: its stages fused into one kernel (dataflow-persistent-kernel)
PERSISTENT_KERNEL_ATTR = "dataflow.persistent_kernel"
# on a stage kernel whose body moved into a kernel of several stages (dataflow-persistent-kernel,
# sync-fuse-launches): its own body is then a lone return (it declares the stage's parameters,
# it computes nothing launched alone)
FUSED_INTO_ATTR = "tilesync.fused_into"
# on a sync.launch that others join (`fused`): the kernel that runs all their stages
ONE_LAUNCH_KERNEL_ATTR = "sync.one_launch_kernel"
# on a shared memref.global of a kernel of several stages: the stage whose code alone uses it
# (dynamic shared globals of different stages overlap: a block runs one stage)
SHARED_OVERLAY_ATTR = "tilesync.shared_overlay"
# Kitsune pipeline design, on a sync.stage (given by the front end or the user)
DATAFLOW_KIND_ATTR = "dataflow.kind"  # gemm | elementwise | reduction | gather | bulk
DATAFLOW_RESOURCE_ATTR = "dataflow.resource"  # #dataflow.resource<simt|tensor>
DATAFLOW_SPLIT_ATTR = "dataflow.split"  # a reduction's fan-in: partial results per output tile
DATAFLOW_FINAL_KERNEL_ATTR = "dataflow.final_kernel"  # the kernel that adds the partials
DATAFLOW_ELEMENT_ATTR = "dataflow.element"  # element type of the stage's output tiles
DATAFLOW_PIPELINE_ATTR = "dataflow.pipeline"  # the pipeline a stage joined (form-pipeline)
# on a dataflow.stage
TILES_ATTR = "tiles"  # tiles the stage produces (or consumes) per launch
READS_ATTR = "dataflow.reads"  # {queue = tickets per tile} where a tile reads several entries
UNBOUND_ATTR = "dataflow.unbound"  # its kernel does not take its queues yet
BSP_RATE_ATTR = "bsp_rate"  # measured bulk-synchronous tiles per second (all SMs)
UTILIZATION_ATTR = "utilization"  # measured busiest-pipe utilization in bulk-sync (0, 1]
DRAM_BYTES_ATTR = "dram_bytes"  # DRAM bytes per tile left once queues carry the tiles
L2_BYTES_ATTR = "l2_bytes"  # L2 bytes per tile
# on a sync.stage
NUM_SEMAPHORES_ATTR = "num_semaphores"
# A stage whose tiles wait for all the producer tiles they read at once, at their probe
# (`sync.probe ... until_ready`), not step by step: what sync-insert-post-wait's
# probe_until_ready does for every stage.
WAIT_AT_PROBE_ATTR = "sync.wait_at_probe"
VERIFIED_ATTR = "sync.verified"  # "proved" or "boundary"
PROGRESS_ATTR = "sync.progress"  # the forward-progress guarantee sync-verify relied on
CORESIDENT_ATTR = "coresident"  # declared: every block of the program is resident at once
REGISTERS_ATTR = "registers"  # of the compiled kernel (annotate_resources)
SHARED_BYTES_ATTR = "shared_bytes"  # static + dynamic, of the compiled kernel
DYNAMIC_SHARED_BYTES_STAGE_ATTR = "dynamic_shared_bytes"
BLOCKS_PER_SM_ATTR = "blocks_per_sm"  # occupancy (sync-annotate-occupancy)
WAVES_ATTR = "waves"
LIMITER_ATTR = "limiter"
# on a stage program's module: the mode cost model's choice and what it read
# (analysis/mode_cost.py `record`, shown by `tilesync explain`)
MODE_CHOICE_ATTR = "tilesync.mode_choice"

# ---------------------------------------------------------------------------------------------
# Kernels that passes generate and the host launches by name
# ---------------------------------------------------------------------------------------------

WAIT_KERNEL = "tilesync_wait_kernel"  # sync-insert-wait-kernel
NEXT_EPOCH_KERNEL = "tilesync_next_epoch"  # sync-epoch-in-memory

# ---------------------------------------------------------------------------------------------
# The record a timed-out spin-wait leaves (debug builds), in host-mapped memory
# ---------------------------------------------------------------------------------------------

DEBUG_RECORD_FIELDS = ("claimed", "kernel_tag", "param", "index", "expected", "seen",
                       "block_x", "block_y", "block_z", "site", "complete")
DEBUG_RECORD_WORDS = len(DEBUG_RECORD_FIELDS)  # i32 words
# "complete" is written last, once the other fields are (a record claimed but not complete:
# the grid was stopped while the block that claimed it was writing them)

# What a timed-out spin waited for (the record's "site"; a semaphore wait leaves it 0). For a
# queue, "param" is the queue's parameter and "index" the ticket; for an mbarrier, "param" is
# the kernel_tag of its shared array's name (-1: not a named array), "index" the barrier in it
# and "expected" the parity of the phase waited for.
SPIN_SITE_SEMAPHORE = 0
SPIN_SITE_QUEUE_FREE = 1  # a producer waiting for consumers to release an entry
SPIN_SITE_QUEUE_FULL = 2  # a consumer waiting for the producer to fill an entry
SPIN_SITE_MBARRIER = 3  # a thread waiting for a transaction barrier's phase to complete
# A cluster queue's ends (lowering/cluster_queue_to_nvvm.py): "param" is the kernel_tag of the
# queue's shared array (CLUSTER_QUEUE_SYMBOL_PREFIX + its name), "expected" the parity waited.
SPIN_SITE_CLUSTER_QUEUE_FREE = 4
SPIN_SITE_CLUSTER_QUEUE_FULL = 5
SPIN_SITES = {SPIN_SITE_SEMAPHORE: "semaphore", SPIN_SITE_QUEUE_FREE: "free entry",
              SPIN_SITE_QUEUE_FULL: "full entry", SPIN_SITE_MBARRIER: "mbarrier",
              SPIN_SITE_CLUSTER_QUEUE_FREE: "free entry", SPIN_SITE_CLUSTER_QUEUE_FULL:
              "full entry"}
CLUSTER_QUEUE_SYMBOL_PREFIX = "__tilesync_cluster_queue_"


def cluster_queue_symbol(queue: str) -> str:
    """The shared array of cluster queue `queue` in its kernels' gpu.module (a timed-out wait
    names it by its kernel_tag)."""
    return f"{CLUSTER_QUEUE_SYMBOL_PREFIX}{queue}"


# ---------------------------------------------------------------------------------------------
# The memory of a dataflow queue (what the lowering addresses and the runtime allocates)
# ---------------------------------------------------------------------------------------------

QUEUE_LINE_BYTES = 128  # an L2 line: counters and entry metadata never share one


@dataclass(frozen=True)
class QueueLayout:
    """One queue's ring in global memory, allocated zeroed once and never reset.

    A header of cache lines: the producer stage's ticket counter (line 0), then one ticket
    counter per consumer stage (line 1 + c). Then `entries` entries of `entry_bytes` each: a
    metadata line (the `full` count, fills of the entry so far, at byte 0; the `empty` count,
    consumer-stage releases so far, at byte FULL_TO_EMPTY) followed by the payload, padded to a
    line. Tickets are i64; the counts are i32, compared modulo 2^32, so nothing overflows.
    """

    entries: int
    payload_bytes: int
    consumers: int

    EMPTY_OFFSET = 64  # bytes from an entry's `full` word to its `empty` word

    @property
    def header_bytes(self) -> int:
        return (1 + self.consumers) * QUEUE_LINE_BYTES

    @property
    def entry_bytes(self) -> int:
        line = QUEUE_LINE_BYTES
        return line + -(-self.payload_bytes // line) * line

    @property
    def total_bytes(self) -> int:
        return self.header_bytes + self.entries * self.entry_bytes

    @staticmethod
    def counter_offset(line: int) -> int:
        """Byte offset of ticket counter `line` (0: the producer's, 1 + c: consumer c's)."""
        return line * QUEUE_LINE_BYTES

    def entry_offset(self, entry: int) -> int:
        """Byte offset of entry `entry`'s metadata line; its payload follows the line."""
        return self.header_bytes + entry * self.entry_bytes


def kernel_tag(name: str) -> int:
    """How a debug record names its kernel (or an mbarrier's shared array): a positive i32
    the host maps back to the name."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


# ---------------------------------------------------------------------------------------------
# Kernel parameter kinds
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamKind:
    """A kind of kernel parameter: its size in bytes and, for integers, the range it holds;
    `align` for an opaque blob passed by value (its bytes copied into the parameter space)."""

    name: str
    size: int
    int_range: tuple[int, int] | None = None  # None: a float, a pointer or a blob
    align: int | None = None  # a blob: its alignment in the parameter space

    @property
    def is_float(self) -> bool:
        return self.int_range is None and self.name != "ptr" and self.align is None


TENSOR_MAP = "tmap"
"""The kind of a TMA tensor map (CUtensorMap): 128 bytes by value, 64-byte aligned, which the
kernel reads in place (`__grid_constant__`) through the parameter's address."""


def _int_kind(name: str, bits: int, signed: bool = True) -> ParamKind:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return ParamKind(name, bits // 8, (low, high))


PARAM_KINDS: dict[str, ParamKind] = {
    kind.name: kind
    for kind in (
        ParamKind("ptr", 8),
        _int_kind("i8", 8),
        _int_kind("i16", 16),
        _int_kind("i32", 32),
        _int_kind("u32", 32, signed=False),
        _int_kind("i64", 64),
        _int_kind("u64", 64, signed=False),
        ParamKind("f16", 2),
        ParamKind("bf16", 2),
        ParamKind("f32", 4),
        ParamKind("f64", 8),
        ParamKind(TENSOR_MAP, 128, align=64),
    )
}

# ---------------------------------------------------------------------------------------------
# Device limits (CUDA occupancy calculator values) and architectures
# ---------------------------------------------------------------------------------------------

STATIC_SHARED_LIMIT = 48 * 1024  # static shared memory per block; more needs the opt-in
GENERIC_ADDRESS_SPACE = 0  # NVPTX's generic address space (a memref's memory space 0)
SHARED_ADDRESS_SPACE = 3  # NVPTX's address space of shared memory (a memref's memory space)
SHARED_CLUSTER_ADDRESS_SPACE = 7  # NVPTX's of a cluster's distributed shared memory (sm_90)


@dataclass(frozen=True)
class DeviceLimits:
    """Per-SM and per-block limits of one architecture (CUDA occupancy calculator values)."""

    arch: str
    warp_size: int = 32
    warpgroup_warps: int = 4  # warps of a warpgroup (wgmma, setmaxnreg act on whole ones)
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    registers_per_sm: int = 65536
    max_registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_alloc_unit: int = 256  # registers are allocated per warp in units of this many
    sub_partitions: int = 4  # register files per SM; a warp's registers live in one
    shared_per_sm: int = 233472  # bytes, the largest carveout (228 KB on sm_90)
    max_shared_per_block: int = 232448  # bytes, opt-in maximum (227 KB on sm_90)
    shared_alloc_unit: int = 128  # bytes
    reserved_shared_per_block: int = 1024  # bytes the system keeps per block (sm_80+)
    max_grid_dim: tuple[int, int, int] = ((1 << 31) - 1, 65535, 65535)

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


SM_90 = DeviceLimits(arch="sm_90")
SM_80 = DeviceLimits(arch="sm_80", shared_per_sm=167936, max_shared_per_block=166912)
MAX_THREADS_PER_BLOCK = SM_90.max_threads_per_block


def all_resident(kernels: Sequence[tuple[int, int]], sms: int) -> bool:
    """Whether every block of `kernels` — (blocks, blocks per SM) of each — can be resident at
    once on `sms` SMs, whatever SMs and order the hardware dispatches them in.

    The compiler proves co-residency with it and a launch may rely on it, so both sides must
    count the same way. A block of a kernel that fits b per SM takes at most 1/b of every per-SM
    resource, so a block finds no SM only when every SM is full enough to refuse it. Either
    bound below rules that out:
    * at most sms · min(b) blocks in all: refusing a block takes min(b) others on every SM;
    * in units of 1/lcm(b) of an SM (b per SM: lcm/b units each), for every block size u the
      other blocks hold fewer than sms · (lcm - u + 1) units: refusing a u-unit block takes more
      than lcm - u units on every SM.
    """
    kernels = [(blocks, per_sm) for blocks, per_sm in kernels if blocks > 0]
    if any(per_sm < 1 for _, per_sm in kernels):
        return False
    if not kernels:
        return True
    if sum(blocks for blocks, _ in kernels) <= sms * min(per_sm for _, per_sm in kernels):
        return True
    capacity = math.lcm(*(per_sm for _, per_sm in kernels))
    total = sum(blocks * (capacity // per_sm) for blocks, per_sm in kernels)
    return all(sms * (capacity - unit + 1) > total - unit
               for unit in {capacity // per_sm for _, per_sm in kernels})


@dataclass(frozen=True)
class Architecture:
    """A compilation target: the PTX features LLVM is asked for and what the chip offers.

    PTX ISA 8.0 (CUDA 12.0) is the first with sm_90a and covers everything tilesync emits
    (griddepcontrol, cluster scope, wgmma fences); it is accepted for sm_80 as well.
    """

    name: str
    ptx_features: str
    limits: DeviceLimits
    wgmma: bool = False  # warpgroup MMA and setmaxnreg (sm_90a only)
    tma: bool = False  # cp.async.bulk.tensor, mbarrier expect-tx
    pdl: bool = False  # griddepcontrol (programmatic dependent launch)


ARCHITECTURES: dict[str, Architecture] = {
    "sm_80": Architecture("sm_80", "+ptx80", SM_80),
    "sm_90": Architecture("sm_90", "+ptx80", SM_90, tma=True, pdl=True),
    "sm_90a": Architecture("sm_90a", "+ptx80", replace(SM_90, arch="sm_90a"), wgmma=True,
                           tma=True, pdl=True),
}
TARGETS = tuple(ARCHITECTURES)
DEFAULT_TARGET = "sm_90"
ARCH_LIMITS: dict[str, DeviceLimits] = {name: a.limits for name, a in ARCHITECTURES.items()}
MOST_BLOCKS_PER_SM = max(limits.max_blocks_per_sm for limits in ARCH_LIMITS.values())
MOST_WARPS_PER_SM = max(limits.max_warps_per_sm for limits in ARCH_LIMITS.values())


def warps_of(threads: int) -> int:
    """The warps a block of `threads` threads takes (an SM hands out whole warps)."""
    return -(-max(threads, 1) // SM_90.warp_size)


def most_blocks_per_sm(threads: int) -> int:
    """The most blocks of `threads` threads an SM of any target holds: its block and warp
    slots (registers and shared memory may allow fewer), an upper bound whatever the kernel."""
    return min(MOST_BLOCKS_PER_SM, MOST_WARPS_PER_SM // warps_of(threads))


def architecture(name: str) -> Architecture:
    """The target called `name`; ValueError naming the known ones otherwise."""
    try:
        return ARCHITECTURES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown target '{name}'; choose one of {', '.join(TARGETS)}") \
            from None


def limits_for_arch(arch: str) -> DeviceLimits:
    try:
        return ARCH_LIMITS[arch]
    except KeyError:
        raise ValueError(
            f"no occupancy limits for arch '{arch}' (known: {', '.join(ARCH_LIMITS)})"
        ) from None


MAX_BLOCK_DIM = (1024, 1024, 64)  # threads per block along x, y, z (every architecture)


def launch_bounds_error(block: tuple[int, ...] | None = None,
                        min_blocks_per_sm: int | None = None) -> str | None:
    """Why a kernel's declared launch bounds (`gpu.known_block_size`, becoming `.maxntid`;
    `tilesync.min_blocks_per_sm`, becoming `.minnctapersm`) are impossible, or None. LLVM ends
    the process on some of them, so they are checked before it sees them."""
    if block is not None:
        if not 1 <= len(block) <= 3:
            return f"a block has 1 to 3 dimensions, got {len(block)}"
        for axis, (extent, most) in enumerate(zip(block, MAX_BLOCK_DIM)):
            if not 1 <= extent <= most:
                return (f"block dimension {'xyz'[axis]} must be in [1, {most}], got {extent}")
        threads = 1
        for extent in block:
            threads *= extent
        if threads > MAX_THREADS_PER_BLOCK:
            return (f"a block has at most {MAX_THREADS_PER_BLOCK} threads, got "
                    f"{' x '.join(map(str, block))} = {threads}")
    if min_blocks_per_sm is not None:
        if not 1 <= min_blocks_per_sm <= MOST_BLOCKS_PER_SM:
            return (f"blocks per SM must be in [1, {MOST_BLOCKS_PER_SM}], got "
                    f"{min_blocks_per_sm}")
    return None


def whole_warps_error(threads: int) -> str | None:
    """Why `threads` cannot be the threads of a group that runs an op together (`threads N` of
    a sync.post or a queue op: its named barrier counts whole warps), or None."""
    if 0 < threads <= MAX_THREADS_PER_BLOCK and threads % SM_90.warp_size == 0:
        return None
    return (f"threads must be whole warps (a multiple of {SM_90.warp_size} up to "
            f"{MAX_THREADS_PER_BLOCK}), got {threads}")


def grid_error(grid: tuple[int, ...]) -> str | None:
    """Why a launch grid (in blocks, one per tile) cannot be launched, or None: 1 to 3
    dimensions within CUDA's limits (x < 2^31, y and z at most 65535)."""
    if not 1 <= len(grid) <= 3:
        return f"a grid has 1 to 3 dimensions, got {len(grid)}"
    for axis, (extent, most) in enumerate(zip(grid, SM_90.max_grid_dim)):
        if not 1 <= extent <= most:
            return f"grid dimension {'xyz'[axis]} must be in [1, {most}], got {extent}"
    return None


def target_for_device(arch: str) -> str:
    """The target to compile for on a device of compute capability `arch` ("sm_90", ...):
    itself where we support it, else the default."""
    return arch if arch in ARCHITECTURES else DEFAULT_TARGET


# ---------------------------------------------------------------------------------------------
# What the compiler hands the runtime
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelSignature:
    """How the host calls one kernel: its module, name and parameter kinds in order."""

    module: str
    name: str
    params: tuple[str, ...]  # names of PARAM_KINDS
    block: tuple[int, ...] | None = None
    # Roles of the trailing parameters that passes appended: the host binds them; the user
    # passes the leading ones.
    sync_args: tuple[Role, ...] = ()
    order_table: tuple[int, ...] | None = None  # the tile order an ordered sync.tile reads
    dynamic_shared_bytes: int = 0  # shared memory to launch with (its module's dynamic array)

    @property
    def user_params(self) -> tuple[str, ...]:
        return self.params[: len(self.params) - len(self.sync_args)]

    def role_of(self, param: int) -> Role | None:
        """The role of parameter `param` (None for a user parameter or out of range)."""
        first = len(self.params) - len(self.sync_args)
        return self.sync_args[param - first] if first <= param < len(self.params) else None


@dataclass
class CompiledProgram:
    """PTX per gpu.module, the kernels' signatures, and the IR the host plan is read from."""

    ptx_by_module: dict[str, str]
    llvm_ir_by_module: dict[str, str]
    kernels: dict[str, KernelSignature]
    module: ModuleOp  # the lowered IR; host-level sync ops are still in it
    ir_after: dict[str, str] = field(default_factory=dict)
    pass_seconds: dict[str, float] = field(default_factory=dict)
    target: str = DEFAULT_TARGET

    @property
    def ptx(self) -> str:
        """The PTX when the program has one gpu.module (the common case)."""
        if len(self.ptx_by_module) != 1:
            raise CompileError(f"program has {len(self.ptx_by_module)} gpu.modules; "
                             "use ptx_by_module")
        return next(iter(self.ptx_by_module.values()))


# ---------------------------------------------------------------------------------------------
# Environment variables: every TILESYNC_* on/off switch is read by `env_flag`
# ---------------------------------------------------------------------------------------------

FLAG_ON = ("1", "true", "yes", "on")
FLAG_OFF = ("0", "false", "no", "off")


def env_flag(name: str, default: bool = False) -> bool:
    """The on/off environment variable `name`: 1/true/yes/on or 0/false/no/off (any case);
    unset or empty is `default`. Anything else is a TilesyncError naming the variable (a typo
    must not silently turn a switch on, nor off)."""
    value = os.environ.get(name, "")
    text = value.strip().lower()
    if not text:
        return default
    if text in FLAG_ON:
        return True
    if text in FLAG_OFF:
        return False
    raise TilesyncError(f"{name}={value!r} is not a switch: set it to one of "
                        f"{', '.join(FLAG_ON)} (on) or {', '.join(FLAG_OFF)} (off)")
