"""Bad input, table-driven, through the three front doors: `tilesync.compile`, `tilesync-opt`
and `tilesync compile`. Each row gives the input, the exception (API) or exit status (CLIs)
and the whole one-line message with its location. Nothing reaches the user as a builtin, an
xDSL or an LLVM error, and nothing ends the process."""

from pathlib import Path

import pytest
from cli_runs import one_line, run_cli

import tilesync
from tilesync import CompileError, TilesyncError, VerifyError
from tilesync.tools import cli, opt

ROOT = Path(__file__).resolve().parents[2]
COPY = (ROOT / "examples" / "copy_chain.mlir").read_text()
MLP = (ROOT / "examples" / "gpt3_mlp_sync.mlir").read_text()


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# name -> program text
PROGRAMS = {
    "block0.mlir": _edit(COPY, "array<i32: 256, 1, 1>", "array<i32: 0, 1, 1>"),
    "blockneg.mlir": _edit(COPY, "array<i32: 256, 1, 1>", "array<i32: -1, 1, 1>"),
    "blockhuge.mlir": _edit(COPY, "array<i32: 256, 1, 1>", "array<i32: 65536, 65536, 1>"),
    "minneg.mlir": _edit(COPY, "kernel attributes {",
                         "kernel attributes {tilesync.min_blocks_per_sm = -1 : i32, "),
    "minhuge.mlir": _edit(COPY, "kernel attributes {",
                          "kernel attributes {tilesync.min_blocks_per_sm = 100000 : i32, "),
    "posts0.mlir": _edit(COPY, "posts = 1>", "posts = 0>"),
    "syntax.mlir": "builtin.module {\n  %x = arith.addi\n}\n",
    "kernelret.mlir": "builtin.module {\n  gpu.module @m {\n    gpu.func @k() -> i32 kernel {\n"
                      "      %c = arith.constant 1 : i32\n      gpu.return %c : i32\n    }\n"
                      "  }\n}\n",
    "noprogress.mlir": _edit(MLP, "  sync.wait_kernel @gemm1 {stream = 1 : i64}\n", ""),
    "copy_chain.mlir": COPY,
}

BLOCK = "convert-func-to-llvm: cannot lower 'gpu.func': 'gpu.known_block_size': "
MIN_BLOCKS = "convert-func-to-llvm: cannot lower 'gpu.func': 'tilesync.min_blocks_per_sm': "
NO_PROGRESS = ("sync-verify: no forward-progress guarantee for @gemm2 waiting on @gemm1: launch "
               "a sync.wait_kernel @gemm1 before @gemm2 on its stream, launch @gemm2 with pdl = "
               "true right after @gemm1 on its stream, or show that all stages are co-resident "
               "(coresident, or blocks_per_sm on every stage and sms=N)")

# Bad programs: (file, error class, location, message); the CLIs print "location: error: message".
PROGRAM_ROWS = [
    ("block0.mlir", CompileError, "8:5", BLOCK + "block dimension x must be in [1, 1024], got 0"),
    ("blockneg.mlir", CompileError, "8:5",
     BLOCK + "block dimension x must be in [1, 1024], got -1"),
    ("blockhuge.mlir", CompileError, "8:5",
     BLOCK + "block dimension x must be in [1, 1024], got 65536"),
    ("minneg.mlir", CompileError, "8:5", MIN_BLOCKS + "blocks per SM must be in [1, 32], got -1"),
    ("minhuge.mlir", CompileError, "8:5",
     MIN_BLOCKS + "blocks per SM must be in [1, 32], got 100000"),
    ("posts0.mlir", CompileError, "19:7", "policy posts must be positive, got 0"),
    ("syntax.mlir", CompileError, "3:1", "operand expected"),
    ("kernelret.mlir", CompileError, "3:5", "Expected void return type for kernel function"),
    ("noprogress.mlir", VerifyError, "115:3", NO_PROGRESS),
]

# Bad pipelines (`-p`): (spec, location or None, message).
PIPELINE_ROWS = [
    (",,", "<pipeline>:1:1", "bad pass pipeline: expected pass name here"),
    ("sync-select-policy{policy=}", "<pipeline>:1:27",
     "bad pass pipeline: option 'policy' has no value after '='"),
    ("sync-select-policy{policy=row", "<pipeline>:1:30",
     "bad pass pipeline: malformed pass arguments, expected either a space or `}` here"),
    ("convert-sync-to-nvvm{default_timeout_ns=-5}", None,
     "convert-sync-to-nvvm: option 'default_timeout_ns' must be a positive number of "
     "nanoseconds, got -5"),
    ("convert-tile-to-nvvm{default_timeout_ns=0}", None,
     "convert-tile-to-nvvm: option 'default_timeout_ns' must be a positive number of "
     "nanoseconds, got 0"),
    ("convert-sync-to-nvvm{backoff_ns=5000000}", None,
     "convert-sync-to-nvvm: option 'backoff_ns' must be in [0, 1000000] (nanosleep sleeps at "
     "most 1 ms), got 5000000"),
    ("sync-select-policy{stride=-3}", None,
     "sync-select-policy: option 'stride' applies only with policy=strided"),
    ("sync-select-policy{policy=strided stride=0}", None,
     "sync-select-policy: option 'stride' must be at least 2, got 0"),
    ("sync-select-policy{stride=abc}", None,
     "sync-select-policy: option 'stride' takes an integer (or no value), got 'abc'"),
    ("sync-select-policy{policy=diagonal}", None,
     "sync-select-policy: option 'policy' is one of tile, row, strided, auto, got 'diagonal'"),
    ("sync-select-policy{bogus=1}", None,
     "sync-select-policy: unknown option 'bogus' (its options are policy, stride, stage, sms)"),
    ("convert-sync-to-nvvm{debug=3}", None,
     "convert-sync-to-nvvm: option 'debug' takes true or false, got '3'"),
    ("sync-verify{sms=true}", None,  # as written, not as Python prints the bool ('True')
     "sync-verify: option 'sms' takes an integer, got 'true'"),
    ("sync-tile-order{order=spiral}", None, "sync-tile-order: option 'order' is one of "
     "row_major, column_major, strided, generated, ready, got 'spiral'"),
    ("sync-annotate-occupancy{arch=sm_75}", None,
     "sync-annotate-occupancy: option 'arch' is one of sm_80, sm_90, sm_90a, got 'sm_75'"),
    ("sync-verify{limit=0}", None, "sync-verify: option 'limit' must be positive, got 0"),
    # an integer (or 3e12, which the spec's lexer leaves as text) is a float option's number:
    # the value reaches the pass's own check
    ("dataflow-allot-ctas{dram_bytes_per_s=-1}", None,
     "dataflow-allot-ctas: bandwidth options must be positive"),
    ("dataflow-allot-ctas{l2_bytes_per_s=0}", None,
     "dataflow-allot-ctas: bandwidth options must be positive"),
    ("dataflow-allot-ctas{dram_bytes_per_s=fast}", None,
     "dataflow-allot-ctas: option 'dram_bytes_per_s' takes a number, got 'fast'"),
    ("sync-verify{steps=0}", None, "sync-verify: option 'steps' must be positive, got 0"),
    ("dataflow-form-pipeline{sms=0}", None,
     "dataflow-form-pipeline: option 'sms' must be positive, got 0"),
    ("dataflow-split-reductions{sms=0}", None,
     "dataflow-split-reductions: option 'sms' must be positive, got 0"),
    ("dataflow-insert-queues{l2_bytes=-2}", None,
     "dataflow-insert-queues: option 'l2_bytes' must be positive, got -2"),
    ("no-such-pass", None,
     "unknown pass 'no-such-pass'; `tilesync-opt --list-passes` lists tilesync's passes"),
    ("sync-verfy", None, "unknown pass 'sync-verfy'; did you mean 'sync-verify'?"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad")
    for name, text in PROGRAMS.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "bom.mlir").write_text("\ufeff" + COPY, encoding="utf-8")
    return folder


def run(main, argv: list[str]) -> tuple[int, str]:
    """A CLI's exit status and its stderr, run in this process."""
    status, _, err = run_cli(main, argv)
    return status, err


# --- the API ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name, kind, where, message", PROGRAM_ROWS)
def test_api_bad_program(files, name, kind, where, message):
    path = files / name
    with pytest.raises(TilesyncError) as info:
        tilesync.compile(path)
    assert type(info.value) is kind
    assert str(info.value.location) == f"{path}:{where}"
    assert info.value.message == message
    assert str(info.value) == f"{path}:{where}: {message}"  # one line, location first


def test_api_names_text_input_by_filename_or_input():
    bad = PROGRAMS["posts0.mlir"]
    with pytest.raises(CompileError, match=r"^<input>:19:7: policy posts"):
        tilesync.compile(bad)
    with pytest.raises(CompileError, match=r"^mine\.mlir:19:7: policy posts"):
        tilesync.compile(bad, filename="mine.mlir")


@pytest.mark.parametrize("spec, where, message", PIPELINE_ROWS)
def test_api_bad_pipeline(spec, where, message):
    with pytest.raises(CompileError) as info:
        tilesync.compile(COPY, pipeline=spec)
    assert type(info.value) is CompileError
    assert (str(info.value.location) if info.value.location else None) == where
    assert info.value.message == message


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"module_or_text": None}, "expected MLIR text, a path or a ModuleOp, got NoneType"),
        ({"module_or_text": 42}, "expected MLIR text, a path or a ModuleOp, got int"),
        ({"timeout_ns": "x"}, "timeout_ns must be a positive integer (nanoseconds), got 'x'"),
        ({"timeout_ns": -5}, "timeout_ns must be a positive integer (nanoseconds), got -5"),
        ({"target": "sm_75"}, "unknown target 'sm_75'; choose one of sm_80, sm_90, sm_90a"),
        ({"target": None}, "unknown target None; choose one of sm_80, sm_90, sm_90a"),
        ({"pipeline": 3}, "pipeline must be a `-p` spec or a list of pass names, got int"),
        ({"pipeline": "convert-sync-to-nvvm", "debug": True},
         "debug/timeout_ns apply to the default pipeline; with an explicit pipeline set "
         "convert-sync-to-nvvm{debug=true ...} yourself"),
        ({"module_or_text": Path("/no/such.mlir")},
         "cannot read /no/such.mlir: No such file or directory"),  # as the CLIs say it
    ],
)
def test_api_bad_argument(arguments, message):
    arguments = {"module_or_text": COPY, **arguments}
    with pytest.raises(CompileError) as info:
        tilesync.compile(**arguments)
    assert info.value.location is None and str(info.value) == message


def test_api_a_pipeline_that_stops_before_llvm_is_located(files):
    with pytest.raises(CompileError) as info:
        tilesync.compile(files / "copy_chain.mlir", pipeline="convert-sync-to-nvvm")
    assert str(info.value) == (
        f"{files / 'copy_chain.mlir'}:8:5: gpu.module @copy_kernels is not lowered to the llvm "
        "dialect (a 'gpu.func' remains): end the pipeline with tilesync-lower-to-llvm, or emit "
        "MLIR instead of PTX")


def test_errors_are_one_hierarchy():
    assert issubclass(VerifyError, CompileError) and issubclass(CompileError, TilesyncError)
    for name in ("TilesyncRuntimeError", "NoGPUError", "DeviceFaultError", "SpinTimeoutError"):
        assert issubclass(getattr(tilesync, name), TilesyncError)
    assert issubclass(tilesync.SpinTimeoutError, tilesync.DeviceFaultError)


def test_an_input_without_the_mlir_extension_is_read_as_mlir(tmp_path):
    for name in ("copy_chain", "copy_chain.txt"):
        path = tmp_path / name
        path.write_text(COPY, encoding="utf-8")
        status, err = run(opt.main, [str(path)])
        assert (status, err) == (0, "")


def test_a_byte_order_mark_is_accepted(files):
    assert tilesync.compile(files / "bom.mlir").kernels["consumer"].params == \
        tilesync.compile(COPY).kernels["consumer"].params


# --- the command-line tools -------------------------------------------------------------------


@pytest.mark.parametrize("name, kind, where, message", PROGRAM_ROWS)
@pytest.mark.parametrize("tool", ["tilesync-opt", "tilesync compile"])
def test_cli_bad_program(files, tool, name, kind, where, message):
    path = files / name
    if tool == "tilesync-opt":
        pipeline = "sync-generate-policies,sync-insert-post-wait,sync-verify," \
            "tilesync-lower-to-llvm" if name == "noprogress.mlir" else "tilesync-lower-to-llvm"
        status, err = run(opt.main, [str(path), "-p", pipeline, "-t", "ptx"])
    else:
        status, err = run(cli.main, ["compile", str(path)])
    assert status == 1
    assert one_line(err) == f"{path}:{where}: error: {message}"


@pytest.mark.parametrize("spec, where, message", PIPELINE_ROWS)
@pytest.mark.parametrize("tool", ["tilesync-opt", "tilesync compile"])
def test_cli_bad_pipeline(files, tool, spec, where, message):
    path = str(files / "copy_chain.mlir")
    if tool == "tilesync-opt":
        status, err = run(opt.main, [path, "-p", spec])
    else:
        status, err = run(cli.main, ["compile", path, "-p", spec])
    assert status == 1
    assert one_line(err) == f"{where or tool}: error: {message}"


@pytest.mark.parametrize(
    "tool, argv, expected",
    [
        ("tilesync-opt", ["-p", "tilesync-lower-to-llvm", "-t", "ptx{arch=}"],
         "<target>:1:10: error: bad target: option 'arch' has no value after '='"),
        ("tilesync-opt", ["-p", "tilesync-lower-to-llvm", "-t", "ptx{arch=sm_1}"],
         "tilesync-opt: error: ptx: option 'arch' is one of sm_80, sm_90, sm_90a, got 'sm_1'"),
        ("tilesync compile", ["-t", "ptx{arch=}"], "tilesync compile: error: unknown target "
         "'ptx{arch=}'; choose one of sm_80, sm_90, sm_90a"),
        ("tilesync compile", ["--emit", "mlir", "-t", "sm_1"], "tilesync compile: error: "
         "unknown target 'sm_1'; choose one of sm_80, sm_90, sm_90a"),
    ],
)
def test_cli_bad_target(files, tool, argv, expected):
    path = str(files / "copy_chain.mlir")
    main, argv = (opt.main, [path, *argv]) if tool == "tilesync-opt" else \
        (cli.main, ["compile", path, *argv])
    status, err = run(main, argv)
    assert status == 1 and one_line(err) == expected


def test_cli_missing_file():
    status, err = run(cli.main, ["compile", "/no/such.mlir"])
    assert status == 1
    assert one_line(err) == \
        "tilesync compile: error: cannot read /no/such.mlir: No such file or directory"


def test_cli_accepts_a_byte_order_mark(files):
    status, err = run(opt.main, [str(files / "bom.mlir"), "-p", "tilesync-lower-to-llvm",
                                 "-t", "ptx"])
    assert status == 0, err


# --- bad input the fuzzer found (python -m tilesync.tools.fuzz) -------------------------------
# Each row is a reproducer of one site the fuzzer reached with a traceback, a crash of the
# process or a hang, through `tilesync.compile` (the default pipeline: the cuSync passes where
# the program needs them, the lowering and LLVM) and `tilesync compile`.

GEMM_LOOP = "%ksteps = arith.constant 48 : index"
SEMI_AFFINE = ("semi-affine expression: a product needs a constant factor, and floordiv, ceildiv "
               "and mod a constant divisor")
NOT_NVPTX = ("is not an NVPTX address space (0 generic, 1 global, 3 shared, 4 constant, "
             "5 local)")

# name -> program text
FUZZ_PROGRAMS = {
    # the lexer backtracked 2^n steps on an unterminated string literal (hang)
    "quote.mlir": _edit(COPY, "gpu.func @producer(", 'gpu.func @producer(" '),
    # ZeroDivisionError / NotImplementedError evaluating a dependency or policy map
    "semiaffine.mlir": _edit(MLP, "-> (d0, s0) forall", "-> (d0 * d1, s0) forall"),
    "floordiv0.mlir": _edit(MLP, "-> (d0, s0) forall", "-> (d0 floordiv 0, s0) forall"),
    "mod0.mlir": _edit(COPY, "#sync.policy<TileSync (d0) -> (d0), posts = 1>",
                       "#sync.policy<Custom (d0) -> (d0 mod 0), posts = 1>"),
    # ValueError / OverflowError from forall bounds outside i64; a box too large to enumerate
    "bound.mlir": _edit(MLP, "forall s0 in [0, 48)", "forall s0 in [0, 18446744073709551616)"),
    "bigbox.mlir": _edit(MLP, "-> (d0, s0) forall s0 in [0, 48)",
                         "-> (d0, s0 mod 48) forall s0 in [0, 4294967296)"),
    # MemoryError / hang enumerating a grid of 2^31 tiles or more
    "gridx.mlir": _edit(MLP, "grid = array<i64: 8, 48>", "grid = array<i64: 4294967296, 48>"),
    "gridhuge.mlir": _edit(MLP, "grid = array<i64: 8, 48>", "grid = array<i64: 2147483647, 48>"),
    # verify's evaluator ran for minutes (65536 k-steps in each of 384 tiles)
    "ksteps.mlir": _edit(MLP, GEMM_LOOP, "%ksteps = arith.constant 65536 : index"),
    # ValueError in convert-sync-to-nvvm: an order table entry beyond i32
    "table.mlir": _edit(COPY, "%tile = sync.tile : index\n",
                        "%tile = sync.tile order #sync.order<table<4294967297, 0>> : index\n"),
    # xDSL's parser: KeyError, NotImplementedError; a value used outside its region or before
    # its definition was accepted and failed in LLVM
    "blocklabel.mlir": "func.func @f() {\n  cf.br ^bb1\n^bb1:\n  cf.br ^bb1\n^bb1:\n"
                       "  func.return\n}\n",
    "i69.mlir": _edit(COPY, "array<i32: 256, 1, 1>", "array<i69: 7>"),
    "nested.mlir": _edit(COPY, "%base = arith.muli %tile, %tile_elems : index\n      scf.for",
                         "%base = arith.muli %tile, %g : index\n      scf.for"),
    "before.mlir": _edit(COPY, "      %threads = arith.constant 256 : index\n"
                         "      %base = arith.muli %tile, %tile_elems : index",
                         "      %base = arith.muli %tile, %threads : index\n"
                         "      %threads = arith.constant 256 : index"),
    "emptyfunc.mlir": "gpu.module @m {\n  gpu.func @k() kernel {\n  }\n}\n",
    "twice.mlir": _edit(MLP, "  sync.dependency", "  sync.stage @gemm2 {kernel = @mlp::@gemm2, "
                        "grid = array<i64: 8, 16>, block = array<i64: 32, 32, 1>, tile = "
                        "array<i64: 32, 32, 32>}\n  sync.dependency"),
    # what the lowering met without a location, or LLVM refused
    "space.mlir": MLP.replace("memref<32x32xf32, 3>", "memref<32x32xf32, 31>"),
    "getglobal.mlir": _edit(MLP, "type = memref<32x32xf32, 3>, initial_value",
                            "type = memref<32x32xf16, 3>, initial_value"),
    "index.mlir": _edit(COPY, "%threads = arith.constant 256 : index",
                        "%threads = arith.constant 100000000000000000000 : index"),
    "queue.mlir": "func.func private @produce(!dataflow.queue<4 x tensor<64xf32>>)\n",
    "strided.mlir": _edit(COPY, "%tile = sync.tile : index\n",
                          "%tile = sync.tile order #sync.order<strided<2>> : index\n"),
    "nokernel.mlir": _edit(MLP, "kernel = @mlp::@gemm1,", "kernel = @elsewhere::@gemm1,"),
    "roles.mlir": _edit(COPY, "kernel attributes {gpu.known_block_size",
                        'kernel attributes {sync.args = ["sems@q"], gpu.known_block_size'),
    "toplevel.mlir": '%s, %e, %x = "test.op"() : () -> (memref<?xi32>, i32, index)\nsync.wait '
                     "%s[%x, %x] epoch %e policy #sync.policy<RowSync (d0, d1) -> (d0), posts = "
                     "8> : memref<?xi32>\n",
    "param.mlir": "gpu.module @m {\n  gpu.func @k(%p: memref<?xf32>, %n: i69) kernel {\n"
                  "    gpu.return\n  }\n}\n",
    "i0.mlir": "func.func @f(%a: i0) -> i0 {\n  func.return %a : i0\n}\n",
    "swizzle.mlir": "func.func @f(%s: memref<16x16xf16, 3>, %i: index) {\n  %a = tile.ldmatrix "
                    "%s[%i, %i] swizzle #tile.swizzle<3, 4294967296, 4294967296> : memref<16x16x"
                    "f16, 3> -> !tile.frag<a, f16, m16n8k16>\n  func.return\n}\n",
    # struct.error from xDSL packing a dense array integer beyond i64
    # OverflowError from xDSL packing a float attribute beyond f16; IndexError from xDSL's
    # gpu.func verifier on a function without a block
    "f16range.mlir": "builtin.module {\n  sync.stage @huge {kernel = @kernels::@gemm, grid = "
                     "array<i64: 8>, block = array<i64: 128>, tile = array<i64: 1>, shared_bytes "
                     "= 200000 : f16}\n}\n",
    "noblock.mlir": '"gpu.module"() <{sym_name = "k"}> ({\n  "gpu.func"() <{function_type = () '
                    '-> (), kernel}> ({\n  }) {sym_name = "present"} : () -> ()\n}) : () -> ()\n',
    "densearray.mlir": "func.func @f(%x: tensor<1x64x8x8xf16>, %w: tensor<64x32x3x3xf16>) -> "
                       "tensor<1x64x8x8xf16> {\n  %y = graph.conv2d %x, %w stride [1, 1] padding "
                       "[18446744073709551616, 1] : (tensor<1x64x8x8xf16>, tensor<64x32x3x3xf16>)"
                       " -> tensor<1x64x8x8xf16>\n  func.return %y : tensor<1x64x8x8xf16>\n}\n",
    # xDSL's cf.switch parser asserts that its flag is an integer (fuzz seed 13, input 573)
    "switchflag.mlir": "func.func @f(%flag: i32, %a: f32) -> f32 {\n  cf.switch %flag : memref<"
                       "?xi32>, [\n    default: ^d(%a : f32),\n    7: ^d(%a : f32)\n  ]\n^d("
                       "%x: f32):\n  func.return %x : f32\n}\n",
    # xDSL cannot pack cf.switch's case values of an i69 flag (fuzz seed 91, input 9076)
    "switchwide.mlir": "func.func @f(%flag: i69, %a: f32) -> f32 {\n  cf.switch %flag : i69, [\n"
                       "    default: ^d(%a : f32),\n    7: ^d(%a : f32)\n  ]\n^d(%x: f32):\n"
                       "  func.return %x : f32\n}\n",
}

FUZZ_ROWS = [
    ("quote.mlir", CompileError, "8:24", "End of file reached before closing string literal."),
    ("semiaffine.mlir", CompileError, "113:52", SEMI_AFFINE),
    ("floordiv0.mlir", CompileError, "113:3", "sync.dependency: map (d0, d1)[s0] -> (d0 floordiv "
     "0, s0): d0 floordiv 0 needs a positive constant divisor"),
    ("mod0.mlir", CompileError, "19:7",
     "policy map (d0) -> (d0 mod 0): d0 mod 0 needs a positive constant divisor"),
    ("bound.mlir", CompileError, "113:94", "forall bound 18446744073709551616 does not fit in i64"),
    ("bigbox.mlir", CompileError, "113:3", "sync.dependency: each consumer tile reads 4294967296 "
     "points of the forall box, more than 1000000"),
    ("gridx.mlir", CompileError, "110:3",
     "sync.stage: grid dimension x must be in [1, 2147483647], got 4294967296"),
    ("gridhuge.mlir", VerifyError, "110:3", "sync-verify: producer @gemm1 has 103079215056 tiles, "
     "more than the 1000000 whose semaphores are enumerated"),
    # its k-loop runs far past H's 1536 columns: refused for that before the step budget
    ("ksteps.mlir", VerifyError, "87:9", "sync-verify: consumer @gemm2: 'memref.load' may touch "
     "index [1536, 1567] of dimension 1 of operand 0, outside its shape [256, 1536]: past the "
     "end of a row that is another element of the buffer, which sync-verify cannot place in a "
     "tile (mask or guard the access to keep it inside)"),
    ("table.mlir", CompileError, "10:7",
     "tile order table entries are tile ids in [0, 2147483647], got 4294967297"),
    ("blocklabel.mlir", CompileError, "5:1", "re-declaration of block 'bb1'"),
    ("i69.mlir", CompileError, "9:104",
     "dense attributes hold integers of 1 to 64 bits"),
    ("nested.mlir", CompileError, "15:9", "%g is used outside this region, before this "
     "definition: a value defined in a region is visible only inside it"),
    ("before.mlir", CompileError, "12:7", "operand #1 of 'arith.muli' is used before its "
     "definition"),
    ("emptyfunc.mlir", CompileError, "2:3", "Operation gpu.func contains empty block in "
     "single-block region that expects at least a terminator"),
    ("twice.mlir", CompileError, "113:3", 'Redefinition of symbol "gemm2"'),
    ("space.mlir", CompileError, "22:5", "convert-memref-to-llvm: cannot lower 'memref.global': "
     f"memref<32x32xf32, 31 : i64>: memory space 31 : i64 {NOT_NVPTX}"),
    ("getglobal.mlir", CompileError, "35:7", "convert-memref-to-llvm: cannot lower "
     "'memref.get_global': the result type memref<32x32xf32, 3 : i64> is not the type "
     "memref<32x32xf16, 3 : i64> of global @a_tile"),
    ("index.mlir", CompileError, "12:7", "convert-arith-to-llvm: cannot lower 'arith.constant': "
     "index constant 100000000000000000000 does not fit in 64 bits"),
    ("queue.mlir", CompileError, "1:1", "convert-func-to-llvm: cannot lower 'func.func': LLVM "
     "function argument #0 has incompatible type '!dataflow.queue<4 x tensor<64xf32>>'"),
    ("strided.mlir", CompileError, "10:7", "convert-sync-to-nvvm: tile order 'strided' needs "
     "the grid of its stage (a sync.stage naming this kernel)"),
    ("nokernel.mlir", CompileError, "110:3",
     "sync.stage @gemm1: kernel @elsewhere::@gemm1 is not a gpu.func in this module"),
    ("roles.mlir", CompileError, "7:3", "sync.args of @producer: unknown parameter role "
     "'sems@q' (known kinds: epoch, sems, start_flag, wait_flag, wait_target, wait_blocks, "
     "epoch_counter, tile_counter, order_table, debug_record, queue)"),
    ("toplevel.mlir", CompileError, "2:1",
     "convert-sync-to-nvvm: 'sync.wait' must be inside a function"),
    ("param.mlir", CompileError, "2:3", "convert-func-to-llvm: cannot lower 'gpu.func': kernel "
     "parameter #1 has type i69; a kernel takes memrefs, index, i1, i8, i16, i32, i64, f16, "
     "bf16, f32, f64 or tensor maps"),
    ("i0.mlir", CompileError, "1:1", "convert-func-to-llvm: cannot lower 'func.func': i0: LLVM "
     "has no integers of 0 bits"),
    ("swizzle.mlir", CompileError, "2:3", "#tile.swizzle<3, 4294967296, 4294967296> needs B + M "
     "<= 31 and S <= 31 (offsets are 32-bit)"),
    ("f16range.mlir", CompileError, "2:3",
     "a number does not fit its type (float too large to pack with e format)"),
    ("noblock.mlir", CompileError, "2:3",
     "'gpu.func' @present has no body: a function needs an entry block"),
    ("densearray.mlir", CompileError, "2:3",
     "an integer does not fit its array's element type (argument out of range)"),
    ("switchflag.mlir", CompileError, "2:3", "cf.switch: the flag must be an integer or an index"),
    ("switchwide.mlir", CompileError, "2:3", "an array of integers wider than 64 bits cannot be "
                                             "stored (Format not implemented for i69)"),
]


@pytest.fixture(scope="module")
def fuzz_files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    for name, text in FUZZ_PROGRAMS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("name, kind, where, message", FUZZ_ROWS)
def test_api_fuzz_reproducer(fuzz_files, name, kind, where, message):
    path = fuzz_files / name
    with pytest.raises(TilesyncError) as info:
        tilesync.compile(path)
    assert type(info.value) is kind
    assert str(info.value) == f"{path}:{where}: {message}"
    cause = info.value.__cause__
    while cause is not None:  # raised on purpose all the way down, not translated from a bug
        assert not isinstance(cause, KeyError | ZeroDivisionError | NotImplementedError |
                              MemoryError | OverflowError | AssertionError), repr(cause)
        cause = cause.__cause__


@pytest.mark.parametrize("name, kind, where, message",
                         [r for r in FUZZ_ROWS if r[0] != "ksteps.mlir"])
def test_cli_fuzz_reproducer(fuzz_files, name, kind, where, message):
    path = fuzz_files / name
    status, err = run(cli.main, ["compile", str(path)])
    assert status == 1
    assert one_line(err) == f"{path}:{where}: error: {message}"


# --- the runtime (no GPU needed: the failing driver call and the debug record are faked) ------


def test_a_device_fault_is_a_device_fault_error():
    from cuda.bindings import driver

    from tilesync.runtime.errors import check

    with pytest.raises(tilesync.DeviceFaultError) as info:
        check((driver.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,), "cuCtxSynchronize")
    assert info.value.error_name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    with pytest.raises(tilesync.TilesyncRuntimeError) as info:
        check((driver.CUresult.CUDA_ERROR_INVALID_VALUE,), "cuMemAlloc")
    assert not isinstance(info.value, tilesync.DeviceFaultError)


def test_a_spin_timeout_names_kernel_and_block():
    from tilesync.contract import DEBUG_RECORD, EPOCH, KernelSignature, Role, kernel_tag
    from tilesync.runtime.program import StageProgram

    class Record:
        def read(self):  # claimed, kernel, param, index, expected, seen, block x, y, z
            return [1, kernel_tag("consumer"), 2, 5, 3, 1, 4, 0, 0]

    class Stream:
        def synchronize(self):
            raise tilesync.DeviceFaultError("trap", "CUDA_ERROR_LAUNCH_FAILED",
                                            "cuStreamSynchronize")

    program = StageProgram.__new__(StageProgram)  # no GPU: only what synchronize reads
    program.signatures = {"consumer": KernelSignature(
        "m", "consumer", ("ptr", "ptr", "ptr", "i32", "ptr"),
        sync_args=(Role.semaphores("producer"), EPOCH, DEBUG_RECORD))}
    program.stages, program.epoch, program.one_launches = {}, 1, {}
    program._debug_record, program._streams = Record(), {0: Stream()}
    with pytest.raises(tilesync.SpinTimeoutError) as info:
        program.synchronize()
    assert info.value.kernel == "consumer" and info.value.block == (4, 0, 0)
    assert isinstance(info.value, tilesync.DeviceFaultError)
    assert str(info.value) == (
        "spin-wait timed out in kernel consumer, block (4, 0, 0): semaphore sems:@producer "
        "(parameter 2)[5] expected >= 3, saw 1 (epoch 1) (CUDA_ERROR_LAUNCH_FAILED)")


# Found by a 7-minute campaign (`python -m tilesync.tools.fuzz --seconds 420 --seed 2026
# --workers 16`, 327,176 inputs): each reproducer, through the cuSync passes, ends in a located
# diagnostic within seconds instead of a MemoryError, an OverflowError, a ValueError in the
# cause chain or a 10 s hang.
LONG_RUN_FINDS = [
    # its post's own map, not the RowSync of 2 semaphores generated for @p
    ("seed2026-7158.mlir", VerifyError, "5:7", "sync-verify: producer @p, tile (0, 2) posts "
     "semaphore 2, but its buffer has 2 (its num_semaphores, else its policy's count, else one "
     "a tile): the post writes past its end"),
    ("seed2026-33557.mlir", CompileError, "3:3", "sync.args of @p: unknown parameter role "
     "'sems@p' (known kinds: epoch, sems, start_flag, wait_flag, wait_target, wait_blocks, "
     "epoch_counter, tile_counter, order_table, debug_record, queue)"),
    ("seed2026-68504.mlir", VerifyError, "18:9", "sync-verify: consumer @g2: 'memref.load' reads "
     "operand 0, but @g1's tiles cover 9444732965739290426368 elements, more than the "
     "1099511627776 whose indices are bounded"),
    # every tile's read at iteration 512 lands in the next row of producer tiles (it ran out of
    # steps before sync-verify stopped a batch whose tiles had all failed)
    ("seed2026-22306.mlir", VerifyError, "22:9", "sync-verify: consumer tile (0, 0) of @g2: "
     "'memref.load' reads operand 0 at [32768, 32831], where producer tile (1, 0) of @g1 wrote "
     "[64, 128) x [0, 64) (a tile its sync.dependency does not declare; semaphore 1), but no "
     "wait on that semaphore precedes it"),
]


@pytest.mark.parametrize("name, kind, where, message", LONG_RUN_FINDS)
def test_long_fuzz_run_finds_end_in_located_diagnostics(name, kind, where, message):
    from tilesync import api

    path = Path(__file__).parent / "data" / "fuzz" / name
    module = api.parse(path.read_text(), name=str(path))
    with pytest.raises(TilesyncError) as info:
        api.lower(module, list(api.SYNC_PASSES))
    assert type(info.value) is kind
    assert str(info.value) == f"{path}:{where}: {message}"
    cause = info.value.__cause__
    while cause is not None:  # raised on purpose all the way down, not translated from a bug
        assert not isinstance(cause, ValueError | KeyError | IndexError | MemoryError |
                              OverflowError | AssertionError), repr(cause)
        cause = cause.__cause__


COMPILE_FINDS = [
    # a symbol-table error of the module (a function defined twice) hid the function whose
    # empty block xDSL reports (the long fuzz run)
    ("seed2026-87145.mlir", "9:3", "Operation llvm.func contains empty block in single-block "
     "region that expects at least a terminator"),
    # the parser adds an empty scf.yield to the region; the missing result reached
    # convert-cf-to-llvm as an internal error (seed 1130)
    ("seed1130-8081.mlir", "12:9", "'scf.if' then region yields (), the op's results are "
     "(index)"),
    # a duplicated block label split an scf.for body in two, and the dataflow verifier's walk
    # of a drawn ticket asked for the body's one block (seed 1132)
    ("seed1132-6347.mlir", "58:7", "Operation dataflow.release_empty terminates block in "
     "multi-block region but is not a terminator"),
    # a grid of 2^31 - 1 x 48 tiles on a kernel whose sync.tile another stage gave a strided
    # order: its table of 103 billion tile ids was built until memory ran out (seed 3001); the
    # kernel's own orders are refused first now, without enumerating a grid (its sync.tile
    # ops name several: a block would store one tile and post another)
    ("seed3001-14968.mlir", "6:7", "convert-sync-to-nvvm: the sync.tile ops of "
     "@kernels::@gemm do not name one order (#sync.order<row_major> and none): a block takes "
     "one tile, so every sync.tile of a kernel that orders its tiles names that order"),
    # a gpu.func without a body lost its name too: the check for the body asked for the name
    # (KeyError 'sym_name', seed 1129)
    ("seed1129-64511.mlir", "15:5", "'gpu.func' without a name has no body: a function needs "
     "an entry block"),
    # an empty last block of a function of two (xDSL checks a lone block only): its lowering
    # reached LLVM as IR that LLVM refused, "invalid LLVM IR ... expected instruction opcode"
    # with no place in the program (seed 20261206)
    ("seed20261206-18757.mlir", "17:7", "block 2 of the 2 in 'gpu.func' @dst is empty: every "
     "block of a region of several blocks ends in a terminator"),
]


@pytest.mark.parametrize("name, where, message", COMPILE_FINDS)
def test_fuzz_finds_end_in_located_compile_errors(name, where, message):
    path = Path(__file__).parent / "data" / "fuzz" / name
    with pytest.raises(CompileError) as info:
        tilesync.compile(path)
    assert str(info.value) == f"{path}:{where}: {message}"


DATAFLOW_FINDS = [
    # a reduction's output element type `none`: its split stages kept it, and sizing the queue
    # of their partials raised a ValueError from the queue type (seed 20271207)
    ("seed20271207-14551.mlir", "14:3", "dataflow-insert-queues: 'dataflow.element': queue "
     "payload element type none has no known size in memory"),
]


@pytest.mark.parametrize("name, where, message", DATAFLOW_FINDS)
def test_fuzz_finds_in_dataflow_passes_end_in_located_compile_errors(name, where, message):
    from tilesync import api
    from tilesync.tools.fuzz import FORM_PIPELINE_PASSES

    path = Path(__file__).parent / "data" / "fuzz" / name
    module = api.parse(path.read_text(encoding="utf-8"), name=str(path))
    with pytest.raises(CompileError) as info:
        api.lower(module, list(FORM_PIPELINE_PASSES))
    assert str(info.value) == f"{path}:{where}: {message}"


def test_a_long_loop_of_distinct_waits_runs_out_of_steps_not_for_minutes():
    """A consumer waiting on a new producer tile in each of 65,536 iterations (seed 20261207):
    sync-verify compared each read with every wait before it, rebuilding those each time, and
    ran for minutes; comparing now spends steps, so it ends in the steps' refusal. The fuzzer's
    input itself reads a tile ahead of its first wait, which now ends its proof there."""
    from tilesync import api

    def refusal(path: Path) -> str:
        module = api.parse(path.read_text(encoding="utf-8"), name=str(path))
        with pytest.raises(VerifyError) as info:
            api.lower(module, list(api.SYNC_PASSES))
        return str(info.value)

    fuzz = Path(__file__).parent / "data" / "fuzz"
    path = fuzz / "seed20261207-48595-reads-what-it-waited-for.mlir"
    assert refusal(path) == (
        f"{path}:29:9: sync-verify: the proof takes more than 150000 steps of abstract "
        "execution (sync-verify{steps=N} allows more; limit=N checks only the boundary tiles "
        "of grids above N tiles)")
    path = fuzz / "seed20261207-48595.mlir"
    assert refusal(path) == (
        f"{path}:31:9: sync-verify: consumer tile (0, 0) of @c: 'tile.tma_load' reads operand 0 "
        "at [0, 127], [64, 127], where producer tile (0, 1) of @p wrote [0, 128) x [64, 128) "
        "(semaphore 1), but no wait on that semaphore precedes it")


WGMMA = ("builtin.module {\n  gpu.module @m {\n    gpu.func @k() kernel attributes "
         "{gpu.known_block_size = array<i32: 128, 1, 1>} {\n      tile.wgmma_fence\n"
         "      gpu.return\n    }\n  }\n}\n")
WGMMA_MESSAGE = ("target: tile.wgmma_fence needs target sm_90a (wgmma and setmaxnreg exist only "
                 "there), not sm_90; compile with target='sm_90a' (tilesync compile -t sm_90a)")


def test_a_program_the_target_cannot_run_is_refused_at_its_op(tmp_path):
    """wgmma on sm_90: one located line before any lowering, not ptxas's page of 'not
    supported on .target' lines; sm_90a compiles it."""
    with pytest.raises(CompileError) as err:
        tilesync.compile(WGMMA, filename="wgmma.mlir")
    assert str(err.value) == f"wgmma.mlir:4:7: {WGMMA_MESSAGE}"
    assert "wgmma.fence" in tilesync.compile(WGMMA, target="sm_90a").ptx
    path = tmp_path / "wgmma.mlir"
    path.write_text(WGMMA, encoding="utf-8")
    status, text = run(cli.main, ["compile", str(path)])
    assert status == 1 and one_line(text) == f"{path}:4:7: error: {WGMMA_MESSAGE}"
