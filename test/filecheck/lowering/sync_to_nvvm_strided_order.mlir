// RUN: tilesync-opt %s -p 'sync-tile-order{order=strided},convert-sync-to-nvvm' | filecheck %s
// StridedSync's tile order (attention: head h reads the Q, K and V column tiles h, h + 3,
// h + 6 of the QKV GEMM) lowers: sync-tile-order writes #sync.order<strided<3>> on the
// producer, and the kernel takes its tiles from the order's table (row by row, columns 0, 3,
// 6, 1, 4, 7, 2, 5, 8 within a row).
builtin.module {
  gpu.module @k {
    gpu.func @qkv(%out: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      gpu.return
    }
    gpu.func @attn(%in: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      gpu.return
    }
  }
  sync.stage @qkv {kernel = @k::@qkv, grid = array<i64: 2, 9>, block = array<i64: 128>, tile = array<i64: 64, 64>}
  sync.stage @attn {kernel = @k::@attn, grid = array<i64: 2, 3>, block = array<i64: 128>, tile = array<i64: 64, 64>}
  sync.dependency @qkv -> @attn operand 0 tiles (d0, d1)[s0] -> (d0, d1 + s0 * 3) forall s0 in [0, 3)
}
// CHECK:      gpu.func @qkv(%out: memref<?xf32>, %{{.*}}: memref<1xi64>, %{{.*}}: memref<?xi32>) kernel attributes {sync.args = ["tile_counter", "order_table"], sync.order_table = array<i32: 0, 3, 6, 1, 4, 7, 2, 5, 8, 9, 12, 15, 10, 13, 16, 11, 14, 17>}
// CHECK:      nvvm.atom add relaxed, gpu
// CHECK-NOT:  sync.tile
// CHECK:      gpu.func @attn(
// CHECK:      sync.stage @qkv {kernel = @k::@qkv, grid = array<i64: 2, 9>, block = array<i64: 128>, tile = array<i64: 64, 64>, order = #sync.order<strided<3>>}
