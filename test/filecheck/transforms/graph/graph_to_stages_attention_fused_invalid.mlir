// RUN: not tilesync-opt %s -p 'graph-to-stages{attention=fused}' 2>&1 | filecheck %s

// One head of 256 columns: the fused kernel holds a head's O in registers, 64 or 128 columns.
// The diagnostic points at the output linear, the pattern's anchor.
// CHECK: graph_to_stages_attention_fused_invalid.mlir:{{[0-9]+}}:3: error: graph-to-stages: the fused attention kernel takes heads of 64 or 128 columns, got 256
// CHECK-NOT: Traceback
func.func @attention(%x: tensor<128x256xf16>, %wqkv: tensor<768x256xf16>, %bqkv: tensor<768xf16>, %wo: tensor<256x256xf16>, %bo: tensor<256xf16>) -> tensor<128x256xf16> {
  %qkv = graph.linear %x, %wqkv, %bqkv : (tensor<128x256xf16>, tensor<768x256xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<128x768xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>)
  %s = graph.linear %q, %k : (tensor<128x256xf16>, tensor<128x256xf16>) -> tensor<128x128xf16>
  %p = graph.softmax %s dim -1 : tensor<128x128xf16>
  %o = graph.matmul %p, %v : (tensor<128x128xf16>, tensor<128x256xf16>) -> tensor<128x256xf16>
  %y = graph.linear %o, %wo, %bo : (tensor<128x256xf16>, tensor<256x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  func.return %y : tensor<128x256xf16>
}
