"""xDSL 0.74's `is_trivially_dead`, `get_effects` and `is_side_effect_free` search the op's
traits on every call, and the pattern driver and CSE ask them of nearly every op of every pass;
these answer the same, computing once per op class what depends only on the class.

What depends only on the class: whether it is a terminator or a symbol, and its memory effects
where every MemoryEffect trait it has declares a fixed set (NoMemoryEffect and Pure,
MemoryReadEffect, MemoryWriteEffect, MemoryAllocEffect, MemoryFreeEffect: their `get_effects`
ignores the op).
An op whose effects depend on the op itself (RecursiveMemoryEffect, a custom trait) or that is
unregistered is answered by xDSL's functions. A class's facts are recomputed when its traits
change (`OpTraits.add_trait` replaces the set).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Operation
from xdsl.traits import (
    EffectInstance,
    IsTerminator,
    MemoryAllocEffect,
    MemoryEffect,
    MemoryEffectKind,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoMemoryEffect,
    OpTrait,
    SymbolOpInterface,
)
from xdsl.traits import get_effects as xdsl_get_effects
from xdsl.transforms.dead_code_elimination import is_trivially_dead as xdsl_is_trivially_dead
from xdsl.transforms.dead_code_elimination import result_only_effects

# Traits whose get_effects returns the same set for every op (and subclasses that inherit
# it, such as Pure).
_FIXED_EFFECT_TRAITS: tuple[type[MemoryEffect], ...] = (
    NoMemoryEffect, MemoryReadEffect, MemoryWriteEffect, MemoryAllocEffect, MemoryFreeEffect)
_FIXED_GET_EFFECTS = frozenset(cls.get_effects.__func__ for cls in _FIXED_EFFECT_TRAITS)


def _has_fixed_effects(trait: MemoryEffect) -> bool:
    return getattr(type(trait).get_effects, "__func__", None) in _FIXED_GET_EFFECTS


class _ClassFacts:
    """What xDSL's queries read from an op's class alone."""

    __slots__ = ("effects", "fixed", "registered", "result_only", "symbol", "terminator",
                 "traits")

    def __init__(self, cls: type[Operation], traits: frozenset[OpTrait]):
        self.traits = traits
        self.registered = not issubclass(cls, UnregisteredOp)
        self.terminator = cls.has_trait(IsTerminator)
        self.symbol = cls.has_trait(SymbolOpInterface)
        effect_traits = [t for t in traits if isinstance(t, MemoryEffect)]
        # fixed: the effects are the same for every op of the class (None: unknown effects)
        self.fixed = all(_has_fixed_effects(t) for t in effect_traits)
        self.effects: frozenset[EffectInstance] | None = None
        if effect_traits and self.fixed:
            self.effects = frozenset().union(*(t.get_effects(None) for t in effect_traits))  # type: ignore[arg-type]
        # result_only_effects for fixed effects: reads only (a fixed ALLOC has no value)
        self.result_only = self.effects is not None and all(
            e.kind is MemoryEffectKind.READ for e in self.effects)


_facts_by_class: dict[type[Operation], _ClassFacts] = {}


def _facts(cls: type[Operation]) -> _ClassFacts | None:
    """The class's facts (None for an unregistered op: xDSL answers)."""
    traits = cls.traits.traits
    found = _facts_by_class.get(cls)
    if found is None or found.traits is not traits:
        found = _facts_by_class[cls] = _ClassFacts(cls, traits)
    return found if found.registered else None


def is_terminator(op: Operation) -> bool:
    """`op.has_trait(IsTerminator)` (True for an unregistered op, as xDSL answers)."""
    facts = _facts(type(op))
    return True if facts is None else facts.terminator


def get_effects(op: Operation) -> AbstractSet[EffectInstance] | None:
    """xDSL's `get_effects(op)`: the op's memory effects, None where unknown."""
    facts = _facts(type(op))
    if facts is None or not facts.fixed:
        return xdsl_get_effects(op)
    return facts.effects


def is_side_effect_free(op: Operation) -> bool:
    effects = get_effects(op)
    return effects is not None and len(effects) == 0


def only_has_effect(op: Operation, effect: MemoryEffectKind) -> bool:
    effects = get_effects(op)
    return effects is not None and all(e.kind == effect for e in effects)


def is_trivially_dead(op: Operation) -> bool:
    """xDSL's `is_trivially_dead(op)`: no result used, and nothing observable besides them."""
    for result in op.results:
        if result.first_use is not None:
            return False
    facts = _facts(type(op))
    if facts is None:
        return xdsl_is_trivially_dead(op)
    if facts.terminator or facts.symbol:
        return False
    return facts.result_only if facts.fixed else result_only_effects(op)


__all__ = ["get_effects", "is_side_effect_free", "is_terminator", "is_trivially_dead",
           "only_has_effect"]
