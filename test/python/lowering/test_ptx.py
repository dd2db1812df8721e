"""llvm-dialect kernels → PTX through llvmlite's NVPTX backend, validated with nvJitLink.

Each kernel is compiled for sm_80, sm_90 and sm_90a and the PTX is compiled to SASS by
nvJitLink (no GPU needed), so a test fails if the PTX would not load.
"""

from __future__ import annotations

import re
import time

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, gpu, llvm
from xdsl.ir import Operation
from xdsl.parser import Parser

from tilesync.contract import TARGETS
from tilesync.lowering.llvm_to_llvmlite import TranslationError, translate_to_llvm_ir
from tilesync.lowering.ptx import (
    SUPPORTED_ARCHS,
    PTXError,
    PTXInfo,
    list_kernels,
    llvm_ir_to_ptx,
    module_to_ptx,
    ptx_info_from_log,
    validate_ptx,
)

ARCHS = list(TARGETS)


def _parse(text: str) -> Operation:
    ctx = Context()
    for dialect in (builtin.Builtin, llvm.LLVM, gpu.GPU):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text, "kernel.mlir").parse_module()
    module.verify()
    return module


def _ptx(text: str, arch: str) -> str:
    """PTX for `arch`, after nvJitLink has accepted it."""
    ptx = module_to_ptx(_parse(text), arch)
    assert f".target {arch}" in ptx
    info = validate_ptx(ptx, arch)
    assert isinstance(info, PTXInfo) and info.arch == arch
    return ptx


def _body(ptx: str, kernel: str = "k") -> str:
    """The instructions of one kernel (without the parameter list)."""
    start = ptx.index(f".entry {kernel}(")
    return ptx[ptx.index("{", start) : ptx.index("\n}", start)]


STORE_VIA_GEP = """
llvm.func ptx_kernel @k(%out: !llvm.ptr<1>, %value: f32) {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %wide = llvm.zext %tid : i32 to i64
  %slot = llvm.getelementptr inbounds %out[%wide] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
  llvm.store %value, %slot {alignment = 4 : i64} : f32, !llvm.ptr<1>
  llvm.return
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_store_through_gep_to_global_pointer(arch: str):
    ptx = _ptx(STORE_VIA_GEP, arch)
    body = _body(ptx)
    assert list_kernels(ptx) == ["k"]
    assert re.search(r"mov\.u32\s+%r\d+, %tid\.x;", body)
    assert re.search(r"mul\.wide\.u32\s+%rd\d+, %r\d+, 4;", body)
    assert re.search(r"st\.global\.b32\s+\[%rd\d+\], %r\d+;", body)
    assert ".nc" not in body  # plain stores, never the non-coherent path


SHARED_AND_BARRIER = """
llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64}
    : !llvm.array<256 x i32>
llvm.func ptx_kernel @k(%out: !llvm.ptr<1>) {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %base = llvm.mlir.addressof @tile : !llvm.ptr<3>
  %mine = llvm.getelementptr %base[0, %tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>,
      !llvm.array<256 x i32>
  llvm.store %tid, %mine : i32, !llvm.ptr<3>
  llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
  %c255 = llvm.mlir.constant(255 : i32) : i32
  %other = llvm.sub %c255, %tid : i32
  %theirs = llvm.getelementptr %base[0, %other] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>,
      !llvm.array<256 x i32>
  %v = llvm.load %theirs : !llvm.ptr<3> -> i32
  %dst = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
  llvm.store %v, %dst : i32, !llvm.ptr<1>
  llvm.return
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_shared_memory_store_barrier_load(arch: str):
    ptx = _ptx(SHARED_AND_BARRIER, arch)
    assert re.search(r"\.shared \.align 16 \.b8 tile\[1024\];", ptx)
    body = _body(ptx)
    store = re.search(r"st\.shared\.b32\s+\[%r(d)?\d+\]", body)
    barrier = re.search(r"bar\.sync\s+0;", body)
    load = re.search(r"ld\.shared\.b32\s+%r\d+, \[%rd\d+\+1020\]", body)  # tile[255 - tid]
    assert store and barrier and load
    assert store.start() < barrier.start() < load.start()
    info = validate_ptx(ptx, arch)
    # newer nvJitLink counts the 1 KB of shared memory the driver reserves for each block
    assert info.shared_bytes == {"k": 1024} or info.shared_bytes == {"k": 2048}, info.info_log


LOOP_WITH_PHIS = """
llvm.func ptx_kernel @k(%out: !llvm.ptr<1>, %n: i32) {
  %zero = llvm.mlir.constant(0 : i32) : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  llvm.br ^header(%zero, %zero : i32, i32)
^header(%i: i32, %sum: i32):
  %more = llvm.icmp "slt" %i, %n : i32
  llvm.cond_br %more, ^body, ^exit
^body:
  %square = llvm.mul %i, %i : i32
  %next_sum = llvm.xor %sum, %square : i32
  %next_i = llvm.add %i, %one : i32
  llvm.br ^header(%next_i, %next_sum : i32, i32)
^exit:
  llvm.store volatile %sum, %out : i32, !llvm.ptr<1>
  llvm.return
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_loop_with_block_arguments(arch: str):
    body = _body(_ptx(LOOP_WITH_PHIS, arch))
    # a backward conditional branch: the loop survived as a loop
    labels = {m.group(1): m.start() for m in re.finditer(r"(\$L__BB0_\d+):", body)}
    back_edges = [
        m
        for m in re.finditer(r"@%p\d+ bra\s+(\$L__BB0_\d+);", body)
        if m.group(1) in labels and labels[m.group(1)] < m.start()
    ]
    assert back_edges, body
    assert re.search(r"xor\.b32", body)
    assert re.search(r"st\.volatile\.global\.b32", body)


@pytest.mark.parametrize("arch", ARCHS)
def test_inline_asm_nanosleep(arch: str):
    body = _body(
        _ptx(
            """
llvm.func ptx_kernel @k(%ns: i32) {
  llvm.inline_asm has_side_effects "nanosleep.u32 $0;", "r" %ns : (i32) -> ()
  llvm.return
}
""",
            arch,
        )
    )
    assert re.search(r"// begin inline asm\s+nanosleep\.u32 %r\d+;\s+// end inline asm", body)


@pytest.mark.parametrize("arch", ARCHS)
def test_bf16_and_f16_arithmetic(arch: str):
    body = _body(
        _ptx(
            """
llvm.func ptx_kernel @k(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>) {
  %x = llvm.load %a : !llvm.ptr<1> -> bf16
  %c = llvm.mlir.constant(1.5 : bf16) : bf16
  %y = llvm.fadd %x, %c : bf16
  %z = llvm.fmul %y, %x : bf16
  llvm.store %z, %a : bf16, !llvm.ptr<1>
  %h = llvm.load %b : !llvm.ptr<1> -> f16
  %hc = llvm.mlir.constant(0.1 : f16) : f16
  %h2 = llvm.fadd %h, %hc : f16
  %h3 = llvm.fmul %h2, %h : f16
  llvm.store %h3, %b : f16, !llvm.ptr<1>
  llvm.return
}
""",
            arch,
        )
    )
    assert "0x3FC0" in body  # bf16 1.5
    assert "0x2E66" in body  # f16 0.1
    assert re.search(r"add\.rn\.f16\s", body) and re.search(r"mul\.rn\.f16\s", body)
    if arch == "sm_80":  # no add/mul.bf16 before sm_90: LLVM uses fma.rn.bf16
        assert len(re.findall(r"fma\.rn\.bf16\s", body)) == 2
    else:
        assert re.search(r"add\.rn\.bf16\s", body) and re.search(r"mul\.rn\.bf16\s", body)


@pytest.mark.parametrize("arch", ARCHS)
def test_launch_bounds_from_passthrough(arch: str):
    ptx = _ptx(
        """
llvm.func ptx_kernel @k() attributes {passthrough = [["nvvm.maxntid", "256,1,1"],
                                                     ["nvvm.minctasm", "2"]]} {
  llvm.return
}
""",
        arch,
    )
    header = ptx[ptx.index(".entry k(") : ptx.index("{", ptx.index(".entry k("))]
    assert ".maxntid 256, 1, 1" in header
    assert ".minnctapersm 2" in header


def test_registers_are_reported_per_kernel():
    ptx = module_to_ptx(_parse(STORE_VIA_GEP), "sm_90")
    info = validate_ptx(ptx, "sm_90")
    assert set(info.registers) == {"k"}
    assert 1 <= info.registers["k"] <= 32


def test_list_kernels_skips_device_functions():
    ptx = module_to_ptx(
        _parse(
            """
llvm.func ptx_kernel @first() {
  llvm.return
}
llvm.func @device_helper(%x: i32) -> i32 attributes {passthrough = ["noinline"]} {
  llvm.return %x : i32
}
llvm.func ptx_kernel @second(%p: !llvm.ptr<1>) {
  %c = llvm.mlir.constant(3 : i32) : i32
  %r = llvm.call @device_helper(%c) : (i32) -> i32
  llvm.store %r, %p : i32, !llvm.ptr<1>
  llvm.return
}
"""
        ),
        "sm_90",
    )
    assert ".func  (.param .b32 func_retval0) device_helper(" in ptx
    assert list_kernels(ptx) == ["first", "second"]


def test_unknown_intrinsic_is_rejected():
    module = _parse(
        """
llvm.func ptx_kernel @k(%p: !llvm.ptr<1>) {
  %t = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tidd.x"() : () -> i32
  llvm.store %t, %p : i32, !llvm.ptr<1>
  llvm.return
}
"""
    )
    with pytest.raises(PTXError, match=r"'llvm\.nvvm\.read\.ptx\.sreg\.tidd\.x'"):
        module_to_ptx(module, "sm_90")


@pytest.mark.parametrize("arch", ["sm_70", "sm_100", "compute_90", ""])
def test_bad_arch_is_rejected_with_the_valid_ones(arch: str):
    ir_text = translate_to_llvm_ir(_parse(STORE_VIA_GEP))
    for call in (lambda: llvm_ir_to_ptx(ir_text, arch), lambda: validate_ptx("", arch)):
        with pytest.raises(PTXError) as info:
            call()
        assert f"'{arch}'" in str(info.value)
        assert all(valid in str(info.value) for valid in SUPPORTED_ARCHS)


def test_cluster_scope_needs_sm_90_instead_of_aborting():
    load = 'load atomic i32, ptr addrspace(1) %"p" syncscope("cluster") acquire, align 4'
    ir_text = translate_to_llvm_ir(_parse(STORE_VIA_GEP.replace(
        "llvm.func ptx_kernel @k(", "llvm.func ptx_kernel @k(%p: !llvm.ptr<1>, ")))
    ir_text = ir_text.replace("ret void", f'%"v" = {load}\n  ret void')
    assert load in ir_text
    with pytest.raises(PTXError, match="cluster"):
        llvm_ir_to_ptx(ir_text, "sm_80")
    assert re.search(r"ld\.acquire\.cluster\.global\.b32", llvm_ir_to_ptx(ir_text, "sm_90"))


def test_invalid_ptx_is_rejected_with_the_log():
    ptx = module_to_ptx(_parse(STORE_VIA_GEP), "sm_90").replace("st.global.b32", "st.bogus.b32")
    with pytest.raises(PTXError, match=r"nvJitLink rejected the PTX for sm_90(.|\n)*bogus"):
        validate_ptx(ptx, "sm_90")


def test_invalid_llvm_ir_is_a_ptx_error():
    with pytest.raises(PTXError, match="invalid LLVM IR"):
        llvm_ir_to_ptx("define void @f() { ret i32 0 }", "sm_90")


def test_unsupported_op_is_a_translation_error_with_location():
    module = _parse(
        "llvm.func ptx_kernel @k() {\n"
        '  %sp = llvm.intr.stacksave : !llvm.ptr loc("attention.py":12:8)\n'
        "  llvm.return\n"
        "}"
    )
    with pytest.raises(TranslationError, match=r'llvm\.intr\.stacksave.*"attention\.py":12:8'):
        module_to_ptx(module, "sm_90")


def test_small_kernel_compiles_quickly():
    module = _parse(STORE_VIA_GEP)
    module_to_ptx(module, "sm_90")  # warm up LLVM's target initialization
    start = time.perf_counter()
    ptx = module_to_ptx(module, "sm_90")
    elapsed = time.perf_counter() - start
    assert list_kernels(ptx) == ["k"]
    # measured ~5-20 ms; a generous bound that still catches a pathological slowdown
    assert elapsed < 2.0, f"translation + PTX took {elapsed:.3f} s"


# nvJitLink's info log with ptxas's lines (a kernel that spills), and the summary alone (what
# it prints for PTX it has compiled before in the same process)
PTXAS_AND_SUMMARY = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'gemm' for 'sm_90a'
ptxas info    : Function properties for gemm
ptxas         .     56 bytes stack frame, 60 bytes spill stores, 80 bytes spill loads
ptxas info    : Used 168 registers, used 3 barriers, 48 bytes smem
info    : 0 bytes gmem
info    : Function properties for 'gemm':
info    : used 168 registers, used 3 barriers, 56 stack, 1088 bytes smem, 976 bytes cmem[0], \
0 bytes lmem
"""
SUMMARY_ONLY = """info    : 0 bytes gmem
info    : Function properties for 'conv2d':
info    : used 108 registers, used 1 barriers, 0 stack, 1024 bytes smem, 552 bytes cmem[0], \
0 bytes lmem
"""


def test_info_log_with_ptxas_lines_counts_spills():
    info = ptx_info_from_log("sm_90a", PTXAS_AND_SUMMARY)
    assert info.registers == {"gemm": 168} and info.shared_bytes == {"gemm": 1088}
    assert info.stack_bytes == {"gemm": 56} and info.spill_bytes == {"gemm": 140}
    assert not info.spill_free("gemm")


def test_info_log_summary_alone_reads_spills_off_the_stack_frame():
    info = ptx_info_from_log("sm_90", SUMMARY_ONLY)
    assert info.registers == {"conv2d": 108} and info.spill_bytes == {}
    assert info.spill_free("conv2d")
    spilled = ptx_info_from_log("sm_90", SUMMARY_ONLY.replace(" 0 stack", " 24 stack"))
    assert not spilled.spill_free("conv2d")
    with pytest.raises(KeyError):
        info.spill_free("gemm")  # a kernel the log does not summarize is not spill-free
