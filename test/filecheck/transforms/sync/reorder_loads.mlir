// RUN: tilesync-opt %s --split-input-file -p sync-reorder-loads | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-reorder-loads,sync-insert-post-wait,sync-verify' | filecheck %s --check-prefix=WAITS
// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-select-policy{policy=tile},sync-reorder-loads,sync-insert-post-wait,sync-verify' | filecheck %s --check-prefix=TILE

// A GEMM k-loop that loads A (produced by @g1) then B (a weight): B's load moves first.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    "memref.global"() <{sym_name = "a_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()
    "memref.global"() <{sym_name = "b_tile", sym_visibility = "private", type = memref<32x32xf32, 3>, initial_value}> : () -> ()
    gpu.func @g1(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @g2(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %as = memref.get_global @a_tile : memref<32x32xf32, 3>
      %bs = memref.get_global @b_tile : memref<32x32xf32, 3>
      scf.for %kt = %c0 to %c8 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
        %ia = affine.apply affine_map<(d0, d1, d2) -> (d0 * 32768 + d1 * 64 + d2 mod 64)>(%x, %kt, %t)
        %av = memref.load %a[%ia] : memref<?xf32>
        memref.store %av, %as[%t, %kt] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %ib = arith.addi %kt, %t : index
        %bv = memref.load %b[%ib] : memref<?xf32>
        memref.store %bv, %bs[%t, %kt] : memref<32x32xf32, 3>
        gpu.barrier
      }
      gpu.return
    }
  }
  sync.stage @g1 {kernel = @k::@g1, grid = array<i64: 2, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @g2 {kernel = @k::@g2, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @g1 -> @g2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @g1
  sync.launch @g2 {pdl = true}
}

// CHECK-LABEL: gpu.func @g2(
// CHECK:         scf.for %kt = %c0 to %c8 step %c1 {
// CHECK-NEXT:      sync.load_point operand 1 [%x, %y] step %kt
// CHECK-NEXT:      %ib = arith.addi %kt, %t : index
// CHECK-NEXT:      %bv = memref.load %b[%ib] : memref<?xf32>
// CHECK-NEXT:      sync.load_point operand 0 [%x, %y] step %kt {sync.reordered}
// CHECK-NEXT:      %ia = affine.apply {{.*}}(%x, %kt, %t)
// CHECK-NEXT:      %av = memref.load %a[%ia] : memref<?xf32>
// CHECK-NEXT:      memref.store %av, %as[%t, %kt]
// CHECK-NEXT:      memref.store %bv, %bs[%t, %kt]
// CHECK-NEXT:      gpu.barrier

// With R, RowSync waits before A's load, after B's (at step 0: every step reads the row's one
// semaphore), and the program is proved: the reference's RowSync never blocked there.
// WAITS-LABEL: gpu.func @g2(
// WAITS:         scf.for %kt = %c0 to %c8 step %c1 {
// WAITS-NEXT:      %ib = arith.addi %kt, %t : index
// WAITS-NEXT:      %bv = memref.load %b[%ib] : memref<?xf32>
// WAITS-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// WAITS-NEXT:      %[[FIRST:.*]] = arith.cmpi slt, %kt, %[[ONE]] : index
// WAITS-NEXT:      scf.if %[[FIRST]] {
// WAITS-NEXT:        sync.wait %sems_g1[%x, %kt] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8> : memref<?xi32>
// WAITS-NEXT:      }
// WAITS-NEXT:      sync.load_point operand 0 [%x, %y] step %kt {sync.reordered, sync.filled}
// WAITS-NEXT:      %ia = affine.apply {{.*}}(%x, %kt, %t)
// WAITS-NEXT:      %av = memref.load %a[%ia] : memref<?xf32>
// WAITS:         sync.stage @g2 {sync.progress = "@g1: programmatic dependent launch", sync.verified = "proved"

// With R, TileSync waits for the step's own tile at every step (the reference waited once).
// TILE:          scf.for %kt = %c0 to %c8 step %c1 {
// TILE-NEXT:       %ib = arith.addi %kt, %t : index
// TILE-NEXT:       %bv = memref.load %b[%ib] : memref<?xf32>
// TILE-NEXT:       sync.wait %sems_g1[%x, %kt] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> unless %ready_g1 : memref<?xi32>
// TILE-NEXT:       sync.load_point operand 0 [%x, %y] step %kt {sync.reordered, sync.filled}
// TILE:          sync.stage @g2 {sync.progress = "@g1: programmatic dependent launch", sync.verified = "proved"

// -----

// Not legal: B's load address uses a value computed in A's group; nothing moves.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @g1(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @g2(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %kt = %c0 to %c8 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
        %i = arith.addi %kt, %c1 : index
        %ia = affine.apply affine_map<(d0, d1) -> (d0 * 32768 + d1 * 64)>(%x, %kt)
        %av = memref.load %a[%ia] : memref<?xf32>
        sync.load_point operand 1 [%x, %y] step %kt
        %bv = memref.load %b[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
  sync.stage @g1 {kernel = @k::@g1, grid = array<i64: 2, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @g2 {kernel = @k::@g2, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @g1 -> @g2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @g1
  sync.launch @g2 {pdl = true}
}

// CHECK-LABEL: gpu.func @g2(
// CHECK:           sync.load_point operand 0 [%x, %y] step %kt{{$}}
// CHECK-NEXT:      %i = arith.addi %kt, %c1 : index
// CHECK-NEXT:      %ia = affine.apply
// CHECK-NEXT:      %av = memref.load %a[%ia] : memref<?xf32>
// CHECK-NEXT:      sync.load_point operand 1 [%x, %y] step %kt{{$}}
// CHECK-NEXT:      %bv = memref.load %b[%i] : memref<?xf32>

// -----

// Not legal: A's group writes the buffer that B's group reads; and a barrier inside a group.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @g1(%c: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @g2(%a: memref<?xf32>, %b: memref<?xf32>, %s: memref<?xf32>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %ia = affine.apply affine_map<(d0) -> (d0 * 32768)>(%x)
      sync.load_point operand 0 [%x, %y]
      %av = memref.load %a[%ia] : memref<?xf32>
      memref.store %av, %s[%c0] : memref<?xf32>
      sync.load_point operand 1 [%x, %y]
      %z = memref.load %s[%c0] : memref<?xf32>
      %bv = memref.load %b[%c0] : memref<?xf32>
      sync.load_point operand 0 [%x, %y]
      %av2 = memref.load %a[%ia] : memref<?xf32>
      gpu.barrier
      sync.load_point operand 1 [%x, %y]
      %bv2 = memref.load %b[%c0] : memref<?xf32>
      gpu.return
    }
  }
  sync.stage @g1 {kernel = @k::@g1, grid = array<i64: 2, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @g2 {kernel = @k::@g2, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, coresident}
  sync.dependency @g1 -> @g2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
}

// CHECK-LABEL: gpu.func @g2(
// CHECK:         sync.load_point operand 0 [%x, %y]{{$}}
// CHECK-NEXT:    %av = memref.load
// CHECK-NEXT:    memref.store %av, %s
// CHECK-NEXT:    sync.load_point operand 1 [%x, %y]{{$}}
// CHECK-NEXT:    %z = memref.load %s
// CHECK-NEXT:    %bv = memref.load
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y]{{$}}
// CHECK-NEXT:    %av2 = memref.load
// CHECK-NEXT:    gpu.barrier
// CHECK-NEXT:    sync.load_point operand 1 [%x, %y]{{$}}
