"""Child processes that run a TensorFlow program (issue 31, mechanism 2).

``env["CUDA_VISIBLE_DEVICES"] = "1"`` then ``subprocess.run(["python", "tf_eval.py"], env=env)``:
the variable pins the GPU of a TensorFlow program, which reads ``CUDA_VISIBLE_DEVICES`` and never
``ASCEND_RT_VISIBLE_DEVICES``. Renamed, the child sees every GPU of a CUDA host (or, on an NPU host,
the pin silently moves to NPUs the child never uses). Owns finding, in a function (or the module's
own statements) that starts such a child, the environment variable names it sets: they stay, each
with a note. A program counts as TensorFlow when the command names a Python file of the project
(beside the converting file, or from the project's root) that imports ``tensorflow``: read from disk
once per file named, only for a source that both sets a ``*_VISIBLE_DEVICES`` variable and starts a
process.
"""

from __future__ import annotations

import os
import re

import libcst as cst

from ..rules import RuleSet
from .cst_util import string_value
from .traverse import children

TF_IMPORT = re.compile(rb"^[ \t]*(?:import|from)[ \t]+tensorflow\b", re.M)
_SCRIPT = re.compile(rb"""['"]([\w./-]+\.py)['"]""")
_RUNNER_WORDS = (b"subprocess", b"Popen", b"system", b"create_subprocess_exec")
RUNNERS = frozenset({"run", "call", "check_call", "check_output", "Popen", "system", "create_subprocess_exec"})
MAX_BYTES = 1 << 20


def tf_programs(source: bytes, path: str, root: str) -> frozenset[str]:
    """The Python files named in ``source`` (the file at ``path``, relative to ``root`` when given)
    that are TensorFlow programs."""
    if b"VISIBLE_DEVICES" not in source or not any(w in source for w in _RUNNER_WORDS):
        return frozenset()
    file = os.path.join(root, path) if root else path
    bases = [os.path.dirname(file)] + ([root] if root else [])
    found = set()
    for name in {m.group(1).decode() for m in _SCRIPT.finditer(source)}:
        for base in bases:
            candidate = os.path.join(base, name)
            try:
                with open(candidate, "rb") as fh:
                    data = fh.read(MAX_BYTES)
            except OSError:
                continue
            if TF_IMPORT.search(data):
                found.add(name)
                break
    return frozenset(found)


def tf_child_keeps(module: cst.Module, rules: RuleSet, programs: frozenset[str]) -> dict[int, str]:
    """id of each environment variable name (a string, a keyword) set in a scope of ``module`` that
    starts one of the TensorFlow ``programs`` -> why it stays."""
    if not programs:
        return {}
    kept: dict[int, str] = {}
    scopes: list[cst.CSTNode] = [module]
    while scopes:
        scope = scopes.pop()
        own: list[cst.CSTNode] = []
        stack = list(children(scope.body if isinstance(scope, cst.FunctionDef) else scope))
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                scopes.append(node)
                continue
            own.append(node)
            stack.extend(children(node))
        program = next((p for p in map(_started, own) if p and p in programs), None)
        if program is None:
            continue
        why = (
            f"the child process started here runs {program}, a TensorFlow program: TensorFlow reads "
            "CUDA_VISIBLE_DEVICES, never ASCEND_RT_VISIBLE_DEVICES"
        )
        for node in own:
            name = _env_name(node)
            if name and rules.env_rule(name) is not None:
                anchor = node.keyword if isinstance(node, cst.Arg) and node.keyword is not None else node
                kept[id(anchor)] = why
    return kept


def _started(node: cst.CSTNode) -> str:
    """The Python file a runner call ``node`` names in its command, or ""."""
    if not isinstance(node, cst.Call):
        return ""
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if name not in RUNNERS or not node.args:
        return ""
    stack: list[cst.CSTNode] = [node.args[0].value]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.SimpleString):
            value = string_value(current) or ""
            script = next((w for w in value.split() if w.endswith(".py")), "")
            if script:
                return script
        stack.extend(children(current))
    return ""


def _env_name(node: cst.CSTNode) -> str:
    if isinstance(node, cst.SimpleString):
        return string_value(node) or ""
    if isinstance(node, cst.Arg) and node.keyword is not None:
        return node.keyword.value
    return ""
