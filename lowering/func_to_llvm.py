"""`convert-func-to-llvm`: func.func/gpu.func to llvm.func, returns and calls to llvm.

A `gpu.func` becomes an `llvm.func` inside the same `gpu.module` (the unit translated to one
PTX module). Kernels get the `ptx_kernel` calling convention; launch bounds become the string
function attributes NVPTX reads (`"nvvm.maxntid"`, `"nvvm.minctasm"`, `"nvvm.cluster_dim"` for a
compile-time cluster shape) as `passthrough` entries.
Signatures take the llvm types (memref → `!llvm.ptr<AS>`, index → i64); the body keeps the old
types through casts at the start of the entry block until the other passes convert it.
A `!tile.tensor_map` parameter becomes a `!llvm.ptr` with the argument attributes of a blob
passed by value and read in place: `llvm.byval = !llvm.array<128 x i8>`, `llvm.align = 64`,
`nvvm.grid_constant` (CUDA's `const __grid_constant__ CUtensorMap`): the kernel's uses see the
parameter's generic address (`cvta.param`), no copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, gpu, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import VerifyException

from tilesync.compat.ptx_kernel import PTX_KERNEL_CCONV
from tilesync.compat.rewrite_driver import apply_patterns, first_op
from tilesync.contract import (
    CLUSTER_DIMS_ATTR,
    KNOWN_BLOCK_SIZE_ATTR,
    MAX_CLUSTER_BLOCKS,
    MIN_BLOCKS_PER_SM_ATTR,
    PARAM_KINDS,
    TENSOR_MAP,
    launch_bounds_error,
)
from tilesync.dialects.tile import TensorMapType
from tilesync.lowering.llvm_conversion import (
    convert_block_argument_types,
    llvm_operands,
    located_type_errors,
    reject_leftover_ops,
    replace_with_llvm,
    unsupported_op_error,
)
from tilesync.lowering.type_conversion import (
    KERNEL_PARAM_TYPES,
    convert_type,
    kernel_param_kind,
)

PASS_NAME = "convert-func-to-llvm"

# Attributes that the conversion consumes (or that describe the old signature).
_CONSUMED_ATTRS = {KNOWN_BLOCK_SIZE_ATTR, "gpu.known_grid_size", MIN_BLOCKS_PER_SM_ATTR,
                   CLUSTER_DIMS_ATTR, "sym_name", "function_type", "kernel"}


def _llvm_function_type(
    op: Operation, inputs: Sequence[Attribute], outputs: Sequence[Attribute]
) -> llvm.LLVMFunctionType:
    if len(outputs) > 1:
        raise unsupported_op_error(
            PASS_NAME, op, "functions with more than one result are not supported"
        )
    output = convert_type(outputs[0]) if outputs else llvm.LLVMVoidType()
    try:
        return llvm.LLVMFunctionType([convert_type(t) for t in inputs], output)
    except VerifyException as err:  # a type with no LLVM equivalent
        raise unsupported_op_error(PASS_NAME, op, str(err)) from err


def _launch_bounds_passthrough(op: gpu.FuncOp) -> ArrayAttr | None:
    """[["nvvm.maxntid", "X,Y,Z"], ["nvvm.minctasm", "N"]] from the gpu.func's attributes,
    refused where impossible (LLVM would end the process on some)."""
    entries: list[Attribute] = []
    block_size = op.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
    if isinstance(block_size, DenseArrayBase):
        block = tuple(int(d) for d in block_size.get_values())
        if (error := launch_bounds_error(block=block)) is not None:
            raise unsupported_op_error(PASS_NAME, op, f"'{KNOWN_BLOCK_SIZE_ATTR}': {error}")
        dims = ",".join(str(d) for d in block)
        entries.append(ArrayAttr([StringAttr("nvvm.maxntid"), StringAttr(dims)]))
    min_blocks = op.attributes.get(MIN_BLOCKS_PER_SM_ATTR)
    if min_blocks is not None:
        if not isinstance(min_blocks, IntegerAttr):
            raise unsupported_op_error(
                PASS_NAME, op, f"'{MIN_BLOCKS_PER_SM_ATTR}' must be an integer attribute"
            )
        error = launch_bounds_error(min_blocks_per_sm=min_blocks.value.data)
        if error is not None:
            raise unsupported_op_error(PASS_NAME, op, f"'{MIN_BLOCKS_PER_SM_ATTR}': {error}")
        entries.append(
            ArrayAttr([StringAttr("nvvm.minctasm"), StringAttr(str(min_blocks.value.data))])
        )
    cluster = op.attributes.get(CLUSTER_DIMS_ATTR)
    if cluster is not None:
        dims = tuple(int(d) for d in cluster.get_values()) \
            if isinstance(cluster, DenseArrayBase) else ()
        size = dims[0] * dims[1] * dims[2] if len(dims) == 3 else 0
        if not 1 <= size <= MAX_CLUSTER_BLOCKS or min(dims) < 1:
            raise unsupported_op_error(
                PASS_NAME, op, f"'{CLUSTER_DIMS_ATTR}' must be three positive extents of at "
                f"most {MAX_CLUSTER_BLOCKS} blocks in all, got {cluster}")
        entries.append(ArrayAttr([StringAttr("nvvm.cluster_dim"),
                                  StringAttr(",".join(map(str, dims)))]))
    return ArrayAttr(entries) if entries else None


GRID_CONSTANT_ATTR = "nvvm.grid_constant"


def _by_value_attrs(kind: str) -> DictionaryAttr:
    """The argument attributes of a blob parameter read in place (`__grid_constant__`)."""
    blob = PARAM_KINDS[kind]
    assert blob.align is not None
    return DictionaryAttr({"llvm.byval": llvm.LLVMArrayType(blob.size, i8),
                           "llvm.align": IntegerAttr(blob.align, i64),
                           GRID_CONSTANT_ATTR: UnitAttr()})


def _argument_attrs(inputs: Sequence[Attribute]) -> ArrayAttr | None:
    """Per-parameter attributes where a parameter is a tensor map (else None: none at all)."""
    if not any(isinstance(t, TensorMapType) for t in inputs):
        return None
    return ArrayAttr([_by_value_attrs(TENSOR_MAP) if isinstance(t, TensorMapType)
                      else DictionaryAttr({}) for t in inputs])


def _make_llvm_func(
    rewriter: PatternRewriter,
    op: func.FuncOp | gpu.FuncOp,
    cconv: str,
    passthrough: ArrayAttr | None,
) -> None:
    function_type = _llvm_function_type(
        op, op.function_type.inputs.data, op.function_type.outputs.data
    )
    body = rewriter.move_region_contents_to_new_regions(op.body)
    if body.blocks:
        # The signature changed: the entry block takes llvm values and casts them back.
        convert_block_argument_types(body.blocks[0])
    other_props: dict[str, Attribute | None] = {}
    if passthrough is not None:
        other_props["passthrough"] = passthrough
    arg_attrs = _argument_attrs(op.function_type.inputs.data)
    if arg_attrs is not None:
        other_props["arg_attrs"] = arg_attrs
    extra_attrs = {k: v for k, v in op.attributes.items() if k not in _CONSUMED_ATTRS}
    new_func = llvm.FuncOp(
        op.sym_name.data,
        function_type,
        linkage=llvm.LinkageAttr("external"),
        cconv=llvm.CallingConventionAttr(cconv),
        body=body,
        other_props=other_props,
        extra_attrs=extra_attrs,
    )
    rewriter.replace(op, new_func)


class FuncLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /):
        _make_llvm_func(rewriter, op, "ccc", passthrough=None)


class GPUFuncLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: gpu.FuncOp, rewriter: PatternRewriter, /):
        if op.kernel is not None:  # LLVM aborts on some parameter types (i69)
            for index, t in enumerate(op.function_type.inputs.data):
                if kernel_param_kind(t) is None:
                    raise unsupported_op_error(
                        PASS_NAME, op, f"kernel parameter #{index} has type {t}; a kernel "
                                       f"takes {KERNEL_PARAM_TYPES}")
        cconv = PTX_KERNEL_CCONV if op.kernel is not None else "ccc"
        _make_llvm_func(rewriter, op, cconv, _launch_bounds_passthrough(op))


def _result_types(function: Operation | None) -> list[Attribute] | None:
    """The LLVM result types of the function a return leaves (None: not a function)."""
    if isinstance(function, gpu.FuncOp | func.FuncOp):
        return [convert_type(t) for t in function.function_type.outputs.data]
    if isinstance(function, llvm.FuncOp):
        output = function.function_type.output
        return [] if isinstance(output, llvm.LLVMVoidType) else [output]
    return None


def _lower_return(op: Operation, rewriter: PatternRewriter) -> None:
    if len(op.operands) > 1:
        raise unsupported_op_error(PASS_NAME, op, "returning more than one value")
    expected = _result_types(op.parent_op())
    returned = [convert_type(v.type) for v in op.operands]
    if expected is not None and returned != expected:  # gpu.return's verifier lets it through
        shown = ", ".join(str(v.type) for v in op.operands) or "nothing"
        wanted = ", ".join(map(str, expected)) or "nothing"
        raise unsupported_op_error(PASS_NAME, op, f"returns {shown} where its function "
                                                  f"returns {wanted}")
    values = llvm_operands(rewriter, op)
    rewriter.replace(op, llvm.ReturnOp(values[0] if values else None))


class ReturnLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /):
        _lower_return(op, rewriter)


class GPUReturnLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: gpu.ReturnOp, rewriter: PatternRewriter, /):
        _lower_return(op, rewriter)


class CallLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /):
        if len(op.results) > 1:
            raise unsupported_op_error(PASS_NAME, op, "calls with more than one result")
        args = llvm_operands(rewriter, op)
        return_type = convert_type(op.results[0].type) if op.results else None
        call = llvm.CallOp(op.callee, *args, return_type=return_type)
        replace_with_llvm(rewriter, op, [call], call.results)


FUNC_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    FuncLowering(),
    GPUFuncLowering(),
    ReturnLowering(),
    GPUReturnLowering(),
    CallLowering(),
)


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ModulePass):
    """func/gpu.func to llvm.func (ptx_kernel, launch bounds), returns and calls to llvm."""

    name = "convert-func-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with located_type_errors(PASS_NAME, op):
            apply_patterns(op, FUNC_TO_LLVM_PATTERNS)
        reject_leftover_ops(op, PASS_NAME, "func.")
        leftover = first_op(op, lambda cls: issubclass(cls, gpu.FuncOp | gpu.ReturnOp))
        if leftover is not None:
            raise unsupported_op_error(PASS_NAME, leftover, "not converted")
