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
availability: ``is_npu_available()``, ``torch.npu.is_available()``, ..., or such a flag:
``if is_npu_available:``), in the body of
``if not is_npu_available():``, or after ``if is_npu_available(): return ...`` in the same block.
On an NPU the other path runs: the work is done; and so is a use, after such an if, of a name that
both of its sides import (the NPU side binds it on an NPU). Works on a CPython ``ast`` tree.

3. The code a device test kept as a CUDA test chooses (``transplant.guards.unreached``: the body of
``if x.is_cuda:``, of ``if cpu_offloading:`` where the flag comes from a device test): a CUDA-only
finding there (a library, a custom operator, a build, an API with no NPU counterpart) fails
nothing on an NPU, since the test keeps NPU out; a note that names the test.

4. What only a CUDA build of torch runs: the rest of ``torch.version.cuda and ...``, the body of
``if torch.version.cuda:`` (None in the torch an NPU host runs).
"""

from __future__ import annotations

import ast
from typing import Iterable

from ..records import CODES, Record
from .pynames import nodes, parse

WORDS = (b"min_cuda_gpus", b"min_gpus", b"skipif", b"npu")
LIBRARY = CODES["library"]
# what code an NPU run never enters cannot fail there: CUDA APIs, custom operators, builds, libraries,
# CUDA settings (the guards' own findings, TP240-TP243, are about the test itself)
UNREACHED = frozenset(
    CODES[key] for key in ("no_counterpart", "unsupported", "custom_op", "cuda_build", "library", "project_file")
)
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
    if isinstance(test, (ast.Name, ast.Attribute)):  # a flag: if is_npu_available: (verl's device helpers)
        flag = (test.id if isinstance(test, ast.Name) else test.attr).lower()
        return True if "npu" in flag and ("available" in flag or flag.startswith("is_npu")) else None
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


def shared_names(tree: ast.Module) -> dict[str, int]:
    """What the CUDA side of an NPU path imports under a name its NPU side binds too (``if
    is_npu_available: from vllm_ascend... import PyHcclCommunicator as PyNcclCommunicator else: from
    vllm... import PyNcclCommunicator``): qualified name on the CUDA side -> the if's line. A use of
    that name after the if is whichever the branch bound: the NPU one on an NPU."""
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or (check := _npu_check(node.test)) is None:
            continue
        npu_side, cuda_side = (node.body, node.orelse) if check else (node.orelse, node.body)
        bound_npu = {name for stmt in npu_side for name in _imported(stmt)}
        for stmt in cuda_side:
            for name, qualified in _imported(stmt).items():
                if name in bound_npu:
                    out.setdefault(qualified, node.lineno)
    return out


def _imported(stmt: ast.stmt) -> dict[str, str]:
    from .pynames import import_bindings

    found: dict[str, str] = {}
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(import_bindings(node))
    return found


def _cuda_build(node: ast.AST) -> bool:
    """``torch.version.cuda`` (or ``torch.version.cuda is not None``): None in the torch build an NPU
    host runs (torch's CPU wheel beside torch_npu)."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.IsNot):
        node = node.left
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "cuda"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "version"
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "torch"
    )


def _cuda_build_test(test: ast.expr) -> bool:
    """``torch.version.cuda``, alone or as one term of an ``and`` chain (``if torch_available and
    torch.version.cuda is not None:``, DeepSpeed's setup.py): the test is false in an NPU host's torch."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_cuda_build(v) for v in test.values)
    return _cuda_build(test)


def cuda_build_spans(tree: ast.Module) -> list[tuple[int, int, int]]:
    """(first line, last line, the test's line) of code that runs only with a CUDA build of torch:
    what follows ``torch.version.cuda`` in an ``and`` chain, the body of ``if torch.version.cuda:``
    (or of an ``if`` whose ``and`` chain has it)."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            at = next((i for i, v in enumerate(node.values) if _cuda_build(v)), None)
            if at is not None and at + 1 < len(node.values):
                rest = node.values[at + 1 :]
                spans.append((rest[0].lineno, max(v.end_lineno or v.lineno for v in rest), node.values[at].lineno))
        elif isinstance(node, (ast.If, ast.While)) and _cuda_build_test(node.test) and node.body:
            spans.append((node.body[0].lineno, max(b.end_lineno or b.lineno for b in node.body), node.test.lineno))
    return spans


def _used_name(r: Record) -> str:
    """The qualified name a library finding is about: its message starts with it ("X (from m): ...")."""
    return r.message.split(" (from ", 1)[0] if " (from " in r.message else r.api


def demote(data: bytes, records: Iterable[Record], unreached: Iterable[tuple[int, int, str]] = ()) -> list[Record]:
    """``records`` with the errors and warnings inside CUDA-only tests made notes, and the CUDA-only
    findings in ``unreached`` ((first line, last line, why): code only CUDA enters)."""
    records = list(records)
    if b"version.cuda" in data and any(r.code in UNREACHED and r.level in ("error", "warning") for r in records):
        tree = parse(data)
        found = cuda_build_spans(tree) if tree is not None else []
        unreached = [
            *unreached,
            *(
                (
                    a,
                    b,
                    f"after torch.version.cuda at line {at}, which is None in an NPU host's torch: this code does not run there",
                )
                for a, b, at in found
            ),
        ]
    for start, end, why in unreached:
        for r in records:
            if r.level in ("error", "warning") and r.code in UNREACHED and start <= r.line <= end:
                r.level = "note"
                r.message += f" ({why})"
    if not any(w in data.lower() for w in WORDS) or not any(r.level in ("error", "warning") for r in records):
        return records
    tree = parse(data)
    if tree is None:
        return records
    spans = cuda_only_spans(tree)
    other_paths = npu_path_spans(tree) if b"npu" in data.lower() else []
    shared = shared_names(tree) if other_paths else {}
    imports = {
        line
        for node in (ast.walk(tree) if shared else ())
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }  # an import of the name elsewhere is an import of the CUDA module, not a use of the shared name
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
        elif r.code == LIBRARY and r.line not in imports and (used := _used_name(r)) in shared:
            r.level = "note"
            r.message += (
                f" (the if at line {shared[used]} binds this name to its NPU version on an NPU: this use runs that one)"
            )
    return records
