"""`dataflow-persistent-kernel`: a pipeline's stages as one kernel whose CTAs take stage roles.

Kitsune relies on a grid scheduler that co-schedules a pipeline's kernels; ours has none, and
kernels launched on separate streams (or as sibling nodes of a CUDA graph) may run one after the
other, in which case a producer fills its queue and spins forever. So every pipeline whose stage
kernels share one block size becomes one kernel: CTA b of it runs the stage whose range [first,
first + ctas) holds b, as that stage's CTA b - first (`gpu.block_id` and `gpu.grid_dim` of the
stage's body become the stage's own index and count along x, 0 and 1 along y and z: a stage's
CTAs form a line). The runtime launches it cooperatively, so all its CTAs are resident at once
or the launch fails: the co-residency a pipeline needs is then the hardware's promise. Stage
ranges follow the pipeline's order, so with CTA counts that are multiples of the SM count, the
hardware's round-robin dispatch puts one CTA of each stage on every SM (a SIMT stage next to a
tensor stage, Kitsune's pairing, where the pipeline lists them so).

It runs after convert-dataflow-to-nvvm, on kernels whose queues are already ring parameters: the
new kernel takes the stages' own parameters in stage order, then each role once (a queue both
produced and consumed is one ring). The pipeline records the new kernel as
`dataflow.persistent_kernel`. A stage kernel that nothing else names keeps its signature and
attributes, the declaration of its stage's parameters that the runtime binds arguments by, but
its body becomes a lone return, marked `tilesync.fused_into` (transforms/kernel_fusion.py):
otherwise every pass, LLVM and ptxas after this one would compile each stage twice, once as code
no launch runs (half of an MLP stack's compile time). Stages whose bodies are one code but for
constants (`same_code`: NeRF's five 256 -> 256 layers, their queues' depths aside) share one
branch that chooses, by CTA, the stage's CTA range, parameters and constants, with
`share_code=true`: their code is then compiled once (NeRF's pipeline in 2.6 s against 3.9),
but LLVM compiles the shared tile loop worse than each stage's own, whose counts and depths
are constants (NeRF at 2^16 rows on an H100: 0.2708 ms shared against 0.2638 own, and 17-25 %
slower than its own where one 256-wide stage's CTA count differs from the others'): by default
every stage keeps its own branch. Pipelines whose kernels differ in block size or are not in
one gpu.module keep separate kernels.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from tilesync.compat.rewrite_driver import ops_of
from tilesync.contract import (
    CLUSTER_DIMS_ATTR,
    KNOWN_BLOCK_SIZE_ATTR,
    PERSISTENT_KERNEL_ATTR,
)
from tilesync.dialects import dataflow
from tilesync.transforms.dataflow.same_code import same_code
from tilesync.transforms.kernel_fusion import (
    branch_chain,
    fused_kernel,
    fused_parameters,
    mark_fused_into,
    symbol_uses,
)


def persistent_name(pipeline: dataflow.PipelineOp) -> str:
    return f"{pipeline.sym_name.data}_persistent"


def _fusable(module: ModuleOp, pipeline: dataflow.PipelineOp
             ) -> tuple[gpu.ModuleOp, list[tuple[dataflow.StageOp, gpu.FuncOp]]] | None:
    kernels = []
    for stage in pipeline.stages:
        kernel = SymbolTable.lookup_symbol(module, stage.kernel)
        if not isinstance(kernel, gpu.FuncOp) or len(kernel.body.blocks) != 1:
            return None
        if any(isinstance(a.type, dataflow.QueueType) for a in kernel.body.blocks.first.args):
            return None  # queues not lowered yet
        kernels.append((stage, kernel))
    modules = {id(k.parent_op()) for _, k in kernels}
    blocks = {str(k.attributes.get(KNOWN_BLOCK_SIZE_ATTR)) for _, k in kernels}
    if len(modules) != 1 or len(blocks) != 1 or None in (
            k.attributes.get(KNOWN_BLOCK_SIZE_ATTR) for _, k in kernels):
        return None
    gmod = kernels[0][1].parent_op()
    assert isinstance(gmod, gpu.ModuleOp)
    return gmod, kernels


@dataclass
class _Stage:
    stage: dataflow.StageOp
    kernel: gpu.FuncOp
    params: list[SSAValue]  # the persistent kernel's value for each of the kernel's parameters
    first: int  # its CTA range [first, end)
    end: int
    constants: dict[arith.ConstantOp, Attribute]  # where it differs from its class's first


# Types a parameter may have to be chosen among a class's stages at run time (a select of
# values; a tensor map is read by the address of its own parameter and cannot be).
_SELECTABLE = (MemRefType, IntegerType, IndexType, Float16Type, BFloat16Type, Float32Type,
               Float64Type)
# A divisor that differs among a class's stages is divided by each stage's constant and the
# result chosen: a division by a register is tens of instructions, one by a constant a multiply
# (a queue's depth divides every ticket).
_DIVISIONS = (arith.DivUIOp, arith.RemUIOp, arith.DivSIOp, arith.RemSIOp, arith.CeilDivUIOp,
              arith.CeilDivSIOp, arith.FloorDivSIOp)


def _classes(stages: list[_Stage], gmod: gpu.ModuleOp) -> list[list[_Stage]]:
    """The stages grouped by code (same_code), each group in CTA order."""
    def lookup(name: str):
        found = SymbolTable.lookup_symbol(gmod, name)
        return found if isinstance(found, memref.GlobalOp) else None

    classes: list[list[_Stage]] = []
    for stage in stages:
        for members in classes:
            rep = members[0]
            chosen = [mine for mine, theirs in zip(stage.params, rep.params, strict=False)
                      if mine is not theirs]
            if len(stage.params) != len(rep.params) or any(
                    not isinstance(value.type, _SELECTABLE) for value in chosen):
                continue
            constants = same_code(rep.kernel, stage.kernel, lookup)
            if constants is not None:
                stage.constants = constants
                members.append(stage)
                break
        else:
            classes.append([stage])
    return classes


class _Chooser:
    """Values chosen by the CTA's stage among a class's members (CTA `cta` is in one of their
    ranges, in CTA order): select(cta < end_0, v0, select(cta < end_1, v1, ... v_last))."""

    def __init__(self, body: Block, cta: SSAValue, members: list[_Stage]):
        self.body = body
        self.below: list[SSAValue] = []
        for member in members[:-1]:
            limit = arith.ConstantOp(IntegerAttr(member.end, IndexType()))
            below = arith.CmpiOp(cta, limit.result, "ult")
            body.add_ops([limit, below])
            self.below.append(below.result)

    def pick(self, values: list[SSAValue], before: Operation | None = None) -> SSAValue:
        result = values[-1]
        if all(v is result for v in values):
            return result
        for below, value in zip(reversed(self.below), reversed(values[:-1]), strict=True):
            select = arith.SelectOp(below, value, result)
            self._add(select, before)
            result = select.result
        return result

    def constants(self, values: list[Attribute], value_type: Attribute,
                  before: Operation | None = None) -> SSAValue:
        made: dict[Attribute, SSAValue] = {}
        for value in values:
            if value not in made:
                const = arith.ConstantOp(value, value_type)
                self._add(const, before)
                made[value] = const.result
        return self.pick([made[v] for v in values], before)

    def _add(self, op: Operation, before: Operation | None) -> None:
        if before is None:
            self.body.add_op(op)
        else:
            before.parent_block().insert_op_before(op, before)


def _choose_constants(chooser: _Chooser, members: list[_Stage],
                      rep_const: dict[arith.ConstantOp, arith.ConstantOp],
                      hoist_before: Operation) -> None:
    """Each constant that differs among the members becomes the CTA's stage's value (chosen
    before `hoist_before`, which precedes the code); a division by one divides by each value
    and chooses the result."""
    differing = {c: None for m in members[1:] for c in m.constants}
    for original in differing:
        const = rep_const[original]
        values = [m.constants.get(original, original.value) for m in members]
        for use in list(const.result.uses):
            user = use.operation
            if isinstance(user, _DIVISIONS) and use.index == 1:
                results = {}
                for value in values:
                    if value not in results:
                        divisor = arith.ConstantOp(value, const.result.type)
                        division = user.clone()
                        division.operands[1] = divisor.result
                        user.parent_block().insert_ops_before([divisor, division], user)
                        results[value] = division.results[0]
                user.results[0].replace_all_uses_with(
                    chooser.pick([results[v] for v in values], user))
                user.detach()
                user.erase()
        if const.result.uses:
            const.result.replace_all_uses_with(chooser.constants(values, const.result.type,
                                                                 hoist_before))
        const.detach()
        const.erase()


def _class_body(members: list[_Stage], cta: SSAValue, movable: Collection[gpu.FuncOp]
                ) -> Block:
    """The code of a class of stages (its first's body, moved or cloned) with the CTA's stage's
    parameters, CTA range and constants chosen; the other members' movable bodies dropped."""
    rep = members[0]
    body = Block()
    chooser = _Chooser(body, cta, members) if len(members) > 1 else None

    def per_stage(values: list[int]) -> SSAValue:
        if chooser is None:
            const = arith.ConstantOp(IntegerAttr(values[0], IndexType()))
            body.add_op(const)
            return const.result
        return chooser.constants([IntegerAttr(v, IndexType()) for v in values], IndexType())

    offset = per_stage([m.first for m in members])
    local = arith.SubiOp(cta, offset)
    body.add_op(local)
    count = per_stage([m.stage.num_ctas for m in members])
    args = rep.kernel.body.blocks.first.args
    params = [m.params for m in members]
    mapping: dict[SSAValue, SSAValue] = {
        arg: (chooser.pick([p[i] for p in params]) if chooser else rep.params[i])
        for i, arg in enumerate(args)}
    rep_const: dict[arith.ConstantOp, arith.ConstantOp] = {}
    if rep.kernel in movable:
        for arg, value in mapping.items():
            arg.replace_all_uses_with(value)
        for op in list(rep.kernel.body.blocks.first.ops):
            if not isinstance(op, gpu.ReturnOp):
                op.detach()
                body.add_op(op)
        rep_const = {c: c for m in members for c in m.constants}
    else:
        for op in rep.kernel.body.blocks.first.ops:
            if not isinstance(op, gpu.ReturnOp):
                body.add_op(op.clone(mapping))
        for member in members[1:]:
            for original in member.constants:
                clone = mapping[original.result].owner
                assert isinstance(clone, arith.ConstantOp)
                rep_const[original] = clone
    if chooser is not None:
        _choose_constants(chooser, members, rep_const, local)
    for member in members[1:]:
        if member.kernel in movable and member.kernel is not rep.kernel:
            for op in reversed(list(member.kernel.body.blocks.first.ops)):
                if not isinstance(op, gpu.ReturnOp):
                    op.detach()
                    op.erase(safe_erase=False)
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    one = arith.ConstantOp(IntegerAttr(1, IndexType()))
    assert isinstance(count.owner, Operation)
    body.insert_ops_after([zero, one], count.owner)
    for op in [found for top in body.ops
               for found in ops_of(top, (gpu.BlockIdOp, gpu.GridDimOp))]:
        along_x = op.dimension.data == gpu.DimensionEnum.X
        ids = isinstance(op, gpu.BlockIdOp)
        op.results[0].replace_all_uses_with((local.result if ids else count) if along_x
                                            else (zero if ids else one).result)
        op.detach()
        op.erase()
    body.add_op(scf.YieldOp())
    return body


def _dispatch(block: Block, cta: SSAValue, classes: list[list[_Stage]],
              bodies: list[Block]) -> None:
    """if b in class 0's ranges { its code } else { if b in class 1's ... }, a range's lower
    bound left out where every CTA below it is taken by an earlier branch."""
    order = {id(m): i for i, members in enumerate(classes) for m in members}
    stages = sorted((m for members in classes for m in members), key=lambda m: m.first)

    def condition(index: int, into: Block) -> SSAValue:
        ranges: list[list[int]] = []
        for member in classes[index]:
            if ranges and ranges[-1][1] == member.first:
                ranges[-1][1] = member.end
            else:
                ranges.append([member.first, member.end])
        result = None
        for lo, hi in ranges:
            limit = arith.ConstantOp(IntegerAttr(hi, IndexType()))
            inside = arith.CmpiOp(cta, limit.result, "ult")
            into.add_ops([limit, inside])
            part = inside.result
            if any(order[id(s)] > index for s in stages if s.end <= lo):
                start = arith.ConstantOp(IntegerAttr(lo, IndexType()))
                above = arith.CmpiOp(cta, start.result, "uge")
                both = arith.AndIOp(above.result, part)
                into.add_ops([start, above, both])
                part = both.result
            if result is not None:
                either = arith.OrIOp(result, part)
                into.add_op(either)
                part = either.result
            result = part
        assert result is not None
        return result

    branch_chain(block, bodies, condition)


def _stage_order(block: Block, block_id: SSAValue, pipeline: dataflow.PipelineOp
                 ) -> SSAValue:
    """A clustered pipeline's CTA b, of rank b mod S in cluster b div S (S stages: a cluster
    is S consecutive CTAs along x), numbered as the CTA ranges number it: rank r is stage r,
    the cluster its CTA (r x L + b div S, L CTAs a stage)."""
    stages = len(pipeline.stages)
    per_stage = pipeline.stages[0].num_ctas
    size = arith.ConstantOp(IntegerAttr(stages, IndexType()))
    lanes = arith.ConstantOp(IntegerAttr(per_stage, IndexType()))
    rank = arith.RemUIOp(block_id, size.result)
    cluster = arith.DivUIOp(block_id, size.result)
    first = arith.MuliOp(rank.result, lanes.result)
    ordered = arith.AddiOp(first.result, cluster.result)
    block.add_ops([size, lanes, rank, cluster, first, ordered])
    return ordered.result


def fuse(pipeline: dataflow.PipelineOp, gmod: gpu.ModuleOp,
         kernels: list[tuple[dataflow.StageOp, gpu.FuncOp]],
         movable: Collection[gpu.FuncOp] = (), share_code: bool = False) -> gpu.FuncOp:
    """The persistent kernel of `pipeline` (appended to `gmod`), a branch for each stage, or
    (`share_code`) for each class of stages of one code (same_code); the bodies of the
    `movable` stage kernels move into it or are dropped (they keep a lone return and
    FUSED_INTO_ATTR); the others are cloned."""
    parameters = fused_parameters([kernel for _, kernel in kernels])
    block = parameters.block
    block_id = gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))
    block.add_op(block_id)
    cta = _stage_order(block, block_id.result, pipeline) if pipeline.clustered \
        else block_id.result
    stages: list[_Stage] = []
    first = 0
    for (stage, kernel), params in zip(kernels, parameters.params, strict=True):
        stages.append(_Stage(stage, kernel, params, first, first + stage.num_ctas, {}))
        first += stage.num_ctas
    classes = _classes(stages, gmod) if share_code else [[stage] for stage in stages]
    _dispatch(block, cta, classes, [_class_body(members, cta, movable) for members in classes])
    block.add_op(gpu.ReturnOp([]))
    fused = fused_kernel(persistent_name(pipeline), parameters, kernels[0][1],
                         [kernel for _, kernel in kernels])
    if pipeline.clustered:
        fused.attributes[CLUSTER_DIMS_ATTR] = DenseArrayBase.from_list(
            i32, [len(kernels), 1, 1])
    gmod.body.blocks.first.add_op(fused)
    mark_fused_into([k for _, k in kernels if k in movable], fused)
    return fused


@dataclass(frozen=True)
class PersistentKernelPass(ModulePass):
    """Fuse each pipeline's (lowered) stage kernels into one kernel with a CTA range each."""

    name = "dataflow-persistent-kernel"

    share_code: bool = False
    """Stages of one code but for constants share one branch (compiled once, run slower)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        uses = symbol_uses(op)
        for pipeline in [p for p in op.ops if isinstance(p, dataflow.PipelineOp)]:
            if PERSISTENT_KERNEL_ATTR in pipeline.attributes:
                continue
            found = _fusable(op, pipeline)
            if found is None:
                continue
            gmod, kernels = found
            if SymbolTable.lookup_symbol(gmod, persistent_name(pipeline)) is not None:
                continue
            # a kernel only its stage names is needed nowhere else: it moves, not copied
            movable = [k for s, k in kernels if uses[str(s.kernel)] == 1]
            fused = fuse(pipeline, gmod, kernels, movable, self.share_code)
            pipeline.attributes[PERSISTENT_KERNEL_ATTR] = SymbolRefAttr(
                gmod.sym_name.data, [fused.sym_name.data])
