"""xDSL 0.74's CSE rehashes an op's attributes at every lookup and copies its table for each
region; this one makes the same decisions with each key hashed once.

`cse(op)` makes the same decisions as `xdsl.transforms.common_subexpression_elimination.cse`
(xDSL 0.74): the same ops are merged into the same earlier ops and the same ops erased. What
differs is only the bookkeeping, which dominated the pass on a GEMM kernel:

- xDSL wraps an op in a fresh `OperationInfo` at every lookup and recomputes its hash (the
  hashes of all its attributes, recursively) on every lookup *and* every equality test. Here
  an op's key is built once per visit, a tuple of its name and the ids of its operands and of
  canonical attributes (equal attributes share one), hashed and compared in C; an op's key
  never changes while it is in the table (ops in the table are never rewritten: the uses
  replaced belong to ops not visited yet).
- xDSL copies the whole table when it enters a single-block region; here one table holds
  the ops of the enclosing regions too, and what a region added is undone when it is left,
  which answers the same.
"""

from __future__ import annotations

from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.rewriter import Rewriter
from xdsl.traits import IsolatedFromAbove, MemoryEffectKind

from tilesync.compat.effects import (
    get_effects,
    is_side_effect_free,
    is_terminator,
    is_trivially_dead,
    only_has_effect,
)

_UNREGISTERED: dict[type, bool] = {}  # by class: an ABC's isinstance test runs Python code


def _name(op: Operation) -> str:
    cls = type(op)
    unregistered = _UNREGISTERED.get(cls)
    if unregistered is None:
        unregistered = _UNREGISTERED[cls] = issubclass(cls, UnregisteredOp)
    return op.op_name.data if unregistered else op.name


class _Canon:
    """Each attribute object as the id of the first equal attribute met: attributes are
    immutable, the ops of a kernel share a few hundred of them (a type, a `position`), and
    xDSL recomputes their hashes recursively on every call. The attributes are kept alive, so
    their ids stay theirs."""

    __slots__ = ("by_id", "by_value")

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[int, Attribute]] = {}
        self.by_value: dict[Attribute, Attribute] = {}

    def of(self, attribute: Attribute) -> int:
        found = self.by_id.get(id(attribute))
        if found is None:
            canonical = self.by_value.setdefault(attribute, attribute)
            found = self.by_id[id(attribute)] = (id(canonical), attribute)
        return found[0]


def _entries(named: dict[str, Attribute], of) -> tuple | frozenset:
    """A dict of attributes as its (name, canonical id) pairs, equal where the dicts are."""
    if not named:
        return ()
    if len(named) == 1:
        ((name, value),) = named.items()
        return ((name, of(value)),)
    return frozenset([(name, of(value)) for name, value in named.items()])


def _key(op: Operation, canon: _Canon) -> object:
    """What xDSL's OperationInfo compares: name, attributes, properties, result types,
    operands (by identity), as a tuple of strings and ids (hashed and compared without a
    Python call); an op with regions compares their structure too (`_Key`)."""
    if op.regions:
        return _Key(op, canon)
    of = canon.of
    return (_name(op), _entries(op.attributes, of), _entries(op.properties, of),
            tuple([of(result.type) for result in op.results]), tuple(map(id, op._operands)))


class _Key:
    """`_key` of an op with regions: the hash computed once, the regions compared
    structurally."""

    __slots__ = ("hash", "name", "op")

    def __init__(self, op: Operation, canon: _Canon):
        self.op = op
        self.name = _name(op)
        of = canon.of
        entries = 0  # the attributes' and properties' (name, value) pairs, in any order
        for named in (op.attributes, op.properties):
            for k, v in named.items():
                entries += hash((k, of(v)))
        types = 0
        for result in op.results:
            types = types * 1000003 + of(result.type)
        # operands compare by identity
        self.hash = hash((self.name, entries, types, tuple(map(id, op._operands))))

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Key):
            return False
        a, b = self.op, other.op
        return (
            self.hash == other.hash
            and self.name == other.name
            and a.attributes == b.attributes
            and a.properties == b.properties
            and a._operands == b._operands
            and a.result_types == b.result_types
            and all(s.is_structurally_equivalent(o)
                    for s, o in zip(a.regions, b.regions, strict=True))
        )


class _Known:
    """The known ops of the regions being visited, an inner region's in front of those of
    the regions around it: one table, with what each region changed undone when it is left
    (a table per region cost a miss one lookup, each a Python `__hash__` call, per enclosing
    region)."""

    __slots__ = ("table", "undo")

    def __init__(self) -> None:
        self.table: dict[object, Operation] = {}
        self.undo: list[list[tuple[object, Operation | None]]] = [[]]

    def get(self, key: object) -> Operation | None:
        return self.table.get(key)

    def add(self, key: object, op: Operation, before: Operation | None) -> None:
        """`op` known by `key`, in front of `before` (`get(key)`)."""
        self.undo[-1].append((key, before))
        self.table[key] = op

    def enter(self) -> None:
        self.undo.append([])

    def leave(self) -> None:
        table = self.table
        for key, before in reversed(self.undo.pop()):
            if before is None:
                del table[key]
            else:
                table[key] = before


def _write_between(from_op: Operation, to_op: Operation) -> bool:
    """Whether an op that may write sits between `from_op` (included) and `to_op`."""
    op: Operation | None = from_op
    while op is not to_op:
        assert op is not None, "Incorrect order of ops in side-effect search"
        effects = get_effects(op)
        if effects is None or any(e.kind is MemoryEffectKind.WRITE for e in effects):
            return True
        op = op.next_op
    return False


class _CSE:
    def __init__(self) -> None:
        self.known = _Known()
        self.canon = _Canon()
        self.to_erase: list[Operation] = []  # each op once (it is visited once)
        self.visited: set[int] = set()  # ids: an op's own hash is a Python call

    def replace_and_delete(self, op: Operation, existing: Operation) -> None:
        # xDSL keeps a result whose user is a known op. Only a visited user can be known, or
        # equal to a known op: that op would share the user's operands, so it would be a
        # visited user of the same result, found itself.
        known, visited = self.known, self.visited
        for old, new in zip(op.results, existing.results, strict=True):
            if all(known.get(_key(use.operation, self.canon)) is None for use in old.uses
                   if id(use.operation) in visited):
                old.replace_all_uses_with(new)
        if all(not r.uses for r in op.results):
            self.to_erase.append(op)

    def simplify_operation(self, op: Operation) -> None:
        self.visited.add(id(op))
        if is_terminator(op):
            return
        if is_trivially_dead(op):
            self.to_erase.append(op)
            return
        if op.regions and any(len(region.blocks) > 1 for region in op.regions):
            return
        if not is_side_effect_free(op):
            if not only_has_effect(op, MemoryEffectKind.READ):
                return
            key = _key(op, self.canon)
            existing = self.known.get(key)
            if existing is not None and (op.parent_block() is existing.parent_block()
                                         and not _write_between(existing, op)):
                self.replace_and_delete(op, existing)
                return
            self.known.add(key, op, existing)
            return
        key = _key(op, self.canon)
        existing = self.known.get(key)
        if existing is not None:
            self.replace_and_delete(op, existing)
            return
        self.known.add(key, op, None)

    def simplify_block(self, block: Block) -> None:
        op = block._first_op  # xDSL's block iterator costs a Python call per op
        while op is not None:
            if op.regions:
                if op.has_trait(IsolatedFromAbove, value_if_unregistered=True):
                    outer = self.known
                    self.known = _Known()
                    for region in op.regions:
                        self.simplify_region(region)
                    self.known = outer
                else:
                    for region in op.regions:
                        self.simplify_region(region)
            self.simplify_operation(op)
            op = op._next_op

    def simplify_region(self, region: Region) -> None:
        if len(region.blocks) != 1:
            return
        self.known.enter()
        self.simplify_block(region.block)
        self.known.leave()


def cse(op: Operation) -> None:
    """Merge the side-effect-free (and safely read-only) duplicates nested in `op`."""
    from tilesync.compat.rewrite_driver import using_xdsl_drivers

    if using_xdsl_drivers():
        from xdsl.transforms.common_subexpression_elimination import cse as xdsl_cse

        xdsl_cse(op)
        return
    driver = _CSE()
    for region in op.regions:
        driver.simplify_region(region)
    for dead in driver.to_erase:
        if dead.parent is not None:
            Rewriter.erase_op(dead)
