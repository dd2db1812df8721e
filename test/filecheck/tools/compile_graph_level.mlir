// RUN: tilesync compile %s -t sm_90a | filecheck %s
// RUN: not tilesync compile %s 2>&1 | filecheck %s --check-prefix=SM90
// RUN: tilesync compile %s --emit mlir | filecheck %s --check-prefix=MLIR
// A graph-level program compiles by itself: graph-to-stages makes its stage program, the
// cuSync passes fill the hooks (consumers launched with PDL), then the default lowering. (It
// failed in convert-func-to-llvm on the tensor arguments.)
func.func @mlp(%x: tensor<64x1024xf16>, %w1: tensor<4096x1024xf16>, %w2: tensor<1024x4096xf16>) -> tensor<64x1024xf16> {
  %h = graph.linear %x, %w1 : (tensor<64x1024xf16>, tensor<4096x1024xf16>) -> tensor<64x4096xf16>
  %a = graph.gelu %h approximate "tanh" : tensor<64x4096xf16>
  %y = graph.linear %a, %w2 : (tensor<64x4096xf16>, tensor<1024x4096xf16>) -> tensor<64x1024xf16>
  func.return %y : tensor<64x1024xf16>
}

// GEMM1 lets GEMM2 launch early (PDL); GEMM2 waits on its tiles' semaphores.
// CHECK:     .entry gemm1(
// CHECK:     griddepcontrol.launch_dependents
// CHECK:     .entry gemm2(
// CHECK:     ld.acquire.gpu.global.u32

// The stage program's kernels use wgmma: sm_90 is refused before lowering, with the fix.
// SM90: error: target: tile.setmaxnreg needs target sm_90a {{.*}}(tilesync compile -t sm_90a)

// --emit mlir runs the pipeline compile runs (it skipped graph-to-stages and failed in
// convert-func-to-llvm on the tensor arguments), with the same PDL launches.
// MLIR:     gpu.module @gemm1_module
// MLIR:     llvm.func ptx_kernel @gemm1(
// MLIR:     sync.launch @gemm2 {pdl = true}
