"""A CUDA answer handed to another library's CUDA switch (issue 31, mechanism 4).

``MergeOptions(cuda=torch.cuda.is_available())``, ``Encoder(use_gpu=torch.cuda.device_count() > 0)``:
the keyword says what the callee does with a true value, use CUDA. Renamed, the query answers for the
NPU, and on an NPU host the library is told to run CUDA code it cannot run. When the callee is not the
project's own (a function or class of this file, or imported from a relative import or one of the
project's packages, whose body the conversion handles), the query given to such a keyword stays a CUDA
query, with a note: on an NPU it answers False and the library takes its CPU path.

Owns finding those queries. Read-only over the libcst module; runs only when the bytes show such a
keyword next to ``cuda``.
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import dotted_parts
from .traverse import descendants, substance

_BYTES = re.compile(rb"\b(?:use_|on_|enable_|with_)?(?:cuda|gpu)s?[ \t]*=[^=]")
_SWITCH = re.compile(r"^(?:use_|on_|enable_|with_)?(?:cuda|gpu)s?$")
# the functions and classes the file defines (from its bytes: the skeleton may have folded them away)
_DEF = re.compile(rb"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)


def switch_keeps(module: cst.Module, text: bytes, own_packages: frozenset[str]) -> dict[int, str]:
    """id of each node of a ``torch.cuda`` query given to a CUDA switch of a call the project does
    not define -> why it stays."""
    if b"torch" not in text or _BYTES.search(text) is None:
        return {}
    nodes = list(substance(module))
    own = _own_names(nodes, own_packages) | {m.group(1).decode() for m in _DEF.finditer(text)}
    kept: dict[int, str] = {}
    for node in nodes:
        if not isinstance(node, cst.Call):
            continue
        callee = dotted_parts(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
        if callee is None or callee[0] in own or callee[0] in ("self", "cls"):
            continue
        for arg in node.args:
            if arg.keyword is None or not _SWITCH.match(arg.keyword.value) or not _asks_cuda(arg.value):
                continue
            why = (
                f"a CUDA answer given to {'.'.join(callee)}(..., {arg.keyword.value}=...), which is not the "
                "project's: that switch tells the library to use CUDA, so on an NPU it must answer False"
            )
            for inner in descendants(arg.value):
                kept[id(inner)] = why
    return kept


def _asks_cuda(value: cst.BaseExpression) -> bool:
    """Does ``value`` call a ``torch.cuda`` query (``torch.cuda.is_available()``, ``device_count()``)?"""
    for node in substance(value):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            parts = dotted_parts(node.func)
            if parts is not None and parts[:2] == ["torch", "cuda"] and len(parts) == 3:
                return True
    return False


def _own_names(nodes: list[cst.CSTNode], own_packages: frozenset[str]) -> set[str]:
    """The names this file imports from the project itself (its calls are converted with the project)."""
    own: set[str] = set()
    for node in nodes:
        if isinstance(node, cst.ImportFrom):
            module = dotted_parts(node.module) if node.module is not None else []
            if (node.relative or (module and module[0] in own_packages)) and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(bound, cst.Name):
                        own.add(bound.value)
        elif isinstance(node, cst.Import):
            for alias in node.names:
                parts = dotted_parts(alias.name)
                if parts and parts[0] in own_packages:
                    named = alias.asname.name if alias.asname is not None else None
                    own.add(named.value if isinstance(named, cst.Name) else parts[0])
    return own
