"""Qualified names in a CPython ``ast`` tree, through the file's imports (for the project scans).

The engine resolves names with libcst; the project scans run on the few files whose bytes contain
their trigger words and need only imports and attribute chains, so CPython's ``ast`` (several
times faster than libcst) is enough. Nothing here rewrites code.
"""

from __future__ import annotations

import ast
import itertools
import weakref
from collections.abc import Iterator

# a tree -> its nodes below the root, in ast.walk's order (the root is left out: the list must not
# keep the tree alive, the entry goes with the tree)
_BELOW: weakref.WeakKeyDictionary[ast.AST, list[ast.AST]] = weakref.WeakKeyDictionary()


def nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree``, in ``ast.walk``'s order. The scans of one file walk its whole tree
    many times (imports, kernels, launches, settings, builds...): the walk is done once per tree
    and its nodes listed; the trees are never changed once parsed."""
    below = _BELOW.get(tree)
    if below is None:
        walked = ast.walk(tree)
        next(walked)
        below = _BELOW[tree] = list(walked)
    return itertools.chain((tree,), below)


def bindings(tree: ast.AST) -> dict[str, str]:
    """Local name -> qualified name, for every import anywhere in the file (relative imports keep
    their leading dots: ``from . import _C`` binds ``_C`` to ``._C``)."""
    out: dict[str, str] = {}
    for node in nodes(tree):
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


# the last source parsed and its tree: one file's guards, skeleton, project scan and demotions each
# ask for the same source's tree; kept only for sources up to this size, so that the tree of a big
# file does not stay in memory beside the engine's libcst tree of it
SHARED_BYTES = 256 * 1024
_last: list[tuple[bytes, ast.Module | None]] = []


def parse(data: bytes) -> ast.Module | None:
    """The file's tree, or None when CPython cannot parse it (the engine reports that itself). The
    tree of the last source (up to SHARED_BYTES) is kept and given again for the same bytes: the
    trees are read, never changed."""
    if _last and (_last[0][0] is data or _last[0][0] == data):
        return _last[0][1]
    try:
        tree: ast.Module | None = ast.parse(data)  # bytes: CPython honours the BOM and the coding cookie
    except (SyntaxError, ValueError, LookupError, RecursionError, MemoryError):
        tree = None
    _last[:] = [(data, tree)] if len(data) <= SHARED_BYTES else []
    return tree
