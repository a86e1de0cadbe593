"""Modules that cannot be imported on an NPU host: they import a CUDA-memory library at their top level
(issue 31, mechanism 2).

A library marked ``cuda_memory`` in rules/ (CuPy, PyCUDA: rules/libraries_kernels.json) holds its data in
CUDA memory and drives the CUDA runtime itself. A module that imports it unconditionally, at its top
level (also inside a module-level ``with`` block: verl's ``with patch(...): import cupy as cp``), is CUDA
code as a whole: it fails at import on an NPU host, and its ``torch.cuda.synchronize()`` waits for the
copies it makes into the library's CUDA buffers. Converting its torch calls gives a module that runs
nowhere (verl's NIXL checkpoint engine, whose NPU counterpart is another engine). Owns finding such a
module: every change in it becomes a note naming the library (state.py); the library's own finding says
what to do. An import inside a function, a ``try`` (optional), or an ``if`` (chosen) is no such module:
the file converts as usual.
"""

from __future__ import annotations

import libcst as cst

from ..rules import RuleSet
from .cst_util import import_module_name
from .traverse import descendants


def cuda_module_keeps(module: cst.Module, text: bytes, rules: RuleSet) -> dict[int, str]:
    """id of every node of ``module`` -> why it stays, when the module imports a CUDA-memory library at
    its top level; empty otherwise."""
    libraries = [name for name, rule in rules.library_q.items() if rule.get("cuda_memory") and name.encode() in text]
    if not libraries:
        return {}
    library = _top_level_import(module.body, libraries)
    if not library:
        return {}
    why = (
        f"the module imports {library} at its top level, which holds its data in CUDA memory and runs on CUDA "
        "only: the module cannot be imported on an NPU host, so its CUDA code is what CUDA hosts run"
    )
    return {id(node): why for node in descendants(module)}


def _top_level_import(body, libraries: list[str]) -> str:
    """The first of ``libraries`` that the statements ``body`` import unconditionally, or ""."""
    for stmt in body:
        if isinstance(stmt, cst.With):
            found = _top_level_import(stmt.body.body, libraries)
            if found:
                return found
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                for name in _imported(small):
                    match = next((lib for lib in libraries if name == lib or name.startswith(lib + ".")), "")
                    if match:
                        return match
    return ""


def _imported(small: cst.BaseSmallStatement) -> list[str]:
    if isinstance(small, cst.Import):
        return [import_module_name(alias.name) for alias in small.names]
    if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
        return [import_module_name(small.module)]
    return []
