"""Findings in code an NPU never runs: notes, not errors or warnings.

1. Tests that run only with CUDA GPUs.

A test function or class whose decorator asks for CUDA GPUs, Lightning's and litgpt's
``@RunIf(min_cuda_gpus=1)`` (any decorator call with a ``min_cuda_gpus`` / ``min_gpus`` keyword)
or ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)`` (a ``skipif`` whose condition reads
``torch.cuda.is_available()`` or ``torch.cuda.device_count()``), is skipped on an NPU machine:
what it calls never runs there, so its findings ask for nothing. They stay in the report as notes
that say so; the conversion's changes inside it are kept.

2. The CUDA side of a branch the project already gives an NPU path: a CUDA-only library's finding
(TP206) in the ``else`` of ``if is_torch_npu_available():`` (any call whose name says NPU
availability: ``is_npu_available()``, ``torch.npu.is_available()``, ...), in the body of
``if not is_npu_available():``, or after ``if is_npu_available(): return ...`` in the same block.
On an NPU the other path runs: the work is done. Works on a CPython ``ast`` tree.
"""

from __future__ import annotations

import ast
from typing import Iterable

from ..records import Record
from .pynames import nodes, parse

WORDS = (b"min_cuda_gpus", b"min_gpus", b"skipif", b"npu")
LIBRARY = "TP206"
_GPU_KEYWORDS = frozenset({"min_cuda_gpus", "min_gpus"})
_CUDA_QUERIES = ("is_available", "device_count")


def _cuda_query(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in _CUDA_QUERIES:
            inner = sub.value
            if isinstance(inner, ast.Attribute) and inner.attr == "cuda":
                return True
    return False


def _asks_for_cuda(decorator: ast.expr) -> str | None:
    """How the decorator asks for CUDA GPUs (its keyword or "skipif"), or None."""
    if not isinstance(decorator, ast.Call):
        return None
    for kw in decorator.keywords:
        if kw.arg in _GPU_KEYWORDS and not (isinstance(kw.value, ast.Constant) and not kw.value.value):
            return f"{kw.arg}={ast.unparse(kw.value)}"
    func = decorator.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name == "skipif" and decorator.args and _cuda_query(decorator.args[0]):
        return "skipif without CUDA"
    return None


def cuda_only_spans(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, how) of the functions and classes that run only with CUDA GPUs."""
    spans = []
    for node in nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                how = _asks_for_cuda(decorator)
                if how is not None:
                    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    spans.append((start, node.end_lineno or node.lineno, how))
                    break
    return spans


def _npu_check(test: ast.expr) -> bool | None:
    """True for a test of NPU availability, False for its negation, None for anything else."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _npu_check(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Call):
        parts = []
        node: ast.AST = test.func
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(node.id)
        name = ".".join(reversed(parts)).lower()
        if "npu" in name and ("available" in name or name.endswith("is_npu")):
            return True
    return None


def _ends(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _span(stmts: list[ast.stmt]) -> tuple[int, int] | None:
    if not stmts:
        return None
    return stmts[0].lineno, max(s.end_lineno or s.lineno for s in stmts)


def npu_path_spans(tree: ast.Module) -> list[tuple[int, int, int]]:
    """(first line, last line, the if's line) of code that runs only where there is no NPU."""
    spans: list[tuple[int, int, int]] = []
    for node in nodes(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if not isinstance(stmt, ast.If):
                    continue
                check = _npu_check(stmt.test)
                if check is None:
                    continue
                other = stmt.orelse if check else stmt.body
                if (span := _span(other)) is not None:
                    spans.append((*span, stmt.lineno))
                if check and _ends(stmt.body) and (span := _span(block[i + 1 :])) is not None:
                    spans.append((*span, stmt.lineno))
    return spans


def demote(data: bytes, records: Iterable[Record]) -> list[Record]:
    """``records`` with the errors and warnings inside CUDA-only tests made notes."""
    records = list(records)
    if not any(w in data.lower() for w in WORDS) or not any(r.level in ("error", "warning") for r in records):
        return records
    tree = parse(data)
    if tree is None:
        return records
    spans = cuda_only_spans(tree)
    other_paths = npu_path_spans(tree) if b"npu" in data.lower() else []
    for r in records:
        if r.level not in ("error", "warning"):
            continue
        how = next((h for start, end, h in spans if start <= r.line <= end), None)
        if how is not None:
            r.level = "note"
            r.message += f" (in a test that runs only with CUDA GPUs, {how}: skipped on an NPU, nothing to port here)"
            continue
        at = next((line for start, end, line in other_paths if start <= r.line <= end), None)
        if at is not None and r.code == LIBRARY:
            r.level = "note"
            r.message += f" (the if at line {at} gives NPU its own path: this code runs only where there is no NPU)"
    return records
