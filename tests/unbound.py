"""Names the conversion writes that no import binds where they run, read with CPython's ``ast``
independently of the engine (issue 18, pattern 3).

The names are the roots of what the rules emit: ``torch_npu``, the first part of every rename's
new name and every module an argument rule imports. A use is bound by an import of its name

- at module level (top level, or in a module-level ``try``/``with`` body): before the use when the
  use runs at module level, anywhere when it is inside a function (which runs later);
- in a block that encloses the use, before it, within the same function (``if using_colab: import
  torch`` binds the uses in that branch after it, and nothing else).

A function that binds the name itself (assignment, parameter, ...) is left alone. ``torch_npu`` is
checked everywhere; the other names only on lines the conversion wrote, and not at all in a file
with a star import (which may provide them).
"""

from __future__ import annotations

import ast
import json

from conftest import REPO


def emitted_roots() -> set[str]:
    out = {"torch_npu"}
    for path in (REPO / "rules").glob("*.json"):
        if path.name == "schema.json":
            continue
        rules = json.loads(path.read_text())["rules"]
        out |= {
            r["new_name"].split(".")[0] for r in rules.get("FuncNameModifyRule", []) if r.get("on", "name") == "name"
        }
        out |= {m.split(".")[0] for r in rules.get("ArgsModifyRule", []) for m in r.get("imports", [])}
    return out


ROOTS = emitted_roots()
_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def _imported(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {a.asname or a.name for a in stmt.names}
    return set()


def _module_level(body: list[ast.stmt]):
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.Try, ast.With)):
            yield from _module_level(stmt.body)


def unbound(source: bytes, original: bytes | None = None) -> dict[int, str]:
    """Uses (line -> name) of emitted names in ``source`` that no import binds where they run;
    with ``original``, names other than torch_npu count only on lines that are not in it."""
    tree = ast.parse(source)
    old_lines = set(original.splitlines()) if original is not None else None
    starred = any(isinstance(n, ast.ImportFrom) and n.names[0].name == "*" for n in ast.walk(tree))
    lines = source.splitlines()
    top: dict[str, int] = {}  # name -> first line of a module-level import
    for stmt in _module_level(tree.body):
        for name in _imported(stmt):
            top.setdefault(name, stmt.lineno)
    out: dict[int, str] = {}

    def visit(node: ast.AST, blocks: list[tuple[list[ast.stmt], int]], in_function: bool, local: set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for child in ast.iter_child_nodes(node):
                visit(child, [], True, params | assigned)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in ROOTS and node.id not in local:
            name, line = node.id, node.lineno
            fresh = name == "torch_npu" or not starred and (original is None or lines[line - 1] not in old_lines)
            bound = (name in top and (in_function or top[name] < line)) or any(
                name in _imported(s) and s.lineno < line for block, _ in blocks for s in block
            )
            if fresh and not bound:
                out[line] = name
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt) and field in _BLOCKS:
                for stmt in value:
                    visit(stmt, [*blocks, (value, 0)], in_function, local)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item, blocks, in_function, local)
            elif isinstance(value, ast.AST):
                visit(value, blocks, in_function, local)

    for stmt in tree.body:
        visit(stmt, [], False, set())
    return out
