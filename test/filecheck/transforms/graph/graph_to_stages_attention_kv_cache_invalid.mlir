// RUN: tilesync-opt %s -p 'graph-to-stages{attention=fused}' --split-input-file --verify-diagnostics 2>&1 | filecheck %s

// A causal mask after a KV cache: graph.softmax's is torch's is_causal (top left), under which
// the new token would see one cached key; refused at the softmax.
// CHECK: graph_to_stages_attention_kv_cache_invalid.mlir:19:3: graph-to-stages: a causal mask after a KV cache: graph.softmax's is torch's is_causal, aligned top left, under which a new token would not see the cache (one new token needs no mask)
// CHECK-NOT: Traceback
func.func @causal(%x: tensor<1x256xf16>, %wqkv: tensor<768x256xf16>, %wo: tensor<256x256xf16>, %kc: tensor<2x128x128xf16>, %vc: tensor<2x128x128xf16>) -> tensor<1x256xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<1x256xf16>, tensor<768x256xf16>) -> tensor<1x768xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<1x768xf16>) -> (tensor<1x256xf16>, tensor<1x256xf16>, tensor<1x256xf16>)
  %q3 = graph.reshape %q : (tensor<1x256xf16>) -> tensor<1x2x128xf16>
  %qh = graph.transpose %q3 perm [1, 0, 2] : (tensor<1x2x128xf16>) -> tensor<2x1x128xf16>
  %k3 = graph.reshape %k : (tensor<1x256xf16>) -> tensor<1x2x128xf16>
  %kh = graph.transpose %k3 perm [1, 0, 2] : (tensor<1x2x128xf16>) -> tensor<2x1x128xf16>
  %v3 = graph.reshape %v : (tensor<1x256xf16>) -> tensor<1x2x128xf16>
  %vh = graph.transpose %v3 perm [1, 0, 2] : (tensor<1x2x128xf16>) -> tensor<2x1x128xf16>
  %ka = graph.concat %kc, %kh dim -2 : (tensor<2x128x128xf16>, tensor<2x1x128xf16>) -> tensor<2x129x128xf16>
  %va = graph.concat %vc, %vh dim -2 : (tensor<2x128x128xf16>, tensor<2x1x128xf16>) -> tensor<2x129x128xf16>
  %s = graph.linear %qh, %ka : (tensor<2x1x128xf16>, tensor<2x129x128xf16>) -> tensor<2x1x129xf16>
  %p = graph.softmax %s dim -1 causal : tensor<2x1x129xf16>
  %o = graph.matmul %p, %va : (tensor<2x1x129xf16>, tensor<2x129x128xf16>) -> tensor<2x1x128xf16>
  %ot = graph.transpose %o perm [1, 0, 2] : (tensor<2x1x128xf16>) -> tensor<1x2x128xf16>
  %om = graph.reshape %ot : (tensor<1x2x128xf16>) -> tensor<1x256xf16>
  %y = graph.linear %om, %wo : (tensor<1x256xf16>, tensor<256x256xf16>) -> tensor<1x256xf16>
  func.return %y : tensor<1x256xf16>
}

// -----

// The cache after the new tokens: the kernel reads the cached keys first.
// CHECK: graph_to_stages_attention_kv_cache_invalid.mlir:{{[0-9]+}}:3: graph-to-stages: k after a KV cache is cat([k_cache, k], dim=-2): the cached tokens (an argument of the piece), then the new ones
func.func @order(%x: tensor<1x128xf16>, %wqkv: tensor<384x128xf16>, %wo: tensor<128x128xf16>, %kc: tensor<128x128xf16>, %vc: tensor<128x128xf16>) -> tensor<1x128xf16> {
  %qkv = graph.linear %x, %wqkv : (tensor<1x128xf16>, tensor<384x128xf16>) -> tensor<1x384xf16>
  %q, %k, %v = graph.split %qkv dim -1 : (tensor<1x384xf16>) -> (tensor<1x128xf16>, tensor<1x128xf16>, tensor<1x128xf16>)
  %ka = graph.concat %k, %kc dim -2 : (tensor<1x128xf16>, tensor<128x128xf16>) -> tensor<129x128xf16>
  %va = graph.concat %vc, %v dim -2 : (tensor<128x128xf16>, tensor<1x128xf16>) -> tensor<129x128xf16>
  %s = graph.linear %q, %ka : (tensor<1x128xf16>, tensor<129x128xf16>) -> tensor<1x129xf16>
  %p = graph.softmax %s dim -1 : tensor<1x129xf16>
  %o = graph.matmul %p, %va : (tensor<1x129xf16>, tensor<129x128xf16>) -> tensor<1x128xf16>
  %y = graph.linear %o, %wo : (tensor<1x128xf16>, tensor<128x128xf16>) -> tensor<1x128xf16>
  func.return %y : tensor<1x128xf16>
}
