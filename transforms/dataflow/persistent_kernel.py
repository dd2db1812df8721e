"""`dataflow-persistent-kernel`: a pipeline's stages as one kernel whose CTAs take stage roles.

Kitsune relies on a grid scheduler that co-schedules a pipeline's kernels; ours has none, and
kernels launched on separate streams (or as sibling nodes of a CUDA graph) may run one after
the other, in which case a producer fills its queue and spins forever. So every pipeline whose
stage kernels share one block size becomes one kernel: CTA b of it runs the stage whose range
[first, first + ctas) holds b, as that stage's CTA b - first (`gpu.block_id` and
`gpu.grid_dim` of the stage's body become the stage's own index and count along x, 0 and 1 along
y and z: a stage's CTAs form a line). The
runtime launches it cooperatively, so all its CTAs are resident at once or the launch fails:
the co-residency a pipeline needs is then the hardware's promise. Stage ranges follow the
pipeline's order, so with CTA counts that are multiples of the SM count, the hardware's
round-robin dispatch puts one CTA of each stage on every SM (a SIMT stage next to a tensor
stage, Kitsune's pairing, where the pipeline lists them so).

It runs after convert-dataflow-to-nvvm, on kernels whose queues are already ring parameters:
the new kernel takes the stages' own parameters in stage order, then each role once (a queue
both produced and consumed is one ring). The pipeline records the new kernel as
`dataflow.persistent_kernel`. A stage kernel that nothing else names keeps its signature and
attributes, the declaration of its stage's parameters that the runtime binds arguments by, but
its body becomes a lone return, marked `dataflow.fused_into`: otherwise every pass, LLVM and
ptxas after this one would compile each stage twice, once as code no launch runs (half of an
MLP stack's compile time). Pipelines whose kernels differ in block size or are not in one
gpu.module keep separate kernels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, gpu, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from tilesync.contract import (
    FUSED_INTO_ATTR,
    KNOWN_BLOCK_SIZE_ATTR,
    PERSISTENT_KERNEL_ATTR,
    SYNC_ARGS_ATTR,
    Role,
)
from tilesync.dialects import dataflow
from tilesync.dialects.kernel_args import set_sync_roles, sync_roles


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


def _roles_and_users(kernel: gpu.FuncOp) -> tuple[list[Role], int]:
    roles = sync_roles(kernel)
    return roles, len(kernel.body.blocks.first.args) - len(roles)


def fuse(pipeline: dataflow.PipelineOp, gmod: gpu.ModuleOp,
         kernels: list[tuple[dataflow.StageOp, gpu.FuncOp]],
         movable: Collection[gpu.FuncOp] = ()) -> gpu.FuncOp:
    """The persistent kernel of `pipeline` (appended to `gmod`). The bodies of the `movable`
    stage kernels move into it (they keep a lone return and `dataflow.fused_into`); the
    others are cloned."""
    user_types, roles, role_types = [], [], {}
    for _, kernel in kernels:
        kernel_roles, users = _roles_and_users(kernel)
        args = kernel.body.blocks.first.args
        user_types += [a.type for a in args[:users]]
        for role, arg in zip(kernel_roles, args[users:]):
            if role not in role_types:
                roles.append(role)
                role_types[role] = arg.type
    block = Block(arg_types=[*user_types, *(role_types[r] for r in roles)])
    role_arg = {r: block.args[len(user_types) + i] for i, r in enumerate(roles)}

    cta = gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))
    block.add_op(cta)
    position, first = 0, 0
    branches: list[tuple[int, int, Block]] = []
    for stage, kernel in kernels:
        kernel_roles, users = _roles_and_users(kernel)
        args = kernel.body.blocks.first.args
        mapping: dict[SSAValue, SSAValue] = {}
        for arg in args[:users]:
            mapping[arg] = block.args[position]
            position += 1
        for role, arg in zip(kernel_roles, args[users:]):
            mapping[arg] = role_arg[role]
        body = Block()
        offset = arith.ConstantOp(IntegerAttr(first, IndexType()))
        local = arith.SubiOp(cta.results[0], offset.result)
        count = arith.ConstantOp(IntegerAttr(stage.num_ctas, IndexType()))
        body.add_ops([offset, local, count])
        if kernel in movable:
            for arg, value in mapping.items():
                arg.replace_all_uses_with(value)
            for op in list(kernel.body.blocks.first.ops):
                if not isinstance(op, gpu.ReturnOp):
                    op.detach()
                    body.add_op(op)
        else:
            for op in kernel.body.blocks.first.ops:
                if not isinstance(op, gpu.ReturnOp):
                    body.add_op(op.clone(mapping))
        zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
        one = arith.ConstantOp(IntegerAttr(1, IndexType()))
        body.insert_ops_after([zero, one], count)
        for op in list(body.walk()):
            if isinstance(op, gpu.BlockIdOp | gpu.GridDimOp):
                along_x = op.dimension.data == gpu.DimensionEnum.X
                ids = isinstance(op, gpu.BlockIdOp)
                op.results[0].replace_all_uses_with((local if ids else count).result if along_x
                                         else (zero if ids else one).result)
                op.detach()
                op.erase()
        body.add_op(scf.YieldOp())
        branches.append((first, first + stage.num_ctas, body))
        first += stage.num_ctas

    # if b < end_0 { stage 0 } else { if b < end_1 { stage 1 } else { ... } }
    def chain(index: int) -> Block:
        _, end, body = branches[index]
        if index == len(branches) - 1:
            return body
        outer = Block()
        limit = arith.ConstantOp(IntegerAttr(end, IndexType()))
        inside = arith.CmpiOp(cta.results[0], limit.result, "ult")
        rest = chain(index + 1)
        outer.add_ops([limit, inside, scf.IfOp(inside.result, [], Region(body), Region(rest)),
                       scf.YieldOp()])
        return outer

    top = chain(0)
    for op in list(top.ops):
        if isinstance(op, scf.YieldOp):
            op.detach()
            op.erase()
            continue
        op.detach()
        block.add_op(op)
    block.add_op(gpu.ReturnOp([]))
    first_kernel = kernels[0][1]
    fused = gpu.FuncOp(persistent_name(pipeline),
                       FunctionType.from_lists(list(block.arg_types), []),
                       Region(block), kernel=True)
    fused.attributes[KNOWN_BLOCK_SIZE_ATTR] = first_kernel.attributes[KNOWN_BLOCK_SIZE_ATTR]
    if roles:
        set_sync_roles(fused, roles)
    elif SYNC_ARGS_ATTR in fused.attributes:
        del fused.attributes[SYNC_ARGS_ATTR]
    gmod.body.blocks.first.add_op(fused)
    for kernel in {id(k): k for _, k in kernels if k in movable}.values():
        kernel.attributes[FUSED_INTO_ATTR] = SymbolRefAttr(gmod.sym_name.data,
                                                           [fused.sym_name.data])
    return fused


def _symbol_refs(op: Operation) -> set[str]:
    """The symbol references in `op`'s attributes and properties, nested ones included."""
    found: set[str] = set()

    def visit(attr: Attribute) -> None:
        if isinstance(attr, SymbolRefAttr):
            found.add(str(attr))
        elif isinstance(attr, ArrayAttr):
            for item in attr.data:
                visit(item)
        elif isinstance(attr, DictionaryAttr):
            for item in attr.data.values():
                visit(item)

    for attr in (*op.attributes.values(), *op.properties.values()):
        visit(attr)
    return found


def symbol_uses(module: ModuleOp) -> Counter[str]:
    """How many times each symbol is named by the ops of `module`."""
    uses: Counter[str] = Counter()
    for op in module.walk():
        uses.update(_symbol_refs(op))
    return uses


@dataclass(frozen=True)
class PersistentKernelPass(ModulePass):
    """Fuse each pipeline's (lowered) stage kernels into one kernel with a CTA range each."""

    name = "dataflow-persistent-kernel"

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
            fused = fuse(pipeline, gmod, kernels, movable)
            pipeline.attributes[PERSISTENT_KERNEL_ATTR] = SymbolRefAttr(
                gmod.sym_name.data, [fused.sym_name.data])
