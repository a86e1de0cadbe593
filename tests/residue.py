"""What ties a converted Python file to CUDA, read with CPython's ``ast`` independently of the engine.

A tie is: a reference resolving (through the file's imports) into ``torch.cuda``; an import or use of
a CUDA-only library named by a LibraryRule; a call ``x.cuda(...)``; a CUDA device or "nccl" string
given to a torch call (positionally or by keyword) or to a ``device``/``backend`` keyword anywhere;
a CUDA-only command (a ShellCommandRule's name) run by ``os``, ``subprocess`` or ``asyncio``: the
first word of a command string (or of one of its shell commands), or a command list's program.
Used by test_invariant.py: after conversion, every tie left must be named by a finding.
"""

from __future__ import annotations

import ast
import json
import re

from conftest import REPO
from transplant.project.pynames import bindings, dotted
from transplant.records import SKIP_FILE, SKIP_LINE

DEVICE = re.compile(r"^cuda(:\d+)?$")


def library_modules() -> tuple[set[str], set[str], set[str]]:
    """The CUDA-only library modules, the names under them that are not CUDA-only ("portable"), and
    the kernel languages among them, whose imports are their ties ("per_use": false: the import's
    finding stands for the file's uses)."""
    out, portable, at_import = set(), set(), set()
    for path in (REPO / "rules").glob("*.json"):
        if path.name != "schema.json":
            for rule in json.loads(path.read_text())["rules"].get("LibraryRule", []):
                # a library the project scan reports (Triton, once per kernel; triton-ascend runs it on
                # NPU) is not a tie the engine must name at every use
                if rule.get("reported_by") != "project":
                    out.add(rule["module"])
                if rule.get("per_use") is False:
                    at_import.add(rule["module"])
                portable |= set(rule.get("portable", ()))
    return out, portable, at_import


LIBRARIES, PORTABLE, AT_IMPORT = library_modules()


def command_names() -> set[str]:
    out = set()
    for path in (REPO / "rules").glob("*.json"):
        if path.name != "schema.json":
            out |= {r["old_name"] for r in json.loads(path.read_text())["rules"].get("ShellCommandRule", [])}
    return out


COMMANDS = command_names()
RUNNER_MODULES = ("os.", "subprocess.", "asyncio.create_subprocess")
# a shell command's first word: at the start or after ; & | ( $( `, then any VAR=value
_SHELL_WORD = re.compile(r"(?:^|[;&|(`]|\$\()\s*(?:\w+=\S*\s+)*([^\s;&|()`]+)")


def _runs_command(node: ast.AST) -> str | None:
    """The CUDA-only command a runner's argument starts (string, f-string, list or tuple), if any."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return _runs_command(node.elts[0]) if node.elts else None
    if isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "\0" for v in node.values)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _runs_command(node.left)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("format", "split")
        and isinstance(node.func.value, (ast.Constant, ast.JoinedStr))
    ):
        return _runs_command(node.func.value)
    elif isinstance(node, ast.Call) and node.args:  # shlex.split("...")
        return _runs_command(node.args[0])
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    else:
        return None
    for m in _SHELL_WORD.finditer(text):
        word = m.group(1).rsplit("/", 1)[-1]
        if word in COMMANDS:
            return word
    return None


def _library(qualified: str, *, use: bool = False) -> bool:
    """Is ``qualified`` a tie to a CUDA-only library? (a use of a kernel language is not: its import is)"""
    parts = qualified.split(".")
    prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    if use and prefixes & AT_IMPORT:
        return False
    return bool(prefixes & LIBRARIES) and not prefixes & PORTABLE


def _cuda_value(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (DEVICE.match(node.value) is not None or node.value == "nccl")
    )


def local_names(func: ast.AST) -> set[str]:
    """Names a function binds in its own scope other than by import: every name stored or deleted
    in its body (outside nested functions, classes, lambdas and comprehensions), ``except ... as``
    names and nested definitions, less its ``global``/``nonlocal`` names."""
    bound: set[str] = set()
    declared: set[str] = set()
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        stack.extend(ast.iter_child_nodes(node))
    return bound - declared


def ties(source: bytes, known_modules: frozenset[str] = frozenset()) -> dict[int, str]:
    """line -> what ties it to CUDA, for the lines of ``source`` that do. Parameters, names a function
    binds other than by import, and comprehension variables shadow imported names in their scope; lines the user opted out of (``# transplant:
    skip``, or the whole file) hold no ties; importing a torch.cuda module the rules know is not a
    tie (its uses are)."""
    if SKIP_FILE.search(source):
        return {}
    tree = ast.parse(source)
    names = bindings(tree)
    found: dict[int, str] = {}
    skipped = {i for i, line in enumerate(source.splitlines(), 1) if SKIP_LINE.search(line)}

    def note(line: int, what: str) -> None:
        if line not in skipped:
            found.setdefault(line, what)

    class Walker(ast.NodeVisitor):
        def __init__(self) -> None:
            self.shadow: list[set[str]] = []

        def qualified(self, node: ast.AST) -> str | None:
            parts = dotted(node)
            if not parts or parts[0] not in names or any(parts[0] in s for s in self.shadow):
                return None
            return ".".join([names[parts[0]], *parts[1:]])

        def scoped(self, node: ast.AST, bound: set[str]) -> None:
            self.shadow.append(bound)
            self.generic_visit(node)
            self.shadow.pop()

        def visit_FunctionDef(self, node) -> None:
            a = node.args
            params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
            self.scoped(node, params | (local_names(node) if not isinstance(node, ast.Lambda) else set()))

        visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

        def visit_comprehension_owner(self, node) -> None:
            self.scoped(node, {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)})

        visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_comprehension_owner

        def visit_Import(self, node: ast.Import) -> None:
            for alias in node.names:
                if _library(alias.name):
                    note(node.lineno, alias.name)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.module and not node.level:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if _library(full) or (full.startswith("torch.cuda.") and full not in known_modules):
                        note(node.lineno, full)

        def visit_Attribute(self, node: ast.Attribute) -> None:
            self._reference(node)

        def visit_Name(self, node: ast.Name) -> None:
            self._reference(node)

        def _reference(self, node) -> None:
            if isinstance(node.ctx, ast.Load):
                q = self.qualified(node)
                if q is not None and (q == "torch.cuda" or q.startswith("torch.cuda.") or _library(q, use=True)):
                    note(node.lineno, q)
                    return  # the chain is one reference
                if q is not None and any(q == p or q.startswith(p + ".") for p in PORTABLE):
                    return  # deepspeed.ops.adagrad.DeepSpeedCPUAdagrad: its prefixes are part of it
            self.generic_visit(node)

        def visit_Call(self, node: ast.Call) -> None:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "cuda":
                note(node.lineno, ".cuda()")
            q = self.qualified(func) or ""
            for arg in node.args:
                if q.startswith("torch") and _cuda_value(arg):
                    note(arg.lineno, f"{q}({arg.value!r})")
            for kw in node.keywords:
                if _cuda_value(kw.value) and (q.startswith("torch") or kw.arg in ("device", "backend", "map_location")):
                    note(kw.value.lineno, f"{kw.arg}={kw.value.value!r}")
            if q.startswith(RUNNER_MODULES):
                command = [*node.args[:1], *(kw.value for kw in node.keywords if kw.arg in ("args", "cmd", "command"))]
                found_command = _runs_command(command[0]) if command else None
                if found_command is not None:
                    note(command[0].lineno, f"{q}({found_command!r})")
            self.generic_visit(node)

    Walker().visit(tree)
    return found


PATCHED_OWNERS = ("torch.Tensor", "torch.nn.Module")


def patched_targets(source: bytes) -> list[str]:
    """The assignment and ``del`` targets of ``source`` that name an attribute of torch.cuda or a
    member of torch.Tensor / torch.nn.Module (through the file's imports), as spelled, in order."""
    tree = ast.parse(source)
    names = bindings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
            parts = dotted(node)
            if not parts or parts[0] not in names:
                continue
            q = ".".join([names[parts[0]], *parts[1:]])
            if q.startswith("torch.cuda.") or q.rsplit(".", 1)[0] in PATCHED_OWNERS:
                out.append(".".join(parts))
    return sorted(out)
