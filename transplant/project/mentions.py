"""APIs that a file names without running them: a class in ``isinstance(m, (nn.RNN, nn.LSTM))`` or
``issubclass(cls, nn.TransformerDecoder)`` tests what an object is; nothing of that class runs there.
A finding that the API is not supported on NPU (TP201, TP202) at such a place is a note that says so;
the places that build or call the class keep their own findings. Works on a CPython ``ast`` tree;
changes levels and messages of records, never code.
"""

from __future__ import annotations

import ast

from ..records import CODES, Record
from .pynames import column, parse, source_lines

WORDS = (b"isinstance", b"issubclass")
_TESTS = frozenset({"isinstance", "issubclass"})
_UNSUPPORTED = frozenset({CODES["no_counterpart"], CODES["unsupported"]})

Span = tuple[tuple[int, int], tuple[int, int]]  # (line, 1-based column) of the first and the last character


def class_tests(tree: ast.Module, lines: list[str]) -> list[Span]:
    """The spans of the class arguments of ``isinstance``/``issubclass`` calls."""
    spans = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _TESTS
            and len(node.args) == 2
        ):
            arg = node.args[1]
            end = arg.end_lineno or arg.lineno
            spans.append(
                (
                    (arg.lineno, column(lines, arg.lineno, arg.col_offset)),
                    (end, column(lines, end, arg.end_col_offset or 0)),
                )
            )
    return spans


def demote(data: bytes, records: list[Record]) -> list[Record]:
    """``records`` with the unsupported-API findings inside class tests made notes."""
    chosen = [r for r in records if r.code in _UNSUPPORTED and r.level in ("error", "warning")]
    if not chosen or not any(w in data for w in WORDS):
        return records
    tree = parse(data)
    if tree is None:
        return records
    spans = class_tests(tree, source_lines(data))
    for r in chosen:
        if any(first <= (r.line, r.col) < last for first, last in spans):
            r.level = "note"
            r.message += " (only named in an isinstance/issubclass test here: nothing of it runs on this line)"
    return records
