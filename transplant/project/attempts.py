"""Findings inside an attempt with a fallback: ``try: x = x.to(torch.float8_e5m2) except Exception:
has_fp8 = False``. Where the API fails on an NPU, the except clause takes over, as the author
planned for hardware without it; nothing fails. A finding (an API with no NPU counterpart or not
supported, a CUDA-only library's use) in the body of a ``try`` whose handler catches ``Exception``,
``BaseException`` or everything and falls back (binds something, neither raises nor exits:
library_context's rule for optional imports) is a note that names the clause. Imports are
library_context's business (an ``except ImportError`` there). Works on a CPython ``ast`` tree;
changes levels and messages of records, never code.
"""

from __future__ import annotations

import ast

from ..records import CODES, Record
from .library_context import _falls_back
from .pynames import nodes, parse

_BROAD = frozenset({"Exception", "BaseException"})
_CODES = frozenset({CODES["no_counterpart"], CODES["unsupported"], CODES["library"]})


def _broad(handler: ast.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return True
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any((n.id if isinstance(n, ast.Name) else getattr(n, "attr", "")) in _BROAD for n in names)


def attempts(tree: ast.Module) -> list[tuple[int, int, int]]:
    """(first line, last line, the handler's line) of the ``try`` bodies that fall back on any error."""
    out = []
    for node in nodes(tree):
        if isinstance(node, ast.Try) and node.body:
            handler = next((h for h in node.handlers if _broad(h) and _falls_back(h)), None)
            if handler is not None:
                last = max(s.end_lineno or s.lineno for s in node.body)
                out.append((node.body[0].lineno, last, handler.lineno))
    return out


def demote(data: bytes, records: list[Record]) -> list[Record]:
    chosen = [r for r in records if r.code in _CODES and r.level in ("error", "warning")]
    if not chosen or b"try" not in data or b"except" not in data:
        return records
    tree = parse(data)
    if tree is None:
        return records
    spans = attempts(tree)
    if not spans:
        return records
    imports = {
        line
        for node in nodes(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    for r in chosen:
        if r.line in imports:
            continue
        at = next((h for start, end, h in spans if start <= r.line <= end), None)
        if at is not None:
            r.level = "note"
            r.message += (
                f" (inside a try whose except clause at line {at} falls back: if it fails on an NPU, that runs)"
            )
    return records
