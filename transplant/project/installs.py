"""``pip install`` run from Python at run time: ``subprocess.run(["pip", "install", "flash-attn"])``,
``os.system("pip install -v --global-option=--cuda_ext ./apex")``.

A program that installs a CUDA-only package when it starts (flash-attn, xformers, apex with its
CUDA extensions, ...) fails there on an NPU machine, or installs a package that cannot run: the
packages are reported as they are in a requirements file (packages.py, TP206 with ``api`` = the
library, the route from rules/project/packages.json), at the command's string. Only commands
written as constants are read (a string, or a list of strings); the ``torch`` reminder is the
requirements files' business. Works on a CPython ``ast`` tree; never rewrites code.
"""

from __future__ import annotations

import ast
import re

from ..records import Record
from .packages import requirement_records
from .pynames import column, nodes, qualify

WORDS = (b"pip",)
# the standard library's ways of running a program (as engine/commands.py lists them)
RUNNERS = frozenset(
    {
        "os.system",
        "os.popen",
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "subprocess.getoutput",
        "subprocess.getstatusoutput",
    }
)
_INSTALL = re.compile(r"\bpip3?\s+install\b")
_STOP = frozenset({"&&", ";", "||", "|", "\\"})
_CUDA_EXT = "--cuda_ext"  # apex's switch for its CUDA extensions


def _command(node: ast.expr) -> str | None:
    """The command a constant string or list spells (a list joined by spaces; an element that is
    not a constant, ``sys.executable``, stands as ``?``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return " ".join(e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else "?" for e in node.elts)
    return None


def _package_name(word: str) -> str:
    """``./apex`` -> ``apex``; a requirement (``flash-attn==2.5``) and a URL
    (``git+https://github.com/NVIDIA/apex.git@main``, read by packages.url_package) as they are."""
    if "/" not in word or "://" in word or word.startswith("git@"):
        return word
    tail = word.rstrip("/").rsplit("/", 1)[-1].split("@", 1)[0].split("#", 1)[0]
    return tail[: -len(".git")] if tail.endswith(".git") else tail


def install_words(command: str) -> list[str]:
    """The package words of the ``pip install`` commands in ``command`` (options skipped)."""
    words: list[str] = []
    for m in _INSTALL.finditer(command):
        for word in command[m.end() :].split():
            word = word.strip("\"'")
            if word in _STOP:
                break
            if word.startswith("-") or word == "?":  # an option, or a word computed at run time
                continue
            words.append(_package_name(word))
    return words


def install_records(tree: ast.Module, names: dict[str, str], lines: list[str]) -> list[Record]:
    records: list[Record] = []
    for node in nodes(tree):
        if not isinstance(node, ast.Call) or not node.args or qualify(node.func, names) not in RUNNERS:
            continue
        arg = node.args[0]
        command = _command(arg)
        if command is None or not _INSTALL.search(command):
            continue
        col = column(lines, arg.lineno, arg.col_offset) + 1
        for r in requirement_records((arg.lineno, col, word) for word in install_words(command)):
            if r.api == "torch_npu":
                continue
            if r.api == "apex" and _CUDA_EXT in command:
                r.message += " (installed with --cuda_ext: its CUDA extensions are compiled with nvcc)"
            r.message += "; installed by the program at run time"
            records.append(r)
    return records
