"""The IR builder of the kernel generators: xDSL's `Builder` at the end of a block, with the
index arithmetic the generators write on every line.

    b = BlockBuilder(block)
    row = b.addi(b.muli(tile_x, 128), warp_m)      # ints become index constants
    b.insert(tl.CpAsyncCommitOp())                  # xDSL's Builder.insert
    x = b.emit(arith.ExtFOp(value, f32))            # insert, then the op's result

Index constants are made once per block (the first use places them), `addi(x, 0)`,
`subi(x, 0)` and `muli(x, 1)` are `x`: the generated IR holds only the arithmetic a tile needs.
The arithmetic and the index constants are built like the first of their kind
(`compat.op_templates`): a kernel has thousands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, ModuleOp, StringAttr, f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from tilesync.compat.op_templates import TEMPLATES
from tilesync.dialects import sync
from tilesync.dialects import tile as tl

Index = SSAValue | int
_INDEX = IndexType()
"""An index value, or a constant that the builder materializes."""


class BlockBuilder(Builder):
    """Appends ops to the end of `block`."""

    def __init__(self, block: Block):
        super().__init__(InsertPoint.at_end(block))
        self.block = block
        self._index_constants: dict[int, SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        """Insert `op` and return its (first) result."""
        return self.insert(op).results[0]

    def idx(self, value: int) -> SSAValue:
        """An index constant (one per value and block)."""
        if value not in self._index_constants:
            self._index_constants[value] = self.emit(
                TEMPLATES.int_constant(arith.ConstantOp, value, _INDEX))
        return self._index_constants[value]

    def f32(self, value: float) -> SSAValue:
        return self.emit(arith.ConstantOp(FloatAttr(value, f32)))

    def _index(self, value: Index) -> SSAValue:
        return self.idx(value) if isinstance(value, int) else value

    def when(self, cond: SSAValue, emit: Callable[[BlockBuilder], None]) -> None:
        """`scf.if cond` whose body `emit` builds (no results)."""
        then = Block()
        emit(BlockBuilder(then))
        then.add_op(scf.YieldOp())
        self.insert(scf.IfOp(cond, [], Region(then)))

    def _binary(self, kind: type[Operation], lhs: Index, rhs: Index) -> SSAValue:
        return self.emit(TEMPLATES.binary(kind, self._index(lhs), self._index(rhs)))

    def addi(self, lhs: Index, rhs: Index) -> SSAValue:
        if isinstance(rhs, int) and rhs == 0:
            return self._index(lhs)
        return self._binary(arith.AddiOp, lhs, rhs)

    def subi(self, lhs: Index, rhs: Index) -> SSAValue:
        if isinstance(rhs, int) and rhs == 0:
            return self._index(lhs)
        return self._binary(arith.SubiOp, lhs, rhs)

    def muli(self, lhs: Index, rhs: Index) -> SSAValue:
        if isinstance(rhs, int) and rhs == 1:
            return self._index(lhs)
        return self._binary(arith.MuliOp, lhs, rhs)

    def divui(self, lhs: Index, rhs: Index) -> SSAValue:
        return self._binary(arith.DivUIOp, lhs, rhs)

    def remui(self, lhs: Index, rhs: Index) -> SSAValue:
        return self._binary(arith.RemUIOp, lhs, rhs)

    def andi(self, lhs: Index, rhs: Index) -> SSAValue:
        return self._binary(arith.AndIOp, lhs, rhs)

    def xori(self, lhs: Index, rhs: Index) -> SSAValue:
        return self._binary(arith.XOrIOp, lhs, rhs)

    def addf(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.emit(TEMPLATES.binary(arith.AddfOp, lhs, rhs))

    def mulf(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        return self.emit(TEMPLATES.binary(arith.MulfOp, lhs, rhs))

    def ult(self, lhs: SSAValue, rhs: Index) -> SSAValue:
        return self.emit(arith.CmpiOp(lhs, self._index(rhs), "ult"))

    def load_f32(self, memory: SSAValue, indices: list[SSAValue]) -> SSAValue:
        """An element of `memory` (fp16), extended to f32 for the arithmetic."""
        loaded = self.emit(TEMPLATES.build(
            (memref.LoadOp, "get"), (memory, *indices),
            (memory.type.element_type,), lambda: memref.LoadOp.get(memory, indices)))  # type: ignore
        return self.emit(TEMPLATES.cast(arith.ExtFOp, loaded, f32))


def block_tile(b: BlockBuilder, sync_hooks: bool) -> tuple[SSAValue, SSAValue]:
    """The (x, y) tile a block computes: `sync.tile`'s where the kernel has sync hooks (the
    cuSync passes fill it, and may order the tiles otherwise than the blocks), else the
    block's ids."""
    if sync_hooks:
        tile_x, tile_y = b.insert(sync.TileOp(rank=2)).results
        return tile_x, tile_y
    return (b.emit(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))),
            b.emit(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.Y))))


def warp_allreduce(b: BlockBuilder, value: SSAValue, combine: type[Operation],
                   lanes: int = 32) -> SSAValue:
    """`combine` (an arith binary op) over aligned groups of `lanes` lanes (a power of two; 32:
    the warp, 4: the lanes that hold one row of an mma accumulator), every lane of a group
    getting its group's result: log2(lanes) `tile.shuffle bfly` steps."""
    offset = lanes // 2
    while offset:
        other = b.emit(tl.ShuffleOp("bfly", value, offset))
        value = b.emit(TEMPLATES.binary(combine, value, other))
        offset //= 2
    return value


def warp_per_row_module(name: str, params: Sequence[tuple[str, Attribute]], rows: int,
                        warps: int, emit_row: Callable[..., None]) -> ModuleOp:
    """A bulk kernel of one warp a row: `params` (name, type) in order, block b's warps
    taking rows b · warps ..; `emit_row(b, args, row, lane)` emits a warp's row (warp-uniform
    guard: a row past `rows` does nothing)."""
    kernel = gpu.FuncOp(name, ([t for _, t in params], []), kernel=True,
                        known_block_size=[32 * warps, 1, 1])
    args = dict(zip((n for n, _ in params), kernel.body.block.args, strict=True))
    for hint, arg in args.items():
        arg.name_hint = hint
    b = BlockBuilder(kernel.body.block)
    tid = b.emit(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    bid = b.emit(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    row = b.addi(b.muli(bid, warps), b.divui(tid, 32))
    body = Block()
    rb = BlockBuilder(body)
    emit_row(rb, args, row, rb.remui(tid, 32))
    rb.insert(scf.YieldOp())
    b.insert(scf.IfOp(b.ult(row, rows), [], Region(body)))
    b.insert(gpu.ReturnOp([]))
    module = gpu.ModuleOp(StringAttr(f"{name}_module"),  # type: ignore[arg-type]
                          Region(Block([kernel])))
    return ModuleOp([module])


__all__ = ["BlockBuilder", "Index", "block_tile", "warp_allreduce", "warp_per_row_module"]
