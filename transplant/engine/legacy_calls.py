"""Calls that are the fallback for an older API (issue 31): a device argument must not be added there.

A project that supports several torch releases writes the new spelling first and the old one where it
fails::

    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch before 2.4 takes no device
        ...
        return torch.is_autocast_enabled()

The call in the handler runs only on a torch whose function takes no device; adding ``"npu"`` to it
(the ``default_cuda`` rules) makes it raise the TypeError its try was written for. Owns finding, in
the ``except TypeError`` handlers (``TypeError`` alone or in a tuple) of a ``try`` whose body calls a
function with arguments, the calls of the same function (by its spelling) with fewer arguments: each
is kept as it is, with a note (state.py), anchored at its callee as calls.py records it.
"""

from __future__ import annotations

import libcst as cst

from .cst_util import dotted_parts
from .traverse import substance

WHY = (
    "the fallback for an older torch: the call with the argument, in the try above, raised TypeError "
    "there, so this spelling without it is what that torch takes; with the argument added it would raise too"
)


def legacy_fallbacks(module: cst.Module, text: bytes) -> dict[int, str]:
    """id of the callee of each fallback call of ``module`` -> why it stays (empty without ``TypeError``)."""
    if b"TypeError" not in text:
        return {}
    found: dict[int, str] = {}
    for node in substance(module):
        if not isinstance(node, cst.Try):
            continue
        handlers = [h for h in node.handlers if _catches_type_error(h.type)]
        if not handlers:
            continue
        tried: dict[str, int] = {}
        for call in _calls(node.body):
            name = _spelling(call.func)
            if name:
                tried[name] = max(tried.get(name, 0), len(call.args))
        for handler in handlers:
            for call in _calls(handler.body):
                name = _spelling(call.func)
                if name and len(call.args) < tried.get(name, 0):
                    found[id(call.func)] = WHY
    return found


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in substance(node) if isinstance(n, cst.Call)]


def _spelling(func: cst.BaseExpression) -> str:
    parts = dotted_parts(func)
    return ".".join(parts) if parts else ""


def _catches_type_error(kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return False
    names = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    return any(isinstance(n, cst.Name) and n.value == "TypeError" for n in names)
