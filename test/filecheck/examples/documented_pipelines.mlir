// Every example's documented tilesync-opt command (in its header) runs as written: sync-verify
// proves it and the PTX comes out.
// RUN: tilesync-opt %S/../../../examples/gpt3_mlp_sync.mlir -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify,tilesync-lower-to-llvm -t ptx | filecheck %s --check-prefix=MLP
// RUN: tilesync-opt %S/../../../examples/two_operands.mlir -p sync-generate-policies,sync-insert-post-wait,sync-insert-wait-kernel,sync-verify,tilesync-lower-to-llvm -t ptx | filecheck %s --check-prefix=TWO
// RUN: tilesync-opt %S/../../../examples/three_stage_chain.mlir -p sync-generate-policies,sync-insert-post-wait,sync-verify,tilesync-lower-to-llvm -t ptx | filecheck %s --check-prefix=CHAIN

// MLP-LABEL: .visible .entry gemm1(
// MLP:       red.relaxed.gpu.global.add.u32
// MLP-LABEL: .visible .entry gemm2(
// MLP:       ld.acquire.gpu.global.u32

// TWO-LABEL: .visible .entry p_proj(
// TWO-LABEL: .visible .entry pv(
// TWO:       ld.acquire.gpu.global.u32
// TWO:       ld.acquire.gpu.global.u32

// CHAIN-LABEL: .visible .entry gemm2(
// CHAIN:       ld.acquire.gpu.global.u32
// CHAIN:       red.relaxed.gpu.global.add.u32
