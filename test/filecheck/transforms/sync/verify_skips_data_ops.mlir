// RUN: tilesync-opt %s -p 'sync-select-policy{policy=tile},sync-insert-post-wait{probe=false},sync-verify{steps=2000}' | filecheck %s

// sync-verify runs only the ops that synchronization, control flow and the operand accesses
// it checks depend on: @c's 256 k-steps each load a produced element (its index from the
// step) and do two dozen operations on the data, which it skips (run, they took the proof
// past this budget of 2000 steps).
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @p(%h: memref<4x256xf32>) kernel {
      %x, %y = sync.tile : index, index
      %zero = arith.constant 0.000000e+00 : f32
      memref.store %zero, %h[%x, %y] : memref<4x256xf32>
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @c(%h: memref<4x256xf32>, %out: memref<4xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      scf.for %kt = %c0 to %c256 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
        %v0 = memref.load %h[%x, %kt] : memref<4x256xf32>
        %v1 = arith.addf %v0, %v0 : f32
        %v2 = arith.addf %v1, %v1 : f32
        %v3 = arith.addf %v2, %v2 : f32
        %v4 = arith.addf %v3, %v3 : f32
        %v5 = arith.addf %v4, %v4 : f32
        %v6 = arith.addf %v5, %v5 : f32
        %v7 = arith.addf %v6, %v6 : f32
        %v8 = arith.addf %v7, %v7 : f32
        %v9 = arith.addf %v8, %v8 : f32
        %v10 = arith.addf %v9, %v9 : f32
        %v11 = arith.addf %v10, %v10 : f32
        %v12 = arith.addf %v11, %v11 : f32
        %v13 = arith.addf %v12, %v12 : f32
        %v14 = arith.addf %v13, %v13 : f32
        %v15 = arith.addf %v14, %v14 : f32
        %v16 = arith.addf %v15, %v15 : f32
        %v17 = arith.addf %v16, %v16 : f32
        %v18 = arith.addf %v17, %v17 : f32
        %v19 = arith.addf %v18, %v18 : f32
        %v20 = arith.addf %v19, %v19 : f32
        %v21 = arith.addf %v20, %v20 : f32
        %v22 = arith.addf %v21, %v21 : f32
        %v23 = arith.addf %v22, %v22 : f32
        %v24 = arith.addf %v23, %v23 : f32
      }
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@p, grid = array<i64: 4, 256>, block = array<i64: 1, 1, 1>, tile = array<i64: 1, 1>}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 4, 1>, block = array<i64: 1, 1, 1>, tile = array<i64: 1, 256>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 256)
  sync.launch @p
  sync.launch @c {pdl = true}
}

// CHECK: sync.stage @p {{.*}}sync.verified = "proved"
// CHECK: sync.stage @c {{.*}}sync.verified = "proved"
