"""The code a device test kept as a CUDA test chooses: what an NPU run never enters.

A kept test (sites.py) stays a CUDA test so that an NPU run takes the portable path. The code it
chooses, the body of ``if x.is_cuda:``, the ``else`` of ``if not torch.cuda.is_available():``,
the body of ``if cpu_offloading:`` where ``cpu_offloading`` is a flag the device test sets, then
never runs on an NPU: a CUDA-only finding there (a library, a custom operator, a build) fails
nothing, and ``project/cuda_tests.py`` makes it a note that names the test.

Only where the test's outcome proves CUDA: ``x.is_cuda and fast`` is true only on CUDA, but the
body of ``x.is_cuda or force`` may run anywhere, so its findings stay as they are. Works on the
CPython ``ast`` tree and the sites the guards found.
"""

from __future__ import annotations

import ast
from typing import Callable, Sequence

from .sites import Kept, flag_name

Span = tuple[int, int, str]  # first line, last line, why an NPU run does not enter it


def _lines(stmts: list[ast.stmt] | list[ast.expr]) -> tuple[int, int] | None:
    if not stmts:
        return None
    return stmts[0].lineno, max(s.end_lineno or s.lineno for s in stmts)


class _Proof:
    """Does a test's outcome prove that the device is CUDA? ``is_marker`` says which leaves are CUDA
    markers (sites.Sites: ``x.is_cuda``, ``torch.cuda.is_available()``, a predicate's call, a flag)."""

    def __init__(self, is_marker: Callable[[ast.AST], bool]) -> None:
        self.is_marker = is_marker

    def cuda_when(self, test: ast.AST, truth: bool) -> bool:
        """Does ``test`` evaluating to ``truth`` imply CUDA?"""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.cuda_when(test.operand, not truth)
        if isinstance(test, ast.BoolOp):
            every = isinstance(test.op, ast.And) != truth  # "a or b" is true / "a and b" false: every value
            proofs = [self.cuda_when(v, truth) for v in test.values]
            return all(proofs) if every else any(proofs)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self._compare(test.left, test.ops[0], test.comparators[0], truth)
        return truth and self.is_marker(test)

    def _compare(self, left: ast.expr, op: ast.cmpop, right: ast.expr, truth: bool) -> bool:
        if isinstance(right, ast.Constant) and isinstance(right.value, bool):  # "flag is False", "x == True"
            if isinstance(op, (ast.Is, ast.Eq)):
                return self.cuda_when(left, truth == right.value)
            if isinstance(op, (ast.IsNot, ast.NotEq)):
                return self.cuda_when(left, truth != right.value)
            return False
        for device, other in ((left, right), (right, left)):
            if _all_cuda(other) and isinstance(device, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
                if isinstance(op, (ast.Eq, ast.In)):
                    return truth
                if isinstance(op, (ast.NotEq, ast.NotIn)):
                    return not truth
        return False


def _all_cuda(node: ast.AST) -> bool:
    """``"cuda"``, ``"cuda:0"``, or a tuple/list/set of nothing else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value == "cuda" or node.value.startswith("cuda:") and node.value[5:].isdigit()
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_all_cuda(e) for e in node.elts)
    return False


def spans(
    kept: list[Kept],
    tests: Sequence[ast.AST],
    parents: dict[int, ast.AST],
    after: dict[int, list[ast.stmt]],
    is_marker: Callable[[ast.AST], bool],
) -> list[Span]:
    """The spans of code the ``kept`` sites choose that an NPU run never enters. ``tests``: the
    file's ifs, whiles and conditional expressions; ``parents``: node id -> parent; ``after``: an if
    whose body leaves its block -> the statements after it."""
    out: list[Span] = []

    def choose(node: ast.AST, proof: _Proof, why: str) -> None:
        """The branches of the if/while/conditional expression ``node`` that only CUDA takes."""
        if not isinstance(node, (ast.If, ast.While, ast.IfExp)):
            return
        body = [node.body] if isinstance(node, ast.IfExp) else node.body
        orelse = [node.orelse] if isinstance(node, ast.IfExp) else node.orelse
        if proof.cuda_when(node.test, True) and (span := _lines(body)) is not None:
            out.append((*span, why))
        if proof.cuda_when(node.test, False):
            rest = [*orelse, *after.get(id(node), [])]
            if (span := _lines(rest)) is not None:
                out.append((*span, why))

    for site in kept:
        line = site.node.lineno
        parent = parents.get(id(site.node), site.node)
        if site.kind == "branch":
            choose(
                parent,
                _Proof(is_marker),
                f"the device test at line {line} stays a CUDA test: on an NPU this code does not run",
            )
        elif site.kind == "skip" and isinstance(parent, ast.If):  # if not torch.cuda.is_available(): raise SkipTest
            choose(
                parent, _Proof(is_marker), f"the test is skipped on an NPU (line {line}): this code does not run there"
            )
        elif site.kind in ("flag", "disable"):
            flags = {f.strip() for f in site.flag.split(",")}
            if site.kind == "flag" and not _Proof(is_marker).cuda_when(site.node, True):
                continue  # "fast = x.is_cuda or force": the flag may be true on an NPU
            proof = _Proof(_with_flags(is_marker, flags))
            why = (
                f"on an NPU the flag `{site.flag}` (line {line}, a device test) is False: this code does not run there"
                if site.kind == "flag"
                else f"`{site.flag}` is turned off where the device is not CUDA (line {line}): "
                "on an NPU this code does not run"
            )
            region = {id(n) for n in site.region}
            for node in tests:  # the tests whose choice the site counted (sites.py: _flag, _disables)
                test = getattr(node, "test", None)
                if test is None or not any(flag_name(n) in flags for n in ast.walk(test)):
                    continue
                if id(test) in region or any(id(n) in region for n in _branches(node)):
                    choose(node, proof, why)
    return out


def _with_flags(is_marker: Callable[[ast.AST], bool], flags: set[str]) -> Callable[[ast.AST], bool]:
    """``is_marker`` that also takes the names (and attributes) in ``flags`` for CUDA markers."""
    return lambda node: is_marker(node) or flag_name(node) in flags


def _branches(node: ast.AST) -> list[ast.AST]:
    """The first node of each branch of an if, while or conditional expression."""
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    return [block[0] for block in (getattr(node, "body", []), getattr(node, "orelse", [])) if block]
