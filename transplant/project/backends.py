"""Collective backends the project chooses itself: a function of the project that returns ``"hccl"``
(``def get_nccl_backend(): return "hccl" if is_npu_available else "nccl"``, verl's device helpers), a
method that returns an attribute its class sets to ``"hccl"`` (DeepSpeed's accelerator:
``get_accelerator().communication_backend_name()``), or that reads torch's
``Backend.default_device_backend_map`` for the device (torchtitan), where torch_npu's registration of
its backend puts ``npu: hccl``.

Where ``init_process_group(backend=...)`` (or another backend argument) is given an expression that
calls such a function (``backend=get_nccl_backend()``, ``f"cpu:gloo,{dev}:{get_nccl_backend()}"``),
the engine's warning that the expression may say ``nccl`` asks for work the project has done: it
becomes a note that names the function and where it is defined. Owns finding those functions (a
CPython ``ast`` walk of the files that spell ``hccl``) and that settling of the records.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Iterable

from ..records import Record

WORDS = (b"hccl", b"default_device_backend_map")
_MAP = "default_device_backend_map"
_ASKS = "given as an expression"  # engine/calls.py's warning about a backend argument


def hccl_choosers(tree: ast.Module) -> dict[str, int]:
    """Functions of ``tree`` that return a string naming hccl, or that read torch's map of default
    backends per device -> their line."""
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):  # def name(self): return self._x, where the class sets self._x = "hccl"
            for name, line in _attribute_getters(node).items():
                found.setdefault(name, line)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if (isinstance(sub, ast.Return) and sub.value is not None and _names_hccl(sub.value)) or (
                    isinstance(sub, ast.Attribute) and sub.attr == _MAP
                ):
                    found.setdefault(node.name, node.lineno)
                    break
    return found


def _self_attribute(node: ast.AST | None) -> str:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return ""


def _attribute_getters(cls: ast.ClassDef) -> dict[str, int]:
    """Methods of ``cls`` that return an attribute the class sets to a string naming hccl
    (DeepSpeed's NPU accelerator: ``self._communication_backend_name = 'hccl'``, then
    ``def communication_backend_name(self): return self._communication_backend_name``) -> their line."""
    set_hccl = {
        _self_attribute(target)
        for sub in ast.walk(cls)
        if isinstance(sub, ast.Assign) and _names_hccl(sub.value)
        for target in sub.targets
        if _self_attribute(target)
    }
    if not set_hccl:
        return {}
    return {
        method.name: method.lineno
        for method in cls.body
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(isinstance(s, ast.Return) and _self_attribute(s.value) in set_hccl for s in ast.walk(method))
    }


def _names_hccl(value: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "hccl" in n.value.lower() for n in ast.walk(value)
    )


def settle(data: bytes, records: Iterable[Record], choosers: tuple[tuple[str, str], ...]) -> list[Record]:
    """``records`` with the backend warnings whose expression calls one of ``choosers`` ((name,
    "file:line")) made notes."""
    records = list(records)
    asks = [r for r in records if r.level == "warning" and _ASKS in r.message and "hccl" in r.message]
    if not asks or not choosers:
        return records
    lines = data.decode("utf-8", "replace").splitlines()
    out = []
    for r in records:
        if r in asks:
            text = "\n".join(lines[r.line - 1 : r.end_line])
            hit = next(((n, w) for n, w in choosers if re.search(rf"(?<![\w.]){re.escape(n)}\s*\(", text)), None)
            if hit is None:
                hit = next(((n, w) for n, w in choosers if re.search(rf"\.{re.escape(n)}\s*\(", text)), None)
            if hit is not None:
                r = dataclasses.replace(
                    r,
                    level="note",
                    message=f"{r.message.split(';', 1)[0]}: {hit[0]}() gives it, which the project writes to give "
                    f"hccl on an NPU ({hit[1]}: it returns hccl there, or reads torch's default backend of the "
                    "device, which torch_npu registers as hccl): nothing to change",
                    suggestion="",
                )
        out.append(r)
    return out
