"""Findings inside tests that run only with CUDA GPUs: notes, not errors or warnings.

A test function or class whose decorator asks for CUDA GPUs, Lightning's and litgpt's
``@RunIf(min_cuda_gpus=1)`` (any decorator call with a ``min_cuda_gpus`` / ``min_gpus`` keyword)
or ``@pytest.mark.skipif(not torch.cuda.is_available(), ...)`` (a ``skipif`` whose condition reads
``torch.cuda.is_available()`` or ``torch.cuda.device_count()``), is skipped on an NPU machine:
what it calls never runs there, so its findings ask for nothing. They stay in the report as notes
that say so; the conversion's changes inside it are kept. Works on a CPython ``ast`` tree.
"""

from __future__ import annotations

import ast
from typing import Iterable

from ..records import Record

WORDS = (b"min_cuda_gpus", b"min_gpus", b"skipif")
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
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                how = _asks_for_cuda(decorator)
                if how is not None:
                    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    spans.append((start, node.end_lineno or node.lineno, how))
                    break
    return spans


def demote(data: bytes, records: Iterable[Record]) -> list[Record]:
    """``records`` with the errors and warnings inside CUDA-only tests made notes."""
    records = list(records)
    if not any(w in data for w in WORDS) or not any(r.level in ("error", "warning") for r in records):
        return records
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return records
    spans = cuda_only_spans(tree)
    if not spans:
        return records
    for r in records:
        if r.level not in ("error", "warning"):
            continue
        how = next((h for start, end, h in spans if start <= r.line <= end), None)
        if how is not None:
            r.level = "note"
            r.message += f" (in a test that runs only with CUDA GPUs, {how}: skipped on an NPU, nothing to port here)"
    return records
