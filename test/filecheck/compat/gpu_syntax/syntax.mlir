// RUN: tilesync-opt %s | tilesync-opt | filecheck %s
// RUN: tilesync-opt %s | tilesync-opt --print-op-generic | tilesync-opt | filecheck %s

// Upstream MLIR's custom syntax for the gpu ops: printing and parsing round-trip.

builtin.module {
  gpu.module @kernels {
    gpu.func @saxpy(%x: memref<?xf32>, %y: memref<?xf32> {llvm.noalias}, %a: f32, %n: i32) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y upper_bound 4
      %tz = gpu.thread_id z
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %bz = gpu.block_id z
      %dx = gpu.block_dim x
      %dy = gpu.block_dim y
      %dz = gpu.block_dim z
      %gx = gpu.grid_dim x
      %gy = gpu.grid_dim y
      %gz = gpu.grid_dim z
      %ix = gpu.global_id x
      %iy = gpu.global_id y
      %iz = gpu.global_id z {tag}
      %l = gpu.lane_id
      %lb = gpu.lane_id upper_bound 32
      %s = gpu.subgroup_id
      %ns = gpu.num_subgroups
      %ss = gpu.subgroup_size upper_bound 32
      gpu.barrier
      gpu.barrier {tag}
      gpu.return
    }
    gpu.func @helper(%v: f32, %w: f32) -> f32 {
      gpu.return %v : f32
    }
    gpu.func @pair(%v: f32, %i: i32) -> (f32, i32 {llvm.signext}) attributes {tag} {
      gpu.return %v, %i : f32, i32
    }
    gpu.func @empty_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @with_attrs attributes {tag = 1 : i32} {
    gpu.func @f() {
      gpu.return
    }
  }
  gpu.module @targeted ["nvptx", {chip = "sm_90"}] {
  }
  gpu.module @empty {
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   gpu.module @kernels {
// CHECK-NEXT:     gpu.func @saxpy(%x: memref<?xf32>, %y: memref<?xf32> {llvm.noalias}, %a: f32, %n: i32) kernel attributes {gpu.known_block_size = array<i32: 256, 1, 1>} {
// CHECK-NEXT:       %tx = gpu.thread_id x
// CHECK-NEXT:       %ty = gpu.thread_id y upper_bound 4
// CHECK-NEXT:       %tz = gpu.thread_id z
// CHECK-NEXT:       %bx = gpu.block_id x
// CHECK-NEXT:       %by = gpu.block_id y
// CHECK-NEXT:       %bz = gpu.block_id z
// CHECK-NEXT:       %dx = gpu.block_dim x
// CHECK-NEXT:       %dy = gpu.block_dim y
// CHECK-NEXT:       %dz = gpu.block_dim z
// CHECK-NEXT:       %gx = gpu.grid_dim x
// CHECK-NEXT:       %gy = gpu.grid_dim y
// CHECK-NEXT:       %gz = gpu.grid_dim z
// CHECK-NEXT:       %ix = gpu.global_id x
// CHECK-NEXT:       %iy = gpu.global_id y
// CHECK-NEXT:       %iz = gpu.global_id z {tag}
// CHECK-NEXT:       %l = gpu.lane_id
// CHECK-NEXT:       %lb = gpu.lane_id upper_bound 32
// CHECK-NEXT:       %s = gpu.subgroup_id
// CHECK-NEXT:       %ns = gpu.num_subgroups
// CHECK-NEXT:       %ss = gpu.subgroup_size upper_bound 32
// CHECK-NEXT:       gpu.barrier
// CHECK-NEXT:       gpu.barrier {tag}
// CHECK-NEXT:       gpu.return
// CHECK-NEXT:     }
// CHECK-NEXT:     gpu.func @helper(%v: f32, %w: f32) -> f32 {
// CHECK-NEXT:       gpu.return %v : f32
// CHECK-NEXT:     }
// CHECK-NEXT:     gpu.func @pair(%v: f32, %i: i32) -> (f32, i32 {llvm.signext}) attributes {tag} {
// CHECK-NEXT:       gpu.return %v, %i : f32, i32
// CHECK-NEXT:     }
// CHECK-NEXT:     gpu.func @empty_kernel() kernel {
// CHECK-NEXT:       gpu.return
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   gpu.module @with_attrs attributes {tag = 1 : i32} {
// CHECK-NEXT:     gpu.func @f() {
// CHECK-NEXT:       gpu.return
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   gpu.module @targeted ["nvptx", {chip = "sm_90"}] {
// CHECK-NEXT:   }
// CHECK-NEXT:   gpu.module @empty {
// CHECK-NEXT:   }
// CHECK-NEXT: }
