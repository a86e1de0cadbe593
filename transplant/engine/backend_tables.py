"""Tables of collective backend names that list HCCL's already (issue 31, mechanism 6).

A project that runs on several backends often names each backend once, at module level:
``NCCL_BACKEND = "nccl"`` beside ``HCCL_BACKEND = "hccl"``, ``GLOO_BACKEND = "gloo"``. Such a
constant says which backend another value is (``if backend == NCCL_BACKEND``); renaming its value
to "hccl" makes two names for HCCL and none for NCCL, so NCCL's own branches then run on an NPU.
Owns finding, before the traversal, the module-level assignments of "nccl" in a module that also
assigns "hccl" at module level: they are kept, and said as kept (npu_aware.py's notes).
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import string_value

# a module-level assignment of the string "hccl" (cheap bytes test before any walk)
_HCCL = re.compile(rb"""(?m)^\w+\s*(?::[^=\n]*)?=\s*['"]hccl['"]""")
WHY = "a table of backend names that lists HCCL's already: this entry names NCCL"


def _value(stmt: cst.BaseSmallStatement) -> cst.BaseExpression | None:
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name):
        return stmt.value
    if isinstance(stmt, cst.AnnAssign) and isinstance(stmt.target, cst.Name):
        return stmt.value
    return None


def backend_table_keeps(module: cst.Module, text: bytes) -> dict[int, str]:
    """The "nccl" values of the module-level name assignments of ``module`` that stay, by id."""
    if b"nccl" not in text or _HCCL.search(text) is None:
        return {}
    found: dict[int, str] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            value = _value(small)
            if isinstance(value, cst.SimpleString) and string_value(value) == "nccl":
                found[id(value)] = WHY
    return found
