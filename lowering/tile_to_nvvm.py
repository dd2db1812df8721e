"""`convert-tile-to-nvvm`: the tile dialect to nvvm ops, llvm ops and scf.

Each tile op becomes the nvvm op of its PTX instruction plus the address arithmetic for this
lane (convert-nvvm-to-llvm then picks the intrinsic or the inline PTX):

    tile.ldmatrix     nvvm.ldmatrix (x2 or x4, [trans]) on an `!llvm.ptr<3>`
    tile.mma          nvvm.mma.sync f16 (A/B registers as vector<2xf16>) or bf16 (as i32)
    tile.cp_async     nvvm.cp.async.shared.global (16 bytes, cg; with a src-size to zero-fill)
    tile.cp_async_commit / _wait   nvvm.cp.async.commit.group / .wait.group
    tile.load_l2      nvvm.ld.global.cg.v2 (16 bytes at L2 as two i64, joined into an i128)
    tile.copy_out     an i128 llvm.load from `!llvm.ptr<3>` and an i128 llvm.store to global
                      (ld.shared / st.global of 16 bytes), in an scf.if when `masked`
    tile.fill         llvm.mlir.undef + llvm.insertvalue
    tile.store_acc    the epilogue region inlined per element, then `nvvm.cvt.pack` (f16x2 or
                      bf16x2) and one 32-bit store per pair of columns (scf.if around each pair
                      when `masked`); f32 and odd widths: scalar stores; `reduce`: nvvm.red;
                      `packed`: value k of the lane at element 32 k + lane of its block
    tile.take_acc     nvvm.atom exch (0) per element (`keep`: nvvm.ld relaxed); from shared
                      memory a plain load (`cta`: nvvm.ld of the peer CTA's shared memory,
                      mapa); `packed`: store_acc's addresses
    tile.add_acc      llvm.fadd per element
    tile.arrive       the split-K arrival, built by `sync_primitives.SyncBuilder`
    tile.shuffle      nvvm.shfl.sync
    tile.wgmma*       nvvm.wgmma.mma_async on shared-memory descriptors, nvvm.wgmma.fence /
                      commit / wait; tile.fence_proxy_async: nvvm.fence.proxy.async
    tile.mbarrier_*   nvvm.mbarrier.init (+ fence.mbarrier_init), .arrive [expect_tx], and an
                      scf.while on nvvm.mbarrier.try_wait.parity that traps after
                      `mbarrier_timeout_ns(default_timeout_ns)` (debug: naming the barrier
                      in the kernel's debug record first)
    tile.tma_*        nvvm.cp.async.bulk.tensor (load: shared <- global, completing on a
                      barrier; store: global <- shared in bulk groups), the map by its generic
                      address (the kernel parameter); coordinates reversed (innermost first)
                      (multicast: to the cluster's CTAs of a mask); a remote arrive (`cta`)
                      maps the barrier's address into the peer CTA (mapa)
    tile.bulk_*       nvvm.cp.async.bulk (1-D: load completing on a barrier, store in bulk
                      groups); tile.tma_store_wait `writes`: wait_group without `.read`
    tile.named_barrier, tile.cluster_barrier, tile.setmaxnreg, tile.prefetch_tensor_map:
                      their nvvm ops

Fragments become literal structs of their registers: A `!llvm.struct<(i32, i32, i32, i32)>`,
B `!llvm.struct<(i32, i32)>`, the accumulator `!llvm.struct<(f32, f32, f32, f32)>` (what the
instructions return). Fragment-typed values that are not tile ops (scf.for iter_args and
results, block arguments, function signatures) are retyped in place, so the pass must run
before `lower-scf-to-cf`; it emits nvvm ops and `scf.if`, so it must run before
`convert-nvvm-to-llvm` and `lower-scf-to-cf` (right after `convert-sync-to-nvvm` is right).

Shared-memory offsets are computed in i32 (a block has at most 227 KiB), global offsets in
i64. `math.tanh`, `math.exp` and `math.rsqrt` (f32, in an epilogue or anywhere in a kernel)
become `nvvm.tanh.approx.f32`, `nvvm.ex2.approx.ftz.f32` and `nvvm.rsqrt.approx.f32` (the
approximate GELU, softmax and layer norm need them; nothing else lowers math yet).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, llvm, math, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    VectorType,
    f32,
    i32,
    i64,
    i128,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tilesync.compat.cse import cse
from tilesync.compat.op_templates import TEMPLATES, OpTemplates, create
from tilesync.compat.rewrite_driver import apply_patterns, walk_ops
from tilesync.contract import DEBUG_RECORD, SPIN_SITE_MBARRIER, SYNC_NAMED_BARRIER, kernel_tag
from tilesync.dialects import nvvm, tile
from tilesync.dialects.kernel_args import sync_arg
from tilesync.dialects.llvmx import AddrSpaceCastOp
from tilesync.lowering.llvm_conversion import located_type_errors, unsupported_op_error
from tilesync.lowering.sync_primitives import SyncBuilder
from tilesync.lowering.sync_to_nvvm import (
    DEFAULT_TIMEOUT_NS,
    check_timeout_ns,
    mbarrier_timeout_ns,
)
from tilesync.lowering.type_conversion import convert_type, unrealized_cast

PASS_NAME = "convert-tile-to-nvvm"

SHARED_PTR = llvm.LLVMPointerType(IntAttr(3))
_INDEX = IndexType()


# One struct per (accumulator?, registers): a kernel asks for them thousands of times, and a
# wgmma accumulator's struct has 32 to 128 members to build and verify.
_FRAG_STRUCTS: dict[tuple[bool, int], llvm.LLVMStructType] = {}


def frag_llvm_type(frag: tile.FragType) -> llvm.LLVMStructType:
    """The literal struct of a fragment's 32-bit registers."""
    key = (frag.role.data == "acc", frag.registers)
    found = _FRAG_STRUCTS.get(key)
    if found is None:
        element = f32 if key[0] else i32
        found = _FRAG_STRUCTS[key] = llvm.LLVMStructType.from_type_list([element] * key[1])
    return found


def convert_frag_types(t: Attribute) -> Attribute:
    if isinstance(t, tile.FragType):
        return frag_llvm_type(t)
    if isinstance(t, FunctionType):
        return FunctionType.from_lists(
            [convert_frag_types(x) for x in t.inputs.data],
            [convert_frag_types(x) for x in t.outputs.data],
        )
    return t


# --------------------------------------------------------------------------------------------
# A small emitter: llvm ops inserted before the matched op (or appended to a block)
# --------------------------------------------------------------------------------------------


class _State:
    """Values shared by all tile ops of one pass run, each computed once where it dominates.

    Lane-id arithmetic and constants go to the start of the function's entry block; an index
    converted to i32/i64 and the registers of an A/B fragment go right after their definition.
    This keeps the lowered kernel small (every later pass walks it).
    """

    def __init__(self) -> None:
        self.prelude: dict[tuple[Operation, object], SSAValue] = {}
        self.prelude_end: dict[Operation, Operation] = {}
        self.converted: dict[tuple[SSAValue, Attribute], SSAValue] = {}
        # A/B fragment structs -> their registers, (struct, as <2 x half>) as the key
        self.registers: dict[tuple[SSAValue, bool], list[SSAValue]] = {}
        # wgmma accumulator structs -> their f32 registers (a chained wgmma reads them as is)
        self.acc_scalars: dict[SSAValue, list[SSAValue]] = {}
        # the stand-ins of wgmma results only wgmmas read -> their f32 registers
        self.passed_accs: dict[SSAValue, list[SSAValue]] = {}
        # Attributes are immutable: one `position` array per index, one struct type per
        # member list, shared by all the ops that use them.
        self.positions: dict[int, DenseArrayBase] = {}
        self.struct_types: dict[tuple[Attribute, ...], llvm.LLVMStructType] = {}
        self.templates = OpTemplates()
        # (block, key) -> the value an op of the block made (`_Emitter.once_in_scope`)
        self.computed: dict[tuple[Block, Hashable], SSAValue] = {}

    def position(self, index: int) -> DenseArrayBase:
        found = self.positions.get(index)
        if found is None:
            found = self.positions[index] = DenseArrayBase.from_list(i64, [index])
        return found

    def struct_type(self, members: Sequence[Attribute]) -> llvm.LLVMStructType:
        key = tuple(members)
        found = self.struct_types.get(key)
        if found is None:
            found = self.struct_types[key] = llvm.LLVMStructType.from_type_list(list(key))
        return found

    def extract_op(self, struct: SSAValue, index: int, type_: Attribute) -> Operation:
        """`llvm.extractvalue` as `llvm.ExtractValueOp(position, struct, type_)` builds it,
        without the generic constructor's checks (a kernel has hundreds)."""
        return create(llvm.ExtractValueOp, (struct,), (type_,),
                      {"position": self.position(index)})

    def like(self, key: object, operands: Sequence[SSAValue], result_types: Sequence[Attribute],
             build) -> Operation:
        """`build()`, for ops whose properties and attributes are a function of `key` (the
        operands and result types being given): built like the first of their key
        (`compat.op_templates`)."""
        return self.templates.build(key, operands, result_types, build)

    @staticmethod
    def binary_op(kind: type[Operation], lhs: SSAValue, rhs: SSAValue) -> Operation:
        """`kind(lhs, rhs)`, built like the first of its kind where it has default flags."""
        return TEMPLATES.binary(kind, lhs, rhs)

    @staticmethod
    def cast_op(kind: type[Operation], value: SSAValue, to: Attribute) -> Operation:
        """`kind(value, to)` (an llvm cast), built like the first of its kind and type."""
        return TEMPLATES.cast(kind, value, to)

    def insert_op(self, struct: SSAValue, value: SSAValue, index: int) -> Operation:
        return create(llvm.InsertValueOp, (struct, value), (struct.type,),
                      {"position": self.position(index)})




def _function_of(op: Operation) -> Operation:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp | gpu.FuncOp | llvm.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        raise unsupported_op_error(PASS_NAME, op, "tile ops must be inside a function")
    return parent


def _after_definition(value: SSAValue) -> InsertPoint:
    if isinstance(value, BlockArgument):
        return InsertPoint.at_start(value.block)
    return InsertPoint.after(value.owner)  # type: ignore[arg-type]


class _Emitter(SyncBuilder):
    """A SyncBuilder at the matched op (`appending_to` a block: at its end) that also keeps
    values once per function (lane-id arithmetic, integer constants) and builds the repeated
    ops of a kernel from templates (`_State`)."""

    def __init__(self, rewriter: PatternRewriter, state: _State, op: Operation):
        super().__init__(rewriter)
        self.rewriter = rewriter
        self.state = state
        self.function = _function_of(op)
        self.outer: list[Block] = []  # the blocks the bodies being built will be inserted in

    @contextmanager
    def appending_to(self, block: Block) -> Iterator[None]:
        outer = self.builder
        self.outer.append(outer.insertion_point.block)
        self.builder = Builder(InsertPoint.at_end(block))
        try:
            yield
        finally:
            self.builder = outer
            self.outer.pop()

    def _blocks_in_scope(self) -> Iterator[Block]:
        """The insertion point's block, then the blocks around it up to the function's: a
        body being built goes into the block its builder was at (at its insertion point)."""
        block: Block | None = self.builder.insertion_point.block
        outer = len(self.outer)
        while block is not None:
            yield block
            parent = block.parent_op()
            if parent is None and outer:
                outer -= 1
                block = self.outer[outer]
            elif parent is None or parent is self.function:
                return
            else:
                block = parent.parent_block()

    # -- values computed once per function, at the start of its entry block -----------------

    def in_prelude(self, key: object, make) -> SSAValue:
        full_key = (self.function, key)
        value = self.state.prelude.get(full_key)
        if value is None:
            ops = make()
            last = self.state.prelude_end.get(self.function)
            if last is None:
                point = InsertPoint.at_start(self.function.regions[0].blocks[0])
            else:
                point = InsertPoint.after(last)
            self.rewriter.insert(ops, point)
            self.state.prelude_end[self.function] = ops[-1]
            value = ops[-1].results[0]
            self.state.prelude[full_key] = value
        return value

    def const(self, value: int, type_: Attribute = i32) -> SSAValue:
        """An llvm integer constant, once per function (an index one: SyncBuilder's)."""
        if isinstance(type_, IndexType):
            return super().const(value, type_)
        return self.in_prelude(("const", value, type_),
                                lambda: [llvm.ConstantOp(IntegerAttr(value, type_), type_)])

    def lane_id(self) -> SSAValue:
        return self.in_prelude("laneid", lambda: [nvvm.read_sreg("laneid")])

    def lane_expr(self, key: str, kind: type[Operation], lhs: SSAValue, rhs: int) -> SSAValue:
        """`kind(lhs, rhs)` of lane-derived values, once per function."""
        rhs_value = self.const(rhs, lhs.type)
        return self.in_prelude(("lane", key), lambda: [kind(lhs, rhs_value)])

    # -- plain instructions --------------------------------------------------------------------

    def binary(self, kind: type[Operation], lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        if isinstance(rhs, int):
            rhs = self.const(rhs, lhs.type)
        return self.insert(self.state.binary_op(kind, lhs, rhs)).results[0]

    def once_in_scope(self, key: Hashable, make: Callable[[], SSAValue]) -> SSAValue:
        """`make()` (which inserts a pure op), or the value that an op of the insertion point's
        block, or of a block around it, made for `key`: the pass inserts ops into a block in
        walk order, so that op dominates the insertion point, and the final CSE would merge
        the two (the tile ops of a block repeat their address arithmetic, the epilogues their
        constants). For values that are used: CSE erases an unused first op, keeping the
        next."""
        computed = self.state.computed
        for block in self._blocks_in_scope():
            value = computed.get((block, key))
            if value is not None:
                return value
        value = make()
        computed[(self.builder.insertion_point.block, key)] = value
        return value

    def computed(self, kind: type[Operation], lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        """`binary(kind, lhs, rhs)`, once in scope (`once_in_scope`)."""
        if isinstance(rhs, int):
            rhs = self.const(rhs, lhs.type)
        return self.once_in_scope((kind, lhs, rhs), lambda: self.binary(kind, lhs, rhs))

    def add(self, lhs, rhs):
        if isinstance(rhs, int) and rhs == 0:
            return lhs
        return self.binary(llvm.AddOp, lhs, rhs)

    def mul(self, lhs, rhs):
        if isinstance(rhs, int) and rhs == 1:
            return lhs
        return self.binary(llvm.MulOp, lhs, rhs)

    def and_(self, lhs, rhs):
        return self.binary(llvm.AndOp, lhs, rhs)

    def lshr(self, lhs, rhs):
        return self.binary(llvm.LShrOp, lhs, rhs)

    def shl(self, lhs, rhs):
        return self.binary(llvm.ShlOp, lhs, rhs)

    def xor(self, lhs, rhs):
        return self.binary(llvm.XOrOp, lhs, rhs)

    def or_(self, lhs, rhs):
        return self.binary(llvm.OrOp, lhs, rhs)

    def icmp(self, predicate: str, lhs: SSAValue, rhs: SSAValue | int) -> SSAValue:
        if isinstance(rhs, int):
            rhs = self.const(rhs, lhs.type)
        flag = llvm.ICmpPredicateFlag(predicate)
        return self.insert(llvm.ICmpOp(lhs, rhs, IntegerAttr(flag.to_int(), i64))).results[0]

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.insert(llvm.SelectOp(cond, a, b)).results[0]

    def cast(self, kind: type[Operation], value: SSAValue, to: Attribute) -> SSAValue:
        return self.insert(self.state.cast_op(kind, value, to)).results[0]

    def store(self, value: SSAValue, address: SSAValue, alignment: int) -> None:
        self.like(("store", alignment), [value, address], [],
                  lambda: llvm.StoreOp(value, address, alignment=alignment))

    def extract(self, struct: SSAValue, index: int, type_: Attribute) -> SSAValue:
        return self.insert(self.state.extract_op(struct, index, type_)).results[0]

    def build_struct(self, values: Sequence[SSAValue]) -> SSAValue:
        struct_type = self.state.struct_type([v.type for v in values])
        struct = self.insert(create(llvm.UndefOp, (), (struct_type,))).results[0]
        for index, value in enumerate(values):
            struct = self.insert(self.state.insert_op(struct, value, index)).results[0]
        return struct

    def like(self, key: object, args: Sequence[SSAValue], result_types: Sequence[Attribute],
             build) -> Operation:
        """Emit the op `build()` makes, for ops whose properties are a function of `key`
        (built `like` the first of their key: see `_State.like`)."""
        return self.insert(self.state.like(key, args, result_types, build))

    def gep(self, base: SSAValue, offset: SSAValue, element: Attribute) -> SSAValue:
        op = self.state.like(
            ("gep", base.type, element), (base, offset), (base.type,),
            lambda: llvm.GEPOp.from_mixed_indices(base, [offset], element,
                                                  result_type=base.type, inbounds=True))
        return self.insert(op).results[0]

    # -- conversions, once per value, right after its definition ---------------------------------

    def index_as(self, value: SSAValue, type_: Attribute) -> SSAValue:
        """An index operand as i64 or i32 (index is i64 after index-to-llvm)."""
        key = (value, type_)
        converted = self.state.converted.get(key)
        if converted is None:
            ops: list[Operation] = [unrealized_cast(value, i64)]
            if type_ != i64:
                ops.append(self.state.cast_op(llvm.TruncOp, ops[-1].results[0], type_))
            self.rewriter.insert(ops, _after_definition(value))
            converted = ops[-1].results[0]
            self.state.converted[key] = converted
        return converted

    def as_llvm(self, value: SSAValue, type_: Attribute) -> SSAValue:
        """A value (a memref, a fragment) as its llvm type; looks through the casts the other
        patterns of this pass left, so a fragment is its struct."""
        owner = value.owner
        if (isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1
                and owner.inputs[0].type == type_):
            return owner.inputs[0]
        key = (value, type_)
        converted = self.state.converted.get(key)
        if converted is None:
            cast = unrealized_cast(value, type_)
            self.rewriter.insert(cast, _after_definition(value))
            converted = cast.results[0]
            self.state.converted[key] = converted
        return converted

    def pointer(self, memref: SSAValue) -> SSAValue:
        assert isinstance(memref.type, MemRefType)
        return self.as_llvm(memref, convert_type(memref.type))

    def registers(self, frag_value: SSAValue, as_half2: bool) -> list[SSAValue]:
        """The registers of an A/B fragment (bitcast to <2 x half> for f16), once per value."""
        frag = frag_value.type
        assert isinstance(frag, tile.FragType)
        struct = self.as_llvm(frag_value, frag_llvm_type(frag))
        regs = self.state.registers.get((struct, as_half2))
        if regs is None:
            ops: list[Operation] = []
            regs = []
            for k in range(frag.registers):
                extract = self.state.extract_op(struct, k, i32)
                ops.append(extract)
                reg = extract.results[0]
                if as_half2:
                    ops.append(self.state.cast_op(llvm.BitcastOp, reg, nvvm.HALF2))
                    reg = ops[-1].results[0]
                regs.append(reg)
            self.rewriter.insert(ops, _after_definition(struct))
            self.state.registers[(struct, as_half2)] = regs
        return regs


def _cast(rewriter: PatternRewriter, value: SSAValue, type_: Attribute) -> SSAValue:
    """`value` as `type_` through an unrealized cast before the matched op."""
    if value.type == type_:
        return value
    cast = unrealized_cast(value, type_)
    rewriter.insert(cast)
    return cast.results[0]


def _strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _linear(e: _Emitter, indices: Sequence[SSAValue], shape: Sequence[int]) -> SSAValue:
    """Row-major linear offset; the leading dimension may be dynamic (its stride is unused)."""
    total: SSAValue | None = None
    for index, stride in zip(indices, _strides(shape), strict=True):
        term = index if stride == 1 else e.computed(llvm.MulOp, index, stride)
        total = term if total is None else e.computed(llvm.AddOp, total, term)
    assert total is not None
    return total


def _swizzle(e: _Emitter, offset: SSAValue, swizzle: tile.SwizzleAttr | None) -> SSAValue:
    if swizzle is None or swizzle.bits.data == 0:
        return offset
    moved = e.and_(e.lshr(offset, swizzle.shift.data), swizzle.mask)
    return e.xor(offset, moved)


# --------------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------------

# ldmatrix lane → (row, column) inside the block: lane l addresses row l % 8 of matrix l / 8.
# Matrix q sits at row 8 * (ra * q0 + rb * q1), column 8 * (ca * q0 + cb * q1), q = q0 + 2 q1.
_LANE_PATTERNS = {
    # (role of results, count, trans) -> (ra, rb, ca, cb)
    ("a", 1, False): (1, 0, 0, 1),  # a0 rows 0-7, a1 rows 8-15, a2/a3 columns 8-15
    ("a", 1, True): (0, 1, 1, 0),   # memory holds A^T (k x m)
    ("b", 2, False): (0, 1, 1, 0),  # memory n x k: (b0,b1) of n 0-7, then of n 8-15
    ("b", 2, True): (1, 0, 0, 1),   # memory k x n
    ("b", 1, False): (0, 0, 1, 0),
    ("b", 1, True): (1, 0, 0, 0),
}


class _TilePattern(RewritePattern):
    def __init__(self, state: _State):
        self.state = state

    def emitter(self, rewriter: PatternRewriter, op: Operation) -> _Emitter:
        return _Emitter(rewriter, self.state, op)


def _lane_offsets(e: _Emitter, ra: int, rb: int, ca: int, cb: int
                  ) -> tuple[SSAValue, SSAValue | None]:
    """(row, column) of this lane's ldmatrix row address inside the block (prelude values)."""
    lane = e.lane_id()

    def bit3() -> SSAValue:  # 8 * q0
        return e.lane_expr("and8", llvm.AndOp, lane, 8)

    def bit4() -> SSAValue:  # 8 * q1
        return e.lane_expr("shr1and8", llvm.AndOp, e.lane_expr("shr1", llvm.LShrOp, lane, 1), 8)

    if ra and not rb:
        row = e.lane_expr("and15", llvm.AndOp, lane, 15)
    else:
        row = e.lane_expr("and7", llvm.AndOp, lane, 7)
        if rb:
            low, q1 = row, bit4()
            row = e.in_prelude(("lane", "and7|q1"), lambda: [llvm.OrOp(low, q1)])
            if ra:
                low, q0 = row, bit3()
                row = e.in_prelude(("lane", "and7|q1|q0"), lambda: [llvm.OrOp(low, q0)])
    col: SSAValue | None = None
    if ca and cb:
        q0, q1 = bit3(), bit4()
        col = e.in_prelude(("lane", "q0|q1"), lambda: [llvm.OrOp(q0, q1)])
    elif ca:
        col = bit3()
    elif cb:
        col = bit4()
    return row, col


class LdMatrixLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.LdMatrixOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        memref_type = op.source.type
        assert isinstance(memref_type, MemRefType)
        roles = [r.type.role.data for r in op.res]  # type: ignore[union-attr]
        trans = op.trans is not None
        row_in, col_in = _lane_offsets(e, *_LANE_PATTERNS[(roles[0], len(roles), trans)])
        indices = [e.index_as(i, i32) for i in op.indices]
        indices[-2] = e.add(indices[-2], row_in)
        if col_in is not None:
            indices[-1] = e.add(indices[-1], col_in)
        offset = _swizzle(e, _linear(e, indices, memref_type.get_shape()), op.swizzle)
        address = e.gep(e.pointer(op.source), offset, memref_type.element_type)
        count = op.matrices
        loaded = e.like(("ldmatrix", count, trans), [address],
                        [nvvm.ldmatrix_result_type(count)],
                        lambda: nvvm.LdMatrixOp(address, count, trans)).results[0]
        regs = [e.extract(loaded, k, i32) for k in range(count)]
        half = isinstance(memref_type.element_type, Float16Type)
        if half:  # mma takes <2 x half>
            half2 = VectorType(Float16Type(), [2])
            regs = [e.cast(llvm.BitcastOp, r, half2) for r in regs]
        if len(op.res) == 1:
            results = [loaded]
            self.state.registers[(loaded, half)] = regs
        else:
            raw = [r.owner.operands[0] if isinstance(r.owner, llvm.BitcastOp) else r
                   for r in regs]
            results = [e.build_struct(raw[0:2]), e.build_struct(raw[2:4])]
            self.state.registers[(results[0], half)] = regs[0:2]
            self.state.registers[(results[1], half)] = regs[2:4]
        casts = [_cast(rewriter, v, r.type) for v, r in zip(results, op.res, strict=True)]
        rewriter.replace(op, [], casts)


class MmaLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.MmaOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        a_type = op.a.type
        assert isinstance(a_type, tile.FragType)
        half = isinstance(a_type.element_type, Float16Type)
        a_regs = e.registers(op.a, half)
        b_regs = e.registers(op.b, half)
        c = e.as_llvm(op.acc, frag_llvm_type(op.acc.type))  # type: ignore[arg-type]
        c_regs = [e.extract(c, k, f32) for k in range(4)]
        kind = "f16" if half else "bf16"
        d = e.like(("mma", kind), [*a_regs, *b_regs, *c_regs], [nvvm.MMA_ACCUMULATOR],
                   lambda: nvvm.MmaSyncOp(kind, a_regs, b_regs, c_regs)).results[0]
        rewriter.replace(op, [], [_cast(rewriter, d, op.res.type)])


class FillLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.FillOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        frag = op.res.type
        assert isinstance(frag, tile.FragType)
        struct = e.build_struct([op.value] * frag.registers)
        rewriter.replace(op, [], [_cast(rewriter, struct, frag)])


def _swizzled_chunk(e: _Emitter, smem: SSAValue, indices: Sequence[SSAValue],
                    swizzle: tile.SwizzleAttr | None) -> SSAValue:
    """The shared-memory address of a thread's 16-byte chunk smem[indices], swizzled."""
    smem_type = smem.type
    assert isinstance(smem_type, MemRefType)
    offset = _linear(e, [e.index_as(i, i32) for i in indices], smem_type.get_shape())
    return e.gep(e.pointer(smem), _swizzle(e, offset, swizzle), smem_type.element_type)


def _all_inside(e: _Emitter, indices: Sequence[SSAValue], shape: Sequence[int]) -> SSAValue:
    """i1: every (i64) index inside its dimension; unsigned, so negative ones are outside."""
    inside: SSAValue | None = None
    for index, size in zip(indices, shape, strict=True):
        ok = e.icmp("ult", index, size)
        inside = ok if inside is None else e.insert(llvm.AndOp(inside, ok)).results[0]
    assert inside is not None
    return inside


class CpAsyncLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.CpAsyncOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        src_type = op.src.type
        assert isinstance(src_type, MemRefType)
        dst = _swizzled_chunk(e, op.dst, op.dst_indices, op.swizzle)
        src_indices = [e.index_as(i, i64) for i in op.src_indices]
        src_offset = _linear(e, src_indices, src_type.get_shape())
        if op.masked is None:
            src = e.gep(e.pointer(op.src), src_offset, src_type.element_type)
            e.like("cp.async", [dst, src], [], lambda: nvvm.CpAsyncOp(dst, src))
        else:
            inside = _all_inside(e, src_indices, src_type.get_shape())
            # Outside: read nothing (src-size 0, the 16 bytes are zero-filled) from the base.
            src_offset = e.select(inside, src_offset, e.const(0, i64))
            src = e.gep(e.pointer(op.src), src_offset, src_type.element_type)
            size = e.select(inside, e.const(tile.CpAsyncOp.BYTES), e.const(0))
            e.like("cp.async zero-fill", [dst, src, size], [],
                   lambda: nvvm.CpAsyncOp(dst, src, src_size=size))
        rewriter.erase(op)


class CopyOutLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.CopyOutOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        dst_type = op.dst.type
        assert isinstance(dst_type, MemRefType)
        src = _swizzled_chunk(e, op.src, op.src_indices, op.swizzle)
        dst_indices = [e.index_as(i, i64) for i in op.dst_indices]
        dst_shape = dst_type.get_shape()
        cond = _all_inside(e, dst_indices, dst_shape) if op.masked is not None else None

        def copy() -> None:
            # One 16-byte access each way (the data layout aligns i128 to 16 bytes).
            chunk = e.like(("load", i128, 16), [src], [i128],
                           lambda: llvm.LoadOp(src, i128, alignment=16)).results[0]
            dst = e.gep(e.pointer(op.dst), _linear(e, dst_indices, dst_shape),
                        dst_type.element_type)
            e.store(chunk, dst, 16)

        _guarded(e, cond, copy)
        rewriter.erase(op)


class LoadL2Lowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.LoadL2Op, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        src_type = op.src.type
        assert isinstance(src_type, MemRefType)
        indices = [e.index_as(i, i64) for i in op.indices]
        address = e.gep(e.pointer(op.src), _linear(e, indices, src_type.get_shape()), i128)
        pair = e.value(nvvm.LoadL2PairOp(address))
        # little-endian: the low half first
        low, high = (e.insert(llvm.ZExtOp(e.extract(pair, k, i64), i128)).results[0]
                     for k in range(2))
        shifted = e.insert(llvm.ShlOp(high, e.const(64, i128))).results[0]
        rewriter.replace(op, [], [e.insert(llvm.OrOp(low, shifted)).results[0]])


class ClusterMapLowering(_TilePattern):
    """The buffer's shared::cluster address in the peer (`mapa`), cast to generic."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.ClusterMapOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        peer = e.value(nvvm.MapaOp(e.pointer(op.src), e.index_as(op.cta, i32)))
        generic = e.value(AddrSpaceCastOp(peer, llvm.LLVMPointerType()))
        rewriter.replace(op, [], [e.value(UnrealizedConversionCastOp.get([generic],
                                                                          [op.res.type]))])


class CpAsyncCommitLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.CpAsyncCommitOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, nvvm.CpAsyncCommitGroupOp())


class CpAsyncWaitLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.CpAsyncWaitOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, nvvm.CpAsyncWaitGroupOp(op.pending.value.data))


# Elementwise math that an epilogue may use, as approximate PTX (f32 only).
_LOG2E = 1.4426950408889634


_APPROX_MATH: dict[type[Operation], type[Operation]] = {
    math.TanhOp: nvvm.TanhApproxOp,
    math.RsqrtOp: nvvm.RsqrtApproxOp,
}
LOWERED_MATH = (math.TanhOp, math.ExpOp, math.RsqrtOp)
"""The f32 math ops a kernel may use: one approximate PTX instruction each (exp: ex2)."""


def _lower_epilogue_math(e: _Emitter, op: Operation, operands: list[SSAValue]) -> SSAValue:
    (x,) = operands
    approx = _APPROX_MATH.get(type(op))
    if approx is not None:
        return e.like(approx, [x], [f32], lambda: approx(x)).results[0]
    assert isinstance(op, math.ExpOp)
    log2e = e.insert(llvm.ConstantOp(FloatAttr(_LOG2E, f32), f32)).results[0]
    scaled = e.insert(llvm.FMulOp(x, log2e)).results[0]
    return e.like(nvvm.Ex2ApproxFtzOp, [scaled], [f32],
                  lambda: nvvm.Ex2ApproxFtzOp(scaled)).results[0]


def _acc_lane_position(e: _Emitter, indices: Sequence[SSAValue], addressed: bool = True
                       ) -> tuple[list[SSAValue], list[SSAValue]]:
    """i64 (rows, columns) of this lane's accumulator elements c0..c3: c0, c1 at row
    i + lane / 4, columns j + 2 (lane % 4) + {0, 1}; c2, c3 eight rows below. `addressed`:
    both rows and the first column address memory, so they are `computed` once a block."""
    lane = e.lane_id()
    row_in = e.in_prelude(("lane", "acc_row"), lambda: [
        llvm.ZExtOp(e.lane_expr("shr2", llvm.LShrOp, lane, 2), i64)])
    col_in = e.in_prelude(("lane", "acc_col"), lambda: [llvm.ZExtOp(
        e.lane_expr("and3shl1", llvm.ShlOp, e.lane_expr("and3", llvm.AndOp, lane, 3), 1),
        i64)])
    if addressed:
        row0 = e.computed(llvm.AddOp, indices[-2], row_in)
        col0 = e.computed(llvm.AddOp, indices[-1], col_in)
        row1 = e.computed(llvm.AddOp, row0, 8)
    else:
        row0, col0 = e.add(indices[-2], row_in), e.add(indices[-1], col_in)
        row1 = e.add(row0, 8)
    return [row0, row1], [col0, e.add(col0, 1)]


def _packed_addresses(e: _Emitter, base: SSAValue, indices: Sequence[SSAValue],
                      shape: Sequence[int]) -> list[SSAValue]:
    """The f32 addresses of this lane's values c0..c3 in a `packed` block (tile.store_acc's):
    value k of lane l at element 32 k + l of the (16, 8) block at `indices`."""
    lane = e.in_prelude(("lane", "i64"), lambda: [llvm.ZExtOp(e.lane_id(), i64)])
    block = e.computed(llvm.AddOp, _linear(e, indices, shape), lane)
    return [e.gep(base, block if k == 0 else e.add(block, 32 * k), f32) for k in range(4)]


def _guarded(e: _Emitter, cond: SSAValue | None, body_fn) -> None:
    """Emit body_fn() under `scf.if cond` (or unguarded when cond is None)."""
    if cond is None:
        body_fn()
        return
    body = Block()
    with e.appending_to(body):
        body_fn()
        e.insert(scf.YieldOp())
    e.insert(scf.IfOp(cond, [], Region(body)))


class StoreAccLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.StoreAccOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        dst_type = op.dst.type
        assert isinstance(dst_type, MemRefType)
        shape = dst_type.get_shape()
        element = dst_type.element_type
        half = isinstance(element, Float16Type | BFloat16Type)
        reduce = op.reduce is not None
        # Two 16-bit values in one aligned 32-bit store.
        paired = half and shape[-1] % 2 == 0 and not reduce
        self._check_epilogue(op)

        base = e.pointer(op.dst)
        indices = [e.index_as(i, i64) for i in op.indices]
        values = [[e.extract(e.as_llvm(acc, frag_llvm_type(acc.type)), k, f32)  # type: ignore
                   for k in range(4)] for acc in op.accs]
        if op.packed is not None:
            for k, address in enumerate(_packed_addresses(e, base, indices, shape)):
                e.store(values[0][k], address, 4)
            rewriter.erase(op)
            return
        rows, cols = _acc_lane_position(e, indices)
        # The epilogue's positions: the output's, which a staging buffer's are not.
        out_rows, out_cols = rows, cols
        if op.at:
            out_rows, out_cols = _acc_lane_position(e, [e.index_as(i, i64) for i in op.at],
                                                    addressed=False)

        for h in range(2):  # c0,c1 at row r; c2,c3 at row r + 8
            row = rows[h]
            groups = [(0, 1)] if paired else [(0,), (1,)]
            for group in groups:
                cond = None
                if op.masked is not None:
                    # Paired: the column is even and the width even, so col + 1 is inside too.
                    cond = _all_inside(e, [row, cols[group[0]]], shape[-2:])

                def body(group=group, row=row, h=h) -> None:
                    stored = [self._epilogue(e, op, [v[2 * h + k] for v in values],
                                             out_rows[h], out_cols[k]) for k in group]
                    address = e.gep(base, _linear(e, [*indices[:-2], row, cols[group[0]]],
                                                  shape), element)
                    if reduce:
                        (v,) = stored
                        e.insert(nvvm.ReduceOp("add", address, v, "relaxed", "gpu"))
                    elif paired:
                        # cvt.rn.{f16,bf16}x2.f32 d, hi, lo: both conversions and the packing.
                        kind = "f16" if isinstance(element, Float16Type) else "bf16"
                        hi, lo = stored[1], stored[0]
                        word = e.like(("cvt.pack", kind), [hi, lo], [i32],
                                      lambda: nvvm.CvtPackOp(kind, hi, lo)).results[0]
                        e.store(word, address, 4)
                    else:
                        (v,) = stored
                        if half:
                            v = e.cast(llvm.FPTruncOp, v, element)
                        e.store(v, address, 4 if not half else 2)

                _guarded(e, cond, body)
        rewriter.erase(op)

    @staticmethod
    def _check_epilogue(op: tile.StoreAccOp) -> None:
        if not op.epilogue.blocks:
            return
        for inner in op.epilogue.block.ops:
            if isinstance(inner, LOWERED_MATH) and inner.result.type != f32:
                raise unsupported_op_error(PASS_NAME, inner, "epilogue math is f32 only")

    @staticmethod
    def _epilogue(e: _Emitter, op: tile.StoreAccOp, values: list[SSAValue], row: SSAValue,
                  col: SSAValue) -> SSAValue:
        """Inline the epilogue region for one element; row/col are i64 (index after lowering)."""
        if not op.epilogue.blocks:
            (value,) = values
            return value
        block = op.epilogue.block
        # The position as an index where the epilogue reads it (CSE erases an unread cast),
        # and its constants, once in scope: every element of every tile repeats them.
        as_index = [e.once_in_scope((_INDEX, v), lambda v=v: e.value(unrealized_cast(v, _INDEX)))
                    if arg.uses else None for v, arg in zip((row, col), block.args[-2:])]
        mapping: dict[SSAValue, SSAValue | None] = dict(zip(block.args, [*values, *as_index],
                                                            strict=True))
        for inner in block.ops:
            if isinstance(inner, tile.YieldOp):  # a value defined above the epilogue: itself
                return mapping.get(inner.value, inner.value)  # type: ignore[return-value]
            if isinstance(inner, LOWERED_MATH):
                mapping[inner.result] = _lower_epilogue_math(
                    e, inner, [mapping.get(o, o) for o in inner.operands])  # type: ignore
                continue
            if isinstance(inner, arith.ConstantOp) and not inner.attributes:
                if inner.result.uses:
                    mapping[inner.result] = e.once_in_scope(
                        (arith.ConstantOp, inner.value, inner.result.type),
                        lambda inner=inner: e.value(inner.clone()))
                continue
            e.insert(inner.clone(value_mapper=mapping))  # type: ignore[arg-type]
        raise AssertionError("epilogue without tile.yield")  # the verifier rules this out


class TakeAccLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.TakeAccOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        src_type = op.src.type
        assert isinstance(src_type, MemRefType)
        shape = src_type.get_shape()
        base = e.pointer(op.src)
        indices = [e.index_as(i, i64) for i in op.indices]
        packed = _packed_addresses(e, base, indices, shape) if op.packed is not None else None
        rows, cols = _acc_lane_position(e, indices) if packed is None else ([], [])
        zero = e.insert(llvm.ConstantOp(FloatAttr(0.0, f32), f32)).results[0]
        shared = tile.memory_space(src_type) == tile.SHARED_SPACE
        cta = None if op.cta is None else e.index_as(op.cta, i32)
        values: list[SSAValue] = []
        for h in range(2):
            for k in range(2):
                if packed is not None:
                    address = packed[2 * h + k]
                else:
                    address = e.gep(base, _linear(e, [*indices[:-2], rows[h], cols[k]], shape),
                                    f32)
                if cta is not None:  # the same place in the peer CTA's shared memory
                    values.append(e.insert(nvvm.LoadOp(address, f32, "weak", cta=cta))
                                  .results[0])
                    continue
                if shared:  # written again before every read: kept
                    values.append(e.like(("load", f32), [address], [f32],
                                         lambda address=address: llvm.LoadOp(
                                             address, f32, alignment=4)).results[0])
                    continue
                def read(t: SyncBuilder, address: SSAValue = address) -> SSAValue:
                    if op.keep is not None:
                        return t.load(address, "relaxed", "gpu", f32)
                    return t.value(nvvm.AtomicOp("exch", address, zero, "relaxed", "gpu"))

                if op.masked is None:
                    values.append(read(e))
                    continue
                # Outside the memref: no access, the value is 0 (scf.if with a result).
                inside = _all_inside(e, [rows[h], cols[k]], shape[-2:])
                (value,) = e.if_(inside, lambda t, read=read: [read(t)], lambda _: [zero], [f32])
                values.append(value)
        struct = e.build_struct(values)
        rewriter.replace(op, [], [_cast(rewriter, struct, op.res.type)])


class AddAccLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.AddAccOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        struct_type = frag_llvm_type(op.res.type)  # type: ignore[arg-type]
        lhs, rhs = (e.as_llvm(v, struct_type) for v in (op.lhs, op.rhs))
        sums = [e.insert(llvm.FAddOp(e.extract(lhs, k, f32), e.extract(rhs, k, f32)))
                .results[0] for k in range(4)]
        rewriter.replace(op, [], [_cast(rewriter, e.build_struct(sums), op.res.type)])


class UnpackAccLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.UnpackAccOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        struct = e.as_llvm(op.acc, frag_llvm_type(op.acc.type))  # type: ignore[arg-type]
        rewriter.replace(op, [], [e.extract(struct, k, f32) for k in range(4)])


class PackAccLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.PackAccOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        struct = e.build_struct(list(op.operands))
        rewriter.replace(op, [], [_cast(rewriter, struct, op.res.type)])


class AccToALowering(_TilePattern):
    """A's registers 0-3 are (row r, columns 2c, 2c + 1), (r + 8, ..), (r, 8 + 2c, ..),
    (r + 8, 8 + ..): lo's (c0, c1), (c2, c3), then hi's, each pair one cvt.rn.*x2.f32."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.AccToAOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        res = op.res.type
        assert isinstance(res, tile.FragType)
        kind = "f16" if isinstance(res.element_type, Float16Type) else "bf16"
        struct_type = frag_llvm_type(op.lo.type)  # type: ignore[arg-type]
        words = []
        for half in (op.lo, op.hi):
            struct = e.as_llvm(half, struct_type)
            values = [e.extract(struct, k, f32) for k in range(4)]
            for lo, hi in ((values[0], values[1]), (values[2], values[3])):
                words.append(e.like(("cvt.pack", kind), [hi, lo], [i32],
                                    lambda hi=hi, lo=lo: nvvm.CvtPackOp(kind, hi, lo)
                                    ).results[0])
        rewriter.replace(op, [], [_cast(rewriter, e.build_struct(words), res)])


class ArriveLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.ArriveOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        counters_type = op.counters.type
        assert isinstance(counters_type, MemRefType)
        expected = op.expected.value.data
        indices = [e.index_as(i, i64) for i in op.indices]
        address = e.gep(e.pointer(op.counters), _linear(e, indices, counters_type.get_shape()),
                        i32)
        threads = None if op.threads is None else op.threads.value.data
        # the arriving threads' writes (split-K red.adds) are done
        if threads is None:
            e.block_barrier()
        else:
            e.insert(nvvm.BarrierSyncOp(SYNC_NAMED_BARRIER, threads))
        amount = None if op.amount is None else e.index_as(op.amount, i32)

        def release(leader: SyncBuilder) -> list[SSAValue]:
            # Release (fence) + count; the last arrival resets the counter and acquires.
            if amount is None:
                old = leader.release_add(address, old=True)
                assert old is not None
                is_last = leader.value(arith.CmpiOp(old, leader.const(expected - 1), "eq"))
            else:
                leader.fence("acq_rel", "gpu")
                old = leader.atomic_add(address, amount)
                reached = leader.value(arith.AddiOp(old, amount))
                is_last = leader.value(arith.CmpiOp(reached, leader.const(expected), "eq"))

            def reset(last: SyncBuilder) -> None:
                last.store(address, last.const(0), "relaxed", "gpu")
                last.fence("acq_rel", "gpu")

            leader.if_(is_last, reset)
            return [leader.value(arith.ExtUIOp(is_last, i32))]

        # Tile kernels run one-dimensional blocks: the leader is tid.x == 0.
        (mine,) = e.in_leader(release, dims=1, otherwise=lambda other: [other.const(0)],
                              result_types=[i32])
        if threads is None:
            anyone = e.block_barrier_or(mine)
        else:
            anyone = e.value(nvvm.BarrierRedOrOp(SYNC_NAMED_BARRIER, threads, mine))
        last = e.value(arith.CmpiOp(anyone, e.const(0), "ne"))
        rewriter.replace(op, [], [last])


class ShuffleLowering(_TilePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.ShuffleOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        kind = op.kind.data
        # c operand: 0x1f clamp (and segment mask 0) for bfly/down/idx, 0 for up.
        clamp = 0 if kind == "up" else 31
        shuffle = nvvm.ShflSyncOp(kind, e.const(-1), op.value, e.const(op.offset.value.data),
                                  e.const(clamp))
        rewriter.replace(op, [], [e.insert(shuffle).results[0]])


class MathLowering(_TilePattern):
    """f32 `math.exp` / `math.tanh` / `math.rsqrt` anywhere in a kernel: ex2.approx /
    tanh.approx / rsqrt.approx."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.ExpOp | math.TanhOp | math.RsqrtOp,
                          rewriter: PatternRewriter, /):
        if op.result.type != f32:
            return
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp | gpu.FuncOp | llvm.FuncOp):
            if isinstance(parent, tile.StoreAccOp):  # epilogues are inlined by their store
                return
            parent = parent.parent_op()
        if parent is None:
            return
        e = self.emitter(rewriter, op)
        rewriter.replace(op, [], [_lower_epilogue_math(e, op, [op.operand])])


# --------------------------------------------------------------------------------------------
# wgmma (sm_90a): operands through shared-memory descriptors, inline PTX
# --------------------------------------------------------------------------------------------

# Matrix descriptor (PTX ISA, "Matrix Descriptor Format" for wgmma): bits 0-13 the start
# address >> 4, 16-29 the leading byte offset >> 4 (unused for swizzled K-major operands: 1;
# for an N-major B, from one 64-column atom of N to the next), 32-45 the stride byte offset
# >> 4 (1024: from one 8-row x 128-byte atom to the next), 49-51 the base offset (0: atoms
# are 1024-byte aligned), 62-63 the swizzle (1: 128 bytes).
WGMMA_SWIZZLE_128B = 1
WGMMA_ATOM_BYTES = 1024
WGMMA_DESCRIPTOR_HIGH = (1 << 16) | ((WGMMA_ATOM_BYTES >> 4) << 32) | (WGMMA_SWIZZLE_128B << 62)


def _wgmma_descriptor(e: _Emitter, memref: SSAValue, indices: Sequence[SSAValue],
                      leading_bytes: int = 16) -> SSAValue:
    """The descriptor of the operand whose first element is memref[indices] (unswizzled
    address: its row is 8-aligned and its column is inside the row's first 128 bytes, so
    the hardware's swizzle of the address bits finds the chunks cp.async placed), with the
    leading byte offset `leading_bytes` (an N-major B's distance between 64-column atoms).

    Built as the memref's own descriptor plus the element offset in 16-byte units: the
    first part does not change inside a k-loop (LLVM hoists it), so a k-step's wgmma pays
    one add per operand. Equal to encoding the element's address because shared memory is
    below 256 KB (the 14-bit field never wraps) and the memref starts 16-byte aligned;
    where the rows are a multiple of 16 bytes, the offset of the row and of the column are
    added apart, so a constant column (a k16 step) folds into a constant."""
    memref_type = memref.type
    assert isinstance(memref_type, MemRefType)
    shape = memref_type.get_shape()
    element_bytes = memref_type.element_type.bitwidth // 8  # type: ignore[union-attr]
    offsets = [e.index_as(i, i32) for i in indices]
    row_bytes = shape[-1] * element_bytes
    if len(shape) > 1 and row_bytes % 16 == 0:
        parts = [(_linear(e, offsets[:-1], shape[:-1]), row_bytes),
                 (offsets[-1], element_bytes)]
    else:
        parts = [(_linear(e, offsets, shape), element_bytes)]
    base = e.cast(llvm.PtrToIntOp, e.pointer(memref), i64)
    high = WGMMA_DESCRIPTOR_HIGH + (((leading_bytes >> 4) - 1) << 16)
    descriptor = e.or_(e.lshr(e.and_(base, 0x3FFFF), 4), high)
    for elements, size in parts:
        units = e.lshr(e.mul(elements, size), 4)
        descriptor = e.add(descriptor, e.cast(llvm.ZExtOp, units, i64))
    return descriptor


WGMMAS = (tile.WgmmaOp, tile.WgmmaRegAOp)


def _b_leading_bytes(op: tile.WgmmaOp | tile.WgmmaRegAOp) -> int:
    """B's leading byte offset: for an N-major B of several 64-column atoms (tile.wgmma
    trans_b over [..., N / 64, K, 64]) the bytes from one atom to the next (K rows of 128
    bytes); 16 (the field's 1, unused) otherwise."""
    if not isinstance(op, tile.WgmmaOp) or op.trans_b is None or op.n <= tile.WGMMA_N_ATOM:
        return 16
    shape = op.b.type.get_shape()  # type: ignore[attr-defined]
    return shape[-2] * tile.WGMMA_ROW_BYTES


class WgmmaLowering(_TilePattern):
    """tile.wgmma and tile.wgmma_reg_a (A in this thread's four registers of its fragment)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.WgmmaOp | tile.WgmmaRegAOp, rewriter: PatternRewriter,
                          /):
        e = self.emitter(rewriter, op)
        desc_a = _wgmma_descriptor(e, op.a, op.a_indices) if isinstance(op, tile.WgmmaOp) \
            else None
        desc_b = _wgmma_descriptor(e, op.b, op.b_indices, _b_leading_bytes(op))
        regs: list[SSAValue] = []
        chained: list[SSAValue] = []
        for acc in op.acc:
            passed = self.state.passed_accs.get(acc)
            if passed is not None:  # registers a wgmma hands to wgmmas only
                regs += passed
                chained.append(acc)
                continue
            struct = e.as_llvm(acc, frag_llvm_type(acc.type))  # type: ignore[arg-type]
            known = self.state.acc_scalars.get(struct)
            if known is not None:  # the previous wgmma's registers: no struct round trip
                regs += known
                chained.append(acc)
            else:
                regs += [e.extract(struct, k, f32) for k in range(4)]
        # scale-d = 1 (D += A B; the accumulators start from tile.fill); A K-major, B N-major
        # where trans_b.
        kind = op.element_kind
        if desc_a is not None:
            mma: Operation = nvvm.WgmmaMmaAsyncOp(kind, op.n, desc_a, desc_b, e.const(1), regs,
                                                  trans_b=op.trans_b is not None)
        else:
            mma = nvvm.WgmmaMmaAsyncRegAOp(kind, op.n, e.registers(op.a, False), desc_b,
                                           e.const(1), regs, trans_b=op.trans_b is not None)
        struct = e.insert(mma).results[0]
        values = []
        for j, res in enumerate(op.res):
            scalars = [e.extract(struct, 4 * j + k, f32) for k in range(4)]
            if res.uses and all(isinstance(use.operation, WGMMAS) for use in res.uses):
                # Read by the next wgmmas alone, which take the registers: their struct would
                # be built here only to be erased there. A cast of the registers stands in.
                passed = e.value(UnrealizedConversionCastOp.create(operands=scalars,
                                                                   result_types=[res.type]))
                self.state.passed_accs[passed] = scalars
                values.append(passed)
                continue
            frag = e.build_struct(scalars)
            self.state.acc_scalars[frag] = scalars
            values.append(_cast(rewriter, frag, res.type))
        rewriter.replace(op, [], values)
        for acc in chained:
            if acc in self.state.passed_accs:
                if not acc.uses:
                    rewriter.erase(acc.owner)  # type: ignore[arg-type]
            else:
                _erase_dead_struct(rewriter, acc)


def _erase_dead_struct(rewriter: PatternRewriter, value: SSAValue) -> None:
    """Erase the cast and the insertvalue chain that built `value` once nothing reads them
    (a chained wgmma took the registers instead; every later pass would walk them)."""
    while not value.uses and isinstance(value.owner, UnrealizedConversionCastOp
                                        | llvm.InsertValueOp | llvm.UndefOp):
        owner = value.owner
        previous = owner.container if isinstance(owner, llvm.InsertValueOp) else (
            owner.inputs[0] if isinstance(owner, UnrealizedConversionCastOp) else None)
        rewriter.erase(owner)
        if previous is None:
            return
        value = previous


class WgmmaSyncLowering(_TilePattern):
    """wgmma.fence / commit_group / wait_group and fence.proxy.async (shared::cta)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.WgmmaFenceOp | tile.WgmmaCommitOp | tile.WgmmaWaitOp
                          | tile.FenceProxyAsyncOp, rewriter: PatternRewriter, /):
        if isinstance(op, tile.WgmmaFenceOp) and op.values:
            self._fence_registers(op, rewriter)
            return
        if isinstance(op, tile.WgmmaFenceOp):
            lowered: Operation = nvvm.WgmmaFenceAlignedOp()
        elif isinstance(op, tile.WgmmaCommitOp):
            lowered = nvvm.WgmmaCommitGroupSyncAlignedOp()
        elif isinstance(op, tile.WgmmaWaitOp):
            lowered = nvvm.WgmmaWaitGroupSyncAlignedOp(op.pending.value.data)
        else:
            lowered = nvvm.FenceProxyAsyncOp(
                "global" if op.global_memory is not None else "shared::cta")
        rewriter.replace(op, lowered)

    def _fence_registers(self, op: tile.WgmmaFenceOp, rewriter: PatternRewriter) -> None:
        """The fragments' registers through the fence; the wgmmas that follow find them
        known (accumulators: `acc_scalars`, A: `registers`), so no struct is rebuilt."""
        e = self.emitter(rewriter, op)
        per_value = []
        for value in op.values:
            frag = value.type
            assert isinstance(frag, tile.FragType)
            if frag.role.data == "acc":
                struct = e.as_llvm(value, frag_llvm_type(frag))
                per_value.append([e.extract(struct, k, f32) for k in range(4)])
            else:
                per_value.append(e.registers(value, False))
        fence = e.insert(nvvm.WgmmaFenceRegistersOp([r for regs in per_value for r in regs]))
        results, at = [], 0
        for value, regs in zip(op.values, per_value, strict=True):
            fenced = [e.extract(fence.res, at + k, r.type) for k, r in enumerate(regs)]
            at += len(regs)
            struct = e.build_struct(fenced)
            if value.type.role.data == "acc":  # type: ignore[union-attr]
                self.state.acc_scalars[struct] = fenced
            else:
                self.state.registers[(struct, False)] = fenced
            results.append(_cast(rewriter, struct, value.type))
        rewriter.replace(op, [], results)


# --------------------------------------------------------------------------------------------
# Transaction barriers, TMA copies, named barriers, register reallocation (sm_90)
# --------------------------------------------------------------------------------------------

GENERIC_PTR = llvm.LLVMPointerType()


def _barrier_offset(e: _Emitter, bars: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
    """The barrier's position in its array, i32."""
    bars_type = bars.type
    assert isinstance(bars_type, MemRefType)
    return _linear(e, [e.index_as(i, i32) for i in indices], bars_type.get_shape())


def _barrier_address(e: _Emitter, bars: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
    return e.gep(e.pointer(bars), _barrier_offset(e, bars, indices), i64)


def _box_address(e: _Emitter, smem: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
    """The shared address of smem[indices] (unswizzled: the copy engine swizzles)."""
    smem_type = smem.type
    assert isinstance(smem_type, MemRefType)
    offset = _linear(e, [e.index_as(i, i32) for i in indices], smem_type.get_shape())
    return e.gep(e.pointer(smem), offset, smem_type.element_type)


def _tma_coords(e: _Emitter, coords: Sequence[SSAValue]) -> list[SSAValue]:
    """i32 coordinates, innermost first (the tile ops list them outermost first)."""
    return [e.index_as(c, i32) for c in reversed(coords)]


class MBarrierLowering(_TilePattern):
    """mbarrier init (+ its fence for the async proxy) and arrive (expect-tx)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.MBarrierInitOp | tile.MBarrierArriveOp,
                          rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        address = _barrier_address(e, op.bars, op.indices)
        if isinstance(op, tile.MBarrierInitOp):
            e.insert(nvvm.MBarrierInitOp(address, e.const(op.count.value.data)))
            e.insert(nvvm.FenceMBarrierInitOp())
        else:
            tx = None if op.expect_tx is None else e.const(op.expect_tx.value.data)
            cta = None if op.cta is None else e.index_as(op.cta, i32)
            e.insert(nvvm.MBarrierArriveOp(address, tx, cta))
        rewriter.erase(op)


class MBarrierWaitLowering(_TilePattern):
    """The wait: try_wait.parity until the phase completes (each try waits a hardware-chosen
    while before it fails), trapping `timeout_ns` after the first failed try; with `debug`, a
    kernel first writes which barrier and parity into its debug record (a kernel parameter,
    added if the kernel has none)."""

    def __init__(self, state: _State, timeout_ns: int, debug: bool):
        super().__init__(state)
        self.timeout_ns = timeout_ns
        self.debug = debug

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.MBarrierWaitOp, rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        offset = _barrier_offset(e, op.bars, op.indices)
        address = e.gep(e.pointer(op.bars), offset, i64)
        parity = e.cast(llvm.ZExtOp, e.as_llvm(op.parity, IntegerType(1)), i32)

        def attempt(b: SyncBuilder) -> SSAValue:  # true: the phase is not complete yet
            done = b.value(nvvm.MBarrierTryWaitParityOp(address, parity))
            return b.value(arith.CmpiOp(done, b.const(0), "eq"))

        kernel = e.function
        record = describe = None
        if self.debug and isinstance(kernel, gpu.FuncOp) and kernel.kernel is not None:
            record = sync_arg(kernel, DEBUG_RECORD, MemRefType(i32, [DYNAMIC_INDEX]))
            describe = _mbarrier_description(kernel, op.bars, offset, parity)
        # With wgmma groups in flight the trap waits for them first: ptxas would otherwise put
        # that wait there itself, on a path it cannot prove warp-uniform, and then keep every
        # wgmma of the kernel synchronous.
        settle = (lambda t: t.insert(nvvm.WgmmaWaitGroupSyncAlignedOp(0))) \
            if op.wgmma_in_flight is not None else None
        e.retry_until(attempt, self.timeout_ns, record, describe, settle)
        rewriter.erase(op)


def _mbarrier_description(kernel: gpu.FuncOp, bars: SSAValue, index: SSAValue,
                          parity: SSAValue) -> Callable[[SyncBuilder], dict[str, SSAValue]]:
    """The debug record's fields of an mbarrier wait, built where it timed out: the kernel,
    the barrier's array (by name) and index, the parity and the block."""
    owner = bars.owner
    array = kernel_tag(owner.name_.root_reference.data) \
        if isinstance(owner, memref.GetGlobalOp) else -1

    def describe(b: SyncBuilder) -> dict[str, SSAValue]:
        block = b.block_fields()  # first, as the record's other fields follow it
        return {"kernel_tag": b.const(kernel_tag(kernel.sym_name.data)),
                "param": b.const(array), "index": index, "expected": parity,
                **block, "site": b.const(SPIN_SITE_MBARRIER)}

    return describe


class TmaLowering(_TilePattern):
    """tile.tma_load / tma_store / tma_prefetch: the bulk tensor copy (or L2 prefetch) with the
    map's generic address."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.TmaLoadOp | tile.TmaStoreOp | tile.TmaPrefetchOp,
                          rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        tensor_map = e.as_llvm(op.tensor_map, GENERIC_PTR)
        coords = _tma_coords(e, op.coords)
        if isinstance(op, tile.TmaPrefetchOp):
            e.insert(nvvm.CpAsyncBulkPrefetchTensorOp(tensor_map, coords))
        elif isinstance(op, tile.TmaLoadOp):
            dst = _box_address(e, op.dst, op.dst_indices)
            bar = _barrier_address(e, op.bars, op.bar_indices)
            mask = None if op.multicast is None else \
                e.const(op.multicast.value.data, IntegerType(16))
            offsets = [e.index_as(o, IntegerType(16)) for o in reversed(op.im2col)]
            e.insert(nvvm.CpAsyncBulkTensorLoadOp(dst, tensor_map, coords, bar, mask, offsets))
        else:
            src = _box_address(e, op.src, op.src_indices)
            e.insert(nvvm.CpAsyncBulkTensorStoreOp(tensor_map, coords, src))
        rewriter.erase(op)


def _element_address(e: _Emitter, memref_value: SSAValue, indices: Sequence[SSAValue]
                     ) -> SSAValue:
    """The address of a global memref's element (i64 offsets)."""
    memref_type = memref_value.type
    assert isinstance(memref_type, MemRefType)
    offset = _linear(e, [e.index_as(i, i64) for i in indices], memref_type.get_shape())
    return e.gep(e.pointer(memref_value), offset, memref_type.element_type)


class BulkCopyLowering(_TilePattern):
    """tile.bulk_load / bulk_store: the 1-D bulk copy between the two addresses."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.BulkLoadOp | tile.BulkStoreOp,
                          rewriter: PatternRewriter, /):
        e = self.emitter(rewriter, op)
        size = e.const(op.bytes.value.data)
        if isinstance(op, tile.BulkLoadOp):
            dst = _box_address(e, op.dst, op.dst_indices)
            src = _element_address(e, op.src, op.src_indices)
            bar = _barrier_address(e, op.bars, op.bar_indices)
            e.insert(nvvm.CpAsyncBulkLoadOp(dst, src, size, bar))
        else:
            dst = _element_address(e, op.dst, op.dst_indices)
            src = _box_address(e, op.src, op.src_indices)
            e.insert(nvvm.CpAsyncBulkStoreOp(dst, src, size))
        rewriter.erase(op)


class WarpSpecializationLowering(_TilePattern):
    """TMA store groups, the tensor-map prefetch, named and cluster barriers, setmaxnreg."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.TmaStoreCommitOp | tile.TmaStoreWaitOp
                          | tile.PrefetchTensorMapOp | tile.NamedBarrierOp | tile.SetMaxNRegOp
                          | tile.ClusterBarrierOp, rewriter: PatternRewriter, /):
        if isinstance(op, tile.ClusterBarrierOp):
            rewriter.replace(op, [nvvm.ClusterArriveOp(), nvvm.ClusterWaitOp()])
            return
        if isinstance(op, tile.TmaStoreCommitOp):
            lowered: Operation = nvvm.CpAsyncBulkCommitGroupOp()
        elif isinstance(op, tile.TmaStoreWaitOp) and op.writes is not None:
            lowered = nvvm.CpAsyncBulkWaitGroupOp(op.pending.value.data)
        elif isinstance(op, tile.TmaStoreWaitOp):
            lowered = nvvm.CpAsyncBulkWaitGroupReadOp(op.pending.value.data)
        elif isinstance(op, tile.PrefetchTensorMapOp):
            e = self.emitter(rewriter, op)
            lowered = nvvm.PrefetchTensorMapOp(e.as_llvm(op.tensor_map, GENERIC_PTR))
        elif isinstance(op, tile.NamedBarrierOp):
            barrier_id = (op.barrier_id.value.data if op.barrier_id is not None
                          else op.dynamic_id)
            lowered = nvvm.BarrierSyncOp(barrier_id, op.threads.value.data)
        else:
            lowered = nvvm.SetMaxNRegOp(op.action.data, op.registers.value.data)
        rewriter.replace(op, lowered)


def tile_to_nvvm_patterns(timeout_ns: int = DEFAULT_TIMEOUT_NS,
                          debug: bool = False) -> list[RewritePattern]:
    """The patterns; `timeout_ns` is the semaphore waits' timeout (see mbarrier_timeout_ns)."""
    state = _State()
    return [
        LdMatrixLowering(state),
        MmaLowering(state),
        FillLowering(state),
        CpAsyncLowering(state),
        CopyOutLowering(state),
        LoadL2Lowering(state),
        ClusterMapLowering(state),
        CpAsyncCommitLowering(state),
        CpAsyncWaitLowering(state),
        StoreAccLowering(state),
        TakeAccLowering(state),
        AddAccLowering(state),
        UnpackAccLowering(state),
        PackAccLowering(state),
        AccToALowering(state),
        ArriveLowering(state),
        ShuffleLowering(state),
        MathLowering(state),
        WgmmaLowering(state),
        WgmmaSyncLowering(state),
        MBarrierLowering(state),
        MBarrierWaitLowering(state, mbarrier_timeout_ns(timeout_ns), debug),
        TmaLowering(state),
        BulkCopyLowering(state),
        WarpSpecializationLowering(state),
    ]


# --------------------------------------------------------------------------------------------
# Fragment-typed values that are not tile ops: retype them to their structs
# --------------------------------------------------------------------------------------------


def _retype_fragments(module: ModuleOp, ops: Sequence[Operation] | None = None) -> None:
    """Give fragment-typed block arguments and results their struct types; `ops` is
    `module.walk()` when the caller has it. Every value of the module is a result or block
    argument of one of these ops, so none is left a fragment (no check after it needed)."""
    ops = walk_ops(module) if ops is None else ops
    frag = tile.FragType
    casts: list[Operation] = []
    # By class: xDSL's op classes are ABCs, whose isinstance test runs Python code.
    kinds: dict[type, int] = {}  # 0: other, 1: a cast, 2: a function
    for op in ops:
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:  # (a tuple: the retyping replaces it, not changes it)
                    if isinstance(arg.type, frag):
                        Rewriter.replace_value_with_new_type(arg, frag_llvm_type(arg.type))
        for result in op.results:
            if isinstance(result.type, frag):
                Rewriter.replace_value_with_new_type(result, frag_llvm_type(result.type))
        kind = kinds.get(type(op))
        if kind is None:
            kind = kinds[type(op)] = 1 if isinstance(op, UnrealizedConversionCastOp) else \
                2 if isinstance(op, func.FuncOp | gpu.FuncOp) else 0
        if kind == 1:
            casts.append(op)
        elif kind == 2:
            op.properties["function_type"] = convert_frag_types(op.function_type)
    # The casts the patterns left between structs and fragments now cast a struct to itself.
    for op in casts:
        if len(op.operands) == 1 and op.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(op.operands[0])
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class ConvertTileToNVVMPass(ModulePass):
    """tile ops to NVVM intrinsics (ldmatrix, mma.sync, cp.async) and llvm/scf ops."""

    name = "convert-tile-to-nvvm"

    # the semaphore waits' timeout (convert-sync-to-nvvm's option): mbarrier waits trap after
    # mbarrier_timeout_ns of it
    default_timeout_ns: int = DEFAULT_TIMEOUT_NS
    debug: bool = False  # a timed-out mbarrier wait names itself in the kernel's debug record

    def __post_init__(self) -> None:
        check_timeout_ns(self.default_timeout_ns)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with located_type_errors(self.name, op):
            apply_patterns(op, tile_to_nvvm_patterns(self.default_timeout_ns, self.debug))
        ops = walk_ops(op)
        for leftover in ops:
            if leftover.name.startswith("tile."):
                raise unsupported_op_error(self.name, leftover,
                                           "no lowering for this op or its types")
        _retype_fragments(op, ops)
        # Each tile op computes its own addresses; merge the repeated index arithmetic
        # (a GEMM kernel shrinks by a quarter, which every later pass and verification feels).
        cse(op)


__all__ = [
    "ConvertTileToNVVMPass",
    "frag_llvm_type",
]
