// RUN: tilesync-opt %s --split-input-file -p sync-reorder-loads | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p 'sync-generate-policies,sync-reorder-loads,sync-insert-post-wait,sync-verify' | filecheck %s --check-prefix=PROVED

// R leaves a k-loop alone where moving A's group would be wrong.

// R: a load of produced operand 0 sits inside operand 1's group (after B's hook, before B's
// last use); moving A's hook below it would put its wait after that load.
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
        %ia2 = affine.apply affine_map<(d0, d1, d2) -> (d0 * 32768 + d1 * 64 + 32 + d2 mod 32)>(%x, %kt, %t)
        %av2 = memref.load %a[%ia2] : memref<?xf32>
        %sum = arith.addf %av2, %bv : f32
        memref.store %sum, %bs[%t, %kt] : memref<32x32xf32, 3>
        %bv2 = memref.load %b[%ib] : memref<?xf32>
        memref.store %bv2, %bs[%kt, %t] : memref<32x32xf32, 3>
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
// CHECK-NOT:     sync.reordered
// CHECK:         gpu.return
// PROVED: sync.stage @g2 {{.*}}sync.verified = "proved"

// -----

// R: B's group reads the shared tile A's group just wrote, through a memref.cast alias;
// a cast is a view of the same buffer, so the groups conflict.
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
      %asc = "memref.cast"(%as) : (memref<32x32xf32, 3>) -> memref<?x?xf32, 3>
      scf.for %kt = %c0 to %c8 step %c1 {
        sync.load_point operand 0 [%x, %y] step %kt
        %ia = affine.apply affine_map<(d0, d1, d2) -> (d0 * 32768 + d1 * 64 + d2 mod 64)>(%x, %kt, %t)
        %av = memref.load %a[%ia] : memref<?xf32>
        memref.store %av, %as[%t, %kt] : memref<32x32xf32, 3>
        sync.load_point operand 1 [%x, %y] step %kt
        %ib = arith.addi %kt, %t : index
        %bv = memref.load %b[%ib] : memref<?xf32>
        %prev = memref.load %asc[%t, %kt] : memref<?x?xf32, 3>
        %sum = arith.addf %prev, %bv : f32
        memref.store %sum, %bs[%t, %kt] : memref<32x32xf32, 3>
        %bv2 = memref.load %b[%ib] : memref<?xf32>
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
// CHECK-NOT:     sync.reordered
// CHECK:         gpu.return
// PROVED: sync.stage @g2 {{.*}}sync.verified = "proved"
