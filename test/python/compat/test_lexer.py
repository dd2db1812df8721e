"""compat.lexer: string literals match exactly what xDSL's regex matches, in linear time."""

from __future__ import annotations

import time

import pytest
from xdsl.utils.exceptions import ParseError

from tilesync.api import parse
from tilesync.compat.lexer import STRING_LITERAL, XDSL_STRING_LITERAL

LITERALS = [
    '""', '"plain"', '"with space and \\"escaped\\" quotes"', '"tab\\tnew\\nline"',
    '"back\\\\slash"', '"hex \\0A\\ff"', '"unicode \u00e9\u4e2d"', '"a" trailing', '"a""b"',
    '"bad \\q escape"', '"\\', '"unterminated', '"line\nbreak"', '"vertical\vtab"',
    '"form\ffeed"', 'no quote', '"x\\"', '"\\0"', '"\\0g"',
]


@pytest.mark.parametrize("text", LITERALS)
def test_matches_what_xdsl_matches(text):
    ours, theirs = STRING_LITERAL.match(text), XDSL_STRING_LITERAL.match(text)
    assert (ours and ours.group()) == (theirs and theirs.group())


def test_the_lexer_uses_it():
    from xdsl.utils.mlir_lexer import MLIRLexer

    assert MLIRLexer._unescaped_characters_regex is STRING_LITERAL


def test_an_unterminated_literal_fails_at_once():
    """xDSL's regex takes 2^n steps for n characters after a stray quote (minutes at 40)."""
    line = '"test.op"()" {p = #sync.policy<Custom (d0, d1) -> (d0, d1), posts = 1>} : () -> ()'
    start = time.perf_counter()
    with pytest.raises(Exception) as info:
        parse(line + " " * 1000 + "\n", name="quote.mlir")
    assert time.perf_counter() - start < 2
    assert str(info.value) == "quote.mlir:1:12: End of file reached before closing string literal."
    assert not isinstance(info.value, ParseError)  # a CompileError for the user
