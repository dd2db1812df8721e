// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s --print-op-generic | tilesync-opt | filecheck %s
// The register-level ops of fused attention round-trip: an accumulator's four values out and
// back, two accumulators as an A fragment, the fence that orders the registers the next wgmmas
// read, and a wgmma with A from registers and B read N-major.

// CHECK-LABEL: func.func @online_softmax_step
// CHECK:       %[[C0:.*]], %[[C1:.*]], %[[C2:.*]], %[[C3:.*]] = tile.unpack_acc %{{.*}} : !tile.frag<acc, f32, m16n8k16>
// CHECK-NEXT:  %[[P:.*]] = tile.pack_acc %[[C3]], %[[C2]], %[[C1]], %[[C0]] : !tile.frag<acc, f32, m16n8k16>
// CHECK-NEXT:  %[[A:.*]] = tile.acc_to_a %[[P]], %{{.*}} : !tile.frag<acc, f32, m16n8k16> -> !tile.frag<a, bf16, m16n8k16>
// CHECK-NEXT:  %[[FA:.*]], %[[FO:.*]] = tile.wgmma_fence (%[[A]], %{{.*}}) : !tile.frag<a, bf16, m16n8k16>, !tile.frag<acc, f32, m16n8k16>
// CHECK-NEXT:  tile.wgmma_fence{{$}}
// CHECK-NEXT:  %{{.*}} = tile.wgmma_reg_a %[[FA]], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] trans_b, %[[FO]] : !tile.frag<a, bf16, m16n8k16>, memref<2x64x64xbf16, 3 : i64>, !tile.frag<acc, f32, m16n8k16>
// CHECK-NEXT:  %{{.*}}, %{{.*}} = tile.wgmma_reg_a %[[FA]], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %[[FO]], %[[FO]] : !tile.frag<a, bf16, m16n8k16>, memref<2x64x64xbf16, 3 : i64>, !tile.frag<acc, f32, m16n8k16>
func.func @online_softmax_step(%s: !tile.frag<acc, f32, m16n8k16>,
                               %o: !tile.frag<acc, f32, m16n8k16>,
                               %v: memref<2x64x64xbf16, 3>, %i: index) {
  %c:4 = tile.unpack_acc %s : !tile.frag<acc, f32, m16n8k16>
  %p = tile.pack_acc %c#3, %c#2, %c#1, %c#0 : !tile.frag<acc, f32, m16n8k16>
  %a = tile.acc_to_a %p, %s : !tile.frag<acc, f32, m16n8k16> -> !tile.frag<a, bf16, m16n8k16>
  %f:2 = tile.wgmma_fence (%a, %o) : !tile.frag<a, bf16, m16n8k16>, !tile.frag<acc, f32, m16n8k16>
  tile.wgmma_fence
  %d = tile.wgmma_reg_a %f#0, %v[%i, %i, %i] trans_b, %f#1 : !tile.frag<a, bf16, m16n8k16>, memref<2x64x64xbf16, 3>, !tile.frag<acc, f32, m16n8k16>
  %e:2 = tile.wgmma_reg_a %f#0, %v[%i, %i, %i], %f#1, %f#1 : !tile.frag<a, bf16, m16n8k16>, memref<2x64x64xbf16, 3>, !tile.frag<acc, f32, m16n8k16>
  func.return
}
