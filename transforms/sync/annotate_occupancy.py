"""`sync-annotate-occupancy`: blocks per SM, waves and the limiting resource of every stage.

    tilesync-opt prog.mlir -p 'sync-annotate-occupancy{sms=132 arch=sm_90}'

For each `sync.stage` the pass reads, from the stage's attribute dictionary only:

* threads per block: the product of `block`;
* `registers` (per thread) — filled by the driver from nvJitLink's report (`tilesync.compile`
  compiles the kernels as they are before this pass runs and records them, unless the pass
  is given `regs_per_thread`); without it the option `regs_per_thread` (default 32) is used,
  as `tilesync-opt` and `lower` run the pass as written;
* `shared_bytes` (static shared memory per block, from nvJitLink) plus `dynamic_shared_bytes`
  (the launch's dynamic shared memory, 0 if absent); without `shared_bytes` the option
  `smem_per_block` (default 0) stands for the static part, but never less than the
  shared-memory globals the kernel uses in the IR (`memref.global` in address space 3 that it
  reaches through `memref.get_global`): a kernel declaring 48 KB holds them, and counting
  fewer would claim blocks co-resident that cannot be (W would then drop a needed
  wait-kernel);

and writes `blocks_per_sm` (i64), `waves` (f64: blocks / (sms × blocks_per_sm)) and `limiter`
(string: the resources at the limit, e.g. "threads+registers") per the occupancy calculator of
`analysis.occupancy`. It never guesses a kernel's registers from a table: what is not on the stage
comes from the options, whose defaults are the documented ones above. A stage that cannot run
(a block exceeds the per-block limits) is an error.

The attributes live in the stage's generic attribute dictionary (no dialect change needed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import gpu, memref
from xdsl.dialects.builtin import (
    FloatAttr,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from tilesync.analysis.occupancy import Occupancy, blocks_per_sm
from tilesync.analysis.stage_graph import StageGraph
from tilesync.analysis.wave_model import StageWaves
from tilesync.contract import (
    ARCHITECTURES,
    BLOCKS_PER_SM_ATTR,
    DYNAMIC_SHARED_BYTES_STAGE_ATTR,
    LIMITER_ATTR,
    REGISTERS_ATTR,
    SHARED_ADDRESS_SPACE,
    SHARED_BYTES_ATTR,
    WAVES_ATTR,
    limits_for_arch,
)
from tilesync.dialects.locations import OpDiagnostic
from tilesync.dialects.sync import StageOp

PASS_NAME = "sync-annotate-occupancy"


DEFAULT_REGISTERS = 32


def int_attribute(op: Operation, name: str, pass_name: str = PASS_NAME) -> int | None:
    """The integer value of attribute `name` on `op`, None when absent; a diagnostic when it
    is there but not an integer."""
    attr = op.attributes.get(name)
    if attr is None:
        return None
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, IntAttr):
        return attr.data
    raise OpDiagnostic(
        f"{pass_name}: {stage_label(op)}: attribute '{name}' must be an integer, got {attr}", op
    )


def stage_label(op: Operation) -> str:
    if isinstance(op, StageOp):
        return f"stage @{op.sym_name.data}"
    return op.name


def stage_occupancy(
    stage: StageOp,
    arch: str = "sm_90",
    regs_per_thread: int | None = None,
    smem_per_block: int | None = None,
) -> tuple[Occupancy, int, int]:
    """(occupancy, registers, shared bytes) of `stage` from its attributes and the defaults."""
    registers = int_attribute(stage, REGISTERS_ATTR)
    if registers is None:
        registers = DEFAULT_REGISTERS if regs_per_thread is None else regs_per_thread
    static = int_attribute(stage, SHARED_BYTES_ATTR)
    if static is None:
        static = max(0 if smem_per_block is None else smem_per_block, declared_shared_bytes(stage))
    dynamic = int_attribute(stage, DYNAMIC_SHARED_BYTES_STAGE_ATTR) or 0
    if registers < 0 or static < 0 or dynamic < 0:
        raise OpDiagnostic(
            f"{PASS_NAME}: {stage_label(stage)}: registers and shared memory must be >= 0, "
            f"got {registers} registers, {static} + {dynamic} bytes", stage
        )
    try:
        limits = limits_for_arch(arch)
    except ValueError as error:
        raise OpDiagnostic(f"{PASS_NAME}: {error}", stage) from None
    threads = math.prod(stage.block_shape)
    return blocks_per_sm(threads, registers, static + dynamic, limits), registers, static + dynamic


def declared_shared_bytes(stage: StageOp) -> int:
    """Bytes of the shared-memory globals (`memref.global` of a static shape in address space
    SHARED_ADDRESS_SPACE) that `stage`'s kernel reads through `memref.get_global`: what it
    holds at least, before the compiler adds its own (0 where the kernel is not in the IR)."""
    module = stage.parent_op()
    kernel = SymbolTable.lookup_symbol(module, stage.kernel) if module is not None else None
    if not isinstance(kernel, gpu.FuncOp):
        return 0
    gpu_module = kernel.parent_op()
    total = 0
    for name in {op.name_.string_value() for op in kernel.walk()
                 if isinstance(op, memref.GetGlobalOp)}:
        glob = SymbolTable.lookup_symbol(gpu_module, name) if gpu_module is not None else None
        if not isinstance(glob, memref.GlobalOp):
            continue
        kind = glob.type
        space = kind.memory_space if isinstance(kind, MemRefType) else None
        if not (isinstance(space, IntegerAttr) and space.value.data == SHARED_ADDRESS_SPACE):
            continue
        shape = kind.get_shape()
        width = getattr(kind.element_type, "bitwidth", None)
        if min(shape, default=0) >= 0 and isinstance(width, int):
            total += math.prod(shape) * -(-width // 8)
    return total


def annotated_waves(stage: StageOp, sms: int, pass_name: str) -> StageWaves:
    """The stage's waves from its `blocks_per_sm` attribute; a diagnostic when missing (the
    passes that decide W and T refuse to guess an occupancy)."""
    bpsm = int_attribute(stage, BLOCKS_PER_SM_ATTR, pass_name)
    if bpsm is None:
        raise OpDiagnostic(
            f"{pass_name}: {stage_label(stage)} has no '{BLOCKS_PER_SM_ATTR}' attribute; run "
            f"sync-annotate-occupancy first (after the driver records 'registers' and "
            f"'shared_bytes'), this pass does not guess an occupancy", stage
        )
    if bpsm < 1:
        raise OpDiagnostic(
            f"{pass_name}: {stage_label(stage)} has {BLOCKS_PER_SM_ATTR} = {bpsm}: it cannot run",
            stage,
        )
    waves = StageWaves(math.prod(stage.grid_shape), bpsm, sms)
    recorded = stage.attributes.get(WAVES_ATTR)
    if isinstance(recorded, FloatAttr) and not math.isclose(
        recorded.value.data, float(waves.waves), rel_tol=1e-9
    ):
        raise OpDiagnostic(
            f"{pass_name}: {stage_label(stage)} was annotated with {WAVES_ATTR} = "
            f"{recorded.value.data:g}, but {waves.blocks} blocks on {sms} SMs x {bpsm} per SM "
            f"are {float(waves.waves):g} waves: the SM count differs from the annotation's",
            stage,
        )
    return waves


@dataclass(frozen=True)
class AnnotateOccupancyPass(ModulePass):
    """Set `blocks_per_sm`, `waves` and `limiter` on every sync.stage."""

    name = "sync-annotate-occupancy"

    sms: int = 132
    arch: str = "sm_90"
    regs_per_thread: int | None = None
    smem_per_block: int | None = None

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")
        if self.arch not in ARCHITECTURES:
            raise ValueError(f"option 'arch' is one of {', '.join(ARCHITECTURES)}, got "
                             f"'{self.arch}'")
        limits = ARCHITECTURES[self.arch].limits
        if self.regs_per_thread is not None and not \
                1 <= self.regs_per_thread <= limits.max_registers_per_thread:
            raise ValueError(f"option 'regs_per_thread' must be in [1, "
                             f"{limits.max_registers_per_thread}], got {self.regs_per_thread}")
        if self.smem_per_block is not None and self.smem_per_block < 0:
            raise ValueError(f"option 'smem_per_block' must not be negative, got "
                             f"{self.smem_per_block}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for stage in StageGraph.of(op).stages.values():
            occupancy, registers, shared = stage_occupancy(
                stage, self.arch, self.regs_per_thread, self.smem_per_block
            )
            if occupancy.blocks_per_sm == 0:
                raise OpDiagnostic(
                    f"{PASS_NAME}: {stage_label(stage)} cannot run on {self.arch}: "
                    f"{occupancy.reason} (block {stage.block_shape}, {registers} registers, "
                    f"{shared} bytes of shared memory)", stage
                )
            waves = StageWaves(math.prod(stage.grid_shape), occupancy.blocks_per_sm, self.sms)
            stage.attributes[BLOCKS_PER_SM_ATTR] = IntegerAttr(occupancy.blocks_per_sm, i64)
            stage.attributes[WAVES_ATTR] = FloatAttr(float(waves.waves), f64)
            stage.attributes[LIMITER_ATTR] = StringAttr(occupancy.limiter)
