// RUN: tilesync-opt %s --split-input-file --parsing-diagnostics --verify-diagnostics | filecheck %s

func.func @shuffle_kind(%x: f32) {
  %s = tile.shuffle xor %x, 1 : f32
  func.return
}
// CHECK: Expected `bfly`, `down`, `up`, or `idx`

// -----

func.func @shuffle_type(%x: i64) {
  %s = tile.shuffle bfly %x, 1 : i64
  func.return
}
// CHECK: 'tile.shuffle' moves f32 or i32, got i64
