"""What ``from module import *`` brings into a file, when the module is one of the project's own.

A training script often gets ``torch`` (and ``nn``, ``F``...) from ``from models import *``, where
``models/__init__.py`` imports them. The names a module's star import provides are the names its
own imports bind at module level (``__all__`` restricts them when it is a literal list or tuple;
names starting with "_" are not exported without it), followed through the module's own star
imports. Found once per run: a byte search picks the files that star-import, CPython's ``ast``
reads only the modules they name. Nothing here converts code.
"""

from __future__ import annotations

import ast
import posixpath
import re
from typing import Callable

from .pynames import import_bindings

STAR_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\*", re.MULTILINE)
_ANY_STAR = re.compile(rb"import[ \t]+\*")
MAX_DEPTH = 8  # star imports of star imports


def star_targets(data: bytes) -> list[tuple[int, str]]:
    """The (level, module) of every ``from module import *`` in ``data`` (level: leading dots)."""
    if _ANY_STAR.search(data) is None:  # a literal-first search: cheap on the many files without one
        return []
    return [(len(m.group(1)), m.group(2).decode("ascii", "replace")) for m in STAR_IMPORT.finditer(data)]


def resolve(importer: str, level: int, module: str, exists: Callable[[str], bool]) -> str | None:
    """The project file (relative path with "/") that ``from <level dots><module> import *`` in
    the file ``importer`` imports, or None when it is not one of the project's files. An absolute
    module is looked for beside the importer first (its folder is on sys.path when it runs as a
    script), then from the project's root."""
    folder = posixpath.dirname(importer)
    if level:
        for _ in range(level - 1):
            folder = posixpath.dirname(folder)
        bases = [folder]
    else:
        bases = [folder, ""] if folder else [""]
    tail = module.replace(".", "/")
    for base in bases:
        stem = posixpath.join(base, tail) if tail else base
        for candidate in (stem + ".py", posixpath.join(stem, "__init__.py")):
            if candidate and exists(candidate):
                return candidate
    return None


def exported(tree: ast.Module) -> tuple[dict[str, str], list[tuple[int, str]], set[str] | None]:
    """What a module's star import gives: (name -> qualified name of its module-level imports, its
    own star imports, the names of a literal ``__all__`` or None)."""
    names: dict[str, str] = {}
    stars: list[tuple[int, str]] = []
    public: set[str] | None = None
    for node in _module_level(tree.body):
        if isinstance(node, ast.ImportFrom) and node.names[0].name == "*":
            stars.append((node.level, node.module or ""))
        elif isinstance(node, ast.Import) or isinstance(node, ast.ImportFrom) and not node.level:
            names.update(import_bindings(node))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts
            ):
                public = {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return names, stars, public


def _module_level(body: list[ast.stmt]):
    """Statements at module level, also inside if/try blocks (``try: import torch except ...``)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    yield from _module_level(handler.body)
                yield from _module_level(node.finalbody)


def provided(
    importer: str,
    targets: list[tuple[int, str]],
    read: Callable[[str], bytes | None],
    exists: Callable[[str], bool],
    known: dict[str, tuple | None] | None = None,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The names the star imports ``targets`` of ``importer`` provide, and the modules (as written,
    with their dots) that were found in the project. ``known``: what each module read so far exports
    (given again for every importer of a run: a module many files star-import is parsed once)."""
    names: dict[str, str] = {}
    resolved: list[str] = []
    known = {} if known is None else known
    for level, module in targets:
        path = resolve(importer, level, module, exists)
        if path is None:
            continue
        resolved.append("." * level + module)
        for name, qualified in _names_of(path, read, exists, set(), 0, known).items():
            names.setdefault(name, qualified)
    return names, tuple(resolved)


def _exports(path: str, read, known: dict[str, tuple | None]) -> tuple | None:
    """``exported`` of the module at ``path``, read and parsed once; None when it cannot be."""
    if path not in known:
        data = read(path)
        try:
            known[path] = exported(ast.parse(data)) if data is not None else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            known[path] = None
    return known[path]


def _names_of(path: str, read, exists, seen: set[str], depth: int, known: dict[str, tuple | None]) -> dict[str, str]:
    if path in seen or depth > MAX_DEPTH:
        return {}
    seen.add(path)
    found = _exports(path, read, known)
    if found is None:
        return {}
    names, stars, public = found
    names = dict(names)  # (the names below are added to a copy: the known exports stay as read)
    for level, module in stars:
        target = resolve(path, level, module, exists)
        if target is not None:
            for name, qualified in _names_of(target, read, exists, seen, depth + 1, known).items():
                names.setdefault(name, qualified)
    if public is not None:
        return {n: q for n, q in names.items() if n in public}
    return {n: q for n, q in names.items() if not n.startswith("_")}
