"""Helpers shared by the standard-dialect `*-to-llvm` passes (arith, index, cf, func, memref).

Each pass rewrites only its own dialect. A rewritten op reads its operands through
`builtin.unrealized_conversion_cast`s to the llvm types and hands its results back cast to the
original types, so the IR verifies between passes; `reconcile-unrealized-casts` folds the
cast pairs away once every dialect is converted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from tilesync.dialects.locations import OpDiagnostic
from tilesync.lowering.type_conversion import (
    UnsupportedTypeError,
    cast_value,
    convert_type,
    unrealized_cast,
)


def _mentions(attribute: Attribute, wanted: Attribute, depth: int = 0) -> bool:
    if attribute == wanted:
        return True
    if depth > 4:
        return False
    if isinstance(attribute, ParametrizedAttribute):
        return any(_mentions(p, wanted, depth + 1) for p in attribute.parameters)
    if isinstance(attribute, ArrayAttr):
        return any(_mentions(a, wanted, depth + 1) for a in attribute.data)
    return False


def _first_user_of_type(module: Operation, wanted: Attribute) -> Operation | None:
    """The first op whose operands, results, block arguments, properties or attributes
    mention the type `wanted`."""
    for op in module.walk():
        types = [v.type for v in (*op.operands, *op.results)]
        types += [a.type for r in op.regions for b in r.blocks for a in b.args]
        attributes = [*op.properties.values(), *op.attributes.values()]
        if any(_mentions(t, wanted) for t in (*types, *attributes)):
            return op
    return None


@contextmanager
def located_type_errors(pass_name: str, module: ModuleOp) -> Iterator[None]:
    """A type with no LLVM equivalent met while `pass_name` converts `module` is reported at
    the first op that uses it."""
    try:
        yield
    except UnsupportedTypeError as err:
        op = _first_user_of_type(module, err.type)
        if op is None:
            raise DiagnosticException(f"{pass_name}: {err}") from err
        raise unsupported_op_error(pass_name, op, str(err)) from err


def llvm_operands(rewriter: PatternRewriter, op: Operation) -> list[SSAValue]:
    """The operands of `op`, each cast (before `op`) to its llvm type."""
    return [cast_value(rewriter, v, convert_type(v.type)) for v in op.operands]


def replace_with_llvm(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Sequence[Operation],
    new_results: Sequence[SSAValue],
) -> None:
    """Insert `new_ops` before `op` and replace `op` by `new_results`, cast back to its types."""
    rewriter.insert(list(new_ops))
    originals = [
        cast_value(rewriter, value, old.type)
        for value, old in zip(new_results, op.results, strict=True)
    ]
    rewriter.replace(op, [], originals)


def unsupported_op_error(pass_name: str, op: Operation, reason: str) -> OpDiagnostic:
    return OpDiagnostic(f"{pass_name}: cannot lower '{op.name}': {reason}", op)


def reject_leftover_ops(module: ModuleOp, pass_name: str, dialect_prefix: str) -> None:
    """Raise for the first op of the converted dialect that no pattern rewrote."""
    from tilesync.compat.rewrite_driver import first_op

    op = first_op(module, lambda cls: cls.name.startswith(dialect_prefix))
    if op is not None:
        raise unsupported_op_error(pass_name, op, "no lowering for this op or its types")


def convert_block_argument_types(block: Block) -> bool:
    """Give `block`'s arguments their llvm types; uses keep the old types through casts.

    The casts sit at the start of the block. Returns whether any argument changed.
    """
    changed = False
    insert_after: Operation | None = None
    for arg in tuple(block.args):
        new_type = convert_type(arg.type)
        if new_type == arg.type:
            continue
        old_type = arg.type
        new_arg = Rewriter.replace_value_with_new_type(arg, new_type)
        cast = unrealized_cast(new_arg, old_type)
        # Redirect the uses before inserting the cast, so the cast itself keeps the new arg.
        new_arg.replace_all_uses_with(cast.results[0])
        cast.operands = (new_arg,)
        point = InsertPoint.at_start(block) if insert_after is None else InsertPoint.after(
            insert_after
        )
        Rewriter.insert_op(cast, point)
        insert_after = cast
        changed = True
    return changed


def convert_region_block_argument_types(region: Region, include_entry: bool) -> None:
    blocks = list(region.blocks)
    if not include_entry:
        blocks = blocks[1:]
    for block in blocks:
        convert_block_argument_types(block)
