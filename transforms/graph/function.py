"""What the graph-level passes share: the module's one graph function, and its replacement by
the program it lowers to (the function's type kept on the module, `graph.signature`)."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, UnitAttr
from xdsl.rewriter import Rewriter

from tilesync.dialects import graph
from tilesync.dialects.locations import diagnostic


def single_function(module: ModuleOp, pass_name: str) -> func.FuncOp:
    fns = [f for f in module.ops if isinstance(f, func.FuncOp) and not f.is_declaration]
    if len(fns) != 1:
        # at the second function where there are more, else at the module (a declaration
        # when the module holds one: its body is what is missing)
        declarations = [f for f in module.ops if isinstance(f, func.FuncOp)]
        where = fns[1] if len(fns) > 1 else declarations[0] if declarations else module
        raise diagnostic(pass_name, where, f"lowers one graph function per module (with a "
                                           f"body), found {len(fns)}")
    return fns[0]


def signature_of(fn: func.FuncOp) -> FunctionType:
    return FunctionType.from_lists(fn.function_type.inputs.data, fn.function_type.outputs.data)


def replace_function(module: ModuleOp, fn: func.FuncOp, program: ModuleOp) -> None:
    """`fn` out, `program`'s ops in, the module a GPU container with fn's signature."""
    signature = signature_of(fn)
    Rewriter.erase_op(fn)
    for moved in list(program.ops):
        moved.detach()
        module.body.block.add_op(moved)
    module.attributes["gpu.container_module"] = UnitAttr()
    module.attributes[graph.SIGNATURE_ATTR] = signature


__all__ = ["replace_function", "signature_of", "single_function"]
