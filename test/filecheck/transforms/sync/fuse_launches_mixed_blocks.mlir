// RUN: tilesync-opt %s -p sync-fuse-launches | filecheck %s

// Stages of different (one-dimensional) blocks in one launch: the kernel's block is the
// largest, 256 threads; @consume's 128-thread code runs in its first 128, with its own block
// size for gpu.block_dim, while the other four warps skip to the end.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 4>, block = array<i64: 256, 1, 1>, tile = array<i64: 128>}
  sync.stage @consume {kernel = @k::@consumer, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 128>}
  sync.dependency @produce -> @consume operand 0 tiles (d0) -> (d0)
  sync.launch @produce
  sync.launch @consume {fused = true}
  gpu.module @k {
    gpu.func @producer(%out: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %t = sync.tile : index
      %n = gpu.block_dim x
      %f = arith.index_cast %n : index to i32
      %v = arith.sitofp %f : i32 to f32
      memref.store %v, %out[%t] : memref<?xf32>
      gpu.return
    }
    gpu.func @consumer(%in: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %t = sync.tile : index
      %n = gpu.block_dim x
      %f = arith.index_cast %n : index to i32
      %v = arith.sitofp %f : i32 to f32
      memref.store %v, %in[%t] : memref<?xf32>
      gpu.return
    }
  }
}

// CHECK:      gpu.func @produce_launch(%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
// CHECK-NEXT:   %[[T:.*]] = sync.tile order #sync.order<row_major> : index
// CHECK:        scf.if
// CHECK:          %[[N1:.*]] = arith.constant 256 : index
// CHECK:          arith.index_cast %[[N1]] : index to i32
// CHECK:        } else {
// CHECK-NEXT:     %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:     %[[COUNT:.*]] = arith.constant 128 : index
// CHECK-NEXT:     %[[MINE:.*]] = arith.cmpi ult, %[[TID]], %[[COUNT]] : index
// CHECK-NEXT:     scf.if %[[MINE]] {
// CHECK-NEXT:       %{{.*}} = arith.constant 4 : index
// CHECK-NEXT:       %{{.*}} = arith.subi %[[T]], %{{.*}} : index
// CHECK-NEXT:       %[[N2:.*]] = arith.constant 128 : index
// CHECK:            arith.index_cast %[[N2]] : index to i32
// CHECK:          }
// CHECK-NEXT:   }
// CHECK-NEXT:   gpu.return
