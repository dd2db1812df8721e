// RUN: tilesync-opt %s -p convert-tile-to-nvvm | filecheck %s
// RUN: tilesync-opt %s -p convert-tile-to-nvvm,convert-nvvm-to-llvm | filecheck %s --check-prefix=PTX

// Split-K slices that meet in a cluster: a slice stores its partial tile into its own shared
// buffer (plain stores), the first reads its peer's at the same place (the address mapped
// into the peer CTA with mapa, ld.shared::cluster) and adds it to its own accumulator
// element by element; a buffer of its own it reads with plain loads. No atomics: the buffer
// is written again before every read.
// CHECK-LABEL: func.func @split_in_cluster
// CHECK:       %[[CTA:.*]] = llvm.trunc %{{.*}} : i64 to i32
// CHECK-COUNT-4: %{{.*}} = nvvm.ld weak %{{.*}} cta %[[CTA]] : !llvm.ptr<3> -> f32
// CHECK-COUNT-4: %{{.*}} = llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4: %{{.*}} = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> f32
// CHECK-NOT:   nvvm.atom
// CHECK:       func.return
// PTX-COUNT-4: "{\0A.reg .b32 a, r;\0Acvt.u32.u64 a, $1;\0Amapa.shared::cluster.u32 r, a, $2;\0Ald.shared::cluster.f32 $0, [r];\0A}", "=f,l,r,~{memory}"
func.func @split_in_cluster(%c: !tile.frag<acc, f32, m16n8k16>, %buf: memref<64x64xf32, 3>,
                            %i: index, %j: index, %cta: index)
    -> (!tile.frag<acc, f32, m16n8k16>, !tile.frag<acc, f32, m16n8k16>) {
  tile.store_acc %c, %buf[%i, %j] : !tile.frag<acc, f32, m16n8k16>, memref<64x64xf32, 3>
  %peer = tile.take_acc %buf[%i, %j] cta %cta : memref<64x64xf32, 3> -> !tile.frag<acc, f32, m16n8k16>
  %sum = tile.add_acc %c, %peer : !tile.frag<acc, f32, m16n8k16>
  %own = tile.take_acc %buf[%i, %j] : memref<64x64xf32, 3> -> !tile.frag<acc, f32, m16n8k16>
  func.return %sum, %own : !tile.frag<acc, f32, m16n8k16>, !tile.frag<acc, f32, m16n8k16>
}
