"""same_code: which stage kernels dataflow-persistent-kernel may emit once."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import gpu, memref
from xdsl.traits import SymbolTable

from tilesync.api import default_pipeline_for, parse, run_passes
from tilesync.transforms.dataflow.same_code import same_code


def _global(name: str, space: int, size: int = 4, initial: str = "") -> str:
    value = f"initial_value = {initial}, constant" if initial else "initial_value"
    return (f'"memref.global"() <{{sym_name = "{name}", sym_visibility = "private", '
            f'type = memref<{size}xf32, {space} : i64>, {value}}}> : () -> ()')


GLOBALS = "\n".join([_global("s1", 3), _global("s2", 3), _global("s3", 3), _global("g1", 1),
                     _global("g2", 1), _global("s8", 3, 8),
                     _global("c1", 3, initial="dense<1.0> : tensor<4xf32>")])
KERNELS = "builtin.module {\n  gpu.module @kernels {\n" + GLOBALS + "\n%BODIES%\n  }\n}"


def _kernel(name: str, body: str) -> str:
    return (f"gpu.func @{name}(%x: memref<4xf32>) kernel {{\n"
            f"  %i = arith.constant 0 : index\n{body}\n  gpu.return\n}}")


def _compare(rep_body: str, other_body: str):
    module = parse(KERNELS.replace("%BODIES%", _kernel("rep", rep_body) + "\n"
                                   + _kernel("other", other_body)))
    gmod = next(op for op in module.walk() if isinstance(op, gpu.ModuleOp))
    rep, other = (SymbolTable.lookup_symbol(gmod, n) for n in ("rep", "other"))

    def lookup(name):
        found = SymbolTable.lookup_symbol(gmod, name)
        return found if isinstance(found, memref.GlobalOp) else None

    return same_code(rep, other, lookup)


def _scaled(global_name: str, scale: str = "2.0") -> str:
    return (f"  %g = memref.get_global @{global_name} : memref<4xf32, "
            f"{'1' if global_name.startswith('g') else '3'} : i64>\n"
            f"  %v = memref.load %x[%i] : memref<4xf32>\n"
            f"  %k = arith.constant {scale} : f32\n"
            f"  %w = arith.mulf %v, %k : f32\n"
            f"  memref.store %w, %g[%i] : memref<4xf32, "
            f"{'1' if global_name.startswith('g') else '3'} : i64>")


def test_constants_that_differ_are_recorded_with_the_others_value():
    found = _compare(_scaled("s1", "2.0"), _scaled("s1", "3.0"))
    assert found is not None
    ((const, value),) = found.items()
    assert str(const.value) == "2.000000e+00 : f32" and str(value) == "3.000000e+00 : f32"


def test_shared_scratch_may_be_renamed_one_to_one():
    assert _compare(_scaled("s1"), _scaled("s2")) == {}
    twice = _scaled("s1") + "\n" + _scaled("s1").replace("%", "%b_").replace("%b_x", "%x") \
        .replace("%b_i", "%i")
    apart = _scaled("s2") + "\n" + _scaled("s3").replace("%", "%b_").replace("%b_x", "%x") \
        .replace("%b_i", "%i")
    # one buffer in rep used where other uses two: not the same code
    assert _compare(twice, apart) is None
    assert _compare(apart, twice) is None


@pytest.mark.parametrize("rep,other", [("g1", "g2"), ("s8", "s1"), ("s1", "c1")],
                         ids=["global-memory", "other-type", "initialized"])
def test_other_buffers_are_not_renamed(rep, other):
    """Only a CTA's own scratch (shared, uninitialized, writable) of one type may be shared;
    a global-memory buffer is the whole grid's, an initialized one holds data."""
    rep_body = _scaled(rep)
    other_body = _scaled(other)
    if rep == "s8":  # the same ops and types, but the buffers' types differ
        rep_body = rep_body.replace("memref<4xf32, 3", "memref<8xf32, 3")
        other_body = other_body.replace("memref<4xf32, 3", "memref<8xf32, 3")
    assert _compare(rep_body, rep_body) == {}  # refused below for the buffer alone
    assert _compare(rep_body, other_body) is None


def test_ops_attributes_and_operand_structure_must_match():
    assert _compare(_scaled("s1"), _scaled("s1").replace("arith.mulf", "arith.addf")) is None
    swapped = _scaled("s1").replace("arith.mulf %v, %k", "arith.mulf %k, %v")
    assert _compare(_scaled("s1"), swapped) is None
    fast = _scaled("s1").replace("%v, %k : f32", "%v, %k fastmath<fast> : f32")
    assert _compare(_scaled("s1"), fast) is None


def test_a_loop_whose_trip_count_differs_is_not_the_same_code():
    """Two stages whose loops run 4 and 8 times keep their own code (LLVM unrolls a known
    trip count); a constant inside the loop may still differ."""
    def loop(trips: str, scale: str) -> str:
        return (f"  %n = arith.constant {trips} : index\n  %one = arith.constant 1 : index\n"
                f"  scf.for %j = %i to %n step %one {{\n"
                + _scaled("s1", scale).replace("%x[%i]", "%x[%j]") + "\n  }")
    assert _compare(loop("4", "2.0"), loop("8", "2.0")) is None
    found = _compare(loop("4", "2.0"), loop("4", "3.0"))
    assert found is not None and [str(v) for v in found.values()] == ["3.000000e+00 : f32"]


SAME_CODE_PROGRAM = Path(__file__).parents[3] / "filecheck/transforms/dataflow/" \
    "persistent_kernel_same_code.mlir"


def _persistent(text: str):
    module = parse(text)
    run_passes(module, ["convert-dataflow-to-nvvm{debug=false}",
                        "dataflow-persistent-kernel{share_code=true}"])
    return module, next(op for op in module.walk()
                        if isinstance(op, gpu.FuncOp) and op.sym_name.data == "p_persistent")


def _count(op, name: str) -> int:
    return sum(1 for o in op.walk() if o.name == name)


def test_a_kernel_named_elsewhere_is_cloned_once_for_its_class():
    """@double and @triple launched also by cuSync stages of their own: their bodies stay, and
    the pipeline's persistent kernel holds their code once."""
    text = SAME_CODE_PROGRAM.read_text()
    launch = ("sync.stage @{0} {{kernel = @kernels::@{0}, grid = array<i64: 2>, "
              "block = array<i64: 64, 1, 1>, tile = array<i64: 64>}}\n")
    shared = text.replace("dataflow.pipeline @p {", launch.format("double")
                          + launch.format("triple") + "dataflow.pipeline @p {")
    _, alone = _persistent(text)
    module, fused = _persistent(shared)
    kernels = {op.sym_name.data: op for op in module.walk() if isinstance(op, gpu.FuncOp)}
    assert _count(kernels["double"], "arith.mulf") == 1  # kept: @other names it
    assert _count(kernels["triple"], "arith.mulf") == 1
    # the class's code once, in both forms; its scale chosen per stage
    assert _count(fused, "arith.mulf") == _count(alone, "arith.mulf") == 1
    assert _count(fused, "arith.select") == _count(alone, "arith.select") > 0


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("share_code", [False, True])
def test_the_program_of_shared_code_compiles_to_ptx_nvjitlink_accepts(debug, share_code):
    """The whole route, with and without the debug record (each stage's queue ids chosen):
    with share_code the class's code once in the PTX (its two ticket draws), by default each
    stage's own (six draws), and ptxas (nvJitLink) takes both."""
    import tilesync
    from tilesync.lowering.ptx import validate_ptx

    module = parse(SAME_CODE_PROGRAM.read_text())
    passes = [p + "{share_code=true}" if share_code and p == "dataflow-persistent-kernel" else p
              for p in default_pipeline_for(module, debug)]
    compiled = tilesync.compile(module, target="sm_90a", pipeline=passes)
    (ptx,) = compiled.ptx_by_module.values()
    draws = 1 + (2 if share_code else 2 + 2) + 1  # source, the class or each stage, sink
    assert ptx.count("atom.relaxed.gpu.global.add.u64") == draws
    assert validate_ptx(ptx, "sm_90a").arch == "sm_90a"
