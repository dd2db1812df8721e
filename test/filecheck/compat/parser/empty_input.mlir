// RUN: tilesync-opt %s -p sync-verify | filecheck %s

// Nothing but comments: an empty module, as MLIR reads it (xDSL's parser refused it with
// "Could not parse entire input!").
// CHECK:      builtin.module {
// CHECK-NEXT: }
