"""Qualified names in a CPython ``ast`` tree, through the file's imports (for the project scans).

The engine resolves names with libcst; the project scans run on the few files whose bytes contain
their trigger words and need only imports and attribute chains, so CPython's ``ast`` (several
times faster than libcst) is enough. Nothing here rewrites code.
"""

from __future__ import annotations

import ast
import itertools
import re
import weakref
from typing import Callable
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
        below = _BELOW[tree] = _walk(tree)[1:]
    return itertools.chain((tree,), below)


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, several times faster (for the subtrees an analysis walks again and
    again: a guard's region, a test; a whole tree's list is ``nodes``)."""
    return _walk(node)


def _walk(tree: ast.AST, parents: dict[int, ast.AST] | None = None) -> list[ast.AST]:
    """``list(ast.walk(tree))``, the same nodes in the same order (breadth first, each node's
    children in the order of its ``_fields``), without ast.walk's generators per node: a
    list that is its own queue. ``parents``: filled with the parent of each node (by id)."""
    out = [tree]
    node_type, list_type = ast.AST, list
    append = out.append
    for node in out:  # (the loop reaches the nodes appended while it runs)
        for name in node._fields:
            try:
                value = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(value, node_type):
                append(value)
                if parents is not None:
                    parents[id(value)] = node
            elif isinstance(value, list_type):
                for item in value:
                    if isinstance(item, node_type):
                        append(item)
                        if parents is not None:
                            parents[id(item)] = node
    return out


def index(tree: ast.AST) -> tuple[list[ast.AST], dict[int, ast.AST]]:
    """Every node of ``tree`` (the list ``nodes`` gives) and the parent of each (id of the node ->
    its parent), in one walk, whose list ``nodes`` then gives again. (The parents are not kept: they
    hold the tree, which must go when its user lets it go.)"""
    parents: dict[int, ast.AST] = {}
    out = _walk(tree, parents)
    if tree not in _BELOW:
        _BELOW[tree] = out[1:]
    return out, parents


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


def parse(data: bytes, *, share: bool = True) -> ast.Module | None:
    """The file's tree, or None when CPython cannot parse it (the engine reports that itself). The
    tree of the last source (up to SHARED_BYTES) is kept and given again for the same bytes: the
    trees are read, never changed. ``share=False``: for a caller that keeps the trees it asks for
    (modules.py, the other modules a guard calls into), whose parse must not take the place of the
    file being converted."""
    if _last and (_last[0][0] is data or _last[0][0] == data):
        return _last[0][1]
    key = hash(data)
    seen = _alive.get(key)
    tree: ast.Module | None = seen[1]() if seen is not None and seen[0] == data else None
    if tree is None:
        try:
            tree = _parse_pieces(data) if len(data) > 2 * PIECE_BYTES else None
            if tree is None:
                tree = ast.parse(data)  # bytes: CPython honours the BOM and the coding cookie
        except (SyntaxError, ValueError, LookupError, RecursionError, MemoryError):
            tree = None
        if tree is not None:
            _alive[key] = (data, weakref.ref(tree, _forget(key)))
    if share:
        _last[:] = [(data, tree)] if len(data) <= SHARED_BYTES else []
    return tree


# every tree parsed that someone still holds, by its source: a module the guards followed into
# (modules.py keeps those) is not parsed again when its own turn to be converted comes, nor the
# reverse; an entry goes with its tree
_alive: dict[int, tuple[bytes, weakref.ref[ast.Module]]] = {}


def _forget(key: int) -> Callable[[weakref.ref[ast.Module]], None]:
    def forget(ref: weakref.ref[ast.Module]) -> None:
        known = _alive.get(key)
        if known is not None and known[1] is ref:  # (not a newer tree of another source with the same hash)
            del _alive[key]

    return forget


# a long source is parsed in pieces of about this size: CPython's parser holds its own tree of the
# whole text beside the one it returns, twice the memory at the peak (a 72k-line file: 350 MB)
PIECE_BYTES = 128 * 1024
# where a piece may start: a line at column 0 after an empty line, not one that continues a statement
_CUT = re.compile(rb"\n\r?\n(?=[A-Za-z_@])(?!(?:else|elif|except|finally)\b)")
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


def _parse_pieces(data: bytes) -> ast.Module | None:
    """The tree of a long ``data``, parsed in pieces; None where it must be parsed whole. Each piece
    is parsed after as many empty lines as come before it, so that line numbers are those of the
    file. A piece that does not parse (a cut inside a string, say) means the whole is parsed, and so
    does a BOM or coding cookie (later pieces would not see it), a lone carriage return or a later ``__future__`` import. A
    cut after a prefix that parses whole is a top-level statement boundary of the file: the
    tokenizer is then at the start of a line, outside any bracket or string, so the pieces' trees
    are the whole's."""
    lone_cr = b"\r" in data and data.count(b"\r") != data.count(b"\r\n")  # (lines are counted by "\n")
    if (
        lone_cr
        or data.startswith(b"\xef\xbb\xbf")
        or _COOKIE.search(data, 0, data.find(b"\n", data.find(b"\n") + 1) + 1)
    ):
        return None
    cuts = [0]
    while True:
        found = _CUT.search(data, cuts[-1] + PIECE_BYTES)
        if found is None or len(data) - found.end() < PIECE_BYTES // 2:
            break
        cuts.append(found.end())
    if len(cuts) == 1:
        return None
    cuts.append(len(data))
    body: list[ast.stmt] = []
    ignores: list[ast.TypeIgnore] = []
    for start, end in zip(cuts, cuts[1:]):
        piece = data[start:end]
        if start and b"__future__" in piece:
            return None
        try:
            tree = ast.parse(b"\n" * data.count(b"\n", 0, start) + piece)
        except SyntaxError:
            return None
        body += tree.body
        ignores += tree.type_ignores
    return ast.Module(body=body, type_ignores=ignores)
