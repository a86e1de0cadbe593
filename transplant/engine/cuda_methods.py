"""CUDA objects whose CUDA-named methods are called (issue 31: one decision per call and its use).

``torch.cuda.cudart().cudaHostRegister(ptr, size, 1)``: the rename of ``torch.cuda.cudart`` gives the
NPU runtime's object, which is not known to have a method named after the CUDA runtime; converting the
call alone would turn a working CUDA line into an AttributeError on every host. Owns finding, before the traversal, a ``torch.cuda.*()``
call whose result's method is named after CUDA (``cuda*``, ``*Cuda*``): the call stays, with a note
saying which method ties it to CUDA. A byte search comes first, so files without such a chain pay nothing.
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import dotted_parts
from .traverse import descendants, substance

_CHAIN = re.compile(rb"\)\s*\.\s*\w*[cC]uda\w*\s*\(")
_METHOD = re.compile(r"cuda", re.IGNORECASE)


def cuda_method_keeps(module: cst.Module, text: bytes) -> dict[int, str]:
    """id of every node of a ``torch.cuda.X()`` call whose result's CUDA-named method is called -> why."""
    if _CHAIN.search(text) is None:
        return {}
    kept: dict[int, str] = {}
    for node in substance(module):
        if not (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and _METHOD.search(node.func.attr.value)
            and isinstance(node.func.value, cst.Call)
        ):
            continue
        inner = node.func.value
        parts = dotted_parts(inner.func)
        if not parts or parts[:2] != ["torch", "cuda"] or len(parts) < 3:
            continue
        why = (
            f"its result's method {node.func.attr.value}() is named after the CUDA runtime, and the NPU "
            f"counterpart of {'.'.join(parts)}() is not known to have it: the call and its use stay CUDA code "
            "(port them by hand)"
        )
        for part in descendants(inner):
            kept.setdefault(id(part), why)
    return kept
