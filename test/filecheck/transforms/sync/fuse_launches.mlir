// RUN: tilesync-opt %s --allow-unregistered-dialect -p sync-fuse-launches | filecheck %s

// @consume's blocks join @produce's launch: one kernel takes a ticket (the ordered sync.tile
// over its 10 blocks) and runs @produce as its block (t mod 2, t div 2) for tickets 0..5, else
// @consume as its ordered tile t - 6. Each kernel's own parameters in stage order, the
// semaphores and the epoch once.
builtin.module {
  sync.stage @produce {kernel = @k::@producer, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<TileSync (d0, d1) -> (d0 * 3 + d1), posts = 1>}
  sync.stage @consume {kernel = @k2::@consumer, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64>}
  sync.dependency @produce -> @consume operand 0 tiles (d0)[s0] -> (d0 floordiv 2, s0) forall s0 in [0, 3)
  sync.launch @produce {priority = -1 : i64}
  sync.launch @consume {fused = true}
  gpu.module @k {
    "memref.global"() {sym_name = "smem", sym_visibility = "private", type = memref<4096xf16, 3>, initial_value, alignment = 1024 : i64, tilesync.dynamic_shared} : () -> ()
    "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<2xi64, 3>, initial_value} : () -> ()
    gpu.func @producer(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, sync.args = ["sems:@produce", "epoch"], tilesync.min_blocks_per_sm = 2 : i32} {
      %x, %y = sync.tile : index, index
      %by = gpu.block_id y
      %gx = gpu.grid_dim x
      %s = memref.get_global @smem : memref<4096xf16, 3>
      %b = memref.get_global @bars : memref<2xi64, 3>
      "test.use"(%x, %y, %by, %gx, %s, %b) : (index, index, index, index, memref<4096xf16, 3>, memref<2xi64, 3>) -> ()
      sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 3 + d1), posts = 1> : memref<?xi32>
      gpu.return
    }
  }
  gpu.module @k2 {
    "memref.global"() {sym_name = "smem", sym_visibility = "private", type = memref<8192xf16, 3>, initial_value, alignment = 1024 : i64, tilesync.dynamic_shared} : () -> ()
    gpu.func @consumer(%in: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, sync.args = ["sems:@produce", "epoch"], tilesync.min_blocks_per_sm = 1 : i32} {
      %t = sync.tile order #sync.order<row_major> : index
      %s = memref.get_global @smem : memref<8192xf16, 3>
      "test.use"(%t, %s) : (index, memref<8192xf16, 3>) -> ()
      gpu.return
    }
  }
}

// The launch names the kernel that runs both stages.
// CHECK:      sync.launch @produce {sync.one_launch_kernel = @produce_launch_module::@produce_launch, priority = -1 : i64}
// CHECK-NEXT: sync.launch @consume {fused = true}

// The stage kernels keep their signatures (the runtime binds each stage's arguments by them),
// their bodies moved.
// CHECK:      gpu.func @producer(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {{{.*}}tilesync.fused_into = @produce_launch_module::@produce_launch} {
// CHECK-NEXT:   gpu.return

// Each stage's shared globals, copied under its name into dynamic shared memory, where the
// stages' overlap.
// CHECK:      gpu.module @produce_launch_module {
// CHECK-NEXT:   "memref.global"() <{sym_name = "produce_smem", {{.*}}}> {tilesync.dynamic_shared, tilesync.shared_overlay = 0 : i64}
// CHECK-NEXT:   "memref.global"() <{sym_name = "produce_bars", {{.*}}}> {tilesync.dynamic_shared, tilesync.shared_overlay = 0 : i64}
// CHECK-NEXT:   "memref.global"() <{sym_name = "consume_smem", {{.*}}}> {tilesync.dynamic_shared, tilesync.shared_overlay = 1 : i64}
// CHECK-NEXT:   gpu.func @produce_launch(%[[OUT:.*]]: memref<?xf32>, %[[IN:.*]]: memref<?xf32>, %[[SEMS:.*]]: memref<?xi32>, %[[EPOCH:.*]]: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, sync.args = ["sems:@produce", "epoch"], tilesync.min_blocks_per_sm = 1 : i32} {
// CHECK-NEXT:     %[[T:.*]] = sync.tile order #sync.order<row_major> : index
// CHECK-NEXT:     %[[END:.*]] = arith.constant 6 : index
// CHECK-NEXT:     %[[FIRST:.*]] = arith.cmpi ult, %[[T]], %[[END]] : index
// CHECK-NEXT:     scf.if %[[FIRST]] {
// CHECK-NEXT:       %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:       %[[L:.*]] = arith.subi %[[T]], %[[ZERO]] : index
// CHECK-NEXT:       %[[GX:.*]] = arith.constant 2 : index
// CHECK-NEXT:       %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:       %[[BX:.*]] = arith.remui %[[L]], %[[C2]] : index
// CHECK-NEXT:       %[[BY:.*]] = arith.divui %[[L]], %[[C2]] : index
// CHECK-NEXT:       %{{.*}} = arith.constant 0 : index
// CHECK-NEXT:       %[[S:.*]] = memref.get_global @produce_smem : memref<4096xf16, 3 : i64>
// CHECK-NEXT:       %[[B:.*]] = memref.get_global @produce_bars : memref<2xi64, 3 : i64>
// CHECK-NEXT:       "test.use"(%[[BX]], %[[BY]], %[[BY]], %[[GX]], %[[S]], %[[B]])
// CHECK-NEXT:       sync.post %[[SEMS]][%[[BX]], %[[BY]]] epoch %[[EPOCH]]
// CHECK-NEXT:     } else {
// CHECK-NEXT:       %[[SIX:.*]] = arith.constant 6 : index
// CHECK-NEXT:       %[[L2:.*]] = arith.subi %[[T]], %[[SIX]] : index
// CHECK-NEXT:       %[[S2:.*]] = memref.get_global @consume_smem : memref<8192xf16, 3 : i64>
// CHECK-NEXT:       "test.use"(%[[L2]], %[[S2]])
// CHECK-NEXT:     }
// CHECK-NEXT:     gpu.return
