"""The tensor-core, async-copy, shuffle, conversion and approximate-math nvvm ops through
convert-nvvm-to-llvm, the llvmlite translation and LLVM's NVPTX backend: each becomes the PTX
instruction it names, ptxas assembles the PTX where it is installed, and nvJitLink accepts it
(sm_90a: wgmma)."""

from __future__ import annotations

from nvvm_ptx_check import LoweredKernelChecks

# Every value is stored, so that LLVM keeps the instructions that compute it.
KERNEL = """
gpu.module @m {
  gpu.func @k(%out: !llvm.ptr<1>, %src: !llvm.ptr<1>, %x: f32, %n: i32, %d: i64) kernel {
    %smem = llvm.mlir.addressof @buffer : !llvm.ptr<3>
    %h = llvm.bitcast %n : i32 to vector<2xf16>
    nvvm.cp.async.shared.global %smem, %src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
    nvvm.cp.async.shared.global %smem, %src, 16, cache = cg, %n : !llvm.ptr<3>, !llvm.ptr<1>
    nvvm.cp.async.shared.global %smem, %src, 8, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 1
    %a = nvvm.ldmatrix %smem num 4 : !llvm.ptr<3> -> !llvm.struct<(i32, i32, i32, i32)>
    %b = nvvm.ldmatrix %smem num 2 trans : !llvm.ptr<3> -> !llvm.struct<(i32, i32)>
    %a0 = llvm.extractvalue %a[0] : !llvm.struct<(i32, i32, i32, i32)>
    %b0 = llvm.extractvalue %b[0] : !llvm.struct<(i32, i32)>
    %d16 = nvvm.mma.sync f16 A[%h, %h, %h, %h] B[%h, %h] C[%x, %x, %x, %x]
        : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>),
          (vector<2xf16>, vector<2xf16>)
    %dbf = nvvm.mma.sync bf16 A[%a0, %a0, %a0, %a0] B[%b0, %b0] C[%x, %x, %x, %x]
        : (i32, i32, i32, i32), (i32, i32)
    %e16 = llvm.extractvalue %d16[0] : !llvm.struct<(f32, f32, f32, f32)>
    %ebf = llvm.extractvalue %dbf[3] : !llvm.struct<(f32, f32, f32, f32)>
    %s = nvvm.shfl.sync bfly %n, %e16, %n, %n : f32
    %t = nvvm.tanh.approx.f32 %s
    %e = nvvm.ex2.approx.ftz.f32 %t
    %w = nvvm.cvt.pack bf16 %e, %ebf
    %any = nvvm.barrier0.or %w
    nvvm.wgmma.fence.aligned
    %acc = nvvm.wgmma.mma_async f16 n = 8 %d, %d, %n, [%x, %x, %x, %x]
        -> !llvm.struct<(f32, f32, f32, f32)>
    %nmajor = nvvm.wgmma.mma_async f16 n = 8 trans_b %d, %d, %n, [%x, %x, %x, %x]
        -> !llvm.struct<(f32, f32, f32, f32)>
    nvvm.wgmma.commit.group.sync.aligned
    nvvm.wgmma.wait.group.sync.aligned 0
    %r = llvm.extractvalue %acc[2] : !llvm.struct<(f32, f32, f32, f32)>
    %p = nvvm.cvt.pack f16 %r, %e
    %sum = llvm.add %any, %p : i32
    llvm.store %sum, %out {alignment = 4 : i64} : i32, !llvm.ptr<1>
    gpu.return
  }
  llvm.mlir.global internal @buffer() {addr_space = 3 : i32, alignment = 16 : i64}
      : !llvm.array<64 x i32>
}
"""

# In program order (registers: `%\w+`, LLVM 22 names f32 registers %r too).
EXPECTED = [
    r"cp\.async\.cg\.shared\.global \[buffer\], \[%\w+\], 16;",
    r"cp\.async\.cg\.shared\.global \[buffer\], \[%\w+\], 16, %\w+;",
    r"cp\.async\.ca\.shared\.global \[buffer\], \[%\w+\], 8;",
    r"cp\.async\.commit_group;",
    r"cp\.async\.wait_group\s+1;",
    r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16",
    r"ldmatrix\.sync\.aligned\.m8n8\.x2\.trans\.shared\.b16",
    r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
    r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32",
    r"shfl\.sync\.bfly\.b32",
    r"tanh\.approx\.f32 %\w+, %\w+;",
    r"ex2\.approx\.ftz\.f32 %\w+, %\w+;",
    r"cvt\.rn\.bf16x2\.f32 %\w+, %\w+, %\w+;",
    r"bar\.red\.or\.pred",
    r"wgmma\.fence\.sync\.aligned;",
    r"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.f16\.f16 \{%\w+, %\w+, %\w+, %\w+\}, "
    r"%\w+, %\w+, p, 1, 1, 0, 0;",
    r"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.f16\.f16 \{%\w+, %\w+, %\w+, %\w+\}, "
    r"%\w+, %\w+, p, 1, 1, 0, 1;",
    r"wgmma\.commit_group\.sync\.aligned;",
    r"wgmma\.wait_group\.sync\.aligned 0;",
    r"cvt\.rn\.f16x2\.f32 %\w+, %\w+, %\w+;",
]


class TestMatrixAndAsyncCopyOps(LoweredKernelChecks):
    KERNEL = KERNEL
    EXPECTED = EXPECTED
