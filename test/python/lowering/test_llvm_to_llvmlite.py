"""llvm dialect (+ llvmx casts) → llvmlite: exact LLVM IR text, checked by LLVM's parser.

Every translated module is also parsed and verified by LLVM itself (`_translate`), so a test
cannot pass on text that LLVM would reject.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm_binding
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, gpu, llvm
from xdsl.ir import Operation
from xdsl.parser import Parser

from tilesync.dialects.llvmx import LLVMX
from tilesync.lowering.llvm_to_llvmlite import (
    NVPTX_DATA_LAYOUT,
    NVPTX_TRIPLE,
    TranslationError,
    translate_module,
    translate_to_llvm_ir,
)


def _parse(text: str) -> Operation:
    ctx = Context()
    for dialect in (builtin.Builtin, llvm.LLVM, gpu.GPU, LLVMX):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text, "kernel.mlir").parse_module()
    module.verify()
    return module


def _translate(text: str) -> str:
    """LLVM IR of the MLIR text, after checking that LLVM parses and verifies it."""
    ir_text = translate_to_llvm_ir(_parse(text))
    llvm_binding.parse_assembly(ir_text).verify()
    return ir_text


def _kernel(body: str, args: str = "%p: !llvm.ptr<1>, %v: i32") -> str:
    return f"llvm.func ptx_kernel @k({args}) {{\n{body}\n  llvm.return\n}}"


def test_module_header_and_kernel_signature():
    ir_text = _translate(_kernel(""))
    assert f'target triple = "{NVPTX_TRIPLE}"' in ir_text
    assert f'target datalayout = "{NVPTX_DATA_LAYOUT}"' in ir_text
    assert 'define ptx_kernel void @"k"(ptr addrspace(1) %"p", i32 %"v")' in ir_text


def test_translate_module_returns_llvmlite_module_with_functions():
    module = translate_module(_parse(_kernel("")))
    assert [f.name for f in module.functions] == ["k"]
    assert module.get_global("k").calling_convention == "ptx_kernel"


def test_nvvm_kernel_attribute_marks_a_kernel_like_upstream_mlir():
    ir_text = _translate('llvm.func @k() attributes {"nvvm.kernel"} {\n  llvm.return\n}')
    assert 'define ptx_kernel void @"k"()' in ir_text


def test_plain_function_keeps_c_calling_convention_and_linkage():
    ir_text = _translate("llvm.func internal @helper(%x: i32) -> i32 {\n  llvm.return %x : i32\n}")
    assert 'define internal i32 @"helper"(i32 %"x")' in ir_text


def test_passthrough_becomes_string_function_attributes():
    ir_text = _translate(
        "llvm.func ptx_kernel @k() attributes {passthrough = "
        '[["nvvm.maxntid", "256,1,1"], ["nvvm.minctasm", "2"], "noinline"]} {\n'
        "  llvm.return\n}"
    )
    assert '"nvvm.maxntid"="256,1,1" "nvvm.minctasm"="2"' in ir_text
    assert re.search(r'define ptx_kernel void @"k"\(\) noinline', ir_text)


def test_gep_with_constant_and_ssa_indices_keeps_address_space():
    ir_text = _translate(
        _kernel(
            "  %q = llvm.getelementptr inbounds %p[%v] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32\n"
            "  %r = llvm.getelementptr %p[1, 2] : (!llvm.ptr<1>) -> !llvm.ptr<1>, "
            "!llvm.struct<(i32, i64, f32)>\n"
            "  %f = llvm.mlir.constant(2.0 : f32) : f32\n"
            "  llvm.store %f, %q : f32, !llvm.ptr<1>"
        )
    )
    assert 'getelementptr inbounds float, ptr addrspace(1) %"p", i32 %"v"' in ir_text
    assert 'getelementptr {i32, i64, float}, ptr addrspace(1) %"p", i32 1, i32 2' in ir_text
    assert 'store float 0x4000000000000000, ptr addrspace(1) %"q"' in ir_text


def test_block_arguments_become_phis_and_blocks_follow_dominance():
    # ^exit is written before ^body, but uses %next that ^body defines.
    ir_text = _translate(
        """
llvm.func @count(%n: i32) -> i32 {
  %zero = llvm.mlir.constant(0 : i32) : i32
  llvm.br ^body(%zero : i32)
^exit(%result: i32):
  llvm.return %result : i32
^body(%i: i32):
  %one = llvm.mlir.constant(1 : i32) : i32
  %next = llvm.add %i, %one : i32
  %done = llvm.icmp "sge" %next, %n : i32
  llvm.cond_br %done, ^exit(%next : i32), ^body(%next : i32)
}
"""
    )
    assert re.search(r'%"i" = phi\s+i32 \[0, %"entry"\], \[%"next", %"bb2"\]', ir_text)
    assert re.search(r'%"result" = phi\s+i32 \[%"next", %"bb2"\]', ir_text)
    # the loop body (which dominates the exit) comes first
    assert ir_text.index("bb2:") < ir_text.index("bb1:")


@pytest.mark.parametrize(
    "predicate", ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
)
def test_icmp_predicates(predicate: str):
    ir_text = _translate(_kernel(f'  %c = llvm.icmp "{predicate}" %v, %v : i32'))
    assert f'%"c" = icmp {predicate} i32 %"v", %"v"' in ir_text


@pytest.mark.parametrize(
    "predicate",
    [
        *["_false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord"],
        *["ueq", "ugt", "uge", "ult", "ule", "une", "uno", "_true"],
    ],
)
def test_fcmp_predicates(predicate: str):
    ir_text = _translate(_kernel(f'  %c = llvm.fcmp "{predicate}" %f, %f : f32', "%f: f32"))
    assert f'%"c" = fcmp {predicate.lstrip("_")} float %"f", %"f"' in ir_text


def test_integer_and_float_arithmetic():
    ir_text = _translate(
        _kernel(
            "\n".join(
                f"  %{op} = llvm.{op} %v, %v : i32"
                for op in [
                    *["add", "sub", "mul", "udiv", "sdiv", "urem", "srem"],
                    *["and", "or", "xor", "shl", "lshr", "ashr"],
                ]
            )
            + "\n"
            + "\n".join(f"  %{op} = llvm.{op} %f, %f : f64" for op in ["fadd", "fsub", "fmul"])
            + "\n  %neg = llvm.fneg %f : f64"
            + "\n  %fma = llvm.intr.fma(%f, %f, %f) : (f64, f64, f64) -> f64"
            + "\n  %sel = llvm.select %c, %v, %v : i1, i32",
            "%v: i32, %f: f64, %c: i1",
        )
    )
    for op in ["add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "and", "or", "xor"]:
        assert f'%"{op}" = {op} i32 %"v", %"v"' in ir_text
    for op in ["shl", "lshr", "ashr"]:
        assert f'%"{op}" = {op} i32 %"v", %"v"' in ir_text
    for op in ["fadd", "fsub", "fmul"]:
        assert f'%"{op}" = {op} double %"f", %"f"' in ir_text
    assert '%"neg" = fneg double %"f"' in ir_text
    assert '%"fma" = call double @"llvm.fma.f64"(double %"f", double %"f", double %"f")' in ir_text
    # (llvmlite prints two spaces after `select` and `phi`)
    assert re.search(r'%"sel" = select\s+i1 %"c", i32 %"v", i32 %"v"', ir_text)


def test_casts_including_llvmx_ones():
    ir_text = _translate(
        _kernel(
            """
  %t = llvm.trunc %w : i64 to i32
  %z = llvm.zext %v : i32 to i64
  %s = llvm.sext %v : i32 to i64
  %si = llvm.sitofp %v : i32 to f32
  %ext = llvm.fpext %f : f32 to f64
  %tr = llvm.fptrunc %ext : f64 to f16
  %bc = llvm.bitcast %f : f32 to i32
  %pi = llvm.ptrtoint %p : !llvm.ptr<1> to i64
  %ip = llvm.inttoptr %w : i64 to !llvm.ptr<1>
  %fs = llvmx.fptosi %f : f32 to i32
  %fu = llvmx.fptoui %f : f32 to i64
  %uf = llvmx.uitofp %w : i64 to bf16
  %gen = llvmx.addrspacecast %p : !llvm.ptr<1> to !llvm.ptr""",
            "%p: !llvm.ptr<1>, %v: i32, %w: i64, %f: f32",
        )
    )
    expected = [
        '%"t" = trunc i64 %"w" to i32',
        '%"z" = zext i32 %"v" to i64',
        '%"s" = sext i32 %"v" to i64',
        '%"si" = sitofp i32 %"v" to float',
        '%"ext" = fpext float %"f" to double',
        '%"tr" = fptrunc double %"ext" to half',
        '%"bc" = bitcast float %"f" to i32',
        '%"pi" = ptrtoint ptr addrspace(1) %"p" to i64',
        '%"ip" = inttoptr i64 %"w" to ptr addrspace(1)',
        '%"fs" = fptosi float %"f" to i32',
        '%"fu" = fptoui float %"f" to i64',
        '%"uf" = uitofp i64 %"w" to bfloat',
        '%"gen" = addrspacecast ptr addrspace(1) %"p" to ptr',
    ]
    for line in expected:
        assert line in ir_text


def test_constants_of_every_scalar_kind():
    ir_text = _translate(
        _kernel(
            """
  %t = llvm.mlir.constant(true) : i1
  %m = llvm.mlir.constant(-7 : i32) : i32
  %bf = llvm.mlir.constant(1.5 : bf16) : bf16
  %h = llvm.mlir.constant(0.1 : f16) : f16
  %d = llvm.mlir.constant(0.5 : f64) : f64
  %vec = llvm.mlir.constant(dense<3> : vector<4xi32>) : vector<4xi32>
  %u = llvm.mlir.undef : i32
  %zp = llvm.mlir.zero : !llvm.ptr<1>
  %a = llvm.select %t, %m, %u : i1, i32
  %bf2 = llvm.fadd %bf, %bf : bf16
  %h2 = llvm.fadd %h, %h : f16
  %d2 = llvm.fadd %d, %d : f64
  %vec2 = llvm.add %vec, %vec : vector<4xi32>
  llvm.store %zp, %p : !llvm.ptr<1>, !llvm.ptr<1>""",
            "%p: !llvm.ptr<1>",
        )
    )
    assert re.search(r"select\s+i1 true, i32 -7, i32 undef", ir_text)
    assert "fadd bfloat 0xR3FC0, 0xR3FC0" in ir_text
    assert "fadd half 0xH2E66, 0xH2E66" in ir_text
    assert "fadd double 0x3fe0000000000000, 0x3fe0000000000000" in ir_text
    assert "add <4 x i32> <i32 3, i32 3, i32 3, i32 3>, <i32 3, i32 3, i32 3, i32 3>" in ir_text
    assert 'store ptr addrspace(1) null, ptr addrspace(1) %"p"' in ir_text


def test_llvm_load_store_keep_ordering_volatile_and_alignment():
    ir_text = _translate(
        _kernel(
            """
  %a = "llvm.load"(%p) <{ordering = 4 : i64, alignment = 4 : i64}> : (!llvm.ptr<1>) -> i32
  %b = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> i32
  "llvm.store"(%a, %p) <{ordering = 5 : i64, volatile_}> : (i32, !llvm.ptr<1>) -> ()
  llvm.store volatile %b, %p {alignment = 8 : i64} : i32, !llvm.ptr<1>"""
        )
    )
    assert '%"a" = load atomic i32, ptr addrspace(1) %"p" acquire, align 4' in ir_text
    assert '%"b" = load i32, ptr addrspace(1) %"p", align 16' in ir_text
    assert 'store atomic volatile i32 %"a", ptr addrspace(1) %"p" release, align 4' in ir_text
    assert 'store volatile i32 %"b", ptr addrspace(1) %"p", align 8' in ir_text


def test_xdsl_backend_still_loses_the_address_space_of_a_gep():
    """Why this translation keeps its own GEP: xDSL 0.74's bitcasts the pointer to address
    space 0, which LLVM rejects for a global pointer (fails once xDSL translates it right)."""
    from xdsl.backend.llvm.convert import convert_module

    text = _kernel("""
  %i = llvm.mlir.constant(3 : i64) : i64
  %q = llvm.getelementptr inbounds %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
  llvm.store %v, %q {alignment = 4 : i64} : i32, !llvm.ptr<1>""")
    theirs = str(convert_module(_parse(text), fallback_target_triple=NVPTX_TRIPLE))
    with pytest.raises(RuntimeError, match="invalid cast"):
        llvm_binding.parse_assembly(theirs)
    ours = _translate(text)
    assert re.search(r'getelementptr inbounds i32, ptr addrspace\(1\) %"p", i64 3', ours)


def test_globals_shared_external_and_initialized():
    ir_text = _translate(
        """
llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64}
    : !llvm.array<64 x f32>
llvm.mlir.global external @dynamic_smem() {addr_space = 3 : i32, alignment = 16 : i64}
    : !llvm.array<0 x i8>
llvm.mlir.global internal @counter(7 : i32) {addr_space = 1 : i32} : i32
llvm.mlir.global private constant @table(dense<[1, 2, 3]> : tensor<3xi32>) : !llvm.array<3 x i32>
llvm.mlir.global internal @zeroed() {addr_space = 1 : i32} : !llvm.array<4 x i64> {
  %z = llvm.mlir.zero : !llvm.array<4 x i64>
  llvm.return %z : !llvm.array<4 x i64>
}
llvm.func ptx_kernel @k(%i: i32) {
  %t = llvm.mlir.addressof @tile : !llvm.ptr<3>
  %e = llvm.getelementptr %t[0, %i] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<64 x f32>
  %x = llvm.load %e : !llvm.ptr<3> -> f32
  llvm.store %x, %e : f32, !llvm.ptr<3>
  llvm.return
}
"""
    )
    assert '@"tile" = internal addrspace(3) global [64 x float] undef, align 16' in ir_text
    assert '@"dynamic_smem" = external addrspace(3) global [0 x i8], align 16' in ir_text
    assert '@"counter" = internal addrspace(1) global i32 7' in ir_text
    assert '@"table" = private constant [3 x i32] [i32 1, i32 2, i32 3]' in ir_text
    assert '@"zeroed" = internal addrspace(1) global [4 x i64] zeroinitializer' in ir_text
    assert 'getelementptr [64 x float], ptr addrspace(3) @"tile", i32 0, i32 %"i"' in ir_text
    assert 'store float %"x", ptr addrspace(3) %"e"' in ir_text


def test_calls_intrinsics_and_inline_asm():
    ir_text = _translate(
        """
llvm.func ptx_kernel @k(%p: !llvm.ptr<1>) {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %tid2 = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
  %r = llvm.call @helper(%tid, %tid2) : (i32, i32) -> i32
  llvm.inline_asm has_side_effects "nanosleep.u32 $0;", "r" %r : (i32) -> ()
  %q = llvm.inline_asm "mov.b32 $0, \\"x\\";", "=r" : () -> i32
  llvm.store %q, %p : i32, !llvm.ptr<1>
  llvm.return
}
llvm.func internal @helper(%a: i32, %b: i32) -> i32 {
  %s = llvm.add %a, %b : i32
  llvm.return %s : i32
}
"""
    )
    assert ir_text.count('declare i32 @"llvm.nvvm.read.ptx.sreg.tid.x"()') == 1
    assert 'declare void @"llvm.nvvm.barrier0"()' in ir_text
    assert '%"r" = call i32 @"helper"(i32 %"tid", i32 %"tid2")' in ir_text
    assert 'call void asm sideeffect "nanosleep.u32 $0;", "r"(i32 %"r")' in ir_text
    assert '%"q" = call i32 asm "mov.b32 $0, \\22x\\22;", "=r"()' in ir_text


def test_alloca_extract_insert_value():
    ir_text = _translate(
        _kernel(
            """
  %one = llvm.mlir.constant(1 : i32) : i32
  %slot = llvm.alloca %one x i64 {alignment = 8 : i64} : (i32) -> !llvm.ptr
  %u = llvm.mlir.undef : !llvm.struct<(i32, f32)>
  %s = llvm.insertvalue %v, %u[0] : !llvm.struct<(i32, f32)>
  %x = llvm.extractvalue %s[0] : !llvm.struct<(i32, f32)>
  llvm.store %x, %slot : i32, !llvm.ptr"""
        )
    )
    assert '%"slot" = alloca i64, i32 1, align 8' in ir_text
    assert '%"s" = insertvalue {i32, float} undef, i32 %"v", 0' in ir_text
    assert '%"x" = extractvalue {i32, float} %"s", 0' in ir_text
    assert 'store i32 %"x", ptr %"slot"' in ir_text


def test_a_wide_struct_of_one_type_is_an_identified_type():
    """A wgmma accumulator's struct (16+ members of one type) is named once, not spelled out
    by every insertvalue and extractvalue; a narrower or mixed one stays literal."""
    wide = "!llvm.struct<(" + ", ".join(["f32"] * 16) + ")>"
    mixed = "!llvm.struct<(" + ", ".join(["f32"] * 15 + ["i32"]) + ")>"
    ir_text = _translate(
        _kernel(
            f"""
  %f = llvm.bitcast %v : i32 to f32
  %u = llvm.mlir.undef : {wide}
  %s = llvm.insertvalue %f, %u[15] : {wide}
  %x = llvm.extractvalue %s[15] : {wide}
  %m = llvm.mlir.undef : {mixed}
  %n = llvm.insertvalue %x, %m[0] : {mixed}
  %y = llvm.extractvalue %n[0] : {mixed}
  llvm.store %y, %p : f32, !llvm.ptr<1>"""
        )
    )
    members = ", ".join(["float"] * 16)
    assert f'%"floatx16" = type {{{members}}}' in ir_text
    assert '%"s" = insertvalue %"floatx16" undef, float %"f", 15' in ir_text
    assert '%"x" = extractvalue %"floatx16" %"s", 15' in ir_text
    assert ir_text.count("type {") == 1  # the mixed struct is literal
    assert '%"y" = extractvalue {' + ", ".join(["float"] * 15) + ', i32} %"n", 0' in ir_text


def test_gpu_module_is_translated():
    ir_text = translate_to_llvm_ir(
        _parse("builtin.module {\n gpu.module @kernels {\n" + _kernel("") + "\n }\n}")
    )
    assert 'define ptx_kernel void @"k"' in ir_text


def test_unsupported_op_names_op_and_location():
    module = _parse(
        "llvm.func @k() {\n"
        '  %sp = llvm.intr.stacksave : !llvm.ptr loc("kernel.py":7:3)\n'
        "  llvm.return\n"
        "}"
    )
    with pytest.raises(TranslationError) as info:
        translate_module(module)
    message = str(info.value)
    assert "'llvm.intr.stacksave'" in message
    assert 'loc("kernel.py":7:3)' in message
    assert "in @k" in message


def test_non_llvm_top_level_op_is_rejected():
    module = _parse(
        "gpu.module @g {\n}\nllvm.func @k() {\n  llvm.return\n}\n"
        '"llvm.mlir.zero"() : () -> !llvm.ptr'
    )
    with pytest.raises(TranslationError, match=r"'llvm.mlir.zero' .*may only hold llvm.func"):
        translate_module(module)


def test_conflicting_intrinsic_signatures_are_rejected():
    module = _parse(
        _kernel(
            '  %a = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32\n'
            '  %b = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i64'
        )
    )
    with pytest.raises(TranslationError, match=r"llvm\.nvvm\.read\.ptx\.sreg\.tid\.x is used as"):
        translate_module(module)
