"""compat.effects answers what xDSL's trait queries answer, on every op of a kernel before and
after lowering."""

from __future__ import annotations

from xdsl.traits import IsTerminator, MemoryEffectKind
from xdsl.traits import get_effects as xdsl_get_effects
from xdsl.transforms.dead_code_elimination import is_trivially_dead as xdsl_is_trivially_dead

from tilesync.api import make_context
from tilesync.compat import effects
from tilesync.kernels.config import gemm_config
from tilesync.kernels.gemm import gemm_module
from tilesync.lowering.pipeline import build_pipeline


def _modules():
    config = gemm_config(256, 256, 64, tile=(64, 64, 32), stages=2, epilogue="bias_gelu")
    kernel_level = gemm_module(0, 0, 0, config=config)
    lowered = gemm_module(0, 0, 0, config=config)
    build_pipeline().apply(make_context(), lowered)
    return kernel_level, lowered


def test_every_op_gets_xdsls_answers():
    for module in _modules():
        for op in module.walk():
            assert effects.get_effects(op) == xdsl_get_effects(op), op.name
            assert effects.is_terminator(op) == op.has_trait(IsTerminator), op.name
            assert effects.is_trivially_dead(op) == xdsl_is_trivially_dead(op), op.name
            effects_known = xdsl_get_effects(op)
            assert effects.is_side_effect_free(op) == (
                effects_known is not None and not effects_known), op.name
            assert effects.only_has_effect(op, MemoryEffectKind.READ) == (
                effects_known is not None
                and all(e.kind == MemoryEffectKind.READ for e in effects_known)), op.name

