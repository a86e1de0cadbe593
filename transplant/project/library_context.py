"""Where a CUDA-only library finding (TP206) stands in its project, read after the engine's conversion
of a Python file:

* **An optional import.** An import inside ``try:`` whose handler catches ``ImportError`` (or
  ``ModuleNotFoundError``, ``Exception``, or everything) and falls back (it binds something, such as
  ``X = None`` or a flag, and neither raises nor exits; logging alone is no fallback) is a note, not an error: where the library is
  missing, as on an NPU machine, the except branch takes over (``causal_conv1d_fn = None``); so is an
  optional import of a compiled extension the project builds (TP204). The uses of the names an
  optional import binds (and the calls of the optional extension's operators) are warnings, not errors: whether the code tests for the missing library
  is for a person to check; the except clause's rebinding (``causal_conv1d_fn = None``) is no use.
* **An extension the project builds.** A library rule for a compiled extension module
  (libraries_extensions.json) says nothing where the project builds that module itself: the
  project's own findings (TP204, at its imports and at each operator call) name it.
* **The project's own package.** A library rule may name a package that the project being converted
  is (mamba_ssm's rules, converting mamba itself): uses of it in the project say nothing, since its
  CUDA-only parts are reported where they are defined (its extension imports, its Triton kernels).

Works on a CPython ``ast`` tree; changes levels and messages of records, never code.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Iterable, Sequence

from ..records import CODES, Record
from .pynames import nodes

_CATCHES = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def own_packages(python_files: Iterable[str]) -> frozenset[str]:
    """Top-level packages of the project: folders with an ``__init__.py`` at the root or under ``src/``."""
    out = set()
    for rel in python_files:
        parts = rel.split("/")
        if parts[-1] == "__init__.py":
            if len(parts) == 2:
                out.add(parts[0])
            elif len(parts) == 3 and parts[0] == "src":
                out.add(parts[1])
    return frozenset(out)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return True
    names = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return any(
        (n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else "") in _CATCHES for n in names
    )


_ENDS = {"exit", "_exit", "quit", "abort"}


def _falls_back(handler: ast.ExceptHandler) -> bool:
    """Does the except clause let the program go on without the library: it binds something (the
    names, ``X = None``, a flag, another import) and neither raises nor exits? A clause that only
    logs, or stops the program (``sys.exit(-1)``), makes the import required."""
    binds = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Global)
    return _quiet(handler) and any(isinstance(node, binds) for node in ast.walk(handler))


def _span(node: ast.stmt | ast.excepthandler) -> range:
    return range(node.lineno, (node.end_lineno or node.lineno) + 1)


def _quiet(handler: ast.ExceptHandler) -> bool:
    """Does the except clause neither raise nor exit?"""
    for node in ast.walk(handler):
        if isinstance(node, ast.Raise):
            return False
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _ENDS:
                return False
    return True


def _bound(stmts: Sequence[ast.stmt]) -> set[str]:
    """The names the import statements ``stmts`` bind."""
    names: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                names.add(alias.asname or alias.name.split(".")[0])
    return names


def _used_outside(tree: ast.Module, body: list[ast.stmt], names: set[str]) -> bool:
    """Is one of ``names`` read anywhere but in ``body`` (a try's body)?"""
    inside = {id(n) for stmt in body for n in ast.walk(stmt)}
    return any(isinstance(n, ast.Name) and n.id in names and id(n) not in inside for n in ast.walk(tree))


def optional_import_lines(tree: ast.Module) -> tuple[set[int], set[int], set[int]]:
    """(lines of import statements in a ``try:`` body that an except clause for ImportError guards,
    lines of those except clauses: ``causal_conv1d_fn = None`` there rebinds the name, it uses nothing,
    lines of those try bodies: what runs there runs only where the import succeeded). The clause
    guards where it falls back, or where it only passes or logs and nothing outside the try's body
    reads what the import binds (DeepSpeed's ``try: import apex ... except ImportError: pass``)."""
    imports: set[int] = set()
    handlers: set[int] = set()
    bodies: set[int] = set()
    for node in nodes(tree):
        if not isinstance(node, ast.Try):
            continue
        found = [stmt for stmt in node.body if isinstance(stmt, (ast.Import, ast.ImportFrom))]
        if not found:
            continue
        catching = [h for h in node.handlers if _catches_import_error(h)]
        if not any(_falls_back(h) for h in catching) and not (
            catching and all(_quiet(h) for h in catching) and not _used_outside(tree, node.body, _bound(found))
        ):
            continue
        for stmt in found:
            imports.update(_span(stmt))
        for line_stmt in node.body:
            bodies.update(_span(line_stmt))
        for handler in node.handlers:
            handlers.update(_span(handler))
    return imports, handlers, bodies


def adjust(
    data: bytes, records: list[Record], own: frozenset[str], built: frozenset[str] = frozenset()
) -> list[Record]:
    """The records with optional imports as notes; the library findings of the project's own packages
    (``own``) and of extensions the project builds (``built``) left to the project's own findings."""
    records = [r for r in records if not (r.code == CODES["library"] and r.api in built)]
    library = [
        r
        for r in records
        if (r.code == CODES["library"] or r.operation == "extension import") and not r.is_change and r.level != "note"
    ]
    if not library:
        return records
    from .pynames import parse

    tree = parse(data)
    if tree is None:
        return records
    optional, handlers, bodies = optional_import_lines(tree) if b"try" in data else (set(), set(), set())
    imports = {
        line
        for node in nodes(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    chosen = {id(r) for r in library}
    out = []
    for r in records:
        if id(r) not in chosen:
            out.append(r)
            continue
        if r.code == CODES["library"] and r.api.split(".", 1)[0] in own:
            continue  # the project's own package: its CUDA-only parts are reported where they are defined
        if r.line in optional:  # an import statement's line holds nothing but the import
            r = dataclasses.replace(
                r,
                level="note",
                message=f"{r.message} (an optional import: its except "
                "ImportError branch runs where the library is missing, as on an NPU machine)",
            )
        out.append(r)
    optional_apis = {r.api for r in out if r.line in optional} - {r.api for r in out if r.line in imports - optional}
    out = [r for r in out if not (r.line in handlers and r.api in optional_apis and r.code == CODES["library"])]
    after = bodies - imports
    return [
        dataclasses.replace(
            r,
            level="note",
            message=f"{r.message} (in the try body of its optional import: it runs only where the import succeeded)",
        )
        if r.level in ("error", "warning")
        and r.line in after
        and _under(r.api, optional_apis)
        and r.code in (CODES["library"], CODES["custom_op"])
        else dataclasses.replace(
            r,
            level="warning",
            message=f"{r.message} (imported optionally above: check that "
            "this code runs only where the import succeeded)",
        )
        if r.level == "error"
        and r.line not in imports
        and _under(r.api, optional_apis)
        and r.code in (CODES["library"], CODES["custom_op"])
        else r
        for r in out
    ]


def _under(api: str, modules: set[str]) -> bool:
    return any(api == m or api.startswith(m + ".") for m in modules)
