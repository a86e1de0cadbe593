"""Findings behind a test that is false on an NPU host, written in ways the guards do not convert:

* ``hasattr(obj, "name")`` in front of ``obj.name``: the body of ``if hasattr(torch._C,
  "_cuda_setRNGState"):`` and what follows the test in an ``and`` chain run only where torch has
  that CUDA binding (DeepSpeed's activation checkpointing); an NPU host's torch lacks it, and the
  code takes the other path. Only a finding about ``name`` itself there is a note.
* DeepSpeed's accelerator asked for its name, ``get_accelerator().device_name() == "cuda"``: the
  accelerator of an NPU host says ``"npu"``. Such code runs as it is on an NPU (frameworks.json: it
  is not converted), so the body of that test (and what follows it in an ``and`` chain) is CUDA's
  branch, which an NPU run never enters (``nvidia-smi`` in DeepSpeed's tests/unit/common.py).

Works on a CPython ``ast`` tree; changes levels and messages of records, never code.
"""

from __future__ import annotations

import ast

from ..records import Record
from .cuda_tests import UNREACHED as _CODES
from .pynames import parse

_ACCELERATORS = frozenset({"get_accelerator"})  # DeepSpeed's: deepspeed.accelerator.get_accelerator

Span = tuple[int, int, str, str]  # first line, last line, why, the name a finding must be about ("" for any)


def _hasattr_name(node: ast.expr) -> str:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "hasattr"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return ""


def _accelerator_is_cuda(node: ast.expr) -> bool:
    """``get_accelerator().device_name() == "cuda"`` (either side)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
        return False
    for name, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
        if (
            isinstance(other, ast.Constant)
            and other.value == "cuda"
            and isinstance(name, ast.Call)
            and isinstance(name.func, ast.Attribute)
            and name.func.attr == "device_name"
            and isinstance(name.func.value, ast.Call)
            and isinstance(name.func.value.func, (ast.Name, ast.Attribute))
            and (name.func.value.func.id if isinstance(name.func.value.func, ast.Name) else name.func.value.func.attr)
            in _ACCELERATORS
        ):
            return True
    return False


def _why(term: ast.expr) -> tuple[str, str] | None:
    """(why, the name findings must be about) where ``term`` is false on an NPU host."""
    name = _hasattr_name(term)
    if name:
        return (
            f"behind hasattr(..., {name!r}) at line {term.lineno}: where it is missing, as on an NPU host, this does not run",
            name,
        )
    if _accelerator_is_cuda(term):
        return f"behind the accelerator's device_name() == 'cuda' at line {term.lineno}: an NPU host's says 'npu'", ""
    return None


def spans(tree: ast.Module) -> list[Span]:
    found: list[Span] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for i, term in enumerate(node.values[:-1]):
                said = _why(term)
                if said is not None:
                    rest = node.values[i + 1 :]
                    found.append((rest[0].lineno, max(v.end_lineno or v.lineno for v in rest), *said))
        elif isinstance(node, (ast.If, ast.While)) and node.body:
            terms = (
                node.test.values
                if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)
                else [node.test]
            )
            for term in terms:
                said = _why(term)
                if said is not None:
                    found.append((node.body[0].lineno, max(s.end_lineno or s.lineno for s in node.body), *said))
    return found


def demote(data: bytes, records: list[Record]) -> list[Record]:
    chosen = [r for r in records if r.code in _CODES and r.level in ("error", "warning")]
    if not chosen or (b"hasattr" not in data and b"device_name" not in data):
        return records
    tree = parse(data)
    if tree is None:
        return records
    found = spans(tree)
    for r in chosen:
        for start, end, why, name in found:
            about = not name or r.api == name or r.api.endswith(f".{name}")
            if about and start <= r.line <= end:
                r.level = "note"
                r.message += f" ({why})"
                break
    return records
