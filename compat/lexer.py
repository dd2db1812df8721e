r"""xDSL 0.74's lexer matches a string literal with `"(?:[^"\\\n\v\f]+|\\(?:...))*"`, a
repeated group of repeated characters: on a literal with no closing quote, Python's regex engine
tries every way of splitting the rest of the line into runs before it gives up, 2^n steps for n
characters (a stray `"` before 40 characters of a line takes minutes).

`install_string_literal_regex()` puts in its place the same language matched one character
(or one escape) per repetition, so that each position has one way to match and a failure
costs one pass over the line. Installed on import of this module (and so whenever
`tilesync.dialects` is imported).
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

# xDSL's, for the parity test: the characters a literal may hold, and its escapes.
XDSL_STRING_LITERAL = MLIRLexer._unescaped_characters_regex
STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


def install_string_literal_regex() -> None:
    """Match string literals in linear time (idempotent)."""
    MLIRLexer._unescaped_characters_regex = STRING_LITERAL


install_string_literal_regex()

__all__ = ["STRING_LITERAL", "XDSL_STRING_LITERAL", "install_string_literal_regex"]
