"""Runtime mode's switch (runtime_mode.py): ``TORCH_TRANSFER_TO_NPU=1`` where a program starts.

torch_npu reads the variable when PyTorch's device-backend autoload imports it, on the first
``import torch``, so it must be set before anything the program imports. A Python program gets

    import os
    os.environ.setdefault("TORCH_TRANSFER_TO_NPU", "1")

as its first statements (after the docstring and ``from __future__`` imports; ``setdefault``: a
launch that sets the variable, "0" included, wins), and a shell script that starts Python gets
``export TORCH_TRANSFER_TO_NPU=1`` after its ``#!`` line and leading comments.

A Python file is a program when it has a module-level ``if __name__ == "__main__":``, or imports
torch (or torchvision, torchaudio, ...) itself and either starts with ``#!`` or runs a loop or a
``with`` block at module level (a script such as nanoGPT's train.py), outside the project's own
packages (minGPT's ``mingpt/bpe.py`` has a demo under its guard). A program under its guard gets the
switch only where the migration can matter: it imports torch itself, names CUDA (``cuda``, ``nccl``:
a string a library may hand to torch), or imports a module of the project that does so, followed
``MAX_HOPS`` imports deep (``reaches_cuda``). A data-preparation script that imports numpy and a
tokenizer (nanoGPT's openwebtext ``prepare.py``) runs the same without it. A module the project only
imports gets nothing: setting the variable there would switch the migration on for whoever imports
it, and in most orders it would come after torch is imported anyway. A file that names the
variable already is left as it is (a second conversion changes nothing).
"""

from __future__ import annotations

import ast
import re
import sys

from .project.modules import ModuleIndex, on_disk
from .records import CODES, OPERATION, Conversion, Record
from .transfer_api import ENV

PYTHON_LINES = (b"import os", b'os.environ.setdefault("' + ENV.encode() + b'", "1")')
SHELL_LINE = b"export " + ENV.encode() + b"=1"
MESSAGE = f"{ENV}=1: torch_npu's runtime migration runs this program (--mode runtime)"
COMMENT = b"  # transplant --mode runtime: torch_npu's runtime migration"
# a shell line that starts Python (a script, a module, or a launcher of Python processes)
_STARTS_PYTHON = re.compile(rb"(?m)^[^#\n]*\b(?:python[0-9.]*|torchrun|accelerate\s+launch|deepspeed)\b")
_TORCH_ROOT = re.compile(r"^torch")
# what the migration can change, in a file's bytes: an import of torch (or torchvision, ...), a CUDA
# name or string (torch.cuda, .cuda(), "cuda", "nccl")
_MIGRATION_WORDS = re.compile(rb"(?m)^[ \t]*(?:import|from)[ \t]+torch|cuda|nccl")
MAX_HOPS = 3  # project modules followed from a program when looking for torch or CUDA
MAX_FILES = 64  # at most this many of them read
# (Python 3.9 lacks the list: the modules such scripts import most stand in)
STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {
    "__future__", "argparse", "ast", "collections", "dataclasses", "functools", "glob", "itertools", "json",
    "logging", "math", "os", "pathlib", "pickle", "random", "re", "shutil", "subprocess", "sys", "time", "typing",
}  # fmt: skip


def may_be_program(data: bytes) -> bool:
    """Cheap: could ``data`` be a Python program that needs the variable?"""
    return (b"__main__" in data or b"torch" in data) and ENV.encode() not in data


def _imports_torch(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_TORCH_ROOT.match(a.name) for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _TORCH_ROOT.match(node.module or ""):
            return True
    return False


def _main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return names and main


def _imports_beyond_stdlib(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] not in STDLIB for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] not in STDLIB):
            return True
    return False


def reaches_cuda(data: bytes, importer: str, packages: frozenset[str], root: str = "") -> bool:
    """Can the migration change anything the program ``data`` runs: does it import torch or name CUDA,
    itself or in a module of the project it imports (``MAX_HOPS`` deep)? ``importer``: the file on
    disk ("" for standard input: then an import of the project's own ``packages``, or a relative one,
    counts as reaching CUDA, unread)."""
    if _MIGRATION_WORDS.search(data):
        return True
    if not importer:
        tree = _parse(data)
        return tree is None or _imports_project(tree, packages)
    index = ModuleIndex(root)
    seen = {importer}
    layer = [(importer, data)]
    for _ in range(MAX_HOPS):
        following = []
        for path, source in layer:
            for found in index.imports(source, path):
                if found in seen or len(seen) >= MAX_FILES:
                    continue
                seen.add(found)
                read = index.source(found)
                if read is None:
                    continue
                if _MIGRATION_WORDS.search(read[0]):
                    return True
                following.append((found, read[0]))
        layer = following
    return False


def _parse(data: bytes) -> ast.Module | None:
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _imports_project(tree: ast.Module, packages: frozenset[str]) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in packages):
            return True
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in packages for a in node.names):
            return True
    return False


def is_program(data: bytes, tree: ast.Module) -> bool:
    if any(_main_guard(node) for node in tree.body):
        return _imports_beyond_stdlib(tree)  # (a script of the standard library alone never reaches torch)
    if not _imports_torch(tree):
        return False
    return data.startswith(b"#!") or _runs_loops(tree.body)


def _runs_loops(body: list[ast.stmt]) -> bool:
    """A loop or ``with`` block at module level, also under a module-level ``if`` or ``try``."""
    for node in body:
        if isinstance(node, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
            return True
        if isinstance(node, ast.If) and (_runs_loops(node.body) or _runs_loops(node.orelse)):
            return True
        if isinstance(node, ast.Try):
            parts = [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
            if any(_runs_loops(part) for part in parts):
                return True
    return False


def _insertion_line(tree: ast.Module) -> int | None:
    """The 0-based line before which the switch goes: the first statement that is neither the
    docstring nor a ``from __future__`` import; None when that statement shares its line with one."""
    body = tree.body
    skip = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            skip = 1
    while skip < len(body):
        node = body[skip]
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            break
        skip += 1
    if skip == len(body):
        return None
    first = body[skip]
    if skip and (body[skip - 1].end_lineno or 0) >= first.lineno:
        return None
    if first.col_offset:
        return None  # (a first statement on a line after a semicolon)
    if _plain_os(first) and (skip + 1 == len(body) or body[skip + 1].lineno > (first.end_lineno or 0)):
        return -(first.end_lineno or first.lineno)  # after the program's own "import os": the switch alone
    return first.lineno - 1


def _plain_os(node: ast.stmt) -> bool:
    return isinstance(node, ast.Import) and [(a.name, a.asname) for a in node.names] == [("os", None)]


def in_package(path: str, packages: frozenset[str]) -> bool:
    """Is ``path`` (relative to the project's root) a module of one of the project's own ``packages``
    (a demo under ``if __name__ == "__main__":`` there is not how the project starts)?"""
    parts = path.replace("\\", "/").split("/")
    if parts[0] == "src":
        parts = parts[1:]
    return len(parts) > 1 and parts[0] in packages and parts[-1] != "__main__.py"


def switch_python(
    data: bytes, conv: Conversion, path: str = "", packages: frozenset[str] = frozenset(), root: str = ""
) -> Conversion:
    """``conv`` (the engine's result for ``data``) with the switch inserted when the file is a program
    that can reach CUDA (``path`` and the project's own ``packages``: see in_package; ``root``: the
    input folder in repository mode, where the project's modules are read: see reaches_cuda)."""
    if ENV.encode() in data or in_package(path, packages):
        return conv
    source = conv.new if conv.new is not None else data
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return conv
    if not is_program(source, tree) or not reaches_cuda(data, on_disk(root, path), packages, root):
        return conv
    where = _insertion_line(tree)
    if where is None:
        return conv
    lines = source.splitlines(keepends=True)
    ending = b"\r\n" if lines and lines[0].endswith(b"\r\n") else b"\n"
    if where > len(lines):
        return conv
    if where and not lines[where - 1].endswith((b"\n", b"\r")):
        return conv
    added = [PYTHON_LINES[0] + ending, PYTHON_LINES[1] + COMMENT + ending]
    if where < 0:  # the file's first statement is "import os"
        where, added = -where, added[1:]
    new = b"".join(lines[:where] + added + lines[where:])
    line = _original_line(data, conv, where)
    record = _switch_record(line, PYTHON_LINES[1])
    return Conversion(new, sorted([*conv.records, record], key=lambda r: (r.line, r.col)), unreached=conv.unreached)


def _original_line(data: bytes, conv: Conversion, where: int) -> int:
    """The original's line for the converted text's line ``where`` + 1: the same line, unless an
    inserted import (``import torch_npu``) moved it: then the original's first statement line."""
    if conv.new is None:
        return where + 1
    try:
        first = _insertion_line(ast.parse(data))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return where + 1
    return (abs(first) if first is not None else where) + 1


def switch_shell(data: bytes, conv: Conversion) -> Conversion:
    """A shell script's ``conv`` with ``export TORCH_TRANSFER_TO_NPU=1`` when it starts Python."""
    if ENV.encode() in data or not _STARTS_PYTHON.search(data):
        return conv
    source = conv.new if conv.new is not None else data
    lines = source.splitlines(keepends=True)
    ending = b"\r\n" if lines and lines[0].endswith(b"\r\n") else b"\n"
    where = 0
    while where < len(lines) and lines[where].startswith(b"#"):  # the #! line and the comments after it
        where += 1
    if where and not lines[where - 1].endswith((b"\n", b"\r")):
        lines[where - 1] += ending
    new = b"".join(lines[:where] + [SHELL_LINE + ending] + lines[where:])
    record = _switch_record(where + 1, SHELL_LINE)
    return Conversion(new, sorted([*conv.records, record], key=lambda r: (r.line, r.col)), unreached=conv.unreached)


def _switch_record(line: int, added: bytes) -> Record:
    """The TP109 row of the switch ``added`` at ``line``."""
    return Record(
        line, 1, line, 1, CODES["runtime"], "fix", OPERATION["runtime"], MESSAGE, "builtin", api=ENV, new=added.decode()
    )
