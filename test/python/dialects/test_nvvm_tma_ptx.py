"""Hopper's transaction barriers (remote ones too), bulk tensor copies (multicast too), named
barriers (their id a constant or in a register), cluster barriers and setmaxnreg through
convert-nvvm-to-llvm, the llvmlite translation and LLVM's NVPTX backend: each becomes the PTX
instruction it names, in program order, ptxas assembles the PTX where it is installed, and
nvJitLink accepts it (sm_90a)."""

from __future__ import annotations

from nvvm_ptx_check import LoweredKernelChecks

KERNEL = """
gpu.module @m {
  gpu.func @k(%map: !llvm.ptr, %n: i32, %out: !llvm.ptr<1>, %mask: i16) kernel {
    %s = llvm.mlir.addressof @buffer : !llvm.ptr<3>
    %b = llvm.mlir.addressof @bars : !llvm.ptr<3>
    nvvm.mbarrier.init %b, %n : !llvm.ptr<3>
    nvvm.fence.mbarrier_init
    nvvm.barrier.sync 1, 256
    nvvm.barrier.sync %n, 128
    nvvm.prefetch.tensormap %map : !llvm.ptr
    nvvm.mbarrier.arrive %b expect_tx %n : !llvm.ptr<3>
    nvvm.cp.async.bulk.tensor.shared.global %s, %map[%n, %n], %b : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
    nvvm.mbarrier.arrive %b : !llvm.ptr<3>
    nvvm.cp.async.bulk.tensor.shared.global %s, %map[%n, %n], %b multicast %mask : !llvm.ptr<3>, !llvm.ptr, !llvm.ptr<3>
    nvvm.mbarrier.arrive %b cta %n : !llvm.ptr<3>
    %r = nvvm.mbarrier.try_wait.parity %b, %n : !llvm.ptr<3>
    nvvm.cp.async.bulk.tensor.global.shared %map[%r, %n, %n], %s : !llvm.ptr, !llvm.ptr<3>
    nvvm.cp.async.bulk.commit.group
    nvvm.cp.async.bulk.wait.group.read 0
    nvvm.setmaxnreg dec 40
    nvvm.setmaxnreg inc 232
    nvvm.cluster.arrive
    nvvm.cluster.wait
    llvm.store %r, %out {alignment = 4 : i64} : i32, !llvm.ptr<1>
    gpu.return
  }
  llvm.mlir.global internal @buffer() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<4096 x i8>
  llvm.mlir.global internal @bars() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<2 x i64>
}
"""  # noqa: E501

EXPECTED = [
    r"mbarrier\.init\.shared\.b64 \s*\[bars\], %r\d+;",
    r"fence\.mbarrier_init\.release\.cluster;",
    r"bar\.sync \s*1, 256;",
    r"bar\.sync \s*%r\d+, 128;",
    r"prefetch\.tensormap \[%rd\d+\];",
    r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%rd\d+\], %r\d+;",
    r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes "
    r"\[%rd\d+\], \[%rd\d+, \{%r\d+, %r\d+\}\], \[%rd\d+\];",
    r"mbarrier\.arrive\.shared::cta\.b64 _, \[%rd\d+\];",
    r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes"
    r"\.multicast::cluster \[%rd\d+\], \[%rd\d+, \{%r\d+, %r\d+\}\], \[%rd\d+\], %rs\d+;",
    r"mapa\.shared::cluster\.u32 r, a, %r\d+;",
    r"mbarrier\.arrive\.shared::cluster\.b64 _, \[r\];",
    r"mbarrier\.try_wait\.parity\.shared::cta\.b64 p, \[%rd\d+\], %r\d+;",
    r"cp\.async\.bulk\.tensor\.3d\.global\.shared::cta\.tile\.bulk_group "
    r"\[%rd\d+, \{%r\d+, %r\d+, %r\d+\}\], \[%rd\d+\];",
    r"cp\.async\.bulk\.commit_group;",
    r"cp\.async\.bulk\.wait_group\.read 0;",
    r"setmaxnreg\.dec\.sync\.aligned\.u32 40;",
    r"setmaxnreg\.inc\.sync\.aligned\.u32 232;",
    r"barrier\.cluster\.arrive;",
    r"barrier\.cluster\.wait;",
]


class TestHopperBarriersAndTensorCopies(LoweredKernelChecks):
    KERNEL = KERNEL
    EXPECTED = EXPECTED
