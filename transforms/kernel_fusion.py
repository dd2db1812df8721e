"""What the passes that make one kernel of several share (dataflow-persistent-kernel: a
pipeline's stages by CTA range; sync-fuse-launches: stages of one launch by ticket).

The fused kernel takes each kernel's own parameters in order, then every sync role once (a
role two kernels share, the semaphores one posts and the other waits on, is one parameter):
the declaration the runtime binds arguments by. A kernel only its stage names moves into the
fused one; its own body becomes a lone return, marked `FUSED_INTO_ATTR`, so nothing after the
fusion compiles it twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import gpu, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tilesync.compat.rewrite_driver import walk_ops
from tilesync.contract import (
    FUSED_INTO_ATTR,
    KNOWN_BLOCK_SIZE_ATTR,
    MIN_BLOCKS_PER_SM_ATTR,
    SYNC_ARGS_ATTR,
    Role,
)
from tilesync.dialects.kernel_args import set_sync_roles, sync_roles


def roles_and_users(kernel: gpu.FuncOp) -> tuple[list[Role], int]:
    """A kernel's sync roles and the count of its own (user) parameters before them."""
    roles = sync_roles(kernel)
    return roles, len(kernel.body.blocks.first.args) - len(roles)


@dataclass
class FusedParameters:
    """The fused kernel's entry block (its arguments the parameters) and, for each kernel, the
    entry block's value for each of that kernel's parameters."""

    block: Block
    params: list[list[SSAValue]]
    roles: list[Role]


def fused_parameters(kernels: Sequence[gpu.FuncOp]) -> FusedParameters:
    """Each kernel's user parameters in order, then each role once."""
    user_types: list[Attribute] = []
    roles: list[Role] = []
    role_types: dict[Role, Attribute] = {}
    for kernel in kernels:
        kernel_roles, users = roles_and_users(kernel)
        args = kernel.body.blocks.first.args
        user_types += [a.type for a in args[:users]]
        for role, arg in zip(kernel_roles, args[users:], strict=True):
            if role not in role_types:
                roles.append(role)
                role_types[role] = arg.type
    block = Block(arg_types=[*user_types, *(role_types[r] for r in roles)])
    role_arg = {r: block.args[len(user_types) + i] for i, r in enumerate(roles)}
    params: list[list[SSAValue]] = []
    position = 0
    for kernel in kernels:
        kernel_roles, users = roles_and_users(kernel)
        params.append([*block.args[position:position + users],
                       *(role_arg[role] for role in kernel_roles)])
        position += users
    return FusedParameters(block, params, roles)


def fused_kernel(name: str, parameters: FusedParameters, like: gpu.FuncOp,
                 kernels: Sequence[gpu.FuncOp] = ()) -> gpu.FuncOp:
    """The gpu.func of `parameters.block` (complete, with its return), with `like`'s block
    size and the roles; the fewest blocks per SM that any of `kernels` declares (its registers
    must let that many in: so must the fused kernel's, which runs its blocks)."""
    block = parameters.block
    fused = gpu.FuncOp(name, FunctionType.from_lists(list(block.arg_types), []), Region(block),
                       kernel=True)
    fused.attributes[KNOWN_BLOCK_SIZE_ATTR] = like.attributes[KNOWN_BLOCK_SIZE_ATTR]
    if parameters.roles:
        set_sync_roles(fused, parameters.roles)
    elif SYNC_ARGS_ATTR in fused.attributes:
        del fused.attributes[SYNC_ARGS_ATTR]
    declared = [k.attributes.get(MIN_BLOCKS_PER_SM_ATTR) for k in kernels]
    known = [d.value.data for d in declared if isinstance(d, IntegerAttr)]
    if known:
        fused.attributes[MIN_BLOCKS_PER_SM_ATTR] = IntegerAttr(min(known), i32)
    return fused


def take_body(kernel: gpu.FuncOp, values: Sequence[SSAValue], movable: bool) -> list[Operation]:
    """The ops of `kernel`'s body but its return, on `values` for its parameters: moved out
    (the kernel keeps a lone return) where `movable`, cloned otherwise."""
    args = kernel.body.blocks.first.args
    ops = [op for op in kernel.body.blocks.first.ops if not isinstance(op, gpu.ReturnOp)]
    if not movable:
        mapping: dict[SSAValue, SSAValue] = dict(zip(args, values, strict=True))
        return [op.clone(mapping) for op in ops]
    for arg, value in zip(args, values, strict=True):
        arg.replace_all_uses_with(value)
    for op in ops:
        op.detach()
    return ops


def branch_chain(block: Block, bodies: Sequence[Block],
                 condition: Callable[[int, Block], SSAValue]) -> None:
    """Append to `block`: if condition(0) { bodies[0] } else if condition(1) { bodies[1] } ...
    else { the last body }; `condition(i, into)` builds its test into `into`, the block that
    holds branch i's `scf.if`. Each body ends with its `scf.yield`."""
    def chain(index: int) -> Block:
        if index == len(bodies) - 1:
            return bodies[index]
        outer = Block()
        inside = condition(index, outer)
        rest = chain(index + 1)
        outer.add_ops([scf.IfOp(inside, [], Region(bodies[index]), Region(rest)),
                       scf.YieldOp()])
        return outer

    top = chain(0)
    for op in list(top.ops):
        op.detach()
        if isinstance(op, scf.YieldOp):
            op.erase()
        else:
            block.add_op(op)


def mark_fused_into(kernels: Sequence[gpu.FuncOp], fused: gpu.FuncOp) -> None:
    """Mark the kernels whose bodies moved into `fused`."""
    gmod = fused.parent_op()
    assert isinstance(gmod, gpu.ModuleOp)
    for kernel in {id(k): k for k in kernels}.values():
        kernel.attributes[FUSED_INTO_ATTR] = SymbolRefAttr(gmod.sym_name.data,
                                                           [fused.sym_name.data])


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
    for op in walk_ops(module):
        refs = _symbol_refs(op)
        if refs:
            uses.update(refs)
    return uses
