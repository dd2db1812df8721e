"""graph.softmax's scale built from Python: absent at 1, kept as an f32, refused where the
kernel's max-then-scale would not compute softmax(x · scale) (non-positive, non-finite; the
text form cannot spell inf, so this is the verifier's only test of it)."""

import math

import pytest
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import TensorType, f16
from xdsl.utils.exceptions import VerifyException

from tilesync.dialects import graph


def _softmax(scale: float) -> graph.SoftmaxOp:
    x = test_dialect.TestOp(result_types=[TensorType(f16, [8, 64])]).results[0]
    return graph.SoftmaxOp(x, -1, scale)


def test_scale_one_is_no_property():
    op = _softmax(1.0)
    assert op.scale is None and op.scale_value == 1.0
    op.verify()


def test_scale_is_an_f32():
    op = _softmax(1 / math.sqrt(96))
    assert op.scale_value != 1 / math.sqrt(96)
    assert op.scale_value == pytest.approx(1 / math.sqrt(96), rel=1e-7)
    op.verify()


@pytest.mark.parametrize("scale", [0.0, -0.5, math.inf, math.nan])
def test_non_positive_or_non_finite_scale_is_refused(scale):
    with pytest.raises(VerifyException, match="scale must be positive and finite"):
        _softmax(scale).verify()
