"""The project's own Python modules, as the file that imports them finds them (issue 31, mechanism 1).

A guard's branch often reaches CUDA-only code through the project's own modules: ``from .fp8 import
linear`` where fp8.py calls ``torch._scaled_mm``, ``plugin.get().op(x)`` where plugin.py builds ``.cu``
sources at run time. :class:`ModuleIndex` answers "which file of the project is ``.fp8.linear``,
imported from this file, and what is the rest of the name": relative imports from the importing
file's folder, absolute ones from its package root (the folder above its topmost ``__init__.py``) or
its own folder (scripts importing their neighbours). It looks on disk, so that the file modes
(``--check``, ``--in-place``) and the language server, which convert one file, find its project as the
repository mode does; in repository mode no file outside the input folder is read.

Lazy and bounded: nothing is read until a guard asks, each folder is listed once, each file is read
and parsed at most once per process (and parsed only when its words say it may matter) (the parse is kept with the file's size and time, so that a long
running language server sees edits), and a file above ``MAX_BYTES`` is not code. Plain ``ast`` trees
out; what a module *reaches* is the guards' concern (transplant/guards/crossfile.py).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from .pynames import parse

MAX_BYTES = 4 << 20  # a larger module is generated data, not code a guard calls into
_IMPORTED = re.compile(
    rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]*\(?([\w, \t]*)|import[ \t]+([\w.]+))", re.M
)


@dataclass(frozen=True)
class Found:
    """A module of the project: its file, its name for people (relative to the project), and the
    names after the module in the qualified name (``("linear",)`` for ``.fp8.linear``)."""

    path: str
    rel: str
    rest: tuple[str, ...]


@dataclass
class Parsed:
    tree: ast.Module
    data: bytes
    stamp: tuple[int, int]


class ModuleIndex:
    """The project's modules below ``root`` ("" where the mode converts files named one by one: then
    any folder the importing file is in counts, up to its package root)."""

    def __init__(self, root: str = "") -> None:
        self.root = os.path.realpath(root) if root else ""
        self._entries: dict[str, frozenset[str]] = {}
        self._resolved: dict[tuple[str, str], Found | None] = {}
        self._sources: dict[str, tuple[bytes, tuple[int, int]]] = {}
        self._parsed: dict[str, tuple[tuple[int, int], Parsed | None]] = {}

    # ---- folders

    def entries(self, folder: str) -> frozenset[str]:
        found = self._entries.get(folder)
        if found is None:
            try:
                found = frozenset(os.listdir(folder))
            except OSError:
                found = frozenset()
            self._entries[folder] = found
        return found

    def _inside(self, path: str) -> bool:
        return not self.root or path == self.root or path.startswith(self.root + os.sep)

    def roots(self, importer: str) -> list[str]:
        """Where absolute imports of ``importer`` start: its folder, and the folder above its package."""
        folder = os.path.dirname(importer)
        out = [folder]
        top = folder
        while "__init__.py" in self.entries(top) and os.path.dirname(top) != top:
            top = os.path.dirname(top)
            if not self._inside(top):
                break
            out.append(top)
        return list(dict.fromkeys(out))

    def top_names(self, importer: str) -> frozenset[str]:
        """The first parts of absolute names that can be the project's own modules, seen from ``importer``."""
        names: set[str] = set()
        for root in self.roots(importer):
            for entry in self.entries(root):
                if entry.endswith(".py"):
                    names.add(entry[:-3])
                elif "." not in entry and "__init__.py" in self.entries(os.path.join(root, entry)):
                    names.add(entry)
        return frozenset(names)

    def imports(self, data: bytes, importer: str) -> list[str]:
        """The project's modules the source ``data`` of ``importer`` imports anywhere (files, found once)."""
        out: list[str] = []
        for dots, module, names, plain in _IMPORTED.findall(data):
            base = dots + module if dots or module else plain
            joiner = b"" if not module else b"."
            # from .ops import plugin: the submodule is what is imported, when it is one
            wanted = (
                [base] + [base + joiner + n.strip() for n in names.split(b",") if n.strip()] if not plain else [base]
            )
            for qualified in wanted:
                found = self.resolve(importer, qualified.decode("ascii", "replace"))
                if found is not None:
                    out.append(found.path)
        return list(dict.fromkeys(out))

    def may_import(self, data: bytes, importer: str) -> bool:
        """Does ``data`` (the source of ``importer``) import one of the project's modules? (cheap: imports
        are read as bytes, folders listed once)"""
        top: frozenset[str] | None = None
        for dots, module, _names, plain in _IMPORTED.findall(data):
            if dots:
                return True
            first = (module or plain).split(b".", 1)[0].decode("ascii", "replace")
            if top is None:
                top = self.top_names(importer)
            if first in top:
                return True
        return False

    # ---- names

    def resolve(self, importer: str, qualified: str) -> Found | None:
        """The module of the project that ``qualified`` (an imported name as pynames spells it, relative
        ones with their dots) names from the file ``importer``; None for anything else (a library, a
        name the project does not define as a module, the importing file itself)."""
        key = (os.path.dirname(importer), qualified)
        if key in self._resolved:
            found = self._resolved[key]
        else:
            found = self._resolve(importer, qualified)
            self._resolved[key] = found
        if found is not None and found.path == importer:
            return None
        return found

    def _resolve(self, importer: str, qualified: str) -> Found | None:
        level = len(qualified) - len(qualified.lstrip("."))
        parts = [p for p in qualified[level:].split(".") if p]
        if level:
            base = os.path.dirname(importer)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            if not self._inside(base):
                return None
            return self._within(base, parts, package_too=True)
        if not parts:
            return None
        for root in self.roots(importer):
            found = self._within(root, parts, package_too=False)
            if found is not None:
                return found
        return None

    def _within(self, base: str, parts: list[str], *, package_too: bool) -> Found | None:
        folder = base
        best: tuple[str, int] | None = None  # the deepest module found: (file, parts used)
        if package_too and "__init__.py" in self.entries(base):
            best = (os.path.join(base, "__init__.py"), 0)
        for i, part in enumerate(parts):
            names = self.entries(folder)
            if part + ".py" in names:
                best = (os.path.join(folder, part + ".py"), i + 1)
                break
            if part not in names:
                break
            folder = os.path.join(folder, part)
            if "__init__.py" not in self.entries(folder):
                break
            best = (os.path.join(folder, "__init__.py"), i + 1)
        if best is None or (best[1] == 0 and not parts):
            return None
        path, used = best
        if not self._inside(os.path.realpath(path)):
            return None
        rel = os.path.relpath(path, self.root) if self.root else os.path.relpath(path)
        return Found(path, rel.replace(os.sep, "/"), tuple(parts[used:]))

    # ---- files

    def source(self, path: str) -> tuple[bytes, tuple[int, int]] | None:
        """The module's bytes and (size, time), read once (again when the file changed); None when it
        cannot be read or is too large."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_size, st.st_mtime_ns)
        known = self._sources.get(path)
        if known is not None and known[1] == stamp:
            return known
        if st.st_size > MAX_BYTES:
            return None
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_BYTES + 1)
        except OSError:
            return None
        self._sources[path] = (data, stamp)
        return data, stamp

    def parsed(self, path: str) -> Parsed | None:
        """The module's source and tree, parsed once (again when the file changed); None when it cannot
        be read, is too large or does not parse."""
        source = self.source(path)
        if source is None:
            return None
        data, stamp = source
        known = self._parsed.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        tree = parse(data, share=False)
        found = Parsed(tree, data, stamp) if tree is not None else None
        self._parsed[path] = (stamp, found)
        return found


def on_disk(root: str, path: str) -> str:
    """The file ``path`` (as a conversion names it: relative to ``root`` in repository mode, as the user
    gave it in the file modes) on disk, or "" when it is not a file there (standard input, a notebook's
    cell program)."""
    if not path:
        return ""
    full = os.path.join(root, path) if root else path
    return os.path.realpath(full) if os.path.isfile(full) else ""


__all__ = ["Found", "MAX_BYTES", "ModuleIndex", "Parsed", "on_disk"]
