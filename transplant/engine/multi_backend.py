"""Helpers that already choose among backends, in a project that runs on NPU (issue 31, mechanism 6).

Where the project shows that it supports NPU itself (project/npu_support.py), a function whose own
statements name another accelerator beside CUDA (ROCm's ``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES``
/ ``torch.version.hip``, XPU, or NPU: ``is_npu_available``, ``"ASCEND_RT_VISIBLE_DEVICES"``, ``"hccl"``)
is a multi-backend helper: its CUDA arm is what CUDA hosts run, and its other arms are the project's
own. Converting its CUDA names makes a second NPU arm and takes CUDA (and ROCm, which reads the CUDA
names) away. Such a function, and at module or class level an if/elif chain or a conditional
expression whose test names another backend, stays as it is; so does a function named for CUDA
whose twin for another backend the module defines too (``is_cuda_available`` beside
``is_npu_available``, ``require_multi_gpu`` beside ``require_multi_xpu``): one member of a family of
per-backend functions, which the project calls where it means CUDA; state.py turns each change that would
have been made there into a note saying why. The rest of the project, the places with no NPU path, is
converted as usual.

Owns finding those regions. A function is judged by its own statements (a nested function is judged
by itself), docstrings and comments do not count, and nothing runs unless the project fact holds and
the file's bytes name another backend.
"""

from __future__ import annotations

import re

from typing import Callable

import libcst as cst

from ..project.npu_support import NO_NPU_ARM
from .cst_util import dotted_parts
from .traverse import descendants, parts, substance

# another accelerator than CUDA, as a word of an identifier or a string: cheap pre-check on bytes first
OTHER_BYTES = re.compile(rb"(?i)(?<![a-z])(?:hip|rocm|rocr|xpu|npu|ascend|hccl)(?![a-z])")
_IDENTIFIER = re.compile(r"(?:^|_)(hip|rocm|rocr|xpu|npu|ascend|hccl)(?:_|$)", re.IGNORECASE)
_STRING = re.compile(r"(?<![A-Za-z])(hip|rocm|rocr|xpu|npu|ascend|hccl)(?![A-Za-z])", re.IGNORECASE)
_NAMES = {"hip": "ROCm", "rocm": "ROCm", "rocr": "ROCm", "xpu": "XPU", "npu": "NPU", "ascend": "NPU", "hccl": "NPU"}
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# a function named for CUDA, and the other backends its twins are named for (never the CPU: a
# ``to_gpu`` beside ``to_cpu`` moves data, it does not choose a backend)
_DEF = re.compile(rb"\bdef[ \t]+(\w+)")
_CUDA_WORD = re.compile(r"(?:^|_)(cuda|gpu)(?:_|$)")
_TWIN_WORDS = ("npu", "xpu", "hpu", "mlu", "musa", "mps", "tpu", "xla", "rocm", "hip")
HELPER = "a helper that already chooses among backends"
# a call that answers for CUDA when it is given no device, in a project that runs on several backends
PASS_DEVICE = "pass the device type the project runs on (its accelerator's device name) by hand"


def neutral_default(evidence: str) -> str:
    """Why a device-less call (``torch.is_autocast_enabled()``) keeps its spelling in a project that
    runs on NPU (``evidence``): "npu" written in would take the answer away from its other backends."""
    return (
        f"the call names no device, in a project that runs on NPU and other backends ({evidence}): a fixed "
        f'"npu" would make it answer for the NPU on every host; {PASS_DEVICE}'
    )


def _backend(node: cst.CSTNode) -> str:
    """The other backend ``node`` itself names ("ROCm", "XPU", "NPU"), or ""."""
    m = None
    if isinstance(node, cst.Name):
        m = _IDENTIFIER.search(node.value)
    elif isinstance(node, cst.SimpleString):
        m = _STRING.search(node.value)
    elif isinstance(node, cst.FormattedStringText):
        m = _STRING.search(node.value)
    return _NAMES[m.group(1).lower()] if m is not None else ""


def backend_of_text(text: str, *, string: bool) -> str:
    """The other backend an identifier (``string`` False) or a string's text names, or ""."""
    m = (_STRING if string else _IDENTIFIER).search(text)
    return _NAMES[m.group(1).lower()] if m is not None else ""


def _docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _own_backends(nodes, into: set[str]) -> list[cst.CSTNode]:
    """Add the backends ``nodes`` name (not looking into nested functions and classes) to ``into``;
    return the nested scopes met."""
    nested: list[cst.CSTNode] = []
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            nested.append(node)
            continue
        if _docstring(node):
            continue
        found = _backend(node)
        if found:
            into.add(found)
        stack.extend(parts(node))
    return nested


def _test_backends(test: cst.CSTNode) -> set[str]:
    return {b for b in (_backend(n) for n in substance(test)) if b}


def _families(text: bytes) -> dict[str, str]:
    """The functions of a module named for CUDA whose twins for another backend it defines too
    (``is_cuda_available`` beside ``is_npu_available``, ``require_single_gpu`` beside
    ``require_single_xpu``): name -> the twins, said."""
    defined = {m.group(1).decode() for m in _DEF.finditer(text)}
    out: dict[str, str] = {}
    for name in sorted(defined):
        m = _CUDA_WORD.search(name)
        if m is None:
            continue
        twins = [twin for other in _TWIN_WORDS if (twin := f"{name[: m.start(1)]}{other}{name[m.end(1) :]}") in defined]
        if twins:
            out[name] = ", ".join(twins)
    return out


def helper_regions(
    module: cst.Module, text: bytes, evidence: str, elsewhere: Callable[[str], str] | None = None
) -> dict[int, str]:
    """id of every node of the multi-backend helpers of ``module`` -> why it stays (empty unless the
    project runs on NPU, ``evidence`` saying where that shows, and ``text`` names another backend).
    ``elsewhere``: where the project function a helper calls by that spelling (an imported name) has
    an NPU arm ("file: function"), or "" (npu_arms.py)."""
    if not evidence or OTHER_BYTES.search(text) is None:
        return {}
    families = _families(text)
    regions: list[tuple[cst.CSTNode, set[str]]] = []
    twins: list[tuple[cst.FunctionDef, str]] = []
    functions: dict[str, set[str]] = {}  # the backends each function of the module names itself
    pending: list[cst.CSTNode] = [module]
    while pending:
        scope = pending.pop()
        if isinstance(scope, cst.FunctionDef):
            names: set[str] = set()
            pending += _own_backends([scope.body], names)
            functions.setdefault(scope.name.value, set()).update(names)
            if names:
                regions.append((scope, names))
            elif scope.name.value in families:  # its twins are its other arms
                twins.append((scope, families[scope.name.value]))
            continue
        body = scope.body.body if isinstance(scope, cst.ClassDef) else getattr(scope, "body", ())
        for stmt in body if isinstance(body, (list, tuple)) else ():
            if isinstance(stmt, _SCOPES):
                pending.append(stmt)
                continue
            tests = _chain_tests(stmt)
            names = set().union(*(_test_backends(t) for t in tests)) if tests else set()
            if names:
                regions.append((stmt, names))
                continue
            for node in substance(stmt):
                if isinstance(node, cst.IfExp) and _test_backends(node.test):
                    regions.append((node, _test_backends(node.test)))
                elif isinstance(node, _SCOPES):
                    pending.append(node)
    kept: dict[int, str] = {}
    for region, names in regions:
        why = (
            f"{HELPER} ({', '.join(sorted(names))} beside CUDA) "
            f"in a project that runs on NPU ({evidence}); its CUDA arm is what CUDA hosts run"
        )
        if "NPU" not in names:  # FastChat's CUDA_VISIBLE_DEVICES and XPU_VISIBLE_DEVICES, set side by side
            arm = _arm_in_callee(region, functions, elsewhere)
            why += f"; its NPU arm is in {arm}, which it calls" if arm else f"; {NO_NPU_ARM}"
        for node in descendants(region):
            kept.setdefault(id(node), why)
    for function, others in twins:
        why = (
            f"{HELPER} by name ({function.name.value} is the CUDA twin of {others}) "
            f"in a project that runs on NPU ({evidence}); it is what CUDA hosts run"
        )
        for node in descendants(function):
            kept.setdefault(id(node), why)
    return kept


def _arm_in_callee(region: cst.CSTNode, functions: dict[str, set[str]], elsewhere: Callable[[str], str] | None) -> str:
    """The project function the helper ``region`` calls that names NPU itself: "name()" of this module,
    or where ``elsewhere`` finds it; "" when none does."""
    for node in substance(region):
        if not isinstance(node, cst.Call):
            continue
        parts = dotted_parts(node.func)
        if not parts:
            continue
        if len(parts) == 1 and "NPU" in functions.get(parts[0], ()):
            return f"{parts[0]}()"
        found = elsewhere(".".join(parts)) if elsewhere is not None else ""
        if found:
            return found
    return ""


def _chain_tests(stmt: cst.CSTNode) -> list[cst.BaseExpression]:
    tests: list[cst.BaseExpression] = []
    current: cst.CSTNode | None = stmt
    while isinstance(current, cst.If):
        tests.append(current.test)
        current = current.orelse
    return tests
