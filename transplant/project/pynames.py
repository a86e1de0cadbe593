"""Qualified names in a CPython ``ast`` tree, through the file's imports (for the project scans).

The engine resolves names with libcst; the project scans run on the few files whose bytes contain
their trigger words and need only imports and attribute chains, so CPython's ``ast`` (several
times faster than libcst) is enough. Nothing here rewrites code.
"""

from __future__ import annotations

import ast


def bindings(tree: ast.AST) -> dict[str, str]:
    """Local name -> qualified name, for every import anywhere in the file (relative imports keep
    their leading dots: ``from . import _C`` binds ``_C`` to ``._C``)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(import_bindings(node))
    return out


def import_bindings(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """What one import statement binds: local name -> qualified name (a star binds nothing here)."""
    out: dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                out[alias.asname] = alias.name
            else:
                root = alias.name.split(".", 1)[0]
                out[root] = root
        return out
    base = "." * node.level + (node.module or "")
    for alias in node.names:
        if alias.name != "*":
            joiner = "" if base.endswith(".") or not base else "."
            out[alias.asname or alias.name] = base + joiner + alias.name
    return out


def dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything that is not a plain name chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def qualify(node: ast.AST, names: dict[str, str]) -> str | None:
    """The qualified name of a name chain whose root is bound by an import, else None."""
    parts = dotted(node)
    if parts is None or parts[0] not in names:
        return None
    return ".".join([names[parts[0]], *parts[1:]])


def source_lines(data: bytes) -> list[str]:
    """The source's lines as text (decoded as CPython would), for code point columns."""
    try:
        encoding = _encoding(data)
        text = data.decode(encoding, "replace")
    except LookupError:
        text = data.decode("utf-8", "replace")
    return text.removeprefix("\ufeff").splitlines()


def _encoding(data: bytes) -> str:
    import io
    import tokenize

    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return "utf-8"


def column(lines: list[str], line: int, col_offset: int) -> int:
    """1-based code point column of an ``ast`` position (``col_offset`` counts UTF-8 bytes)."""
    if 1 <= line <= len(lines):
        return len(lines[line - 1].encode("utf-8")[:col_offset].decode("utf-8", "replace")) + 1
    return col_offset + 1


def parse(data: bytes) -> ast.Module | None:
    """The file's tree, or None when CPython cannot parse it (the engine reports that itself)."""
    try:
        return ast.parse(data)  # bytes: CPython honours the BOM and the coding cookie
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
