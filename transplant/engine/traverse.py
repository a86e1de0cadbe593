"""Read-only traversals of a libcst tree that do not rebuild it.

Owns walking a tree for the analyses that only look at it (npu_aware.py, own_attributes.py,
device_sets.py). libcst's ``module.visit(visitor)`` builds a new copy of every node, validation
included, even for a ``CSTVisitor`` that changes nothing, and ``node.children`` is computed the same
way; on a 20k-line file one such pass costs about as much as parsing it. Here the children of a
node are read from its fields, in the order libcst's own ``_visit_and_replace_children`` visits them
(taken once per node class from the field names that method passes to libcst's ``visit_*``
helpers, in bytecode order), so ``walk`` calls ``on_visit``/``on_leave`` on the same nodes in the
same order as ``module.visit`` would (tests/test_traverse.py compares them node by node). Visitors
with attribute hooks (``visit_Call_args``) are not supported: ``walk`` refuses them.
"""

from __future__ import annotations

import dis
from collections.abc import Iterator, Sequence
from dataclasses import fields

import libcst as cst

_ORDER: dict[type, tuple[str, ...]] = {}


def _order(cls: type) -> tuple[str, ...]:
    order = _ORDER.get(cls)
    if order is None:
        names = {f.name for f in fields(cls)}
        seen: list[str] = []
        for ins in dis.get_instructions(cls._visit_and_replace_children):  # type: ignore[attr-defined]
            if ins.opname == "LOAD_CONST" and isinstance(ins.argval, str) and ins.argval in names:
                if ins.argval not in seen:
                    seen.append(ins.argval)
        order = _ORDER[cls] = tuple(seen)
    return order


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children``, without rebuilding ``node``."""
    out: list[cst.CSTNode] = []
    for name in _order(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, cst.CSTNode))
    return out


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it (in no particular order)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def _check(visitor: cst.CSTVisitor) -> None:
    for cls in type(visitor).__mro__:
        if cls.__module__.startswith("libcst"):
            continue  # (libcst's own classes declare every hook, as no-ops)
        for name in vars(cls):
            if name.startswith(("visit_", "leave_")) and name.count("_") > 1:
                raise TypeError(f"traverse.walk does not call attribute hooks ({cls.__name__}.{name})")


def walk(node: cst.CSTNode, visitors: Sequence[cst.CSTVisitor]) -> None:
    """Call each visitor's ``on_visit``/``on_leave`` as ``node.visit(visitor)`` would, in one
    traversal for all of them; a visitor whose ``on_visit`` returns False skips that subtree (the
    others still see it)."""
    for visitor in visitors:
        _check(visitor)
    _walk(node, list(visitors))


def _walk(node: cst.CSTNode, visitors: list[cst.CSTVisitor]) -> None:
    inside = [v for v in visitors if v.on_visit(node)]
    if inside:
        for child in children(node):
            _walk(child, inside)
    for visitor in visitors:
        visitor.on_leave(node)
