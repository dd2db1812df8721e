"""Python API: `tilesync.compile(module_or_text, pipeline=..., target="sm_90")`.

Reads as the list of compilation stages: parse → verify → record the host plan and kernel
signatures → lower (one named pass at a time, IR kept after each) → translate each gpu.module
to LLVM IR → PTX (→ validated by nvJitLink on request).

Every error these functions raise is a `tilesync.TilesyncError`: `CompileError` (with the
source location, "file:line:col: message") for bad input, a bad pipeline or option, IR that
does not verify or a pass that refuses it, and its subclass `VerifyError` when sync-verify
cannot prove the synchronization. `compile_error` translates what xDSL, the passes or LLVM
raise; nothing else escapes.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from xdsl.context import Context
from xdsl.dialects import func, gpu, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from tilesync.compat.fast_passes import OpRefusal
from tilesync.compat.verification import BlockStructureError
from tilesync.compat.verification import verify as verify_ir
from tilesync.contract import (
    ARCHITECTURES,
    DYNAMIC_SHARED_BYTES_ATTR,
    FILLED_ATTR,
    ORDER_TABLE_ATTR,
    PARAM_KINDS,
    PERSISTENT_KERNEL_ATTR,
    REGISTERS_ATTR,
    SHARED_BYTES_ATTR,
    TARGETS,
    TENSOR_MAP,
    UNBOUND_ATTR,
    VERIFIED_ATTR,
    CompiledProgram,
    CompileError,
    KernelSignature,
    SourceLocation,
    TilesyncError,
    architecture,
)
from tilesync.dialects import graph, sync, tile
from tilesync.dialects.kernel_args import sync_roles
from tilesync.dialects.locations import (
    LocatingParser,
    OpDiagnostic,
    diagnostic,
    failing_op,
    location_of,
    parse_error_location,
    parse_error_message,
)
from tilesync.lowering.pipeline import KERNEL_TO_LLVM, SPIN_LOWERINGS, build_pipeline
from tilesync.lowering.type_conversion import kernel_param_kind

__all__ = ["CompileError", "CompiledProgram", "KernelSignature", "annotate_resources",
           "compile", "compile_error", "decode_source", "default_pipeline",
           "default_pipeline_for", "gc_paused", "gpu_modules", "kernel_signatures", "lower",
           "make_context", "parse", "sync_passes_for", "to_stage_program"]


def make_context() -> Context:
    from tilesync.dialects import all_dialects_with_xdsl

    ctx = Context()
    for name, factory in all_dialects_with_xdsl().items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str, ctx: Context | None = None, name: str = "<input>") -> ModuleOp:
    """Parse and verify MLIR text; every op records its location in `name`."""
    if not isinstance(text, str | bytes):
        raise CompileError(f"expected MLIR text, got {type(text).__name__}")
    if isinstance(text, bytes):
        text = decode_source(text, name)
    ctx = ctx or make_context()
    try:
        module = LocatingParser(ctx, text, name).parse_module()
    except Exception as err:
        raise compile_error(err) from err
    verify_module(module)
    return module


def decode_source(data: bytes, name: str) -> str:
    """`data` as UTF-8 text; CompileError at the first byte that is not (random bytes are not
    a program, and the user is told where, not given a UnicodeDecodeError)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise CompileError(f"not UTF-8 text: byte 0x{data[err.start]:02x} cannot start or "
                           "continue a character (an MLIR program is UTF-8 text)",
                           SourceLocation(name, line, column)) from None


def verify_module(module: ModuleOp, after_pass: str | None = None) -> None:
    """Verify `module`; CompileError at the op that does not verify (naming the pass that
    broke it, after a pass)."""
    try:
        verify_ir(module)
    except Exception as err:
        raise compile_error(err, module, after_pass, verifying=True) from err


def compile_error(err: BaseException, module: ModuleOp | None = None,
                  during: str | None = None, verifying: bool = False) -> TilesyncError:
    """What `err`, raised by xDSL, a pass or LLVM while compiling `module`, means for the user,
    as a TilesyncError with one line and its location (`during`: the pass that ran)."""
    if isinstance(err, TilesyncError):
        return err
    if isinstance(err, ParseError):
        return CompileError(parse_error_message(err), parse_error_location(err))
    if isinstance(err, OpDiagnostic):
        return err.kind(err.message, err.location)
    if isinstance(err, OpRefusal):
        return CompileError(err.message, location_of(err.op))
    if isinstance(err, FileNotFoundError | IsADirectoryError | NotADirectoryError
                  | PermissionError):
        return CompileError(f"{err.filename}: {err.strerror}")
    from tilesync.lowering.llvm_to_llvmlite import TranslationError

    if isinstance(err, TranslationError):
        return CompileError(f"{' '.join(str(err).split())} (translating to LLVM IR takes a "
                            f"program lowered to the llvm dialect: -p tilesync-lower-to-llvm)")
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    text = " ".join(lines) or type(err).__name__
    prefix = f"IR after {during} does not verify: " if verifying and during else ""
    if isinstance(err, VerifyException | DiagnosticException) or verifying:
        op = err.op if isinstance(err, BlockStructureError) else \
            failing_op(module, err) if module is not None and verifying else None
        if not isinstance(err, VerifyException | DiagnosticException | ValueError):
            text = f"{type(err).__name__}: {text}"  # a verifier that failed: said as such
        return CompileError(prefix + text, location_of(op))
    where = f" in {during}" if during else ""
    return CompileError(f"internal error{where}: {type(err).__name__}: {' '.join(lines)}"
                        .rstrip(": "))


def _param_kind(t: Attribute, attrs: Attribute | None = None) -> str:
    """The PARAM_KINDS name of a lowered kernel parameter of type `t` (with its argument
    attributes: a pointer passed `byval` is the blob it points to, a tensor map)."""
    if isinstance(attrs, DictionaryAttr) and "llvm.byval" in attrs.data:
        byval = attrs.data["llvm.byval"]
        size = byval.size.data if isinstance(byval, llvm.LLVMArrayType) else None
        if size != PARAM_KINDS[TENSOR_MAP].size:
            raise CompileError(f"a by-value kernel parameter of {byval} is not supported "
                               f"(only {TENSOR_MAP} blobs)")
        return TENSOR_MAP
    kind = kernel_param_kind(t)
    if kind is None:
        raise CompileError(f"kernel parameter of type {t} is not supported")
    return kind


def _block_size(func: llvm.FuncOp) -> tuple[int, ...] | None:
    passthrough = func.properties.get("passthrough") or func.attributes.get("passthrough")
    for entry in passthrough.data if isinstance(passthrough, ArrayAttr) else ():
        key, value = (e.data for e in entry.data)
        if key == "nvvm.maxntid":
            return tuple(int(v) for v in value.split(","))
    return None


def _outside_functions(module: ModuleOp) -> list[Operation]:
    """`module.walk()` without the ops inside function bodies (no module or function is
    defined there), in walk order."""
    out: list[Operation] = []
    stack: list[Operation] = [module]
    while stack:
        op = stack.pop()
        out.append(op)
        if isinstance(op, llvm.FuncOp | gpu.FuncOp | func.FuncOp):
            continue
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                stack.extend(reversed(list(block.ops)))
    return out


def kernel_signatures(module: ModuleOp) -> dict[str, KernelSignature]:
    """Signatures of the lowered kernels (after the passes that append sync arguments)."""
    expect_module(module, "kernel_signatures")
    sigs: dict[str, KernelSignature] = {}
    for op in _outside_functions(module):
        if isinstance(op, llvm.FuncOp) and op.CConv.cconv_name == "ptx_kernel":
            parent = op.parent_op()
            mod_name = parent.sym_name.data if isinstance(parent, gpu.ModuleOp) else ""
            roles = tuple(sync_roles(op))
            table = op.attributes.get(ORDER_TABLE_ATTR)
            dynamic = parent.attributes.get(DYNAMIC_SHARED_BYTES_ATTR) if parent else None
            arg_attrs = op.arg_attrs.data if op.arg_attrs is not None else \
                (None,) * len(op.function_type.inputs)
            sig = KernelSignature(mod_name, op.sym_name.data,
                                  tuple(_param_kind(t, a) for t, a in
                                        zip(op.function_type.inputs, arg_attrs, strict=True)),
                                  _block_size(op), roles,
                                  tuple(table.get_values()) if table is not None else None,
                                  dynamic.value.data if isinstance(dynamic, IntegerAttr) else 0)
            sigs[sig.name] = sig
    return sigs


def verify_lowered(module: ModuleOp, last_pass: str) -> None:
    """The verification `lower` ends with: CompileError naming the pass that broke the IR."""
    verify_module(module, last_pass)


def lower(module: ModuleOp, pipeline=KERNEL_TO_LLVM, ctx: Context | None = None,
          keep_ir: bool = False, verify_each: bool = False
          ) -> tuple[dict[str, str], dict[str, float]]:
    """Run the pipeline in place; returns the IR text after each pass (when `keep_ir`) and
    each pass's time. The module is verified once, at the end, or after every pass with
    `verify_each` (slower: it names the pass that broke the IR). The cyclic collector pauses
    meanwhile, as in `compile` (in a process holding torch, a full collection that the
    passes' allocations set off took 0.1 s of LLaMA's graph-to-stages)."""
    with gc_paused():
        ir_after, seconds, _last = _lower(module, pipeline, ctx, keep_ir, verify_each, True)
    return ir_after, seconds


def run_passes(module: ModuleOp, pipeline) -> None:
    """`lower` without the final verification of the IR: for callers that only read what the
    passes conclude (the differential test runs sync-verify on thousands of programs). Each
    pass of a list is parsed and checked once per process (`_reused_pass`)."""
    _lower(module, pipeline, None, False, False, False, reuse=True)


# The pass objects `run_passes` has made, by their spec ("sync-verify{sms=4}"): passes are
# frozen dataclasses, so one object serves every module. Parsing and checking the specs anew
# took a tenth of a differential check (its programs draw their pass lists from a few dozen
# specs).
_REUSED_PASSES: dict[str, ModulePass] = {}


def _reused_pass(spec: str) -> ModulePass:
    found = _REUSED_PASSES.get(spec)
    if found is None:
        (found,) = build_pipeline([spec]).passes
        _REUSED_PASSES[spec] = found
    return found


def _lower(module: ModuleOp, pipeline, ctx: Context | None, keep_ir: bool, verify_each: bool,
           verify_last: bool, reuse: bool = False,
           before_each: Callable[[ModulePass, ModuleOp], None] | None = None
           ) -> tuple[dict[str, str], dict[str, float], str | None]:
    """`lower`, also returning the name of the last pass; `verify_last=False` leaves the
    final verification to the caller (`compile` runs it while LLVM generates the PTX).
    `reuse`: a list's passes come from `_reused_pass`. `before_each(pass, module)` runs
    before every pass (its time counts as the pass's)."""
    expect_module(module, "lower")
    ctx = ctx or make_context()
    ir_after: dict[str, str] = {}
    seconds: dict[str, float] = {}
    clock = [time.perf_counter()]
    last: list[str | None] = [None]
    running: list[str | None] = [None]

    def after_each(prev: ModulePass | None, op: ModuleOp, _next: ModulePass | None) -> None:
        running[0] = _next.name if _next is not None else None
        if prev is None:
            # the first pass's clock starts here, not before the spec was parsed and the
            # passes imported
            clock[0] = time.perf_counter()
            if before_each is not None and _next is not None:
                before_each(_next, op)
            return
        now = time.perf_counter()
        seconds[prev.name] = seconds.get(prev.name, 0.0) + now - clock[0]
        last[0] = prev.name
        if verify_each or (_next is None and verify_last):
            verify_lowered(op, prev.name)
        if keep_ir:
            ir_after[prev.name] = str(op)
        clock[0] = time.perf_counter()
        if before_each is not None and _next is not None:
            before_each(_next, op)

    if not isinstance(pipeline, str) and not (
            isinstance(pipeline, list | tuple) and all(isinstance(p, str) for p in pipeline)):
        raise CompileError("pipeline must be a `-p` spec or a list of pass names, got "
                           f"{type(pipeline).__name__}")
    if reuse and not isinstance(pipeline, str) and all("," not in p for p in pipeline):
        pipe = PassPipeline(tuple(_reused_pass(p) for p in pipeline), after_each)
    else:
        pipe = build_pipeline(pipeline, after_each)
    try:
        pipe.apply(ctx, module)
    except Exception as err:
        raise compile_error(err, module, running[0]) from err
    return ir_after, seconds, last[0]


def default_pipeline(debug: bool = False, timeout_ns: int | None = None,
                     before: tuple[str, ...] = ()) -> list[str]:
    """KERNEL_TO_LLVM, optionally after some passes, with the wait lowering's options set.

    debug: a timed-out spin-wait records what it waited for (host-mapped) before trapping.
    Every spin lowering (semaphore waits, queue acquires, mbarrier waits) takes the options.
    """
    options = []
    if debug:
        options.append("debug=true")
    if timeout_ns is not None:
        if isinstance(timeout_ns, bool) or not isinstance(timeout_ns, int) or timeout_ns <= 0:
            raise CompileError(f"timeout_ns must be a positive integer (nanoseconds), got "
                               f"{timeout_ns!r}")
        options.append(f"default_timeout_ns={timeout_ns}")
    suffix = "{" + " ".join(options) + "}" if options else ""
    return [*before, *(name + suffix if name in SPIN_LOWERINGS else name
                       for name in KERNEL_TO_LLVM)]


def compile(module_or_text: ModuleOp | str | os.PathLike, pipeline=None, target: str = "sm_90",
            validate: bool = False, keep_ir: bool = False, debug: bool = False,
            timeout_ns: int | None = None, verify_each: bool = False,
            filename: str | None = None) -> CompiledProgram:
    """Compile a program in tilesync's dialects to PTX for `target` (sm_80, sm_90, sm_90a).

    `module_or_text` is MLIR text (diagnostics name it `filename`, default "<input>"), a path
    to a .mlir file (a pathlib.Path, or a str of one line ending in ".mlir", which no program
    is), or a ModuleOp; one without a gpu.module has no kernel to compile: an error.
    `pipeline` (pass names or a `-p` spec) replaces the default: KERNEL_TO_LLVM, after the
    cuSync passes (`sync_passes_for`) where the program declares stage dependencies whose
    hooks are not filled yet. `debug` and `timeout_ns` set the
    spin-wait lowering's options in the default pipeline; `keep_ir` keeps the IR text after
    every pass in `ir_after`; `verify_each` verifies after every pass (by default the lowered
    IR is verified once, while LLVM emits the PTX: `pass_seconds` has it as "verify", and the
    compile's garbage collected then as "gc"; "ptx:<module>" is translation + LLVM). Raises
    CompileError (VerifyError where sync-verify refuses the program).
    """
    check_target(target)
    if isinstance(module_or_text, os.PathLike) or _is_a_path(module_or_text):
        path = os.fspath(module_or_text)
        try:
            with open(path, encoding="utf-8") as f:
                module_or_text = f.read()
        except OSError as err:
            raise CompileError(f"cannot read {path}: {err.strerror or err}") from None
        except UnicodeDecodeError:
            with open(path, "rb") as f:
                decode_source(f.read(), filename or path)  # raises, located
        filename = filename or path
    if not isinstance(module_or_text, str | ModuleOp):
        raise CompileError("expected MLIR text, a path or a ModuleOp, got "
                           f"{type(module_or_text).__name__}")
    with gc_paused() as collect_garbage:
        ctx = make_context()
        if isinstance(module_or_text, str):
            module = parse(module_or_text, ctx, filename or "<input>")
        else:
            module = module_or_text
            verify_module(module)
        first_ir: dict[str, str] = {}
        first_seconds: dict[str, float] = {}
        if pipeline is None:
            pipeline = default_pipeline_for(module, debug, timeout_ns)
            if is_graph_level(module):  # its kernels first, verified, then as any program
                first_ir, first_seconds, _ = _lower(module, pipeline[:1], ctx, keep_ir,
                                                    verify_each, verify_last=True)
                pipeline = pipeline[1:]
        elif debug or timeout_ns is not None:
            raise CompileError("debug/timeout_ns apply to the default pipeline; with an "
                               "explicit pipeline set convert-sync-to-nvvm{debug=true ...} "
                               "yourself")
        check_target_features(module, target)
        missing = None if is_graph_level(module) else no_kernel_error(module, filename)
        ir_after, seconds, last_pass = _lower(module, pipeline, ctx, keep_ir, verify_each,
                                              verify_last=False,
                                              before_each=measured_occupancy(target))
        ir_after, seconds = first_ir | ir_after, first_seconds | seconds
        if missing is not None:  # the passes found nothing wrong, but nothing to compile
            raise missing
        ptx_by_module, llvm_by_module = _to_ptx(module, target, validate, seconds,
                                                None if verify_each else last_pass,
                                                collect_garbage)
        try:
            kernels = kernel_signatures(module)
        except Exception as err:  # a kernel's sync.args that do not parse
            raise compile_error(err, module) from err
    return CompiledProgram(ptx_by_module, llvm_by_module, kernels, module, ir_after,
                           seconds, target)


def default_pipeline_for(module: ModuleOp, debug: bool = False,
                         timeout_ns: int | None = None) -> list[str]:
    """The passes `compile` runs on `module` when given no pipeline: for a graph-level program
    the pass that makes its kernels (graph_passes_for) and those after it, else the
    dataflow and cuSync passes the program needs (dataflow_passes_for, sync_passes_for), each
    then KERNEL_TO_LLVM (default_pipeline, with `debug` and `timeout_ns`). A dependency cycle
    is refused here, whatever the hooks."""
    expect_module(module, "default_pipeline_for")
    if is_graph_level(module):
        graph_pass, then = graph_passes_for(module)
        return [graph_pass, *default_pipeline(debug, timeout_ns, before=then)]
    refuse_dependency_cycle(module)
    return default_pipeline(debug, timeout_ns, before=(*dataflow_passes_for(module),
                                                       *sync_passes_for(module)))


def expect_module(module: object, function: str) -> None:
    """A CompileError unless `module` is a ModuleOp (what `parse` returns): an API function
    given program text or None says so, not an AttributeError from inside a pass."""
    if not isinstance(module, ModuleOp):
        raise CompileError(f"{function} takes a ModuleOp (tilesync.api.parse gives one), got "
                           f"{type(module).__name__}")


def _is_a_path(text: object) -> bool:
    """A str that is a .mlir file's path, not a program: one line ending in ".mlir"."""
    return isinstance(text, str) and "\n" not in text and text.strip().endswith(".mlir")


def gpu_modules(module: ModuleOp, source: str = "<input>") -> list[gpu.ModuleOp]:
    """The gpu.modules of `module` (outside functions), whose kernels tilesync compiles; a
    CompileError when there is none: nothing to compile (an empty file, host code only) or,
    for a graph-level program, not yet (graph-to-stages makes its kernels)."""
    expect_module(module, "gpu_modules")
    error = no_kernel_error(module, source)
    if error is not None:
        raise error
    return [op for op in _outside_functions(module) if isinstance(op, gpu.ModuleOp)]


def no_kernel_error(module: ModuleOp, source: str | None = "<input>") -> CompileError | None:
    """Why `module` has no kernel to compile (located at its first op, as parsed: taken
    before lowering, which drops the locations), or None where it has a gpu.module."""
    if any(isinstance(op, gpu.ModuleOp) for op in _outside_functions(module)):
        return None
    source = source or "<input>"
    first = next(iter(module.ops), None)
    where = location_of(first) or SourceLocation(source, 1, 1)
    if is_graph_level(module):
        return CompileError("the program has no gpu.module yet: its graph function becomes "
                            "kernels in graph-to-stages (tilesync compile runs it; "
                            "tilesync-opt -p graph-to-stages,...)", where)
    what = "is empty" if first is None else "has no gpu.module (only host code)"
    return CompileError(f"the program {what}: there is no kernel to compile (tilesync compiles "
                        "the gpu.func kernels of a gpu.module)", where)


def refuse_dependency_cycle(module: ModuleOp) -> None:
    """sync-verify's refusal of a dependency cycle, for a program compiled whatever its hooks
    (one without any has no synchronization for sync-verify to prove, but a cycle of
    dependencies is no program either)."""
    if not any(isinstance(op, sync.DependencyOp) for op in module.ops):
        return
    from tilesync.analysis.stage_graph import StageGraph
    from tilesync.transforms.sync.verify import VerifySyncPass

    try:
        VerifySyncPass.refuse_cycles(StageGraph.of(module))
    except OpDiagnostic as err:
        raise compile_error(err, module) from None


# ops whose PTX exists only on an architecture-specific target (wgmma, setmaxnreg: sm_90a)
_WGMMA_OPS = (tile.WgmmaOp, tile.WgmmaRegAOp, tile.WgmmaFenceOp, tile.WgmmaCommitOp,
              tile.WgmmaWaitOp, tile.SetMaxNRegOp)


def check_target_features(module: ModuleOp, target: str) -> None:
    """Refuse, at the first op that needs it, a program using what `target` lacks: ptxas would
    otherwise answer with a page of 'not supported on .target' lines after the whole lowering."""
    if architecture(target).wgmma:
        return
    for op in module.walk():
        if isinstance(op, _WGMMA_OPS):
            wanted = next(name for name, a in ARCHITECTURES.items() if a.wgmma)
            raise compile_error(diagnostic(
                "target", op, f"{op.name} needs target {wanted} (wgmma and setmaxnreg exist "
                f"only there), not {target}; compile with target='{wanted}' "
                f"(tilesync compile -t {wanted})"))


def check_target(target: str) -> None:
    if not isinstance(target, str) or target not in TARGETS:
        raise CompileError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")


# The cuSync passes a stage program needs before lowering when its kernels still have hooks
# to fill (a program whose waits and posts are written out needs none); a plan that declares
# wait-kernels also needs them made to work (the producers' start flags, the wait-kernel).
SYNC_PASSES: tuple[str, ...] = ("sync-generate-policies", "sync-insert-post-wait", "sync-verify")
WAIT_KERNEL_PASS = "sync-insert-wait-kernel"


GRAPH_SYNC_PASSES: tuple[str, ...] = (*SYNC_PASSES[:-1], "sync-use-pdl", SYNC_PASSES[-1])
"""What compile's default pipeline runs on a graph-level program (graph.linear, graph.conv2d,
... in a func.func) after graph-to-stages made its stage program: the hooks filled, each
consumer launched with PDL right after its producer (the forward-progress guarantee that needs
no SM count)."""


def is_graph_level(module: ModuleOp) -> bool:
    return any(op.dialect_name() == graph.Graph.name for op in module.walk())


def graph_passes_for(module: ModuleOp) -> tuple[str, tuple[str, ...]]:
    """(the pass that makes `module`'s graph function a program, the passes compile's default
    pipeline runs after it before lowering): for a stack of Linear layers graph-to-dataflow
    takes (match_stack; NeRF's MLP, MeshGraphNets') one Kitsune pipeline (as many CTAs a
    stage), whose queues need no cuSync pass; else graph-to-stages (whose diagnostics a
    function it refuses gets), then GRAPH_SYNC_PASSES."""
    from tilesync.transforms.graph import graph_to_dataflow, graph_to_stages

    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if len(functions) == 1:
        try:
            graph_to_dataflow.match_stack(functions[0])
        except DiagnosticException:  # not a stack: graph-to-stages says what it is not
            pass
        else:
            return f"{graph_to_dataflow.PASS}{{fuse_light=true}}", ()
    return graph_to_stages.PASS, GRAPH_SYNC_PASSES


def to_stage_program(module: ModuleOp) -> None:
    """Make a graph-level `module` its program in place, with the pass compile's default
    pipeline runs first (graph_passes_for); any other module is left as it is. For tools that
    read the program before lowering (explain)."""
    expect_module(module, "to_stage_program")
    if is_graph_level(module):
        graph_pass, _then = graph_passes_for(module)
        lower(module, [graph_pass])


def dataflow_passes_for(module: ModuleOp) -> tuple[str, ...]:
    """dataflow-verify's queues and tickets (its TICKETS_ONLY run) where `module` holds a
    dataflow.pipeline not verified yet whose stage kernels still take their queues: a
    hand-written pipeline is proved to keep its tickets' discipline, or refused, before it is
    lowered (where nothing could check it any more); co-residency is the cooperative launch's.
    None else."""
    from tilesync.dialects import dataflow
    from tilesync.transforms.dataflow.verify import TICKETS_ONLY, VERIFIED_ATTR

    for op in module.walk():
        if isinstance(op, dataflow.PipelineOp) and VERIFIED_ATTR not in op.attributes \
                and not any(UNBOUND_ATTR in s.attributes for s in op.stages):
            return (TICKETS_ONLY,)
    return ()


def sync_passes_for(module: ModuleOp) -> tuple[str, ...]:
    """SYNC_PASSES where `module` declares a `sync.dependency` and some kernel still has an
    unfilled `sync.load_point` / `sync.store_point` (lowering alone would erase them and emit
    no synchronization), with sync-insert-wait-kernel before sync-verify where the plan holds a
    `sync.wait_kernel`; sync-verify alone where every hook is filled but a stage was not
    verified (a program whose synchronization was filled elsewhere is proved, or refused,
    before it is compiled; one without hooks has no tile synchronization to prove); else
    none."""
    expect_module(module, "sync_passes_for")
    has_dependency = False
    has_hooks = False
    has_wait_kernel = False
    filled = unverified = False
    for op in module.walk():
        if isinstance(op, sync.DependencyOp):
            has_dependency = True
        elif isinstance(op, sync.WaitKernelOp):
            has_wait_kernel = True
        elif isinstance(op, sync.HOOK_OPS):
            if FILLED_ATTR in op.attributes:
                filled = True
            else:
                has_hooks = True
        elif isinstance(op, sync.StageOp) and VERIFIED_ATTR not in op.attributes:
            unverified = True
    if has_dependency and filled and not has_hooks and unverified:
        return (SYNC_PASSES[-1],)
    if not (has_dependency and has_hooks):
        return ()
    if has_wait_kernel:
        return (*SYNC_PASSES[:-1], WAIT_KERNEL_PASS, SYNC_PASSES[-1])
    return SYNC_PASSES


_OPEN_PAUSES: list[bool] = []
"""Per open gc_paused block, outermost first: whether the collector was on at its start."""


@contextmanager
def gc_paused() -> Iterator[Callable[[], None] | None]:
    """No cyclic garbage collection while compiling: the IR is a large graph of cyclic
    objects that the collector would traverse again and again (about a tenth of the compile
    time of a GEMM kernel). Yields, where the collector was on (or paused by an enclosing
    gc_paused: the torch front end's whole compile), one collection of what the compile
    allocated so far, for `_to_ptx` to run while LLVM works: else the first collection after
    the pause traverses it all (0.7 s of NeRF's pipeline) while a core that could have done
    it waits."""
    enabled = gc.isenabled()
    collecting = enabled or (bool(_OPEN_PAUSES) and _OPEN_PAUSES[0])
    _OPEN_PAUSES.append(enabled)
    gc.disable()
    try:
        # generations 0 and 1: those a pause fills
        yield (lambda: gc.collect(1)) if collecting else None
    finally:
        _OPEN_PAUSES.pop()
        if enabled:
            gc.enable()


def _to_ptx(module: ModuleOp, target: str, validate: bool, seconds: dict[str, float],
            verify_after: str | None, collect_garbage: Callable[[], None] | None = None
            ) -> tuple[dict[str, str], dict[str, str]]:
    """LLVM IR and PTX of every gpu.module in `module`.

    The translation to LLVM IR runs here; LLVM (optimization and PTX emission, which release
    the GIL) runs on a worker thread, meanwhile this thread verifies the lowered IR when
    `verify_after` names the last pass (`lower` leaves it unverified), then runs
    `collect_garbage` ("gc" in `seconds`). A verification error comes first, then errors in
    the order of the modules, as if each step ran in turn.
    """
    from tilesync.lowering.llvm_to_llvmlite import translate_to_llvm_ir
    from tilesync.lowering.ptx import PTXError, llvm_ir_to_ptx, validate_ptx

    def llvm_job(llvm_ir: str) -> tuple[str, float]:
        start = time.perf_counter()
        ptx = llvm_ir_to_ptx(llvm_ir, arch=target)
        if validate:
            validate_ptx(ptx, target)
        return ptx, time.perf_counter() - start

    def verified() -> None:
        if verify_after is not None:
            start = time.perf_counter()
            verify_lowered(module, verify_after)
            seconds["verify"] = time.perf_counter() - start

    llvm_by_module: dict[str, str] = {}
    jobs: dict[str, Future] = {}
    translate_seconds: dict[str, float] = {}
    # A fresh thread per compile: a pool kept across calls would be dead in a forked child.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tilesync-llvm") as worker:
        failure: tuple[str, Exception] | None = None
        for op in _outside_functions(module):
            if isinstance(op, gpu.ModuleOp):
                name = op.sym_name.data
                start = time.perf_counter()
                try:
                    llvm_by_module[name] = translate_to_llvm_ir(op)
                except Exception as err:  # reported after the verification (invalid IR first)
                    failure = (name, err)
                    break
                translate_seconds[name] = time.perf_counter() - start
                jobs[name] = worker.submit(llvm_job, llvm_by_module[name])
        verified()
        if collect_garbage is not None and jobs:
            start = time.perf_counter()
            collect_garbage()
            seconds["gc"] = time.perf_counter() - start
        ptx_by_module: dict[str, str] = {}
        for name, job in jobs.items():
            try:
                ptx_by_module[name], llvm_seconds = job.result()
            except PTXError as err:
                raise CompileError(f"gpu.module @{name}: {err}") from err
            seconds[f"ptx:{name}"] = translate_seconds[name] + llvm_seconds
        if failure is not None:
            name, err = failure
            raise translation_error(module, name, err) from err
    return ptx_by_module, llvm_by_module


def translation_error(module: ModuleOp, name: str, err: Exception) -> CompileError:
    """Why gpu.module @name did not translate to LLVM IR: most often the pipeline stopped
    before the llvm dialect."""
    from tilesync.lowering.llvm_to_llvmlite import TranslationError

    gmod = next((op for op in _outside_functions(module)
                 if isinstance(op, gpu.ModuleOp) and op.sym_name.data == name), None)
    unlowered = next((op for op in gmod.body.ops if not op.name.startswith("llvm.")), None) \
        if gmod is not None else None
    if unlowered is not None:
        return CompileError(f"gpu.module @{name} is not lowered to the llvm dialect (a "
                            f"'{unlowered.name}' remains): end the pipeline with "
                            "tilesync-lower-to-llvm, or emit MLIR instead of PTX",
                            location_of(unlowered))
    if isinstance(err, TranslationError):
        return CompileError(f"gpu.module @{name}: {err}", location_of(gmod))
    return compile_error(err, module, "the translation to LLVM IR")


def measured_occupancy(target: str) -> Callable[[ModulePass, ModuleOp], None]:
    """What compile runs before each pass: before sync-annotate-occupancy, where a stage has
    no `registers` and the pass is not given `regs_per_thread`, the kernels as they are then
    are compiled and their registers and shared memory recorded (`annotate_resources`), so
    that W and T decide from the real kernels, not from the pass's 32-register default (which
    tilesync-opt and `lower`, running the passes as written, keep)."""
    from tilesync.transforms.sync.annotate_occupancy import AnnotateOccupancyPass

    def measure(next_pass: ModulePass, module: ModuleOp) -> None:
        if not isinstance(next_pass, AnnotateOccupancyPass) or \
                next_pass.regs_per_thread is not None:
            return
        if all(REGISTERS_ATTR in op.attributes for op in module.walk()
               if isinstance(op, sync.StageOp)):
            return
        fill = tuple(p for p in sync_passes_for(module) if p != SYNC_PASSES[-1])
        try:
            annotate_resources(module, target, pipeline=default_pipeline(before=fill))
        except CompileError as err:
            raise CompileError(
                f"{next_pass.name}: the kernels' registers are not recorded and compiling them "
                f"to measure failed ({err.message}); record 'registers' on the stages or give "
                f"the pass regs_per_thread=N", err.location) from None

    return measure


def annotate_resources(module: ModuleOp, target: str = "sm_90",
                       pipeline=None) -> dict[str, tuple[int, int]]:
    """Record on every sync.stage and dataflow.stage the `registers` and `shared_bytes` of its
    compiled kernel: for a stage of a pipeline fused into one persistent kernel, those of that
    kernel, which every CTA of the pipeline runs.

    Compiles a copy of `module` to PTX and reads what nvJitLink reports, so the occupancy the
    wave-model passes use (sync-annotate-occupancy, then W and T) comes from the real kernel,
    never from a guess. Returns {kernel: (registers, shared bytes)}; shared bytes are the static
    ones nvJitLink reports plus the dynamic ones the kernel is launched with.
    """
    from tilesync.dialects import dataflow, sync
    from tilesync.lowering.ptx import validate_ptx

    expect_module(module, "annotate_resources")
    program = compile(module.clone(), pipeline=pipeline, target=target)
    usage: dict[str, tuple[int, int]] = {}
    for ptx in program.ptx_by_module.values():
        info = validate_ptx(ptx, target)
        for name, registers in info.registers.items():
            dynamic = program.kernels[name].dynamic_shared_bytes if name in program.kernels else 0
            usage[name] = (registers, info.shared_bytes.get(name, 0) + dynamic)
    persistent = {p.sym_name.data: p.attributes[PERSISTENT_KERNEL_ATTR]
                  for p in program.module.walk() if isinstance(p, dataflow.PipelineOp)
                  and isinstance(p.attributes.get(PERSISTENT_KERNEL_ATTR), SymbolRefAttr)}
    for op in module.walk():
        if isinstance(op, sync.StageOp | dataflow.StageOp):
            pipeline = op.parent_op()
            ref = persistent.get(pipeline.sym_name.data, op.kernel) \
                if isinstance(pipeline, dataflow.PipelineOp) else op.kernel
            kernel = ref.nested_references.data[-1].data
            if kernel in usage:
                registers, shared = usage[kernel]
                op.attributes[REGISTERS_ATTR] = IntegerAttr(registers, 64)
                op.attributes[SHARED_BYTES_ATTR] = IntegerAttr(shared, 64)
    return usage
