"""The `graph` dialect: the tensor level above stage programs.

A model piece is a `func.func` over ranked tensors whose body is graph ops, named after what a
PyTorch user writes (nn.Linear, F.gelu, F.silu, torch.matmul, F.conv2d, softmax, nn.LayerNorm,
sum, cat, split):

    func.func @mlp(%x: tensor<256x1024xf16>, %w1: tensor<4096x1024xf16>,
                   %w2: tensor<1024x4096xf16>) -> tensor<256x1024xf16> {
      %h = graph.linear %x, %w1 : (tensor<256x1024xf16>, tensor<4096x1024xf16>)
                                  -> tensor<256x4096xf16>
      %a = graph.gelu %h approximate "tanh" : tensor<256x4096xf16>
      %y = graph.linear %a, %w2 : (...) -> tensor<256x1024xf16>
      func.return %y : tensor<256x1024xf16>
    }

Shapes are static; each op's verifier checks its operand shapes and element types against its
result. `graph-to-stages` (transforms/graph/graph_to_stages.py) turns a matched piece into a
stage program; what each stage's kernel arguments are in terms of the function's inputs, its
temporaries and its results is `#graph.bind` (on every `sync.stage`, attribute `graph.bind`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from tilesync.dialects.tile import TensorMapType

ELEMENT_TYPES = (Float16Type, BFloat16Type, Float32Type)
GELU_APPROXIMATIONS = ("none", "tanh")
CONV_LAYOUTS = ("NCHW", "NHWC")
"""graph.conv2d's layouts (activations; the filter follows: KCRS, KRSC), the default first."""


def _tensor(value: SSAValue | Attribute, op: Operation, what: str) -> TensorType:
    kind = value.type if isinstance(value, SSAValue) else value
    if not isinstance(kind, TensorType) or not kind.has_static_shape():
        raise VerifyException(f"{op.name}: {what} must be a tensor of static shape, got {kind}")
    if not isinstance(kind.element_type, ELEMENT_TYPES):
        raise VerifyException(f"{op.name}: {what} has element type {kind.element_type}; "
                              "the graph level takes f16, bf16 or f32")
    return kind


def _shape(kind: TensorType) -> tuple[int, ...]:
    return tuple(kind.get_shape())


def _same_element(op: Operation, *kinds: TensorType) -> None:
    elements = {str(k.element_type) for k in kinds}
    if len(elements) > 1:
        raise VerifyException(f"{op.name}: operands and result must share one element type, "
                              f"got {', '.join(sorted(elements))}")


def _expect_result(op: Operation, result: TensorType, shape: Sequence[int]) -> None:
    if _shape(result) != tuple(shape):
        raise VerifyException(f"{op.name}: result shape {list(_shape(result))} does not match "
                              f"the expected {list(shape)}")


# ---------------------------------------------------------------------------------------------
# Contractions
# ---------------------------------------------------------------------------------------------


def _batched_operand(lhs: Sequence[int], rhs: Sequence[int]) -> bool:
    """rhs is a matrix, or matrices over exactly lhs's batch dimensions (a contraction's second
    operand: one for every batch, or one per batch)."""
    return len(rhs) == 2 or (len(rhs) == len(lhs) and tuple(rhs[:-2]) == tuple(lhs[:-2]))



@irdl_op_definition
class LinearOp(IRDLOperation):
    """`graph.linear %x, %w[, %b]`: x · wᵀ (+ b) as nn.Linear computes it: x is ... x K, w is
    N x K (nn.Linear's weight), b has N elements; the result is ... x N. A w of x's batch
    dimensions x N x K multiplies batch by batch (`q @ k.transpose(-2, -1)` of attention
    heads)."""

    name = "graph.linear"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = ("$input `,` $weight (`,` $bias^)? attr-dict `:` `(` type($input) `,` "
                       "type($weight) (`,` type($bias)^)? `)` `->` type($result)")

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None,
                 result_type: Attribute):
        super().__init__(operands=[input, weight, bias], result_types=[result_type])

    @property
    def batched(self) -> bool:
        """Whether w is one matrix per batch (x · wᵀ batch by batch), not a layer's weight."""
        return len(_shape(_tensor(self.weight, self, "weight"))) != 2

    def verify_(self) -> None:
        x, w = _tensor(self.input, self, "input"), _tensor(self.weight, self, "weight")
        out = _tensor(self.result.type, self, "result")
        kinds = [x, w, out]
        if len(_shape(x)) < 2 or not _batched_operand(_shape(x), _shape(w)):
            raise VerifyException(f"{self.name}: input must be ... x K and weight N x K (or "
                                  f"the input's batch dimensions x N x K), got "
                                  f"{list(_shape(x))} and {list(_shape(w))}")
        n, k = _shape(w)[-2:]
        if _shape(x)[-1] != k:
            raise VerifyException(f"{self.name}: input's last dimension {_shape(x)[-1]} must "
                                  f"equal the weight's K = {k}")
        if self.bias is not None:
            b = _tensor(self.bias, self, "bias")
            kinds.append(b)
            if _shape(b) != (n,):
                raise VerifyException(f"{self.name}: bias must have N = {n} elements, got "
                                      f"{list(_shape(b))}")
        _same_element(self, *kinds)
        _expect_result(self, out, (*_shape(x)[:-1], n))


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """`graph.matmul %a, %b`: a · b, a is ... x M x K, b K x N or a's batch dimensions x K x N
    (torch.matmul, batch by batch; no broadcasting of b's batch dimensions)."""

    name = "graph.matmul"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = ("$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` "
                       "type($result)")

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        a, b = _tensor(self.lhs, self, "lhs"), _tensor(self.rhs, self, "rhs")
        out = _tensor(self.result.type, self, "result")
        _same_element(self, a, b, out)
        if len(_shape(a)) < 2 or not _batched_operand(_shape(a), _shape(b)):
            raise VerifyException(f"{self.name}: lhs must be ... x M x K and rhs K x N (or the "
                                  f"lhs's batch dimensions x K x N), got {list(_shape(a))} and "
                                  f"{list(_shape(b))}")
        k, n = _shape(b)[-2:]
        if _shape(a)[-1] != k:
            raise VerifyException(f"{self.name}: contracted dimensions differ: "
                                  f"{_shape(a)[-1]} and {k}")
        _expect_result(self, out, (*_shape(a)[:-1], n))


@irdl_op_definition
class Conv2dOp(IRDLOperation):
    """`graph.conv2d %x, %w[, %b] stride [..] padding [..] [layout "NHWC"]`: F.conv2d.

    `layout` names the activations' dimension order and, with it, the filter's (as linalg's
    conv_2d_nchw_fchw and conv_2d_nhwc_fhwc do): "NCHW" (the default, PyTorch's; printed
    without it): x is N x C x H x W, w K x C x R x S, the result N x K x P x Q; "NHWC"
    (channels last, what the implicit-GEMM kernel reads): x is N x H x W x C, w K x R x S x C,
    the result N x P x Q x K. b has K elements either way."""

    name = "graph.conv2d"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    stride = prop_def(DenseArrayBase.constr(i64))
    padding = prop_def(DenseArrayBase.constr(i64))
    layout = opt_prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = ("$input `,` $weight (`,` $bias^)? `stride` $stride `padding` $padding "
                       "(`layout` $layout^)? attr-dict `:` `(` type($input) `,` type($weight) "
                       "(`,` type($bias)^)? `)` `->` type($result)")

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None,
                 stride: Sequence[int], padding: Sequence[int], result_type: Attribute,
                 layout: str = "NCHW"):
        super().__init__(operands=[input, weight, bias], result_types=[result_type],
                         properties={"stride": DenseArrayBase.from_list(i64, list(stride)),
                                     "padding": DenseArrayBase.from_list(i64, list(padding)),
                                     "layout": None if layout == CONV_LAYOUTS[0]
                                     else StringAttr(layout)})

    @property
    def layout_name(self) -> str:
        return CONV_LAYOUTS[0] if self.layout is None else self.layout.data

    def verify_(self) -> None:
        x, w = _tensor(self.input, self, "input"), _tensor(self.weight, self, "weight")
        out = _tensor(self.result.type, self, "result")
        kinds = [x, w, out]
        layout = self.layout_name
        if layout not in CONV_LAYOUTS:
            raise VerifyException(f"{self.name}: layout must be one of {CONV_LAYOUTS}, got "
                                  f"{layout!r}")
        nhwc = layout == "NHWC"
        stride, padding = self.stride.get_values(), self.padding.get_values()
        if len(stride) != 2 or len(padding) != 2 or min(stride) < 1 or min(padding) < 0:
            raise VerifyException(f"{self.name}: stride and padding take two values (stride "
                                  f">= 1, padding >= 0), got {list(stride)}, {list(padding)}")
        if len(_shape(x)) != 4 or len(_shape(w)) != 4:
            raise VerifyException(f"{self.name}: input must be " + (
                "N x H x W x C and weight K x R x S x C" if nhwc
                else "N x C x H x W and weight K x C x R x S"))
        if nhwc:
            (n, h, wd, c), (k, r, s, c2) = _shape(x), _shape(w)
        else:
            (n, c, h, wd), (k, c2, r, s) = _shape(x), _shape(w)
        if c != c2:
            raise VerifyException(f"{self.name}: input has {c} channels, weight {c2}")
        if self.bias is not None:
            b = _tensor(self.bias, self, "bias")
            kinds.append(b)
            if _shape(b) != (k,):
                raise VerifyException(f"{self.name}: bias must have K = {k} elements")
        _same_element(self, *kinds)
        p = (h + 2 * padding[0] - r) // stride[0] + 1
        q = (wd + 2 * padding[1] - s) // stride[1] + 1
        _expect_result(self, out, (n, p, q, k) if nhwc else (n, k, p, q))


# ---------------------------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------------------------


class _UnaryOp(IRDLOperation):
    T: ClassVar = VarConstraint("T", base(TensorType))
    input = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[input.type])

    def verify_(self) -> None:
        x = _tensor(self.input, self, "input")
        if x != self.result.type:
            raise VerifyException(f"{self.name}: result type {self.result.type} must equal the "
                                  f"input's {x}")


@irdl_op_definition
class GeluOp(_UnaryOp):
    """`graph.gelu %x approximate "tanh"`: F.gelu (`"none"`: the erf form; `"tanh"`: GPT-2's
    approximation, the one the GEMM epilogue computes)."""

    name = "graph.gelu"
    approximate = prop_def(StringAttr)
    assembly_format = "$input `approximate` $approximate attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, approximate: str = "none"):
        IRDLOperation.__init__(self, operands=[input], result_types=[input.type],
                               properties={"approximate": StringAttr(approximate)})

    def verify_(self) -> None:
        super().verify_()
        if self.approximate.data not in GELU_APPROXIMATIONS:
            raise VerifyException(f"{self.name}: approximate must be one of "
                                  f"{GELU_APPROXIMATIONS}, got {self.approximate.data!r}")


@irdl_op_definition
class SiluOp(_UnaryOp):
    """`graph.silu %x`: x · sigmoid(x)."""

    name = "graph.silu"


@irdl_op_definition
class ReluOp(_UnaryOp):
    """`graph.relu %x`: max(x, 0)."""

    name = "graph.relu"


class _BinaryOp(IRDLOperation):
    T: ClassVar = VarConstraint("T", base(TensorType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        a, b = _tensor(self.lhs, self, "lhs"), _tensor(self.rhs, self, "rhs")
        if not a == b == self.result.type:
            raise VerifyException(f"{self.name}: operands and result must have one type (no "
                                  f"broadcasting), got {a}, {b} -> {self.result.type}")


@irdl_op_definition
class AddOp(_BinaryOp):
    """`graph.add %a, %b`: elementwise sum of two tensors of one type."""

    name = "graph.add"


@irdl_op_definition
class MulOp(_BinaryOp):
    """`graph.mul %a, %b`: elementwise product of two tensors of one type."""

    name = "graph.mul"


# ---------------------------------------------------------------------------------------------
# Softmax, reductions, concatenation
# ---------------------------------------------------------------------------------------------


def _dimension(op: Operation, dim: int, rank: int) -> int:
    if not -rank <= dim < rank:
        raise VerifyException(f"{op.name}: dimension {dim} out of range for rank {rank}")
    return dim % rank


@irdl_op_definition
class SoftmaxOp(_UnaryOp):
    """`graph.softmax %x dim -1 [scale 1.250000e-01] [causal]`: softmax(x · scale) along one
    dimension, attention's scaled scores (`scale` an f32, positive and finite: the kernel
    subtracts the row maximum before it scales; printed only where it is not 1). `causal`:
    attention's causal mask, torch's `is_causal` (top left): over the last two dimensions
    (queries x keys, dim -1), the element of query i and key j > i is excluded (weight 0), as
    `scores.masked_fill(~ones(Tq, Tk).tril(), -inf)` before the softmax."""

    name = "graph.softmax"
    dim = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(FloatAttr[Float32Type])
    causal = opt_prop_def(UnitAttr)
    assembly_format = ("$input `dim` $dim (`scale` $scale^)? (`causal` $causal^)? attr-dict "
                       "`:` type($result)")

    def __init__(self, input: SSAValue, dim: int = -1, scale: float = 1.0,
                 causal: bool = False):
        IRDLOperation.__init__(self, operands=[input], result_types=[input.type],
                               properties={"dim": IntegerAttr(dim, i64),
                                           "scale": None if scale == 1.0
                                           else FloatAttr(scale, f32),
                                           "causal": UnitAttr() if causal else None})

    @property
    def scale_value(self) -> float:
        """The scale as an f32 value (1.0 where absent)."""
        return 1.0 if self.scale is None else self.scale.value.data

    @property
    def is_causal(self) -> bool:
        return self.causal is not None

    def verify_(self) -> None:
        super().verify_()
        rank = len(_shape(_tensor(self.input, self, "input")))
        dim = _dimension(self, self.dim.value.data, rank)
        if not (math.isfinite(self.scale_value) and self.scale_value > 0):
            raise VerifyException(f"{self.name}: scale must be positive and finite, got "
                                  f"{self.scale_value}")
        if self.is_causal and (rank < 2 or dim != rank - 1):
            raise VerifyException(f"{self.name}: a causal mask runs over queries x keys: the "
                                  "softmax's dimension is the last of at least two")


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """`graph.layer_norm %x, %gamma, %beta eps 1.000000e-05`: nn.LayerNorm over the last
    dimension of x (... x N), with its affine weight gamma and bias beta (N elements each):
    (x - mean) / sqrt(var + eps) * gamma + beta, the variance the biased one (`eps` an f32,
    positive and finite)."""

    name = "graph.layer_norm"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    eps = prop_def(FloatAttr[Float32Type])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = ("$input `,` $weight `,` $bias `eps` $eps attr-dict `:` `(` type($input) "
                       "`,` type($weight) `,` type($bias) `)` `->` type($result)")

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue, eps: float = 1e-5):
        super().__init__(operands=[input, weight, bias], result_types=[input.type],
                         properties={"eps": FloatAttr(eps, f32)})

    def verify_(self) -> None:
        x = _tensor(self.input, self, "input")
        gamma, beta = _tensor(self.weight, self, "weight"), _tensor(self.bias, self, "bias")
        out = _tensor(self.result.type, self, "result")
        if not _shape(x):
            raise VerifyException(f"{self.name}: input must be ... x N, got a scalar")
        n = _shape(x)[-1]
        for what, kind in (("weight", gamma), ("bias", beta)):
            if _shape(kind) != (n,):
                raise VerifyException(f"{self.name}: {what} must have N = {n} elements (the "
                                      f"input's last dimension), got {list(_shape(kind))}")
        _same_element(self, x, gamma, beta, out)
        _expect_result(self, out, _shape(x))
        eps = self.eps.value.data
        if not (math.isfinite(eps) and eps > 0):
            raise VerifyException(f"{self.name}: eps must be positive and finite, got {eps}")


@irdl_op_definition
class ReduceSumOp(IRDLOperation):
    """`graph.reduce_sum %x dims [1]`: the sum over `dims` (dropped from the result)."""

    name = "graph.reduce_sum"

    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = "$input `dims` $dims attr-dict `:` `(` type($input) `)` `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type],
                         properties={"dims": DenseArrayBase.from_list(i64, list(dims))})

    def verify_(self) -> None:
        x = _tensor(self.input, self, "input")
        out = _tensor(self.result.type, self, "result")
        _same_element(self, x, out)
        rank = len(_shape(x))
        dims = [_dimension(self, d, rank) for d in self.dims.get_values()]
        if len(set(dims)) != len(dims) or not dims:
            raise VerifyException(f"{self.name}: dims must be distinct and not empty")
        _expect_result(self, out, [e for i, e in enumerate(_shape(x)) if i not in dims])


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """`graph.concat %a, %b dim 1`: torch.cat along one dimension."""

    name = "graph.concat"

    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = "$inputs `dim` $dim attr-dict `:` `(` type($inputs) `)` `->` type($result)"

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: Attribute):
        super().__init__(operands=[list(inputs)], result_types=[result_type],
                         properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException(f"{self.name}: needs at least one input")
        kinds = [_tensor(v, self, f"input {i}") for i, v in enumerate(self.inputs)]
        out = _tensor(self.result.type, self, "result")
        _same_element(self, *kinds, out)
        rank = len(_shape(kinds[0]))
        dim = _dimension(self, self.dim.value.data, rank)
        for i, kind in enumerate(kinds):
            shape = _shape(kind)
            if len(shape) != rank or any(a != b for j, (a, b) in
                                         enumerate(zip(shape, _shape(kinds[0]))) if j != dim):
                raise VerifyException(f"{self.name}: input {i} of shape {list(shape)} differs "
                                      f"from input 0 outside dimension {dim}")
        expected = list(_shape(kinds[0]))
        expected[dim] = sum(_shape(k)[dim] for k in kinds)
        _expect_result(self, out, expected)


@irdl_op_definition
class SplitOp(IRDLOperation):
    """`graph.split %qkv dim -1 : (tensor<64x2304xf16>) -> (tensor<64x768xf16>, ...)`:
    torch.split along one dimension, the sizes those of the results (in order, covering it)."""

    name = "graph.split"

    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    outputs = var_result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = ("$input `dim` $dim attr-dict `:` `(` type($input) `)` `->` "
                       "`(` type($outputs) `)`")

    def __init__(self, input: SSAValue, dim: int, result_types: Sequence[Attribute]):
        super().__init__(operands=[input], result_types=[list(result_types)],
                         properties={"dim": IntegerAttr(dim, i64)})

    def verify_(self) -> None:
        x = _tensor(self.input, self, "input")
        if not self.outputs:
            raise VerifyException(f"{self.name}: needs at least one result")
        kinds = [_tensor(v.type, self, f"result {i}") for i, v in enumerate(self.outputs)]
        _same_element(self, x, *kinds)
        shape = _shape(x)
        dim = _dimension(self, self.dim.value.data, len(shape))
        for i, kind in enumerate(kinds):
            if len(_shape(kind)) != len(shape) or any(
                    a != b for j, (a, b) in enumerate(zip(_shape(kind), shape)) if j != dim):
                raise VerifyException(f"{self.name}: result {i} of shape {list(_shape(kind))} "
                                      f"differs from the input {list(shape)} outside "
                                      f"dimension {dim}")
        if sum(_shape(k)[dim] for k in kinds) != shape[dim]:
            raise VerifyException(f"{self.name}: the results' sizes along dimension {dim} sum "
                                  f"to {sum(_shape(k)[dim] for k in kinds)}, not the input's "
                                  f"{shape[dim]}")


# ---------------------------------------------------------------------------------------------
# Views: reshape, transpose
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """`graph.reshape %x : (tensor<64x768xf16>) -> tensor<64x12x64xf16>`: Tensor.view /
    reshape, the same elements in the same (row-major) order under another shape."""

    name = "graph.reshape"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` `(` type($input) `)` `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        x, out = _tensor(self.input, self, "input"), _tensor(self.result.type, self, "result")
        _same_element(self, x, out)
        if math.prod(_shape(x)) != math.prod(_shape(out)):
            raise VerifyException(f"{self.name}: {list(_shape(x))} has "
                                  f"{math.prod(_shape(x))} elements, the result "
                                  f"{list(_shape(out))} {math.prod(_shape(out))}")


HEADS_PERM = {3: (1, 0, 2), 4: (0, 2, 1, 3)}
"""By rank, graph.transpose's perm between tokens x heads x D and heads x tokens x D (one
sequence; B x ... for a batch of them): attention's q, k, v viewed as heads,
x.view(T, H, D).transpose(0, 1) or x.view(B, T, H, D).transpose(1, 2), and the heads merged
back through the same perm (its own inverse)."""


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """`graph.transpose %x perm [1, 0, 2] : (tensor<64x12x64xf16>) ->
    tensor<12x64x64xf16>`: Tensor.permute (transpose(i, j) swaps two entries of the identity):
    dimension d of the result is dimension perm[d] of the input."""

    name = "graph.transpose"

    input = operand_def(TensorType)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)

    traits = traits_def(Pure())
    assembly_format = ("$input `perm` $perm attr-dict `:` `(` type($input) `)` `->` "
                       "type($result)")

    def __init__(self, input: SSAValue, perm: Sequence[int], result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type],
                         properties={"perm": DenseArrayBase.from_list(i64, list(perm))})

    @property
    def permutation(self) -> tuple[int, ...]:
        return tuple(self.perm.get_values())

    def verify_(self) -> None:
        x, out = _tensor(self.input, self, "input"), _tensor(self.result.type, self, "result")
        _same_element(self, x, out)
        perm, shape = self.permutation, _shape(x)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"{self.name}: perm {list(perm)} is not a permutation of the "
                                  f"input's {len(shape)} dimensions")
        _expect_result(self, out, [shape[d] for d in perm])


# ---------------------------------------------------------------------------------------------
# Kernel argument bindings of a lowered piece
# ---------------------------------------------------------------------------------------------

BIND_KINDS = ("input", "temp", "result", "gate_up", "transposed")
"""input i: function argument i; temp i: the piece's i-th temporary (`graph.temps` on the
module); result i: function result i; gate_up i, j: the rows of arguments i (gate) and j (up)
interleaved in blocks of 8, the weight layout of the GEMM's SwiGLU epilogue; transposed i:
argument i, a K x N matrix (a weight stored in x out, Hugging Face's Conv1D), as its N x K
transpose, row-major: the layout the GEMMs read a weight in (graph-to-stages binds it where a
graph.linear's weight is `graph.transpose %arg perm [1, 0]`). A host derives gate_up and
transposed tensors from the arguments once per version of those (frontend/torch/ops.py)."""


@irdl_attr_definition
class BindAttr(ParametrizedAttribute):
    """`#graph.bind<input 0>`: what one kernel argument of a stage is, in terms of the piece.
    `#graph.bind<input 0 as !tile.tensor_map<128x64xf16, swizzle 128>>`: the argument is the
    tensor's TMA map of that box and swizzle (the kernel's parameter type), which the host
    encodes from the tensor it binds: a tiled map over the tensor as rows x its last dimension,
    an im2col map over the tensor its type names. `#graph.bind<input 1 over [256, 2304]>`: the
    kernel reads the tensor as that matrix (a conv's K x R x S x C filter as K x RSC), over
    which a tiled map is encoded."""

    name = "graph.bind"

    kind: StringAttr
    indices: ArrayAttr[IntAttr]
    tensor_map: Attribute  # a TensorMapType, or NoneAttr (verify says which others are wrong)
    over: ArrayAttr[IntAttr]  # the matrix the kernel reads the tensor as; empty: rows x last

    def __init__(self, kind: str, *indices: int, tensor_map: TensorMapType | None = None,
                 over: Sequence[int] = ()):
        super().__init__(StringAttr(kind), ArrayAttr([IntAttr(i) for i in indices]),
                         NoneAttr() if tensor_map is None else tensor_map,
                         ArrayAttr([IntAttr(d) for d in over]))

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(i.data for i in self.indices.data)

    @property
    def map_type(self) -> TensorMapType | None:
        return self.tensor_map if isinstance(self.tensor_map, TensorMapType) else None

    @property
    def matrix(self) -> tuple[int, ...]:
        """The matrix the kernel reads the tensor as; () where it is rows x last dimension."""
        return tuple(d.data for d in self.over.data)

    def map_tensor_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape a TMA map of this binding is encoded over, for a bound tensor of
        `shape`: the im2col map's tensor, the `over` matrix, or rows x the last dimension."""
        map_type = self.map_type
        if map_type is not None and map_type.is_im2col:
            return map_type.im2col_tensor
        if self.matrix:
            return self.matrix
        return (math.prod(shape[:-1]), shape[-1])

    def as_tensor_map(self, map_type: TensorMapType) -> BindAttr:
        return BindAttr(self.kind.data, *self.values, tensor_map=map_type, over=self.matrix)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            kind = parser.parse_identifier()
            indices = parser.parse_comma_separated_list(parser.Delimiter.NONE,
                                                        parser.parse_integer)
            over = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                     parser.parse_integer) \
                if parser.parse_optional_keyword("over") else []
            map_type = parser.parse_type() if parser.parse_optional_keyword("as") else NoneAttr()
        return (StringAttr(kind), ArrayAttr([IntAttr(i) for i in indices]), map_type,
                ArrayAttr([IntAttr(d) for d in over]))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.kind.data} {', '.join(map(str, self.values))}")
        if self.matrix:
            printer.print_string(f" over [{', '.join(map(str, self.matrix))}]")
        if self.map_type is not None:
            printer.print_string(" as ")
            printer.print_attribute(self.map_type)
        printer.print_string(">")

    def verify(self) -> None:
        arity = {"gate_up": 2}.get(self.kind.data, 1)
        if self.kind.data not in BIND_KINDS:
            raise VerifyException(f"#graph.bind: kind must be one of {BIND_KINDS}, "
                                  f"got {self.kind.data!r}")
        if len(self.values) != arity or min(self.values) < 0:
            raise VerifyException(f"#graph.bind<{self.kind.data}> takes {arity} index(es) "
                                  f"(>= 0), got {list(self.values)}")
        if not isinstance(self.tensor_map, TensorMapType | NoneAttr):
            raise VerifyException(f"#graph.bind: the type after 'as' must be a "
                                  f"!tile.tensor_map, got {self.tensor_map}")
        if self.matrix and (len(self.matrix) != 2 or min(self.matrix) < 1):
            raise VerifyException(f"#graph.bind: 'over' takes a matrix's two sizes (>= 1), "
                                  f"got {list(self.matrix)}")
        if self.matrix and self.map_type is not None and self.map_type.is_im2col:
            raise VerifyException("#graph.bind: an im2col map is encoded over the tensor its "
                                  "type names, not an 'over' matrix")


BIND_ATTR = "graph.bind"
"""On each sync.stage of a lowered piece: its kernel's user arguments as #graph.bind."""
TEMPS_ATTR = "graph.temps"
"""On the module of a lowered piece: the tensor types of its temporaries."""
SIGNATURE_ATTR = "graph.signature"
"""On the module of a lowered piece: the function type of the graph it came from."""


def numel(kind: TensorType) -> int:
    return math.prod(_shape(kind))


Graph = Dialect(
    "graph",
    [LinearOp, MatmulOp, Conv2dOp, GeluOp, SiluOp, ReluOp, AddOp, MulOp, SoftmaxOp,
     LayerNormOp, ReduceSumOp, ConcatOp, SplitOp, ReshapeOp, TransposeOp],
    [BindAttr],
)

__all__ = ["BIND_ATTR", "BIND_KINDS", "CONV_LAYOUTS", "ELEMENT_TYPES", "HEADS_PERM",
           "SIGNATURE_ATTR",
           "TEMPS_ATTR", "AddOp", "BindAttr", "ConcatOp", "Conv2dOp", "GeluOp", "Graph",
           "LayerNormOp", "LinearOp",
           "MatmulOp", "MulOp", "ReduceSumOp", "ReluOp", "ReshapeOp", "SiluOp", "SoftmaxOp",
           "SplitOp", "TransposeOp",
           "numel"]
