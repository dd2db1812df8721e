"""Kernel parameters that synchronization passes append, and their roles for the host.

A pass that needs device state in a kernel (semaphores, the epoch, a start flag, a tile
counter, an order table) appends a trailing parameter and records its role in the kernel's
`sync.args` attribute; the host runtime binds parameters by these roles, so users only ever
pass the kernel's own arguments. One role, one parameter: asking twice returns the same one.
"""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ArrayAttr, FunctionType, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, BlockArgument
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

SYNC_ARGS_ATTR = "sync.args"


def sync_roles(func: gpu.FuncOp) -> list[str]:
    attr = func.attributes.get(SYNC_ARGS_ATTR)
    return [a.data for a in attr.data] if isinstance(attr, ArrayAttr) else []


def sync_arg(func: gpu.FuncOp, role: str, arg_type: Attribute) -> BlockArgument:
    """The parameter playing `role` in `func`, appended (with its type) if it is new."""
    roles = sync_roles(func)
    block = func.body.blocks.first
    assert block is not None
    first_sync = len(block.args) - len(roles)
    if role in roles:
        arg = block.args[first_sync + roles.index(role)]
        if arg.type != arg_type:
            raise DiagnosticException(
                f"kernel @{func.sym_name.data}: sync parameter '{role}' has type {arg.type}, "
                f"expected {arg_type}")
        return arg
    arg = block.insert_arg(arg_type, len(block.args))
    inputs = [*func.function_type.inputs.data, arg_type]
    func.function_type = FunctionType.from_lists(inputs, func.function_type.outputs.data)
    func.attributes[SYNC_ARGS_ATTR] = ArrayAttr([StringAttr(r) for r in [*roles, role]])
    return arg


def lookup_kernel(module: ModuleOp, kernel: SymbolRefAttr, where: str) -> gpu.FuncOp:
    """The gpu.func named `@mod::@func` by a stage."""
    found = SymbolTable.lookup_symbol(module, kernel)
    if not isinstance(found, gpu.FuncOp):
        raise DiagnosticException(f"{where}: kernel {kernel} is not a gpu.func in this module")
    return found
