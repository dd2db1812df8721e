// RUN: tilesync-opt %s -p 'sync-annotate-occupancy,sync-drop-tile-order' --split-input-file | filecheck %s
// RUN: tilesync-opt %s -p 'sync-annotate-occupancy,sync-drop-tile-order{strict=true}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=STRICT

// Legal: 1024-thread blocks, 2 per SM on 132 SMs; 237 + 237 blocks = 1.8 waves, at most two:
// every consumer tile is resident from the second wave on, so its order cannot matter.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 3, 79>, block = array<i64: 1024>, tile = array<i64: 1, 1>, order = #sync.order<row_major>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 3, 79>, block = array<i64: 1024>, tile = array<i64: 1, 1>, order = #sync.order<column_major>}
  sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 3)
}
// CHECK:      sync.stage @p {{.*}}order = #sync.order<row_major>}
// CHECK-NEXT: sync.stage @c {{.*}}order = #sync.order<row_major>}
// STRICT:     sync.stage @c {{.*}}order = #sync.order<row_major>}

// -----

// Illegal: 317 + 317 blocks = 2.4 waves; the consumer keeps its table order.
builtin.module {
  sync.stage @p {kernel = @k::@f, grid = array<i64: 317>, block = array<i64: 1024>, tile = array<i64: 1>, order = #sync.order<strided<2>>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 317>, block = array<i64: 1024>, tile = array<i64: 1>, order = #sync.order<column_major>}
  sync.dependency @p -> @c operand 0 tiles (d0) -> (d0)
}
// CHECK:      sync.stage @p {{.*}}order = #sync.order<strided<2>>}
// CHECK-NEXT: sync.stage @c {{.*}}order = #sync.order<column_major>}
// STRICT: sync-drop-tile-order: cannot drop the column_major order of stage @c: @c, @p: 1.201 + 1.201 = 2.402 waves, more than 2

// -----

// A chain: @b alone with its producer is 0.5 + 0.9 waves, but @c's order was derived from
// when @b's tiles finish, so @c counts too: 0.9 + 0.5 + 0.9 = 2.3 > 2 and @b keeps its
// order. @c with its producer @b is 1.8 waves: its order goes.
builtin.module {
  sync.stage @a {kernel = @k::@f, grid = array<i64: 132>, block = array<i64: 1024>, tile = array<i64: 1>}
  sync.stage @b {kernel = @k::@f, grid = array<i64: 237>, block = array<i64: 1024>, tile = array<i64: 1>, order = #sync.order<table<1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236>>}
  sync.stage @c {kernel = @k::@f, grid = array<i64: 237>, block = array<i64: 1024>, tile = array<i64: 1>, order = #sync.order<column_major>}
  sync.dependency @a -> @b operand 0 tiles (d0) -> (d0 floordiv 2)
  sync.dependency @b -> @c operand 0 tiles (d0) -> (d0)
}
// CHECK:      sync.stage @b {{.*}}order = #sync.order<table<1, 0, 2,
// CHECK-NEXT: sync.stage @c {{.*}}order = #sync.order<row_major>}
// STRICT: sync-drop-tile-order: cannot drop the table order of stage @b: @b, @a, @c: 0.898 + 0.5 + 0.898 = 2.295 waves, more than 2
