"""Where a multi-backend helper's NPU arm lives when it is not in the helper itself (issue 31, mechanism 6).

``pin_visible(devices)`` handles ROCm beside CUDA and then sets ``os.environ[visible_devices_variable()]``,
a project function that returns ``"ASCEND_RT_VISIBLE_DEVICES"`` on an NPU: the helper has an NPU arm,
one call away. multi_backend.py warns about a helper with no NPU arm of its own only when none of the
project functions it calls names NPU itself. This module answers that for the functions a file imports
from the project's other modules (a function of the same module is multi_backend.py's own lookup):
the import is resolved as the guards resolve it (project/modules.py, on disk, never outside the run's
root), and the function is read in that module's ``ast`` tree.
"""

from __future__ import annotations

import ast
from typing import Callable

import libcst as cst

from ..project.modules import ModuleIndex
from .cst_util import import_module_name
from .multi_backend import backend_of_text

_INDEXES: dict[str, ModuleIndex] = {}  # per root, for the process (a module is read and parsed once)


def arms_elsewhere(module: cst.Module, origin: str, root: str) -> Callable[[str], str]:
    """For the file ``origin`` (on disk), parsed as ``module``: a function from a callee's spelling
    (``visible_devices_variable``, ``device.pick``) to "module.py: name()" when it is a function of
    another module of the project whose own code names NPU, else ""."""
    names = _imported_names(module)
    index = _INDEXES.setdefault(root, ModuleIndex(root))

    def find(spelling: str) -> str:
        first, _, rest = spelling.partition(".")
        qualified = names.get(first)
        if qualified is None:
            return ""
        found = index.resolve(origin, f"{qualified}.{rest}" if rest else qualified)
        if found is None or len(found.rest) != 1:
            return ""
        parsed = index.parsed(found.path)
        if parsed is None:
            return ""
        for stmt in parsed.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == found.rest[0]:
                return f"{found.rel}: {stmt.name}()" if _names_npu(stmt) else ""
        return ""

    return find


def _names_npu(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = func.body[1:] if func.body and _is_docstring(func.body[0]) else func.body
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if backend_of_text(text, string=isinstance(node, ast.Constant)) == "NPU":
            return True
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _imported_names(module: cst.Module) -> dict[str, str]:
    """Local name -> qualified name (relative ones with their dots) of the module's top-level imports."""
    out: dict[str, str] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                base = "." * len(small.relative) + (import_module_name(small.module) if small.module else "")
                for alias in small.names:
                    name = import_module_name(alias.name)
                    local = (
                        alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
                    )
                    out[local] = f"{base}.{name}" if base and not base.endswith(".") else f"{base}{name}"
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    name = import_module_name(alias.name)
                    if alias.asname and isinstance(alias.asname.name, cst.Name):
                        out[alias.asname.name.value] = name
                    else:
                        out[name.split(".")[0]] = name.split(".")[0]
    return out
