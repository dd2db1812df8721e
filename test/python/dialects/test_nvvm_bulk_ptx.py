"""The 1-D bulk copies (shared <- global completing on a transaction barrier, global <- shared
in bulk groups) through convert-nvvm-to-llvm, the llvmlite translation and LLVM's NVPTX
backend: each becomes the PTX instruction it names, in program order, ptxas assembles the PTX
for sm_90a where it is installed, and nvJitLink accepts it."""

from __future__ import annotations

from nvvm_ptx_check import LoweredKernelChecks

KERNEL = """
gpu.module @m {
  gpu.func @k(%g: !llvm.ptr<1>, %n: i32) kernel {
    %s = llvm.mlir.addressof @buffer : !llvm.ptr<3>
    %b = llvm.mlir.addressof @bars : !llvm.ptr<3>
    nvvm.mbarrier.init %b, %n : !llvm.ptr<3>
    nvvm.fence.mbarrier_init
    nvvm.fence.proxy.async global
    nvvm.mbarrier.arrive %b expect_tx %n : !llvm.ptr<3>
    nvvm.cp.async.bulk.shared.global %s, %g, %n, %b : !llvm.ptr<3>, !llvm.ptr<1>, !llvm.ptr<3>
    %r = nvvm.mbarrier.try_wait.parity %b, %n : !llvm.ptr<3>
    nvvm.fence.proxy.async "shared::cta"
    nvvm.cp.async.bulk.global.shared %g, %s, %r : !llvm.ptr<1>, !llvm.ptr<3>
    nvvm.cp.async.bulk.commit.group
    nvvm.cp.async.bulk.wait.group 0
    nvvm.fence.proxy.async global
    gpu.return
  }
  llvm.mlir.global internal @buffer() {addr_space = 3 : i32, alignment = 128 : i64} : !llvm.array<16384 x i8>
  llvm.mlir.global internal @bars() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<1 x i64>
}
"""  # noqa: E501

EXPECTED = [
    r"mbarrier\.init\.shared\.b64 \s*\[bars\], %r\d+;",
    r"fence\.proxy\.async\.global;",
    r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%rd\d+\], %r\d+;",
    r"cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes "
    r"\[%rd\d+\], \[%rd\d+\], %r\d+, \[%rd\d+\];",
    r"mbarrier\.try_wait\.parity\.shared::cta\.b64 p, \[%rd\d+\], %r\d+;",
    r"fence\.proxy\.async\.shared::cta;",
    r"cp\.async\.bulk\.global\.shared::cta\.bulk_group \[%rd\d+\], \[%rd\d+\], %r\d+;",
    r"cp\.async\.bulk\.commit_group;",
    r"cp\.async\.bulk\.wait_group 0;",
    r"fence\.proxy\.async\.global;",
]


class TestBulkCopies(LoweredKernelChecks):
    KERNEL = KERNEL
    EXPECTED = EXPECTED
