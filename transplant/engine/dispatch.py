"""libcst's dispatch by node type, looked up once per class and node type instead of at every node.

``CSTTransformer.on_visit`` finds the handler of a node with ``getattr(self, f"visit_{name}",
None)`` at every node, and ``on_visit_attribute``/``on_leave_attribute`` do the same for every
child attribute of every node (``visit_Call_func``): a string built and a failed attribute lookup
through the whole class hierarchy each time, most of them for node types no handler has. On the
converter, a class of some fifteen handler classes (transformer.py), that was about a fifth of the
traversal's time. :class:`Dispatch` makes the same calls in the same order: it looks each name up
on the class the first time a node type (and attribute) comes, and keeps the answer, a function or
None, in a table of that class.

Why this is exact: the handlers are plain functions defined in the classes (no instance
attributes, static or class methods named ``visit_*``/``leave_*``: tests/test_dispatch.py checks
it), the classes are not changed after they are made, and a class's table holds only what
``getattr`` on that class answered.
"""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst

_UNKNOWN: Any = object()


class Dispatch(cst.CSTTransformer):
    """A CSTTransformer whose handler lookups are kept per class (see the module docstring)."""

    # node type -> visit_X (or None); node type -> leave_X; node type -> attribute -> visit/leave_X_attr
    _visits: dict[type, Callable[..., Any] | None] = {}
    _leaves: dict[type, Callable[..., Any] | None] = {}
    _visit_attrs: dict[type, dict[str, Callable[..., Any] | None]] = {}
    _leave_attrs: dict[type, dict[str, Callable[..., Any] | None]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._visits, cls._leaves, cls._visit_attrs, cls._leave_attrs = {}, {}, {}, {}  # one table per class

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = type(node)
        func = self._visits.get(kind, _UNKNOWN)
        if func is _UNKNOWN:
            func = self._visits[kind] = getattr(type(self), f"visit_{kind.__name__}", None)
        if func is None:
            return True
        return func(self, node) is not False

    def on_leave(self, original_node: Any, updated_node: Any) -> Any:
        kind = type(original_node)
        func = self._leaves.get(kind, _UNKNOWN)
        if func is _UNKNOWN:
            func = self._leaves[kind] = getattr(type(self), f"leave_{kind.__name__}", None)
        return updated_node if func is None else func(self, original_node, updated_node)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        func = _attribute_handler(self._visit_attrs, type(self), "visit", type(node), attribute)
        if func is not None:
            func(self, node)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        func = _attribute_handler(self._leave_attrs, type(self), "leave", type(original_node), attribute)
        if func is not None:
            func(self, original_node)


def _attribute_handler(
    tables: dict[type, dict[str, Callable[..., Any] | None]], cls: type, prefix: str, kind: type, attribute: str
) -> Callable[..., Any] | None:
    """``cls``'s ``visit_Call_func`` (prefix "visit") for the attribute ``func`` of a Call, or None;
    looked up once per class, node type and attribute."""
    table = tables.get(kind)
    if table is None:
        table = tables[kind] = {}
    func = table.get(attribute, _UNKNOWN)
    if func is _UNKNOWN:
        func = table[attribute] = getattr(cls, f"{prefix}_{kind.__name__}_{attribute}", None)
    return func
