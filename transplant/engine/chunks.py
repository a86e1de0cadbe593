"""libcst's parse of a long skeleton, a few thousand lines at a time, put together as one module.

libcst's native parser holds the tokens and an intermediate tree of the whole text while it builds
the module: about ten times the memory of the module it returns (a 24k-line recipe: ~450 MB at
the peak for a ~40 MB module). Parsed in pieces of about CHUNK_LINES lines, the peak is one
piece's. The pieces end at top-level statements that only blank lines separate from the one
before (skeleton.py lists them, ``Skeleton.tops``): then the module put together is the one a
parse of the whole text gives, node for node. A piece's trailing blank lines (its module footer)
are the leading lines of the next piece's first statement, as in the whole parse; the header comes
from the first piece and the footer from the last. The pieces must agree on what libcst detects
per module (indentation, line end, encoding; a piece without an indented block gets the default
indentation, as the whole text would when none has one); where they do not, or the text is short,
it is parsed whole.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

CHUNK_LINES = 2000


def parse_chunks(text: bytes, tops: Sequence[int]) -> cst.Module:
    """The libcst module of ``text``; ``tops``: lines (1-based, ascending) where a top-level statement
    starts right after only blank lines."""
    lines = text.splitlines(keepends=True)
    cuts = _cuts(len(lines), tops)
    if not cuts:
        return cst.parse_module(text)
    bounds = [0, *cuts, len(lines)]
    pieces = [cst.parse_module(b"".join(lines[a:b])) for a, b in zip(bounds, bounds[1:])]
    first, last = pieces[0], pieces[-1]
    if any(
        (p.default_indent, p.default_newline, p.encoding)
        != (first.default_indent, first.default_newline, first.encoding)
        for p in pieces
    ):
        return cst.parse_module(text)
    body: list[cst.BaseStatement] = list(first.body)
    for before, piece in zip(pieces, pieces[1:]):
        if piece.header or not piece.body:
            return cst.parse_module(text)  # (a cut is always at a statement: not expected)
        head = piece.body[0]
        body.append(head.with_changes(leading_lines=(*before.footer, *head.leading_lines)))
        body += piece.body[1:]
    return first.with_changes(body=body, footer=last.footer, has_trailing_newline=last.has_trailing_newline)


def _cuts(count: int, tops: Sequence[int]) -> list[int]:
    """Where the pieces start (0-based line indexes), about CHUNK_LINES apart; none for a short text."""
    if count < 2 * CHUNK_LINES:
        return []
    cuts: list[int] = []
    start = 0
    for line in tops:
        at = line - 1
        if at - start >= CHUNK_LINES and count - at >= CHUNK_LINES // 2:
            cuts.append(at)
            start = at
    return cuts
