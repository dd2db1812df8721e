// The worked examples, from hooks to PTX through the whole pipeline, proved on the way.
// RUN: tilesync-opt %S/../../../../examples/gpt3_mlp_sync.mlir -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify | filecheck %s --check-prefix=MLP
// RUN: tilesync-opt %S/../../../../examples/gpt3_mlp_sync.mlir -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify,tilesync-lower-to-llvm -t ptx | filecheck %s --check-prefix=PTX
// RUN: tilesync-opt %S/../../../../examples/three_stage_chain.mlir -p sync-generate-policies,sync-insert-post-wait,sync-verify | filecheck %s --check-prefix=CHAIN
// RUN: tilesync-opt %S/../../../../examples/three_stage_chain.mlir -p sync-generate-policies,sync-insert-post-wait,sync-verify,tilesync-lower-to-llvm -t ptx | filecheck %s --check-prefix=PTX3
// RUN: tilesync-opt %S/../../../../examples/two_operands.mlir -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify | filecheck %s --check-prefix=TWO
// RUN: tilesync-opt %S/../../../../examples/two_operands.mlir -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify,tilesync-lower-to-llvm -t ptx | filecheck %s --check-prefix=PTX3

// MLP:       gpu.func @gemm1({{.*}}, %sems_gemm1: memref<?xi32>, %epoch: i32, %{{.*}}: memref<?xi32>) kernel attributes {{{.*}}sync.args = ["sems:@gemm1", "epoch", "start_flag"]}
// MLP:         sync.post %sems_gemm1[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>
// MLP:       gpu.func @gemm2({{.*}}, %sems_gemm1: memref<?xi32>, %epoch: i32) kernel attributes {{{.*}}sync.args = ["sems:@gemm1", "epoch"]}
// MLP:         scf.for %kt
// MLP-NEXT:      %k0 = arith.muli %kt, %c32 : index
// MLP-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// MLP-NEXT:      %[[FIRST:.*]] = arith.cmpi slt, %kt, %[[ONE]] : index
// MLP-NEXT:      scf.if %[[FIRST]] {
// MLP-NEXT:        sync.wait %sems_gemm1[%x, %kt] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>
// MLP-NEXT:      }
// MLP-NEXT:      sync.load_point operand 0 [%x, %y] step %kt {sync.filled}
// MLP-NEXT:      %ka = arith.addi %k0, %tx : index
// MLP-NOT:       sync.wait %sems
// MLP:       sync.stage @gemm1 {num_semaphores = 8 : i64, sync.verified = "proved", {{.*}}policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}
// MLP-NEXT:  sync.stage @gemm2 {sync.progress = "@gemm1: wait-kernel", sync.verified = "proved",

// PTX-LABEL: .visible .entry gemm1(
// PTX:       fence.acq_rel.gpu;
// PTX:       red.relaxed.gpu.global.add.u32
// PTX-LABEL: .visible .entry gemm2(
// PTX:       ld.acquire.gpu.global.u32
// PTX-NOT:   ld.global.nc

// CHAIN:     sync.wait %sems_gemm1[%x, %kt] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>
// CHAIN:     sync.post %sems_gemm2[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>
// CHAIN:     sync.wait %sems_gemm2[%x, %kt] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>
// CHAIN:     sync.stage @gemm2 {num_semaphores = 4 : i64, sync.progress = "@gemm1: programmatic dependent launch", sync.verified = "proved",
// CHAIN-NEXT: sync.stage @gemm3 {sync.progress = "@gemm2: programmatic dependent launch", sync.verified = "proved",

// TWO:       gpu.func @pv({{.*}}, %sems_p_proj: memref<?xi32>, %sems_v_proj: memref<?xi32>, %epoch: i32) kernel attributes {{{.*}}sync.args = ["sems:@p_proj", "sems:@v_proj", "epoch"]}
// Each operand's semaphore (the row's, the column's) is the same at every k-step: waited at 0.
// TWO:         arith.cmpi slt, %kt
// TWO:         sync.wait %sems_p_proj[%x, %kt] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 8>
// TWO-NEXT:    }
// TWO-NEXT:    sync.load_point operand 0 [%x, %y] step %kt {sync.filled}
// TWO:         arith.cmpi slt, %kt
// TWO:         sync.wait %sems_v_proj[%kt, %y] epoch %epoch policy #sync.policy<Custom (d0, d1) -> (d1), posts = 8>
// TWO-NEXT:    }
// TWO-NEXT:    sync.load_point operand 1 [%x, %y] step %kt {sync.filled}
// TWO:       sync.stage @pv {sync.progress = "@p_proj: wait-kernel; @v_proj: wait-kernel", sync.verified = "proved",

// PTX3-COUNT-3: .visible .entry
// PTX3-NOT:     sync.
