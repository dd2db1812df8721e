// RUN: tilesync-opt %s --split-input-file -p 'sync-select-policy{policy=tile},sync-insert-post-wait,sync-verify' | filecheck %s
// RUN: tilesync-opt %s --split-input-file -p 'sync-select-policy{policy=tile},sync-insert-post-wait{probe=false},sync-verify' | filecheck %s --check-prefix=NOPROBE

// A pipelined GEMM2 under TileSync: k-steps 0 and 1 load in the prologue, step kt + 2 in
// the loop's prefetch branch; each step reads GEMM1 tile (x, step). One probe of the row's
// 8 tiles goes in front of the first prologue load, out of the loop and its branch, and
// every wait is skipped where it found them all posted.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm1(%a: memref<?xf16>, %h: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @gemm2(%h: memref<?xf16>, %y2: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      sync.load_point operand 0 [%x, %y] step %c0
      sync.load_point operand 0 [%x, %y] step %c1
      scf.for %kt = %c0 to %c8 step %c1 {
        %next = arith.addi %kt, %c2 : index
        %more = arith.cmpi ult, %next, %c8 : index
        scf.if %more {
          sync.load_point operand 0 [%x, %y] step %next
        }
      }
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @gemm2 {kernel = @k::@gemm2, grid = array<i64: 4, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @gemm1 -> @gemm2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @gemm1
  sync.launch @gemm2 {pdl = true}
}

// CHECK-LABEL: gpu.func @gemm2(
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c2 = arith.constant 2 : index
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %ready_gemm1 = sync.probe %sems_gemm1[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> reads [affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: 0, 8, 1>] : memref<?xi32>
// CHECK-NEXT:    sync.wait %sems_gemm1[%x, %c0] {{.*}} unless %ready_gemm1 : memref<?xi32>
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y] step %c0 {sync.filled}
// CHECK-NEXT:    sync.wait %sems_gemm1[%x, %c1] {{.*}} unless %ready_gemm1 : memref<?xi32>
// CHECK-NEXT:    sync.load_point operand 0 [%x, %y] step %c1 {sync.filled}
// CHECK:           scf.if %more {
// CHECK-NEXT:        sync.wait %sems_gemm1[%x, %next] {{.*}} unless %ready_gemm1 : memref<?xi32>
// CHECK:         sync.stage @gemm2 {{.*}}sync.verified = "proved"

// NOPROBE-LABEL: gpu.func @gemm2(
// NOPROBE-NOT:     sync.probe
// NOPROBE:         sync.wait %sems_gemm1[%x, %c0] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> : memref<?xi32>
// NOPROBE:         sync.stage @gemm2 {{.*}}sync.verified = "proved"

// -----

// q · kᵀ reads two operands of one producer (the QKV GEMM's tiles), a new tile of each at each
// of its two k-steps: q's (x, kt) and k's (y, kt + 2); one probe of both, a part each. A
// persistent kernel takes its tiles in a loop: the probe stays in the loop, after the tile it
// probes for, and out of the k-loop.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @qkv(%a: memref<?xf16>, %out: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @scores(%q: memref<?xf16>, %k: memref<?xf16>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %x, %y = sync.tile : index, index
        scf.for %kt = %c0 to %c2 step %c1 {
          sync.load_point operand 0 [%x, %y] step %kt
          sync.load_point operand 1 [%x, %y] step %kt
        }
      }
      gpu.return
    }
  }
  sync.stage @qkv {kernel = @k::@qkv, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @scores {kernel = @k::@scores, grid = array<i64: 4, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @qkv -> @scores operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 2)
  sync.dependency @qkv -> @scores operand 1 tiles (d0, d1)[s0] -> (d1, s0 + 2) forall s0 in [0, 2)
  sync.launch @qkv
  sync.launch @scores {pdl = true}
}

// CHECK-LABEL: gpu.func @scores(
// CHECK:         scf.for %i = %c0 to %c2 step %c1 {
// CHECK-NEXT:      %x, %y = sync.tile : index, index
// CHECK-NEXT:      %ready_qkv = sync.probe %sems_qkv[%x, %y] {{.*}} reads [affine_map<(d0, d1)[s0] -> (d0, s0)>, affine_map<(d0, d1)[s0] -> (d1, (s0 + 2))>] over [array<i64: 0, 2, 1>, array<i64: 0, 2, 1>] : memref<?xi32>
// CHECK-NEXT:      scf.for %kt = %c0 to %c2 step %c1 {
// CHECK-NEXT:        sync.wait %sems_qkv[%x, %kt] {{.*}} unless %ready_qkv : memref<?xi32>
// CHECK-NEXT:        sync.load_point operand 0 [%x, %y] step %kt {sync.filled}
// CHECK:             sync.wait %sems_qkv[%y, %{{.*}}] {{.*}} unless %ready_qkv : memref<?xi32>
// CHECK-NEXT:        sync.load_point operand 1 [%x, %y] step %kt {sync.filled}
// CHECK:         sync.stage @scores {{.*}}sync.verified = "proved"

// -----

// A clipped dependency (a conv's halo rows d0 - 1 .. d0 + 1): the probe is clipped to the
// producer's grid, where the waits are guarded.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @conv1(%x1: memref<?xf16>, %h: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @conv2(%h: memref<?xf16>, %y: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c9 = arith.constant 9 : index
      scf.for %kt = %c0 to %c9 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      gpu.return
    }
  }
  sync.stage @conv1 {kernel = @k::@conv1, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 8, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0] -> (d0 + s0 floordiv 3 - 1, 0) forall s0 in [0, 9) clipped
  sync.launch @conv1
  sync.launch @conv2 {pdl = true}
}

// CHECK-LABEL: gpu.func @conv2(
// CHECK:         %ready_conv1 = sync.probe %sems_conv1[%r, %c] {{.*}} over [array<i64: 0, 9, 3>] clipped_to array<i64: 8, 1> : memref<?xi32>
// CHECK-NEXT:    scf.for %kt = %c0 to %c9 step %c1 {
// CHECK:             sync.wait %sems_conv1[{{.*}}] {{.*}} unless %ready_conv1 : memref<?xi32>
// CHECK:         sync.stage @conv2 {{.*}}sync.verified = "proved"

// -----

// Every wait at the first k-step (each step reads all five halo rows, so the rows' waits
// run back to back before the tile's first load), fewer than 16 of them (MIN_PROBE_AT_ONCE):
// no probe, the waits as they were.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @conv1(%x1: memref<?xf16>, %h: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      sync.store_point [%r, %c]
      gpu.return
    }
    gpu.func @conv2(%h: memref<?xf16>, %y: memref<?xf16>) kernel {
      %r, %c = sync.tile : index, index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c18 = arith.constant 18 : index
      scf.for %kt = %c0 to %c18 step %c1 {
        sync.load_point operand 0 [%r, %c] step %kt
      }
      gpu.return
    }
  }
  sync.stage @conv1 {kernel = @k::@conv1, grid = array<i64: 16, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @conv2 {kernel = @k::@conv2, grid = array<i64: 16, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @conv1 -> @conv2 operand 0 tiles (d0, d1)[s0, s1] -> (d0 + s1 - 2, 0) forall s0 in [0, 18), s1 in [0, 5) clipped
  sync.launch @conv1
  sync.launch @conv2 {pdl = true}
}

// CHECK-LABEL: gpu.func @conv2(
// CHECK-NOT:     sync.probe
// CHECK:         scf.for %kt = %c0 to %c18 step %c1 {
// CHECK:           sync.wait %sems_conv1[{{.*}}] epoch %epoch policy #sync.policy<{{.*}}> : memref<?xi32>
// CHECK:         sync.stage @conv2 {{.*}}sync.verified = "proved"

// -----

// A softmax block reads a whole row of 32 score tiles at once (no step): its 32 waits run
// back to back in one thread, so with 16 or more a probe loads them all at once.
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @scores(%a: memref<?xf16>, %s: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @softmax(%s: memref<?xf16>, %p: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.load_point operand 0 [%x, %y]
      gpu.return
    }
  }
  sync.stage @scores {kernel = @k::@scores, grid = array<i64: 32, 32>, block = array<i64: 256, 1, 1>, tile = array<i64: 128, 128>}
  sync.stage @softmax {kernel = @k::@softmax, grid = array<i64: 32, 1>, block = array<i64: 128, 1, 1>, tile = array<i64: 128, 4096>}
  sync.dependency @scores -> @softmax operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 32)
  sync.launch @scores
  sync.launch @softmax {pdl = true}
}

// CHECK-LABEL: gpu.func @softmax(
// CHECK-NEXT:    %x, %y = sync.tile : index, index
// CHECK-NEXT:    %ready_scores = sync.probe %sems_scores[%x, %y] {{.*}} over [array<i64: 0, 32, 1>] : memref<?xi32>
// CHECK:           sync.wait %sems_scores[%x, %s0] {{.*}} unless %ready_scores : memref<?xi32>
// CHECK:         sync.stage @softmax {{.*}}sync.verified = "proved"

// -----

// A consumer of one dimension (a row of GEMM1's tiles a block) probing a producer of two:
// the probe's tile is the consumer's, its map takes it to the producer's tiles (the policy's
// two coordinates).
builtin.module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @gemm1(%a: memref<?xf16>, %h: memref<?xf16>) kernel {
      %x, %y = sync.tile : index, index
      sync.store_point [%x, %y]
      gpu.return
    }
    gpu.func @rows(%h: memref<?xf16>, %y2: memref<?xf16>) kernel {
      %x = sync.tile : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      scf.for %kt = %c0 to %c8 step %c1 {
        sync.load_point operand 0 [%x] step %kt
      }
      gpu.return
    }
  }
  sync.stage @gemm1 {kernel = @k::@gemm1, grid = array<i64: 4, 8>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.stage @rows {kernel = @k::@rows, grid = array<i64: 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64>}
  sync.dependency @gemm1 -> @rows operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 8)
  sync.launch @gemm1
  sync.launch @rows {pdl = true}
}
// CHECK-LABEL: gpu.func @rows(
// CHECK:         %ready_gemm1 = sync.probe %sems_gemm1[%x] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> (d0 * 8 + d1), posts = 1> reads [affine_map<(d0)[s0] -> (d0, s0)>] over [array<i64: 0, 8, 1>] : memref<?xi32>
// CHECK:         sync.stage @rows {{.*}}sync.verified = "proved"
