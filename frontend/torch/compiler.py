"""From an fx GraphModule to one whose matched pieces run as tilesync stage programs.

    transform(gm, example_inputs, options) -> (gm, Report)

First, an eval-mode batch norm folds into the conv before it (BatchNorm2d after Conv2d, or
Dynamo's F.batch_norm) in a copy of the graph the pieces are matched on (fold_batch_norms), and
nn.Identity and eval-mode dropout are left out of it (without_identities); the graph that runs
keeps the model's own modules, and a piece of ours folds the norms' live tensors at its call
and takes the identities only it reads (in_model_graph). Then per piece, in order (each step a
function below):

    graph_function        the fx match as a graph-level func (patterns.py; an MLP stack at the
                          kernels' widths: stack.py)
    plan                  graph-to-stages' pattern and tile configs (an MLP stack: graph-to-
                          dataflow's MlpStack) or why not: the piece stays with torch
    compile_entry         graph-to-stages, the cuSync passes (RowSync, PDL, verify, the epoch
                          in device memory), PTX for sm_90a; run on a GPU, every form of
                          the piece `stage_forms` names (an MLP on the TMA GEMMs also with its
                          GEMMs persistent in stream order, a conv chain's TMA convs, an
                          attention also fused), the fastest measured on the device (cached
                          per device); an MLP stack: graph-to-dataflow
                          (light layers fused; the ILP's allotment, or with `tune` every one
                          of STACK_PASSES, the faster measured on the device), the dataflow
                          passes, one persistent kernel each; cached on disk (CompileCache,
                          key: the graph text, the passes and the target; the compiler's
                          digest)
    decide                torch's path unless the cost model (cost.py) leaves room and a
                          measurement on the device (cached per device) says ours is faster,
                          called from the host or replayed from a CUDA graph (`measure`)
    rewrite               the piece's nodes replaced by torch.ops.tilesync.piece(inputs, id)

Nothing here raises for a piece it cannot take: the reason goes into the report and the piece
stays with torch. With `strict`, the first such reason raises UnsupportedError (one line).
`TILESYNC_LOG=1` prints the report; `TILESYNC_MODE=tilesync|torch` forces every piece one way;
`TILESYNC_TUNE=1` (or `tune`) compiles and times every form of an MLP stack instead of the one
the model sizes: a first compile of NeRF's MLP that takes one pipeline's time, not two's.
"""

from __future__ import annotations

import operator
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilesync.api import GRAPH_SYNC_PASSES
from tilesync.contract import TilesyncError, env_flag
from tilesync.frontend.torch import cost
from tilesync.frontend.torch.patterns import (
    Piece,
    UnsupportedPiece,
    find_pieces,
    graph_function,
    insertion_point,
)
from tilesync.transforms.graph import graph_to_stages

TARGET = "sm_90a"
SYNC_PASSES = (*GRAPH_SYNC_PASSES[:-1], "sync-verify{sms=132 limit=8}", "sync-epoch-in-memory")
"""compile's passes for a graph-level program, sync-verify told the device's SMs, and the
epoch read from device memory (a CUDA graph replays the launches)."""
STAGES_PASS = graph_to_stages.PASS
STACK_PASSES = ("graph-to-dataflow{fuse_light=true allot=model}",
                "graph-to-dataflow{fuse_light=true}")
"""The pipelines an MLP stack is compiled to and measured on the device (once, cached), the
faster kept: the ILP's CTAs from modelled layer times, and as many CTAs a stage (on an H100 the
first ran NeRF's MLP 1.2x faster, the second MeshGraphNets' up to 8%: bench dataflow-mlp)."""
MLP_FORMS = (STAGES_PASS, "graph-to-stages{persistent=true}")
"""The stage programs an MLP on the TMA GEMMs is compiled to where it runs here, measured on
the device (once, cached) and the faster kept: tile sync of a block a tile, and the persistent
GEMMs in stream order (on an H200 the second ran GPT-3's and LLaMA's MLPs 2-6% faster from
M = 512-1024, the first up to 8% faster below: bench mlp's tma:persistent)."""
TIMEOUT_NS = 2_000_000_000
MODES = ("auto", "tilesync", "torch")
LOG_ENV, MODE_ENV, CACHE_ENV, TUNE_ENV = ("TILESYNC_LOG", "TILESYNC_MODE", "TILESYNC_CACHE",
                                          "TILESYNC_TUNE")


class UnsupportedError(TilesyncError):
    """A model or piece tilesync cannot take (dtype, shape, device, no GPU), in one line."""


@dataclass
class Options:
    mode: str = "auto"
    strict: bool = False
    emit_ptx: bool = False  # compile pieces to PTX even where they cannot run here
    log: bool = False
    cache_dir: Path | None = None
    tune: bool = False
    """Compile and time every form of ours where a piece has several (STACK_PASSES); else
    the one the model sizes."""

    @classmethod
    def make(cls, mode: str | None = None, strict: bool = False, emit_ptx: bool = False,
             log: bool | None = None, cache_dir: str | Path | None = None,
             tune: bool | None = None) -> Options:
        mode = mode or os.environ.get(MODE_ENV) or "auto"
        if mode not in MODES:
            raise UnsupportedError(f"mode must be one of {MODES}, got {mode!r}")
        if log is None:
            log = env_flag(LOG_ENV)
        if tune is None:
            tune = env_flag(TUNE_ENV)
        directory = cache_dir or os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "tilesync"
        return cls(mode, strict, emit_ptx, log, Path(directory), tune)

    def cache(self, namespace: str, accepts: Any = None) -> Any:
        """The on-disk cache (harness.compile_cache.CompileCache) under `namespace`."""
        from tilesync.harness.compile_cache import CompileCache

        assert self.cache_dir is not None
        return CompileCache(self.cache_dir, namespace, accepts=accepts)

    @property
    def cubin_dir(self) -> Path:
        """Where the pieces' cubins are kept (runtime.module.CubinCache): under cache_dir."""
        assert self.cache_dir is not None
        return self.cache_dir / "cubins"


@dataclass
class PieceReport:
    index: int
    description: str
    choice: str = "torch"  # "tilesync" or "torch"
    reason: str = ""
    predicted: cost.Prediction | None = None
    measured: tuple[float, ...] | None = None
    """(ours ms, torch ms[, ours ms, torch ms each replayed from a CUDA graph]): `measure`'s."""
    compile_seconds: float | None = None
    cached: bool = False
    variants: list[tuple[str, float]] = field(default_factory=list)
    """(variant, measured ms) of each form of ours that was tuned (an MLP stack's pipelines),
    the chosen first."""
    by_torch: bool = False
    """Forced ours where no kernel can run (no GPU): rewritten into the op, computed by torch."""

    @property
    def runs_ours(self) -> bool:
        """Whether the piece runs as our stage program (not forced and computed by torch)."""
        return self.choice == "tilesync" and not self.by_torch

    def line(self) -> str:
        parts = [f"piece {self.index}: {self.description}: {self.choice}"]
        if self.reason:
            parts.append(f"({self.reason})")
        if self.variants:
            parts.append("tuned " + ", ".join(f"{name} {ms:.4f} ms"
                                              for name, ms in self.variants))
        if self.predicted is not None:
            parts.append(f"predicted ours {self.predicted.ours_ms:.4f} ms vs torch "
                         f"{self.predicted.torch_ms:.4f} ms")
        if self.measured is not None:
            parts.append(f"measured ours {self.measured[0]:.4f} ms vs torch "
                         f"{self.measured[1]:.4f} ms")
            if len(self.measured) == 4:
                parts.append(f"replayed from a CUDA graph ours {self.measured[2]:.4f} ms vs "
                             f"torch {self.measured[3]:.4f} ms")
        if self.compile_seconds is not None:
            parts.append(f"compiled in {self.compile_seconds:.2f} s"
                         + (" (cache)" if self.cached else ""))
        return " ".join(parts[:1]) + (" " + "; ".join(parts[1:]) if parts[1:] else "")


@dataclass
class Report:
    pieces: list[PieceReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    graph: Any = None
    """The whole graph's measured form (graph_choice.GraphChoice) where one was chosen."""
    seconds: float = 0.0
    """transform's time: tracing values, matching, compiling or loading and deciding pieces."""

    @property
    def ours(self) -> bool:
        """Whether any piece runs as tilesync's."""
        return any(p.choice == "tilesync" for p in self.pieces)

    def text(self) -> str:
        by_torch = sum(p.choice == "tilesync" and p.by_torch for p in self.pieces)
        lines = [f"tilesync: {len(self.pieces)} piece(s) matched; "
                 f"{sum(p.runs_ours for p in self.pieces)} run as stage programs"
                 + (f", {by_torch} forced but computed by torch" if by_torch else "")
                 + (f" (in {self.seconds:.2f} s)" if self.seconds else "")]
        lines += [f"tilesync: {note}" for note in self.notes]
        lines += [f"tilesync: {p.line()}" for p in self.pieces]
        if self.graph is not None:
            lines.append(f"tilesync: {self.graph.line()}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The steps
# ---------------------------------------------------------------------------------------------


def plan(module, stack: bool = False) -> Any:
    """The configs graph-to-stages would build for the graph function (MlpSpec or
    AttentionSpec), or with `stack` graph-to-dataflow's MlpStack (no kernels generated); a
    CompileError (the pass's diagnostic) where it refuses."""
    from xdsl.dialects import func

    from tilesync.api import compile_error
    from tilesync.transforms.graph.graph_to_stages import plan_configs

    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    try:
        if stack:  # imported here: the dataflow dialect costs a GEMM piece's cached compile
            from tilesync.transforms.graph.graph_to_dataflow import stack_of  # 30 ms

            return stack_of(fn, fuse_light=True)[1]
        return plan_configs(fn)
    except Exception as err:
        raise compile_error(err, module) from err


def compile_entry(job: tuple[str, str], target: str = TARGET) -> dict[str, Any]:
    """The piece compiled by `job` = (graph text, one of its `stage_forms`): PTX per
    gpu.module, kernel signatures, the host plan (stage ops with their #graph.bind) as text,
    the temporaries' shapes; picklable (the cache keeps it). The cuSync passes run where the
    stage program has dependencies (the persistent form has none: stream order synchronizes
    it)."""
    from xdsl.dialects.builtin import Float32Type, ModuleOp

    import tilesync
    from tilesync.api import default_pipeline, lower, parse
    from tilesync.dialects import graph, sync

    start = time.perf_counter()
    graph_text, stages_pass = job
    module = parse(graph_text)
    lower(module, [stages_pass])
    temp_types = module.attributes[graph.TEMPS_ATTR].data
    temps = [tuple(t.get_shape()) for t in temp_types]
    # fp32 where a temporary is (a split attention's partials), else the piece's element type
    wide = [isinstance(t.element_type, Float32Type) for t in temp_types]
    dependent = any(isinstance(op, sync.DependencyOp) for op in module.ops)
    compiled = tilesync.compile(module, pipeline=default_pipeline(
        timeout_ns=TIMEOUT_NS, before=SYNC_PASSES if dependent else ()), target=target)
    host = [op.clone() for op in compiled.module.ops
            if isinstance(op, sync.StageOp | sync.DependencyOp | sync.LaunchOp
                          | sync.WaitKernelOp)]
    return {"ptx_by_module": dict(compiled.ptx_by_module), "kernels": dict(compiled.kernels),
            "host": str(ModuleOp(host)), "temps": temps, "fp32_temps": wide, "target": target,
            "compile_seconds": time.perf_counter() - start}


def compile_stack_entry(job: tuple[str, str, str], target: str = TARGET) -> dict[str, Any]:
    """An MLP stack's graph function compiled as a pipeline by `job` = (graph text, one of
    STACK_PASSES, the directory its cubins are compiled into): PTX, kernel signatures, the
    pipeline's plan (runtime.dataflow.read_pipeline's: stages, queues, its persistent kernel),
    each stage's kernel arguments as (bind kind, values) from its #graph.bind, the result
    shapes; picklable."""
    import tilesync
    from tilesync.api import default_pipeline
    from tilesync.dialects import dataflow, graph
    from tilesync.runtime.dataflow import TIERED_PIPELINES, compiled_in_full, read_pipeline
    from tilesync.runtime.module import precompile_ptx

    start = time.perf_counter()
    graph_text, stack_pass, cubin_dir = job
    # One pipeline from the graph function: the input verified as parsed, the lowered IR at
    # the end (as after any pass list), not graph-to-dataflow's 8k ops for NeRF in between.
    compiled = tilesync.compile(graph_text, target=target,
                                pipeline=default_pipeline(timeout_ns=TIMEOUT_NS,
                                                          before=(stack_pass,)))
    signature = compiled.module.attributes[graph.SIGNATURE_ATTR]
    results = [tuple(t.get_shape()) for t in signature.outputs.data]  # type: ignore
    (pipeline,) = [op for op in compiled.module.ops if isinstance(op, dataflow.PipelineOp)]
    # ptxas here, beside the other pipelines': the fast tier the runner starts on, unless the
    # full kernels are cached (PipelineRunner compiles those on a thread)
    fast = TIERED_PIPELINES and not compiled_in_full(compiled.ptx_by_module, target, cubin_dir)
    for ptx in compiled.ptx_by_module.values():
        precompile_ptx(ptx, target, cubin_dir, fast=fast)
    binds = {stage.sym_name.data: [(b.kind.data, tuple(b.values))
                                   for b in stage.attributes[graph.BIND_ATTR].data]  # type: ignore
             for stage in pipeline.stages}
    return {"ptx_by_module": dict(compiled.ptx_by_module), "kernels": dict(compiled.kernels),
            "plan": read_pipeline(compiled), "binds": binds, "results": results,
            "target": target, "compile_seconds": time.perf_counter() - start}


def _entry_key(job: tuple[str, str], target: str) -> str:
    return repr((*job, SYNC_PASSES, TIMEOUT_NS, target))


def _stack_entry_key(job: tuple[str, str, str], target: str) -> str:
    return repr((*job[:2], TIMEOUT_NS, target))  # not where the cubins went


def stack_passes(options: Options) -> tuple[str, ...]:
    """The graph-to-dataflow runs an MLP stack is compiled by: every allotment of STACK_PASSES
    with `tune` (the faster measured), else the first, the ILP's (the faster on NeRF's MLP and
    the larger edge MLP benched; 7% slower than the even one on the smaller, bench/results)."""
    return STACK_PASSES if options.tune else STACK_PASSES[:1]


def cached_entry(graph_text: str, options: Options, stack: bool,
                 forms: tuple[str, ...]) -> tuple[list[Any], bool]:
    """(compiled entries, True if all came from the disk cache): one per form, each of
    `stage_forms`, or with `stack` of stack_passes(options); a stack's are compiled side by side in
    fresh interpreters where this machine has the cores (no fork of a process that holds
    torch's threads and a CUDA context), a piece's forms here (a second costs under a second).
    """
    from tilesync.harness.compile_cache import compile_many

    cache = options.cache("torch", accepts=is_whole_entry)
    hits = cache.hits
    if stack:
        entries = compile_many([(graph_text, p, str(options.cubin_dir)) for p in forms], TARGET,
                               min(len(forms), os.cpu_count() or 1),
                               compile_one=compile_stack_entry, key=_stack_entry_key,
                               cache=cache, isolated=True)
        return entries, cache.hits - hits == len(forms)
    entries = compile_many([(graph_text, form) for form in forms], TARGET, 1,
                           compile_one=compile_entry, key=_entry_key, cache=cache)
    return entries, cache.hits - hits == len(forms)


ENTRY_KEYS = {False: {"ptx_by_module", "kernels", "host", "temps", "target"},
              True: {"ptx_by_module", "kernels", "plan", "binds", "results", "target"}}
"""What compile_entry's value (False) and compile_stack_entry's (True) hold."""


def is_whole_entry(value: Any) -> bool:
    """Whether a cached value is a compiled entry a runner can load: every key of its kind,
    PTX for some module (a damaged entry is compiled again, not loaded)."""
    if not isinstance(value, dict):
        return False
    kinds = [stack for stack, keys in ENTRY_KEYS.items() if keys <= value.keys()]
    ptx = value.get("ptx_by_module")
    return bool(kinds) and isinstance(ptx, dict) and bool(ptx) \
        and all(isinstance(text, str) and text for text in ptx.values())


def device_status(infos) -> str | None:
    """Why the piece cannot run here (None: it can): CPU tensors, no GPU, not Hopper."""
    from tilesync.runtime.device import gpu_available

    device = infos[0].device
    if device is None or getattr(device, "type", "cpu") != "cuda":
        return f"inputs on {getattr(device, 'type', 'an unknown device')}: tilesync's " \
               "kernels run on NVIDIA GPUs"
    if any(getattr(i.device, "type", None) != "cuda" for i in infos):
        return "the piece mixes devices"
    if (device.index or 0) != 0:
        return "tilesync runs on CUDA device 0 only"
    available, why = gpu_available()
    if not available:
        return f"no GPU for tilesync: {why}"
    from tilesync.runtime.device import get_device

    arch = get_device().arch
    if arch != "sm_90":
        return f"the generated wgmma kernels need sm_90a (Hopper); this GPU is {arch}"
    return None


def measure(piece: Piece, runner: Any, example: list[Any]) -> tuple[float, ...]:
    """(ours ms, torch ms, ours ms, torch ms): medians of each path on the example inputs,
    called from the host, then each replayed from a CUDA graph (the device's time alone:
    around a launch-bound piece the host's time decides the first pair, and graph_choice may
    run the whole graph replayed); the first pair only where a path does not capture."""
    from tilesync.frontend.torch.ops import eager_piece

    paths = (lambda: runner(example), lambda: eager_piece(piece.ops, example, piece.results))
    called = tuple(cost.measure_ms(path) for path in paths)
    try:
        return called + tuple(cost.measure_graph_ms(path) for path in paths)
    except Exception:  # a path torch cannot capture: measured as called only
        import torch

        torch.cuda.synchronize()
        return called


def _lookup(key: str, options: Options) -> tuple[bool, Any]:
    """(found, the value) of a measurement cached under `key`."""
    return options.cache("torch-tuning").load(key)


def _tuned(key: str, options: Options, fn, stands_faster=None) -> tuple[Any, bool]:
    """The measurement cached under `key`, or fn()'s, stored; and whether it was cached. One
    made while a pipeline ran its fast tier is stored only where `stands_faster(value)` says
    ours won (ops.measurement_stands)."""
    from tilesync.frontend.torch.ops import measurement_stands, on_the_fast_tier

    cache = options.cache("torch-tuning")
    found, value = cache.load(key)
    if found:
        return value, True
    fast = on_the_fast_tier()
    value = fn()
    if measurement_stands(fast, stands_faster is not None and stands_faster(value)):
        cache.store(key, value)
    return value, False


def _example_values(piece: Piece, gm: Any, env: dict[str, Any]) -> list[Any]:
    """The piece's inputs for timing: the parameters themselves, activations drawn at random
    in their shape (the run keeps no intermediate values)."""
    import torch

    values = []
    for ref, info in zip(piece.inputs, piece.infos, strict=True):
        if isinstance(ref, str):
            values.append(gm.get_parameter(ref))
        elif ref.name in env:
            values.append(env[ref.name])
        else:
            values.append(torch.randn(info.shape, dtype=info.dtype, device=info.device))
    return values


# ---------------------------------------------------------------------------------------------
# transform
# ---------------------------------------------------------------------------------------------


VALUE_SHAPED = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive",
                          "repeat_interleave", "bincount", "item", "tolist"})
"""torch functions and tensor methods whose result's shape (or a Python number a later shape may
be made of) comes from their inputs' values: a graph with one has its shapes recorded by a run,
never taken from the shape cache."""


def record_values(gm: Any, example_inputs: list[Any], cache: Any = None) -> dict[str, Any]:
    """Run gm once on copies of the examples; every node gets its TensorInfo (meta
    "tilesync_info"); returns the tensors of the placeholders and get_attr nodes (the pieces'
    inputs). What the run writes in place (an input, BatchNorm's running statistics in
    training) is undone: compiling leaves the user's tensors and buffers as they were.

    With `cache` (a CompileCache) the TensorInfos are kept under the graph's code and the
    shapes of what it reads (shape_key), and a graph found there is not run: a cached compile
    then launches nothing (the run was a third of it, mostly torch's first cuBLAS call)."""
    import torch

    from tilesync.frontend.torch.patterns import TensorInfo

    key = shape_key(gm, example_inputs) if cache is not None else None
    if key is not None:
        found, infos = cache.load(key)
        if found:
            return _recorded(gm, example_inputs, infos)
    kept: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            if isinstance(result, torch.Tensor):
                n.meta["tilesync_info"] = TensorInfo(tuple(result.shape), result.dtype,
                                                     result.device)
                if n.op in ("placeholder", "get_attr"):
                    kept[n.name] = result
            return result

    copies = [t.clone() if isinstance(t, torch.Tensor) else t for t in example_inputs]
    buffers = {name: b.clone() for name, b in gm.named_buffers()}
    try:
        with torch.no_grad():
            Recorder(gm).run(*copies)
    finally:
        with torch.no_grad():
            for name, b in gm.named_buffers():
                b.copy_(buffers[name])
    if key is not None:
        cache.store(key, {n.name: n.meta["tilesync_info"] for n in gm.graph.nodes
                          if "tilesync_info" in n.meta})
    return kept


def shape_key(gm: Any, example_inputs: list[Any]) -> str | None:
    """What every node's shape, dtype and device follow from: the graph's code, the shapes,
    strides, dtypes and devices of its inputs, parameters, buffers and attributes read (other
    inputs by value), training or not, torch's version; None where a node's shape may follow
    from values (VALUE_SHAPED, indexing by a tensor)."""
    import torch

    def described(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return (tuple(value.shape), value.stride(), str(value.dtype), str(value.device))
        return repr(value)

    attributes = []
    for node in gm.graph.nodes:
        name = node.target if isinstance(node.target, str) else \
            getattr(node.target, "__name__", None)
        if name in VALUE_SHAPED or (name == "where" and len(node.args) == 1) or (
                node.target is operator.getitem
                and any(isinstance(a, torch.fx.Node) for a in _leaves(node.args[1:]))):
            return None
        if node.op == "get_attr":
            attributes.append((node.target, described(operator.attrgetter(node.target)(gm))))
    state = [(name, described(t)) for name, t in (*gm.named_parameters(), *gm.named_buffers())]
    return repr((gm.code, [described(t) for t in example_inputs], attributes, state,
                 gm.training, torch.__version__))


def _leaves(value: Any) -> list[Any]:
    import torch

    leaves: list[Any] = []
    torch.fx.node.map_aggregate(value, leaves.append)
    return leaves


def _recorded(gm: Any, example_inputs: list[Any], infos: dict[str, Any]) -> dict[str, Any]:
    """record_values' result without the run: the nodes' TensorInfos as recorded, the
    placeholders' copies of the examples, the attributes the get_attr nodes read."""
    import torch

    kept: dict[str, Any] = {}
    inputs = iter(example_inputs)
    for node in gm.graph.nodes:
        if node.name in infos:
            node.meta["tilesync_info"] = infos[node.name]
        if node.op == "placeholder":
            value = next(inputs, None)
            if isinstance(value, torch.Tensor):
                kept[node.name] = value.clone()
        elif node.op == "get_attr" and node.name in infos:
            kept[node.name] = operator.attrgetter(node.target)(gm)
    return kept


@dataclass(frozen=True)
class BatchNormFold:
    """An eval-mode batch norm folded into the conv before it in the graph the pieces are
    matched on (fold_batch_norms), never in the graph that runs: a piece that stays with torch
    runs the model's own conv and norm, and one of ours folds their tensors as they are at its
    call (in_model_graph, ops.FoldedBatchNorms)."""

    conv: str  # the conv's node in the model's graph
    norm: str  # the batch norm's node there: its value is the folded conv's
    folded: str  # the conv's node in the matching graph, reading the folded weight and bias
    tensors: tuple[str, str]  # the matching graph's get_attr nodes of the folded weight, bias
    sources: tuple[Any, ...]
    """The conv's weight and bias and the norm's mean, var, weight and bias: attribute paths
    (a module's), ("node", name) (Dynamo's placeholders) or None (absent)."""
    eps: float


FOLDS_META = "tilesync_folds"  # the matching graph's meta key of its [BatchNormFold]
IDENTITIES_META = "tilesync_identities"  # its key of the names of the identities left out


def without_identities(gm: Any) -> Any:
    """`gm` (a graph_copy) without the nodes whose value is their input (patterns.
    identity_input: nn.Identity, a dropout in eval mode), their readers reading the input, so
    that Linear → GeLU → Dropout → Linear is an MLP; their names in gm.meta[IDENTITIES_META].
    For matching only, as fold_batch_norms: the model's graph keeps an identity unless a
    piece of ours is all that reads it (in_model_graph), so a dropout module left there drops
    again once it is trained."""
    from tilesync.frontend.torch.patterns import identity_input

    left_out = gm.meta.setdefault(IDENTITIES_META, [])
    for node in list(gm.graph.nodes):
        x = identity_input(gm, node)
        if _is_fx_node(x):
            node.replace_all_uses_with(x)
            gm.graph.erase_node(node)
            left_out.append(node.name)
    if left_out:
        gm.graph.lint()
        gm.recompile()
    return gm


def fold_batch_norms(gm: Any, example_inputs: Any = ()) -> Any:
    """`gm` (a graph_copy: the user's modules stay as they are) with each eval-mode batch norm
    that follows a 2-D conv (a BatchNorm2d module after a Conv2d, or Dynamo's F.batch_norm
    with training=False after F.conv2d) folded into a conv reading the folded weight and bias,
    new buffers of `gm`, so that ResNet's conv → BN → ReLU → conv → BN is a conv chain; each
    fold recorded in gm.meta[FOLDS_META]. For matching only: transform rewrites the model's
    own graph (in_model_graph). `example_inputs` give Dynamo's placeholders their values."""
    import torch
    import torch.nn.functional as F

    from tilesync.frontend.torch.patterns import conv_parts

    folds = gm.meta.setdefault(FOLDS_META, [])
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = dict(zip(placeholders, example_inputs, strict=False))
    for norm in list(gm.graph.nodes):
        found = _eval_batch_norm(gm, norm)
        if found is None:
            continue
        conv, stats, eps = found
        parts = conv_parts(gm, conv) if _is_fx_node(conv) and len(conv.users) == 1 else None
        if parts is None or (conv.op == "call_module" and gm.get_submodule(conv.target)
                             .padding_mode != "zeros"):
            continue
        x, weight, bias, stride, padding = parts
        sources = (weight, bias, *stats)
        tensors = [_value_of(gm, ref, values) for ref in sources]
        if any(t is _MISSING for t in tensors) or not all(
                isinstance(t, torch.Tensor) for t in tensors[:1] + tensors[2:4]):
            continue
        from tilesync.frontend.torch.ops import fold_batch_norm

        names = [f"tilesync_folded_{len(folds)}_{part}" for part in ("weight", "bias")]
        for name, tensor in zip(names, fold_batch_norm(*tensors, eps), strict=True):
            gm.register_buffer(name, tensor)
        with gm.graph.inserting_before(conv):
            refs = [gm.graph.get_attr(name) for name in names]
            folded = gm.graph.call_function(F.conv2d, (x, *refs, stride, padding))
        folded.meta.update(norm.meta)
        norm.replace_all_uses_with(folded)
        gm.graph.erase_node(norm)
        gm.graph.erase_node(conv)
        folds.append(BatchNormFold(conv.name, norm.name, folded.name,
                                   (refs[0].name, refs[1].name),
                                   tuple(("node", r.name) if _is_fx_node(r) else r
                                         for r in sources), eps))
    if folds:
        gm.graph.lint()
        gm.recompile()
    return gm


def fold_functional_batch_norms(gm: Any, example_inputs: list[Any]) -> Any:
    """fold_batch_norms over Dynamo's graphs (F.batch_norm), its placeholders' values from
    `example_inputs` (kept for callers of the former name)."""
    return fold_batch_norms(gm, example_inputs)


def _is_fx_node(value: Any) -> bool:
    return hasattr(value, "op") and hasattr(value, "users")


def _eval_batch_norm(gm: Any, node: Any) -> tuple[Any, tuple[Any, ...], float] | None:
    """(its input, (mean, var, weight, bias) refs, eps) of a batch norm that normalizes by
    its running statistics (a BatchNorm2d module in eval mode, F.batch_norm with
    training=False), else None."""
    import torch
    import torch.nn.functional as F

    from tilesync.frontend.torch.patterns import _arg

    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        if not isinstance(module, torch.nn.BatchNorm2d) or module.training or \
                module.running_mean is None or module.running_var is None:
            return None
        affine = [f"{node.target}.{name}" if getattr(module, name) is not None else None
                  for name in ("weight", "bias")]
        return (node.args[0], (f"{node.target}.running_mean", f"{node.target}.running_var",
                               *affine), float(module.eps))
    if node.op != "call_function" or node.target is not F.batch_norm or \
            _arg(node, 5, "training", False):
        return None
    stats = tuple(_arg(node, i, name) for i, name in
                  enumerate(("running_mean", "running_var", "weight", "bias"), start=1))
    return _arg(node, 0, "input"), stats, float(_arg(node, 7, "eps", 1e-5))


_MISSING = object()


def _value_of(gm: Any, ref: Any, values: dict[Any, Any]) -> Any:
    """The tensor a fold reads: an attribute path's, a get_attr node's, a placeholder's value
    in `values`; None for None; _MISSING where it is none of these."""
    if ref is None:
        return None
    if isinstance(ref, str):
        return operator.attrgetter(ref)(gm)
    if not _is_fx_node(ref):
        return _MISSING
    if ref.op == "get_attr":
        return operator.attrgetter(ref.target)(gm)
    return values.get(ref, _MISSING)


def graph_copy(gm: Any) -> Any:
    """A GraphModule of its own graph over `gm`'s modules and parameters (not copied): what
    transform rewrites, `gm` left as it was (torch's forms of the graph)."""
    import copy

    import torch

    result = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph), gm.__class__.__name__)
    result.meta.update(getattr(gm, "meta", {}))
    result.training = gm.training
    return result


def graph_key(gm: Any, example_inputs: list[Any], report: Report) -> str:
    """What the whole graph's measured form depends on: the graph's code, its inputs' shapes,
    strides and dtypes, the pieces chosen ours, the device and torch's version."""
    import torch

    inputs = [(tuple(t.shape), tuple(t.stride()), str(t.dtype), str(t.device))
              if isinstance(t, torch.Tensor) else repr(t) for t in example_inputs]
    return repr((gm.code, inputs, [p.choice for p in report.pieces], _device_name(None),
                 torch.__version__))


def transform(gm: Any, example_inputs: list[Any], options: Options) -> tuple[Any, Report]:
    """A copy of `gm` (graph_copy) with the pieces that are better run by tilesync replaced;
    see the module docstring. `gm` itself is left as it was."""
    from tilesync.frontend.progress import Progress

    start = time.perf_counter()
    report = Report()
    model = graph_copy(gm)  # what runs: the model's own modules where a piece stays with torch
    gm = fold_batch_norms(without_identities(graph_copy(gm)),  # what the pieces are matched on
                          example_inputs)
    folds, identities = gm.meta[FOLDS_META], gm.meta[IDENTITIES_META]
    if not folds and not identities:  # nothing folded or left out: matched on what runs
        gm = model
    env = record_values(gm, example_inputs, options.cache("torch-shapes"))
    pieces = find_pieces(gm)
    if not pieces:
        report.notes.append("no piece matches the pattern library (Linear→act→Linear, "
                            "SwiGLU MLP, attention, Conv→ReLU→Conv); the graph stays with "
                            "torch")
    chosen: list[tuple[Piece, Any]] = []
    with Progress("compiling and tuning", len(pieces)) as bar:
        for index, piece in enumerate(pieces):
            entry = PieceReport(index, piece.description)
            report.pieces.append(entry)
            runner = _decide(piece, gm, env, entry, options)
            if runner is not None:
                chosen.append((piece, runner))
            bar.advance()
    if gm is not model:  # every piece over the model's nodes, found before any is replaced
        chosen = [in_model_graph(piece, runner, gm, model, folds) for piece, runner in chosen]
    replaced: dict[Any, Any] = {}  # a rewritten piece's output nodes: their items
    for piece, runner in chosen:
        rewrite(model, piece, runner, replaced)
    if chosen:
        model.graph.lint()
        model.recompile()
    report.seconds = time.perf_counter() - start
    if options.log:
        print(report.text(), file=sys.stderr)
    return model, report


def in_model_graph(piece: Piece, runner: Any, matched: Any, model: Any,
                   folds: list[BatchNormFold]) -> tuple[Piece, Any]:
    """`piece`, matched on `matched` (model's graph with batch norms folded: fold_batch_norms,
    identities left out: without_identities), over `model`'s nodes (found by name), and its
    runner. A folded conv is the model's conv and norm there, the folded weight and bias the
    tensors they are made of: the piece's ops run the norm as torch does (the backward's and
    torch's path), and the runner is wrapped to fold them at each call (ops.FoldedBatchNorms,
    made again where one changes). An identity left out that only the piece reads goes with
    it (the piece reads the identity's input)."""
    import dataclasses

    from tilesync.frontend.torch.ops import FoldedBatchNorms, TorchPiece
    from tilesync.frontend.torch.patterns import TensorInfo

    nodes = {n.name: n for n in model.graph.nodes}
    by_conv = {fold.folded: fold for fold in folds}
    by_tensor = {name: (fold, which) for fold in folds
                 for which, name in zip(("weight", "bias"), fold.tensors, strict=True)}

    def value_node(node: Any) -> Any:  # a folded conv's value is its norm's
        fold = by_conv.get(node.name)
        return nodes[fold.norm if fold else node.name]

    inputs: list[Any] = []
    infos: list[Any] = []

    def add(ref: Any, info: Any) -> int:
        if ref not in inputs:
            inputs.append(ref)
            infos.append(info)
        return inputs.index(ref)

    def source(ref: Any) -> int | None:
        if ref is None:
            return None
        if isinstance(ref, tuple):  # ("node", its name): Dynamo's placeholder
            return add(nodes[ref[1]], _info_of(matched, ref[1]))
        tensor = operator.attrgetter(ref)(model)
        return add(ref, TensorInfo(tuple(tensor.shape), tensor.dtype, tensor.device))

    plan: list[Any] = []
    for ref, info in zip(piece.inputs, piece.infos, strict=True):
        hit = None if isinstance(ref, str) else by_tensor.get(ref.name)
        if hit is None:
            plan.append(add(ref if isinstance(ref, str) else value_node(ref), info))
        else:
            fold, which = hit
            plan.append((which, tuple(source(s) for s in fold.sources), fold.eps))
    ops, results = _unfolded_ops(piece, plan)
    inner = [nodes[fold.conv] for n in piece.nodes for fold in [by_conv.get(n.name)] if fold]
    model_nodes = {nodes[n.name] for n in piece.nodes if n.name not in by_conv} | set(inner) | \
        {nodes[by_conv[n.name].norm] for n in piece.nodes if n.name in by_conv}
    left_out = set(matched.meta.get(IDENTITIES_META, ()))
    for node in reversed(model.graph.nodes):  # readers first: a chain of identities goes whole
        if node.name in left_out and node.users and all(u in model_nodes for u in node.users):
            model_nodes.add(node)
    order = {n: i for i, n in enumerate(model.graph.nodes)}
    unfolded = dataclasses.replace(
        piece, output=value_node(piece.output), nodes=sorted(model_nodes, key=order.__getitem__),
        inputs=inputs, infos=infos, ops=ops, results=results, layouts=[],
        more_outputs=[value_node(n) for n in piece.more_outputs])
    if plan == list(range(len(plan))):  # no input folded: the runner takes them as they are
        return unfolded, runner
    if isinstance(runner, TorchPiece):  # computed by torch: the model's own conv and norm
        return unfolded, TorchPiece(ops, runner.out_shapes, runner.dtype, results)
    return unfolded, FoldedBatchNorms(runner, plan)


def _info_of(gm: Any, name: str) -> Any:
    from tilesync.frontend.torch.patterns import tensor_info

    (node,) = [n for n in gm.graph.nodes if n.name == name]
    return tensor_info(gm, node)


def _unfolded_ops(piece: Piece, plan: list[Any]) -> tuple[list[tuple], list[int]]:
    """The piece's ops over the inputs `plan` names (in_model_graph): a conv reading a folded
    weight reads the conv's own weight and bias, and the batch norm follows it; and the
    values of `piece.results` among them."""
    values: list[int] = []  # the new index of each of the piece's values
    ops: list[tuple] = []
    size = 0

    def mapped(value: Any) -> Any:
        if isinstance(value, tuple) and len(value) == 2 and value[0] in ("in", "op") and \
                isinstance(value[1], int):
            return ("in", plan[value[1]]) if value[0] == "in" else ("op", values[value[1]])
        if isinstance(value, list):
            return [mapped(v) for v in value]
        return value

    for op in piece.ops:
        weight = op[2] if op[0] == "conv2d" else None
        folded = weight is not None and weight[0] == "in" and not isinstance(plan[weight[1]],
                                                                              int)
        if not folded:
            ops.append(tuple(mapped(part) for part in op))
            count = 3 if op[0] == "split3" else 1
            values.extend(range(size, size + count))
            size += count
            continue
        _, (w, b, mean, var, gamma, beta), eps = plan[weight[1]]

        def ref(index: int | None) -> tuple | None:
            return None if index is None else ("in", index)

        ops.append(("conv2d", mapped(op[1]), ref(w), ref(b), op[4], op[5]))
        ops.append(("batch_norm", ("op", size), ref(mean), ref(var), ref(gamma), ref(beta),
                    eps))
        values.append(size + 1)
        size += 2
    return ops, [values[r] for r in piece.results]


def _refuse(entry: PieceReport, options: Options, reason: str) -> None:
    entry.choice, entry.reason = "torch", reason
    if options.strict:
        raise UnsupportedError(f"piece {entry.index} ({entry.description}): {reason}")


def _decide(piece: Piece, gm: Any, env: dict[str, Any], entry: PieceReport,
            options: Options) -> Any:
    """The runner to put in the graph for `piece` (None: torch's path), `entry` filled in."""
    from tilesync.contract import CompileError
    from tilesync.frontend.torch.ops import TorchPiece

    try:
        module = graph_function(piece, names=False)
    except UnsupportedPiece as err:
        return _refuse(entry, options, str(err))
    stack = piece.stack is not None
    try:
        spec = plan(module, stack)
    except CompileError as err:
        return _refuse(entry, options, err.message)
    graph_text = str(module)  # the compile's input and the cache keys' (printed once)
    status = device_status(piece.infos)
    rates = cost.rates_for(_device_name(status))
    entry.predicted = cost.predict_stack(spec, rates) if stack else cost.predict(spec, rates)
    if status is not None:
        if options.emit_ptx and _compile(  # one form of a piece: nothing here measures others
                graph_text, entry, options, stack,
                stack_passes(options) if stack else stage_forms(spec, module)[:1]) is None:
            return None  # the compile's error is the reason
        if options.mode == "tilesync" and not options.strict:
            entry.choice, entry.reason = "tilesync", f"forced; computed by torch: {status}"
            entry.by_torch = True
            return TorchPiece(piece.ops, [i.shape for i in piece.out_infos],
                              piece.infos[0].dtype, piece.results)
        return _refuse(entry, options, status)
    if options.mode == "torch":
        entry.reason = "forced"
        return None
    if options.mode == "auto" and entry.predicted.hopeless:
        entry.reason = "the cost model"
        return None
    forms = stack_passes(options) if stack else stage_forms(spec, module)
    compiled = _compile(graph_text, entry, options, stack, forms)
    if compiled is None:
        return None
    key = repr((graph_text, _device_name(None), SYNC_PASSES, "called and replayed"))
    if options.mode == "auto":
        found, measured = _lookup(key, options)
        if found and not _ours_wins(measured):  # a cached loss loads no kernel
            entry.measured, entry.reason = measured, "measured"
            _fastest_form(forms, graph_text, entry, options)
            return None
    example = _example_values(piece, gm, env)
    runner = _fastest(piece, compiled, forms, example, graph_text, entry, options)
    if options.mode == "tilesync":
        entry.choice, entry.reason = "tilesync", "forced"
        return runner
    entry.measured, _ = _tuned(key, options, lambda: measure(piece, runner, example),
                               stands_faster=_ours_wins)
    if _ours_wins(entry.measured):
        entry.choice, entry.reason = "tilesync", "measured faster"
        return runner
    entry.reason = "measured"
    return None


def _ours_wins(measured: tuple[float, ...]) -> bool:
    """Whether ours measured faster called from the host or replayed from a CUDA graph: a
    piece ours for the replayed time alone is in the graph's forms with our pieces, which
    graph_choice measures against torch's own (a form slower called is not chosen)."""
    pairs = zip(measured[::2], measured[1::2], strict=True)
    return any(ours < cost.WIN_MARGIN * theirs for ours, theirs in pairs)


CONV_FORMS = {"cp_async": (STAGES_PASS,),
              "tma_ws": ("graph-to-stages{conv-pipeline=tma_ws}",
                         "graph-to-stages{persistent=true conv-pipeline=tma_ws}")}
"""The stage programs a conv chain is compiled to where it runs here, per graph-to-stages'
CONV_PIPELINES that take it (the TMA convs tile-synchronized, and persistent in stream order),
measured on the device (once, cached) and the fastest kept: on an H200 (bench conv, 1d750f1)
the TMA convs tile-synchronized ran the bench's 56x56 chains fastest at batch 1, C = 64 and
128 (1.37, 1.25x cuDNN in a CUDA graph), persistent in stream order at C = 256 and from batch
8 (1.08-1.50x); the cp.async convs, 0.65-1.38x, were never the fastest there."""


ATTENTION_FORMS = (STAGES_PASS, f"{STAGES_PASS}{{attention=fused}}")
"""The stage programs a self-attention piece is compiled to where the fused kernel takes its
heads (of 64 or 128 columns), measured on the device (once, cached) and the faster kept: on an
H200 (bench attention --modes, cb21082) the fused program (QKV GEMM, one attention kernel,
output GEMM) ran every 8-way tensor-parallel GPT-3 / LLaMA shape and GPT-2's causal ones
fastest (1.06-1.46x the chain's best), the chain one head of 128 up to T = 2048 (1.2-1.5x)."""


def stage_forms(spec: Any, module: Any) -> tuple[str, ...]:
    """The stage programs a piece planned as `spec` (from the graph function in `module`) is
    compiled to where it runs here: CONV_FORMS that take a conv chain, `attention_forms` for a
    self-attention, `mlp_forms` else."""
    from xdsl.dialects import func

    from tilesync.transforms.graph.graph_to_stages import (
        AttentionSpec,
        ConvChainSpec,
        FusedAttentionSpec,
        conv_chain_pipelines,
    )

    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    if isinstance(spec, ConvChainSpec):
        return tuple(form for pipeline in conv_chain_pipelines(fn)
                     for form in CONV_FORMS[pipeline])
    if isinstance(spec, AttentionSpec):
        return attention_forms(fn)
    if isinstance(spec, FusedAttentionSpec):  # after a KV cache: the fused program's alone
        return ATTENTION_FORMS[1:]
    return mlp_forms(spec)


def attention_forms(fn: Any) -> tuple[str, ...]:
    """Both of ATTENTION_FORMS where the fused program takes the attention in `fn`, else the
    chain alone."""
    from tilesync.dialects.locations import OpDiagnostic
    from tilesync.transforms.graph.graph_to_stages import fused_attention_configs, match_attention

    try:
        fused_attention_configs(match_attention(fn))
    except OpDiagnostic:  # the fused kernel refuses the heads: the chain's form only
        return (STAGES_PASS,)
    return ATTENTION_FORMS


def mlp_forms(spec: Any) -> tuple[str, ...]:
    """The stage programs a piece planned as `spec` is compiled to where it runs here: both of
    MLP_FORMS for an MLP on the TMA GEMMs, else graph-to-stages' one."""
    from tilesync.kernels.mlp import MlpSpec

    if isinstance(spec, MlpSpec) and spec.cfg1.warp_specialized:
        return MLP_FORMS
    return (STAGES_PASS,)


def _fastest(piece: Piece, entries: list[dict[str, Any]], forms: tuple[str, ...],
             example: list[Any], graph_text: str, report: PieceReport,
             options: Options) -> Any:
    """The faster of a piece's compiled forms (`forms`, one entry each: its `stage_forms`, or
    an MLP stack's pipelines) on the example inputs, each replayed from a CUDA graph (the device's
    time: the host launches them alike), measured once per device (cached); `report.variants`
    says what each took. A lone form is taken untimed."""
    if len(entries) == 1:
        return stage_runner(piece, entries[0], options.cubin_dir)
    best = _fastest_form(forms, graph_text, report, options)
    if best is not None:  # measured before: only the fastest is loaded
        return stage_runner(piece, entries[best], options.cubin_dir)
    runners = [stage_runner(piece, entry, options.cubin_dir) for entry in entries]
    times, _ = _tuned(_forms_key(graph_text, forms), options,
                      lambda: [cost.measure_graph_ms(lambda r=r: r(example)) for r in runners])
    return runners[_ranked(forms, times, report)]


def _forms_key(graph_text: str, forms: tuple[str, ...]) -> str:
    return repr((graph_text, _device_name(None), forms, TIMEOUT_NS, "graph"))


def _fastest_form(forms: tuple[str, ...], graph_text: str, report: PieceReport,
                  options: Options) -> int | None:
    """The index of the fastest of several forms where their times are cached (None where
    they are not, or there is one form), `report.variants` filled from them."""
    if len(forms) == 1:
        return None
    found, times = _lookup(_forms_key(graph_text, forms), options)
    return _ranked(forms, times, report) if found else None


def _ranked(forms: tuple[str, ...], times: list[float], report: PieceReport) -> int:
    """The index of the fastest form; `report.variants` the forms and times, fastest first."""
    order = sorted(range(len(forms)), key=times.__getitem__)
    report.variants = [(forms[i], times[i]) for i in order]
    return order[0]


def stage_runner(piece: Piece, compiled: dict[str, Any], cubin_dir: Path | None = None) -> Any:
    """The compiled piece on torch tensors: a StageRunner, inside a Relayout where the graph
    function takes permuted inputs (a conv chain, channels last); an MLP stack's
    PipelineRunner."""
    from tilesync.frontend.torch.ops import PipelineRunner, Relayout, StageRunner

    out = piece.out_info
    assert out is not None
    if piece.stack is not None:
        return PipelineRunner(compiled, piece.stack, out.dtype, cubin_dir)
    if piece.out_layout is None:
        return StageRunner(compiled, out.shape, out.dtype, cubin_dir)
    inverse = tuple(piece.out_layout.index(d) for d in range(len(out.shape)))
    graph_shape = tuple(out.shape[d] for d in inverse)  # the graph function's result
    return Relayout(StageRunner(compiled, graph_shape, out.dtype, cubin_dir), piece.layouts,
                    piece.out_layout, out.shape)


def _compile(graph_text: str, entry: PieceReport, options: Options, stack: bool,
             forms: tuple[str, ...]) -> list[dict[str, Any]] | None:
    from tilesync.contract import CompileError

    start = time.perf_counter()
    try:
        compiled, entry.cached = cached_entry(graph_text, options, stack, forms)
    except CompileError as err:
        _refuse(entry, options, f"compile: {err.message}")
        return None
    entry.compile_seconds = time.perf_counter() - start
    return compiled


def _device_name(status: str | None) -> str | None:
    if status is not None:
        return None
    from tilesync.runtime.device import get_device

    return get_device().name


def rewrite(gm: Any, piece: Piece, runner: Any, replaced: dict[Any, Any] | None = None
            ) -> None:
    """Replace the piece's nodes by one call of the custom op and an item of its outputs per
    output node (inputs: the piece's fx nodes; parameters of call_module Linears through new
    get_attr nodes), placed where every output is computed in time (insertion_point).
    `replaced` maps the outputs of pieces rewritten before to their items (a piece may read
    one: two MLPs back to back), and gets this piece's."""
    import dataclasses

    from tilesync.frontend.torch.ops import piece_op, register

    replaced = {} if replaced is None else replaced
    if any(not isinstance(r, str) and r in replaced for r in piece.inputs):
        piece = dataclasses.replace(piece, inputs=[
            r if isinstance(r, str) else replaced.get(r, r) for r in piece.inputs])
    op = piece_op()
    piece_id = register(runner, piece.ops, piece.results,
                        [(info.shape, info.dtype) for info in piece.infos],
                        shape_constants=piece.shape_constants)
    g = gm.graph
    anchor = insertion_point(gm, piece)
    assert anchor is not None  # find_pieces keeps only pieces that have one
    with g.inserting_before(piece.nodes[0]):
        args = [g.get_attr(r) if isinstance(r, str) else r for r in piece.inputs]
    with g.inserting_before(anchor):
        call = g.call_function(op, (args, piece_id))
        items = [g.call_function(operator.getitem, (call, i)) for i in range(len(piece.outputs))]
    for item, output in zip(items, piece.outputs, strict=True):
        item.meta.update(output.meta)
        output.replace_all_uses_with(item)
        replaced[output] = item
    for node in reversed(piece.nodes):
        g.erase_node(node)


__all__ = ["MODES", "BatchNormFold", "Options", "PieceReport", "Report", "UnsupportedError",
           "cached_entry", "compile_entry", "fold_batch_norms", "graph_copy", "graph_key",
           "in_model_graph", "plan", "stage_runner", "transform"]
