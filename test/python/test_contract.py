"""The compiler↔runtime contract: one spelling per role, every kind the compiler emits is one
the runtime launches, no project imports."""

import ast
import ctypes
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IndexType, i32

from tilesync import contract
from tilesync.api import _param_kind
from tilesync.contract import PARAM_KINDS, Role, RoleKind
from tilesync.runtime.launch import check_signature, pack_args


@pytest.mark.parametrize("text", ["epoch", "sems:@gemm1", "tile_counter", "order_table",
                                  "debug_record", "wait_target", "wait_blocks", "start_flag",
                                  "wait_flag", "epoch_counter"])
def test_roles_print_as_they_parse(text):
    assert str(Role.parse(text)) == text


def test_role_spelling_is_checked():
    assert Role.semaphores("p") == Role.parse("sems:@p") == Role(RoleKind.SEMAPHORES, "p")
    with pytest.raises(ValueError, match="unknown parameter role 'sems_p'"):
        Role.parse("sems_p")
    with pytest.raises(ValueError, match="needs a stage"):
        Role.parse("sems")
    with pytest.raises(ValueError, match="names no stage"):
        Role.parse("sems:@")
    with pytest.raises(ValueError, match="takes no stage"):
        Role.parse("epoch:@p")


def test_every_role_has_a_runtime_binding():
    from tilesync.runtime.program import StageProgram

    assert set(StageProgram._BINDERS) == set(RoleKind)


@pytest.mark.parametrize("mlir_type, kind", [(Float16Type(), "f16"), (BFloat16Type(), "bf16"),
                                             (Float32Type(), "f32"), (i32, "i32"),
                                             (IndexType(), "i64")])
def test_every_scalar_kind_the_compiler_emits_launches(mlir_type, kind):
    assert _param_kind(mlir_type) == kind
    check_signature(("ptr", kind), None, "k")  # raised "unknown parameter kind(s)" for f16
    _, types = pack_args(("ptr", kind), [0x1000, 1])
    assert ctypes.sizeof(types[1]) == PARAM_KINDS[kind].size


def test_half_precision_scalars_travel_as_their_bits():
    values, types = pack_args(("f16", "bf16", "bf16"), [1.5, 1.5, -2.0])
    assert types == (ctypes.c_uint16,) * 3
    assert values[0] == int(np.float16(1.5).view(np.uint16)) == 0x3E00
    assert values[1] == 0x3FC0 and values[2] == 0xC000
    # bf16 rounds to nearest even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7
    assert pack_args(("bf16",), [1 + 2**-8])[0] == (0x3F80,)
    assert pack_args(("bf16",), [1 + 3 * 2**-8])[0] == (0x3F82,)


def test_the_contract_imports_nothing_of_tilesync():
    tree = ast.parse(Path(contract.__file__).read_text())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("tilesync")]


def test_architectures_agree_with_their_limits():
    for name, arch in contract.ARCHITECTURES.items():
        assert arch.limits.arch == name and contract.limits_for_arch(name) is arch.limits
    assert contract.target_for_device("sm_75") == contract.DEFAULT_TARGET
    with pytest.raises(ValueError, match="unknown target 'sm_75'"):
        contract.architecture("sm_75")
