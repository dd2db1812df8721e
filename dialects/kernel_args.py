"""The `sync.args` attribute of a gpu.func: roles of the parameters passes appended.

A pass that needs device state in a kernel (semaphores, the epoch, a start flag, a tile
counter, an order table) appends a trailing parameter and records its role (a
`tilesync.contract.Role`) in the kernel's `sync.args`; the host runtime binds parameters by
these roles, so users only ever pass the kernel's own arguments. One role, one parameter:
asking twice returns the same one.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ArrayAttr, FunctionType, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, BlockArgument, Operation
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

from tilesync.contract import SYNC_ARGS_ATTR, Role
from tilesync.dialects.locations import OpDiagnostic


def sync_roles(func: Operation) -> list[Role]:
    """The roles in `func`'s `sync.args` (a gpu.func, or the llvm.func it lowered to)."""
    attr = func.attributes.get(SYNC_ARGS_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    try:
        return [Role.parse(a.data) for a in attr.data]
    except (ValueError, AttributeError) as err:  # bad input, said in full by the diagnostic
        raise OpDiagnostic(f"{SYNC_ARGS_ATTR} of @{_name(func)}: {err}", func) from None


def set_sync_roles(func: Operation, roles: Sequence[Role]) -> None:
    func.attributes[SYNC_ARGS_ATTR] = ArrayAttr([StringAttr(str(r)) for r in roles])


def role_arguments(func: gpu.FuncOp) -> dict[BlockArgument, Role]:
    """Each trailing argument of `func` that plays a role, with its role."""
    roles = sync_roles(func)
    args = func.body.blocks.first.args  # type: ignore[union-attr]
    first = len(args) - len(roles)
    return {args[first + i]: role for i, role in enumerate(roles)}


def sync_arg(func: gpu.FuncOp, role: Role, arg_type: Attribute) -> BlockArgument:
    """The parameter playing `role` in `func`, appended (with its type) if it is new."""
    roles = sync_roles(func)
    block = func.body.blocks.first
    assert block is not None
    first_sync = len(block.args) - len(roles)
    if role in roles:
        arg = block.args[first_sync + roles.index(role)]
        if arg.type != arg_type:
            raise OpDiagnostic(
                f"kernel @{func.sym_name.data}: sync parameter '{role}' has type {arg.type}, "
                f"expected {arg_type}", func)
        return arg
    arg = block.insert_arg(arg_type, len(block.args))
    inputs = [*func.function_type.inputs.data, arg_type]
    func.function_type = FunctionType.from_lists(inputs, func.function_type.outputs.data)
    set_sync_roles(func, [*roles, role])
    return arg


def lookup_kernel(module: ModuleOp, kernel: SymbolRefAttr, where: str,
                  stage: Operation | None = None) -> gpu.FuncOp:
    """The gpu.func named `@mod::@func` by a stage (`where` names it in an error, located at
    `stage`)."""
    found = SymbolTable.lookup_symbol(module, kernel)
    if not isinstance(found, gpu.FuncOp):
        message = f"{where}: kernel {kernel} is not a gpu.func in this module"
        raise OpDiagnostic(message, stage) if stage is not None else DiagnosticException(message)
    return found


def _name(func: Operation) -> str:
    name = getattr(func, "sym_name", None)
    return name.data if name is not None else func.name
