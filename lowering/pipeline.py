"""The lowering pipeline from kernel-level IR to the llvm dialect, as a list of named passes.

Each step is a registered pass that runs alone with `tilesync-opt -p NAME`; this file only
orders them (in the spirit of Triton's compiler.py: the stages readable as a list).
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from tilesync.contract import CompileError, SourceLocation

KERNEL_TO_LLVM: tuple[str, ...] = (
    "convert-dataflow-to-nvvm",  # queue acquire/release/entry → tickets, spins, ring addresses
    "dataflow-persistent-kernel",  # a pipeline's stages → one kernel, a CTA range per stage
    "sync-fuse-launches",        # the stages of one launch → one kernel, a ticket range each
    "convert-sync-to-nvvm",      # sync.tile/wait/post → gpu ids, scf spin loops, nvvm atomics
    "convert-tile-to-nvvm",      # tensor-core tile ops → ldmatrix / mma.sync / cp.async
    "lower-affine",              # policy maps (affine.apply) → arith
    "convert-gpu-to-nvvm",       # thread/block ids, barriers → nvvm
    "lower-scf-to-cf",           # structured control flow (incl. spin loops) → cf
    "convert-nvvm-to-llvm",      # nvvm → intrinsics and inline PTX
    "convert-memref-to-llvm",    # bare pointers, GEP + load/store, shared-memory globals
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",      # gpu.func → llvm.func (ptx_kernel, launch bounds)
    "reconcile-unrealized-casts",
)
# The passes that lower spin-waits (queues, semaphores, mbarriers); `tilesync.compile(debug=...,
# timeout_ns=...)` sets their options.
SPIN_LOWERINGS: tuple[str, ...] = ("convert-dataflow-to-nvvm", "convert-sync-to-nvvm",
                                   "convert-tile-to-nvvm")


def build_pipeline(names: tuple[str, ...] | list[str] | str = KERNEL_TO_LLVM,
                   callback=None) -> PassPipeline:
    """A PassPipeline from pass names or a `-p` style spec string (options allowed).

    xDSL's `lower-affine` and `reconcile-unrealized-casts` run as their faster equivalents
    (`compat.fast_passes`: the same rewrites)."""
    from tilesync.compat.fast_passes import FAST_PASSES
    from tilesync.transforms import all_passes_with_xdsl

    spec = names if isinstance(names, str) else ",".join(names)
    passes = all_passes_with_xdsl()
    for name, fast in FAST_PASSES.items():
        passes[name] = lambda fast=fast: fast
    return parse_pipeline_spec(passes, spec, callback)


# --- `-p` specs: xDSL's syntax, with errors a user can act on ---------------------------------

PIPELINE_SOURCE = "<pipeline>"  # how a diagnostic names a position in a `-p` spec


def parse_pipeline_spec(available: dict[str, Callable[[], type[ModulePass]]], spec: str,
                        callback=None, source: str = PIPELINE_SOURCE) -> PassPipeline:
    """xDSL's `PassPipeline.parse_spec`, raising CompileError (never xDSL's ArgSpecParseError,
    a BaseException) with the position in `spec` of a syntax error, the known pass nearest to
    a misspelled one, and, for a bad option, which values the option takes."""
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as err:
        raise spec_syntax_error(err, source) from None
    passes: list[ModulePass] = []
    for arg in specs:
        factory = available.get(arg.name)
        if factory is None:
            near = difflib.get_close_matches(arg.name, list(available), n=1)
            hint = f"; did you mean '{near[0]}'?" if near else \
                "; `tilesync-opt --list-passes` lists tilesync's passes"
            raise CompileError(f"unknown pass '{arg.name}'{hint}")
        passes.append(instantiate(factory(), arg))
    return PassPipeline(tuple(passes), callback)


def instantiate(cls: type[ArgSpecConvertible], spec: ArgSpec) -> ArgSpecConvertible:
    """The pass (or target) `spec` names with its options, checked against the dataclass
    fields (name and type here, values in the class's own `__post_init__`)."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name != "name"}
    hints = typing.get_type_hints(cls)
    spec = _numbers_as_floats(spec.normalize_parameter_names(), hints)
    for key, values in spec.parameters.items():
        if key not in fields:
            known = f"its options are {', '.join(fields)}" if fields else "it takes none"
            raise CompileError(f"{cls.name}: unknown option '{key}' ({known})")
        if not _accepts(hints[key], values):
            shown = ",".join(_as_written(v) for v in values) or "nothing"
            raise CompileError(f"{cls.name}: option '{key}' takes {describe_type(hints[key])}, "
                               f"got '{shown}'")
    try:
        return cls.from_spec(spec)
    except (ValueError, TypeError) as err:  # __post_init__ refused a value
        raise CompileError(f"{cls.name}: {err}") from err


def _as_written(value) -> str:
    """An option value as the spec spelled it (the lexer made `true` the bool True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _as_float(value):
    """An option value given for a float field as a float: an integer, or a string that spells
    a number the spec's lexer leaves as text (3e12); anything else as it is."""
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _numbers_as_floats(spec: ArgSpec, hints: dict) -> ArgSpec:
    """`spec` with the values of float-typed options made floats (xDSL's from_spec refuses an
    int there: 'Incompatible types')."""
    parameters = {key: tuple(_as_float(v) for v in values) if hints.get(key) is float
                  else values for key, values in spec.parameters.items()}
    return ArgSpec(spec.name, parameters)


def describe_type(hint) -> str:
    """A pass option's type in words: "an integer", "true or false", ..."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return " or ".join(describe_type(a) for a in inner) + " (or no value)"
    if typing.get_origin(hint) is tuple:
        one = describe_type(typing.get_args(hint)[0])
        return f"a comma-separated list of {one.removeprefix('a ').removeprefix('an ')}s"
    return {bool: "true or false", int: "an integer", float: "a number",
            str: "a string"}.get(hint, str(hint))


def _accepts(hint, values: tuple) -> bool:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return (not values and len(inner) < len(typing.get_args(hint))) or any(
            _accepts(a, values) for a in inner)
    if typing.get_origin(hint) is tuple:
        return all(_accepts(typing.get_args(hint)[0], (v,)) for v in values)
    if len(values) != 1:
        return False
    value = values[0]
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def spec_syntax_error(err: ArgSpecParseError, source: str = PIPELINE_SOURCE) -> CompileError:
    """xDSL's "Error parsing pass pipeline specification:\n<name>:L:C\n<spec>\n<caret>\n
    <message>" as one line at `source`:L:C (`source`: "<pipeline>" or "<target>")."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    message = lines[-1].strip()
    line, column = 1, 1
    if len(lines) > 1 and lines[1].count(":") >= 2:
        _, line_text, column_text = lines[1].rsplit(":", 2)
        if line_text.isdigit() and column_text.isdigit():
            line, column = int(line_text), int(column_text)
    spec = lines[2] if len(lines) > 3 else ""
    before = spec[: column - 1].rstrip()
    if before.endswith("=") and message.startswith("Unknown argument value"):
        words = before[:-1].replace("{", " ").split()
        message = f"option '{words[-1] if words else '?'}' has no value after '='"
    what = "pass pipeline" if source == PIPELINE_SOURCE else "target"
    return CompileError(f"bad {what}: {message[0].lower()}{message[1:]}",
                        SourceLocation(source, line, column))


@dataclass(frozen=True)
class LowerToLLVMPass(ModulePass):
    """The whole lowering to the llvm dialect (KERNEL_TO_LLVM) as one pass."""

    name = "tilesync-lower-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        build_pipeline(KERNEL_TO_LLVM).apply(ctx, op)
