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
- The patterns' rewriter (`_Rewriter`) makes the same IR with less of xDSL's per-op
  bookkeeping: an op without regions is linked into its block without the search of the
  block's ancestors for it, a use is moved to its new value in one step, and an erased op
  whose results have no uses gets no stand-in values for them.

`xdsl_drivers()` switches this driver, `compat.cse`, `compat.verification`,
`compat.fast_passes` and `compat.op_templates` back to xDSL's own (to rule them out when
something looks wrong; the tests compare both on whole pipelines).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from xdsl.builder import _current_builder
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.core import SSAValues
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.worklist import _MISSING, Worklist

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


# The walks follow the blocks' and ops' links themselves (xDSL 0.74's fields behind its
# `first_op`, `next_op`, ... properties): xDSL's iterators cost a Python call per op, as much
# as the rest of a light pass's visit of it.
def ops_of(root: Operation, classes: type | tuple[type, ...]) -> list[Operation]:
    """`[op for op in root.walk() if isinstance(op, classes)]`, each op class tested once:
    xDSL's ops are ABCs, whose isinstance test of a class an op is not of runs Python code
    (a walk for a few queue ops among a kernel's thousand ops paid it a thousand times)."""
    return ops_where(root, lambda cls: issubclass(cls, classes))


def ops_where(root: Operation, hit: Callable[[type], bool]) -> list[Operation]:
    """The ops of `root.walk()` whose class `hit` accepts (each class asked once)."""
    found: list[Operation] = []
    _find(root, hit, found, False)
    return found


def first_op(root: Operation, hit: Callable[[type], bool]) -> Operation | None:
    """The first op of `root.walk()` whose class `hit` accepts (each class asked once)."""
    found: list[Operation] = []
    _find(root, hit, found, True)
    return found[0] if found else None


def _find(root: Operation, hit: Callable[[type], bool], found: list[Operation],
          first: bool) -> None:
    """Append to `found` the ops of `root.walk()` whose class `hit` accepts (only the first
    with `first`), following the IR's links: no list of every op is built."""
    tested: dict[type, bool] = {}

    def visit(op: Operation) -> bool:  # True: stop
        while op is not None:
            cls = type(op)
            yes = tested.get(cls)
            if yes is None:
                yes = tested[cls] = hit(cls)
            if yes:
                found.append(op)
                if first:
                    return True
            for region in op.regions:
                block = region._first_block
                while block is not None:
                    inner = block._first_op
                    if inner is not None and visit(inner):
                        return True
                    block = block._next_block
            op = op._next_op
        return False

    cls = type(root)
    if hit(cls):
        found.append(root)
        if first:
            return
    for region in root.regions:
        block = region._first_block
        while block is not None:
            if block._first_op is not None and visit(block._first_op):
                return
            block = block._next_block


def _append_region(region: Region, out: list[Operation]) -> None:
    block = region._first_block
    while block is not None:
        op = block._first_op
        while op is not None:
            out.append(op)
            if op.regions:
                for inner in op.regions:
                    _append_region(inner, out)
            op = op._next_op
        block = block._next_block


def _append_region_reversed(region: Region, out: list[Operation]) -> None:
    """`region.walk(reverse=True, region_first=True)`, into `out`."""
    block = region._last_block
    while block is not None:
        op = block._last_op
        while op is not None:
            for inner in reversed(op.regions):
                _append_region_reversed(inner, out)
            out.append(op)
            op = op._prev_op
        block = block._prev_block


def _dead(op: Operation) -> bool:
    """`is_trivially_dead(op)`, answered at once for an op whose first result is used."""
    for result in op.results:  # the first
        return result.first_use is None and is_trivially_dead(op)
    return is_trivially_dead(op)


def _apply(applier: TypeDispatchApplier, op: Operation, rewriter: PatternRewriter) -> bool:
    """One step of the walk on `op`: what the walker's loop body does, skipped (it would do
    nothing) when `op` is not dead and no pattern is of its type. True if `op` was tried."""
    dead = applier.dce_enabled and _dead(op)
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


_OP_CLASSES: dict[type, bool] = {}


def _is_op(cls: type) -> bool:
    """`issubclass(cls, Operation)`, asked once a class (an ABC's test runs Python code)."""
    found = _OP_CLASSES.get(cls)
    if found is None:
        found = _OP_CLASSES[cls] = issubclass(cls, Operation)
    return found


def _link_ops(ops: Sequence[Operation], point: InsertPoint) -> None:
    """`Rewriter.insert_op(ops, point)` for ops without regions, linked by xDSL's own helpers
    as `Block.insert_op_before` and `Block.add_op` link them, without `Block._attach_op`'s
    search of the block's ancestors for the op (only an op with regions can be one of them):
    on a persistent kernel a dozen regions deep the search was a tenth of the lowering."""
    block, before = point.block, point.insert_before
    for new in ops:
        if new.parent:
            raise ValueError("Can't add to a block an operation already attached to a block.")
        if before is None:  # Block.add_op
            last = block._last_op
            new.parent = block
            if last is None:
                block._first_op = new
            else:
                last._insert_next_op(new)
            block._last_op = new
        else:  # Block.insert_op_before
            if before.parent is not block:
                raise ValueError("Can't insert operation before operation not in current block")
            new.parent = block
            if before._prev_op is None:
                block._first_op = new
            before._insert_prev_op(new)


class _Rewriter(PatternRewriter):
    """xDSL's PatternRewriter, inserting ops without regions by `_link_ops` and replacing
    and erasing with less of xDSL's per-op bookkeeping (see each method)."""

    def insert(self, op, insertion_point: InsertPoint | None = None):  # type: ignore[override]
        ops = (op,) if _is_op(type(op)) else op
        if not ops or any(o.regions for o in ops) or _current_builder.builder is not None:
            return super().insert(op, insertion_point)
        self.has_done_action = True
        _link_ops(ops, self.insertion_point if insertion_point is None else insertion_point)
        for new in ops:  # what Builder.insert does after the insertion
            if self._name_hint is not None:
                for result in new.results:
                    if result.name_hint is None:
                        result._name = self._name_hint
            self.handle_operation_insertion(new)
        return op

    def erase(self, op: Operation, safe_erase: bool = True) -> None:
        """PatternRewriter's, without the `ErasedSSAValue` xDSL makes to take the uses of
        each result when no result has a use (as for most ops a rewrite erases)."""
        if op.regions or not safe_erase or any(r.first_use is not None for r in op.results):
            super().erase(op, safe_erase)
            return
        self.has_done_action = True
        self.handle_operation_removal(op)
        if op.parent is not None:
            op.parent.detach_op(op)
        op.drop_all_references()  # Operation.erase, its results having nothing to replace

    def replace_all_uses_with(self, from_value: SSAValue, to_value: SSAValue | None,
                              safe_erase: bool = True) -> None:
        """PatternRewriter's, each use moved to `to_value` in the user's operand tuple at
        once (xDSL's operand view rebuilds the tuple from three slices, a Python call
        each)."""
        if to_value is None or from_value is to_value:
            super().replace_all_uses_with(from_value, to_value, safe_erase)
            return
        modified: list[Operation] = []
        use = from_value.first_use
        while use is not None:  # in `uses` order, as xDSL moves them
            following = use._next_use
            user = use.operation
            operands = list(user._operands)
            from_value.remove_use(use)
            to_value.add_use(use)
            operands[use.index] = to_value
            user._operands = SSAValues(operands)
            modified.append(user)
            use = following
        if to_value.name_hint is None:  # as SSAValue.replace_all_uses_with carries it
            to_value.name_hint = from_value.name_hint
        if modified:
            self.has_done_action = True
        for user in modified:
            self.handle_operation_modification(user)


class _IdWorklist(Worklist):
    """xDSL's worklist keyed by the ops' ids (an op's own hash is a Python call): an op is
    in the map only while it is in the stack, which keeps it alive and its id its own."""

    def push(self, item: Operation) -> None:
        key = id(item)
        if key not in self._map:
            self._map[key] = len(self._stack)  # type: ignore[index]
            self._stack.append(item)

    def pop(self) -> Operation:
        stack = self._stack
        try:
            while (item := stack.pop()) is _MISSING:
                pass
        except IndexError:
            raise IndexError("pop from empty worklist") from None
        del self._map[id(item)]  # type: ignore[arg-type]
        return item  # type: ignore[return-value]

    def remove(self, item: Operation) -> None:
        index = self._map.pop(id(item), None)  # type: ignore[call-overload]
        if index is not None:
            self._stack[index] = _MISSING


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
        patterns_for = applier.patterns_for
        if applier.dce_enabled:
            # A sweep in which no op is trivially dead and none is of a pattern's type changes
            # nothing (as the last sweep of the fixpoint iteration mostly is): leave it out.
            if any(patterns_for(type(sub_op)) or _dead(sub_op) for sub_op in ops):
                for sub_op in ops:
                    push(sub_op)
            return
        # Without dead-code erasure an op that no pattern is of the type of does nothing when
        # popped (each sweep of the fixpoint walk pushed every op): leave it out.
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
        rewriter = _Rewriter(op)
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
        walker = _DispatchingWalker(applier, apply_recursively=True)
        walker._worklist = _IdWorklist()
        return walker.rewrite_region(region)

    ops = _preorder(region)
    if not ops:
        return False
    # By id: an op's own hash is a Python call. The walked ops stay alive (in `ops`), so no
    # other object takes their ids.
    erased: set[int] = set()

    def on_removal(op: Operation) -> None:
        if op.regions:
            erased.update(map(id, walk_ops(op)))
        else:
            erased.add(id(op))

    listener = PatternRewriterListener()
    listener.operation_removal_handler.append(on_removal)
    rewriter = _Rewriter(ops[0])
    rewriter.extend_from_listener(listener)
    changed = False
    # `_apply`'s test first, inline: most ops of a pass's walk are of no pattern's type.
    by_class, dce = applier._by_class, applier.dce_enabled
    for op in ops:
        patterns = by_class.get(type(op))
        if patterns == () and not (dce and _dead(op)):
            continue
        if id(op) not in erased and _apply(applier, op, rewriter):
            changed |= rewriter.has_done_action
    return changed
