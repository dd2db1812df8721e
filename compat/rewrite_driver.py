"""xDSL 0.74's pattern walker tries every pattern on every op; this driver does the same walk
trying only the patterns of the op's type (the lowering passes' pattern walks, faster).

`apply_patterns(root, patterns, recursive, dce)` does what

    PatternRewriteWalker(GreedyRewritePatternApplier(patterns, dce_enabled=dce),
                         apply_recursively=recursive).rewrite_region(root)

does: the same ops visited in the same order (pre-order, an op before its regions; with
`recursive`, xDSL's own worklist and listeners, so the same fixpoint iteration), a trivially
dead op erased before any pattern sees it, the first pattern that acts wins, ops that a
rewrite erases are not visited, errors reported the same way. What it saves:

- xDSL calls every pattern on every op, and a pattern written with `@op_type_rewrite_pattern`
  returns at once when the op is not of its type. `TypeDispatchApplier` tries on an op only
  the patterns whose type the op's class is a subclass of (computed once per class); a pattern
  without the decorator is tried on every op, as before, unless it declares the op classes it
  matches (`matches_op_class`). An op that is not dead and that no
  pattern wants is passed over without resetting the rewriter for it.
- Without `recursive` the worklist is a plain list built by one iterative walk, and a set of
  erased ops replaces xDSL's stack + index map; with it, the worklist is filled without
  xDSL's nested generators, and, without dead-code erasure (`reconcile-unrealized-casts`),
  only with the ops some pattern is of the type of (the others would be popped to no effect).

`xdsl_drivers()` switches this driver, `compat.cse`, `compat.verification` and
`compat.fast_passes` back to xDSL's own (to rule them out when something looks wrong; the tests
compare both on whole pipelines).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from tilesync.compat.effects import is_trivially_dead

_use_xdsl = False


@contextmanager
def xdsl_drivers() -> Iterator[None]:
    """Within the block, `apply_patterns` and `cse` run xDSL's walker and CSE."""
    global _use_xdsl
    before, _use_xdsl = _use_xdsl, True
    try:
        yield
    finally:
        _use_xdsl = before


def using_xdsl_drivers() -> bool:
    return _use_xdsl


def _matched_types(pattern: RewritePattern) -> object | None:
    """The op type(s) a `@op_type_rewrite_pattern` method matches, or None (any op)."""
    method = getattr(type(pattern), "match_and_rewrite", None)
    code = getattr(method, "__code__", None)
    if code is None or not method.__qualname__.startswith("op_type_rewrite_pattern."):
        return None
    if "expected_type" not in code.co_freevars or method.__closure__ is None:
        return None
    cells = dict(zip(code.co_freevars, method.__closure__, strict=True))
    return cells["expected_type"].cell_contents


def _class_filter(pattern: RewritePattern) -> Callable[[type], bool] | None:
    """Which op classes `pattern` may act on: its `matches_op_class(cls)` where it has one
    (a pattern that matches on a table of op types declares it: False for every class it
    leaves alone), its `@op_type_rewrite_pattern` type, or None (any op)."""
    declared = getattr(pattern, "matches_op_class", None)
    if declared is not None:
        return declared
    matched = _matched_types(pattern)
    if matched is None:
        return None
    return lambda cls: issubclass(cls, matched)  # type: ignore[arg-type]


class TypeDispatchApplier(GreedyRewritePatternApplier):
    """GreedyRewritePatternApplier (trivial DCE first, no folding) that skips the patterns
    that cannot act on the op's class (see `_class_filter`)."""

    def __init__(self, patterns: Iterable[RewritePattern]):
        super().__init__(list(patterns))
        self._filters = [_class_filter(p) for p in self.rewrite_patterns]
        self._by_class: dict[type, tuple[RewritePattern, ...]] = {}

    def patterns_for(self, cls: type) -> tuple[RewritePattern, ...]:
        found = self._by_class.get(cls)
        if found is None:
            found = tuple(p for p, f in zip(self.rewrite_patterns, self._filters, strict=True)
                          if f is None or f(cls))
            self._by_class[cls] = found
        return found

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if self.dce_enabled and is_trivially_dead(op):
            rewriter.erase(op)
            return
        for pattern in self.patterns_for(type(op)):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


def _preorder(region: Region) -> list[Operation]:
    """The ops nested in `region`, each before the ops of its regions (xDSL's walk order)."""
    out: list[Operation] = []
    _append_region(region, out)
    return out


def walk_ops(op: Operation) -> list[Operation]:
    """`list(op.walk())` (op first, then the ops of its regions in pre-order), without
    xDSL's nested generators."""
    out = [op]
    for region in op.regions:
        _append_region(region, out)
    return out


def _append_region(region: Region, out: list[Operation]) -> None:
    for block in region.blocks:
        for op in block.ops:
            out.append(op)
            if op.regions:
                for inner in op.regions:
                    _append_region(inner, out)


def _append_region_reversed(region: Region, out: list[Operation]) -> None:
    """`region.walk(reverse=True, region_first=True)`, into `out`."""
    for block in reversed(region.blocks):
        op = block.last_op
        while op is not None:
            for inner in reversed(op.regions):
                _append_region_reversed(inner, out)
            out.append(op)
            op = op.prev_op


def _apply(applier: TypeDispatchApplier, op: Operation, rewriter: PatternRewriter) -> bool:
    """One step of the walk on `op`: what the walker's loop body does, skipped (it would do
    nothing) when `op` is not dead and no pattern is of its type. True if `op` was tried."""
    results = op.results
    dead = applier.dce_enabled and not (results and results[0].first_use is not None) and \
        is_trivially_dead(op)  # (a used first result: not dead, without the generic check)
    patterns = () if dead else applier.patterns_for(type(op))
    if not dead and not patterns:
        return False
    rewriter.has_done_action = False
    rewriter._current_operation = op  # what the walker's (deprecated) setter does
    rewriter.insertion_point = InsertPoint.before(op)
    rewriter.name_hint = None
    try:
        if dead:
            rewriter.erase(op)
        else:
            for pattern in patterns:
                pattern.match_and_rewrite(op, rewriter)
                if rewriter.has_done_action:
                    break
    except Exception as err:
        op.emit_error(f"Error while applying pattern: {err}", underlying_error=err)
    return True


class _DispatchingWalker(PatternRewriteWalker):
    """xDSL's walker (its worklist and listeners: the same fixpoint iteration) with the
    per-op work of `_apply`; forward pre-order walks only."""

    def _populate_worklist(self, op: Operation | Region | Block) -> None:
        assert isinstance(op, Region) and not self.walk_reverse and not self.walk_regions_first
        ops: list[Operation] = []
        _append_region_reversed(op, ops)
        push = self._worklist.push
        applier = self.pattern
        assert isinstance(applier, TypeDispatchApplier)
        if applier.dce_enabled:
            for sub_op in ops:
                push(sub_op)
            return
        # Without dead-code erasure an op that no pattern is of the type of does nothing when
        # popped (each sweep of the fixpoint walk pushed every op): leave it out.
        patterns_for = applier.patterns_for
        for sub_op in ops:
            if patterns_for(type(sub_op)):
                push(sub_op)

    def _process_worklist(self, listener: PatternRewriterListener) -> bool:
        applier = self.pattern
        assert isinstance(applier, TypeDispatchApplier)
        worklist = self._worklist
        changed = False
        if not worklist:
            return changed
        op = worklist.pop()
        rewriter = PatternRewriter(op)
        rewriter.extend_from_listener(listener)
        while True:
            if _apply(applier, op, rewriter):
                changed |= rewriter.has_done_action
            if not worklist:
                return changed
            op = worklist.pop()


def apply_patterns(root: ModuleOp | Region, patterns: Sequence[RewritePattern] | RewritePattern,
                   recursive: bool = False, dce: bool = True) -> bool:
    """Rewrite the ops nested in `root` (a module or a region); True if anything changed.
    `dce=False`: no erasure of trivially dead ops (a walker given the pattern itself)."""
    region = root.body if isinstance(root, ModuleOp) else root
    listed = [patterns] if isinstance(patterns, RewritePattern) else list(patterns)
    if _use_xdsl:
        pattern = GreedyRewritePatternApplier(listed, dce_enabled=dce)
        return PatternRewriteWalker(pattern, apply_recursively=recursive).rewrite_region(region)
    applier = TypeDispatchApplier(listed)
    applier.dce_enabled = dce
    if recursive:
        return _DispatchingWalker(applier, apply_recursively=True).rewrite_region(region)

    ops = _preorder(region)
    if not ops:
        return False
    erased: set[Operation] = set()

    def on_removal(op: Operation) -> None:
        if op.regions:
            erased.update(op.walk())
        else:
            erased.add(op)

    listener = PatternRewriterListener()
    listener.operation_removal_handler.append(on_removal)
    rewriter = PatternRewriter(ops[0])
    rewriter.extend_from_listener(listener)
    changed = False
    for op in ops:
        if op not in erased and _apply(applier, op, rewriter):
            changed |= rewriter.has_done_action
    return changed
