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
from collections.abc import Callable, Iterator, Sequence
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


_NODE_TYPES: dict[type, bool] = {}  # type -> is it a CSTNode (isinstance of an ABC is slow)


def _is_node(value: object) -> bool:
    kind = type(value)
    known = _NODE_TYPES.get(kind)
    if known is None:
        known = _NODE_TYPES[kind] = isinstance(value, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children``, without rebuilding ``node``."""
    out: list[cst.CSTNode] = []
    for name in _ORDER.get(type(node)) or _order(type(node)):
        value = getattr(node, name)
        if type(value) is list or type(value) is tuple:
            out.extend(v for v in value if _is_node(v))
        elif _is_node(value):
            out.append(value)
    return out


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it (in no particular order)."""
    return _below(node, children)


def _below(node: cst.CSTNode, below: Callable[[cst.CSTNode], list[cst.CSTNode]]) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(below(current))


# whitespace, comments and tokens: nothing below them but more of the same
_TRIVIA = (
    cst.BaseParenthesizableWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
    cst.AssignEqual,
    cst.BaseAugOp,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseUnaryOp,
    cst.Colon,
    cst.Comma,
    cst.Dot,
    cst.ImportStar,
    cst.Semicolon,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
)
_IS_TRIVIA: dict[type, bool] = {}


def _is_trivia(cls: type) -> bool:
    trivia = _IS_TRIVIA.get(cls)
    if trivia is None:
        trivia = _IS_TRIVIA[cls] = issubclass(cls, _TRIVIA)
    return trivia


def parts(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node``'s children less whitespace, comments and tokens (no name, string or expression is
    below those): for the analyses that look for names and strings."""
    return [child for child in children(node) if not _is_trivia(type(child))]


def substance(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it but whitespace, comments and tokens (in no particular order)."""
    return _below(node, parts)


def _check(visitor: cst.CSTVisitor) -> None:
    for cls in type(visitor).__mro__:
        if cls.__module__.startswith("libcst"):
            continue  # (libcst's own classes declare every hook, as no-ops)
        for name in vars(cls):
            if name.startswith(("visit_", "leave_")) and name.count("_") > 1:
                raise TypeError(f"traverse.walk does not call attribute hooks ({cls.__name__}.{name})")


def _own_hook(visitor: cst.CSTVisitor, name: str):
    """The visitor's ``visit_X``/``leave_X`` method, None when only libcst's no-op stands there."""
    for cls in type(visitor).__mro__:
        if cls.__module__.startswith("libcst"):
            return None
        if name in vars(cls):
            return getattr(visitor, name)
    return None


class _Dispatch:
    """Each visitor's hooks by node class, looked up once per class. A visitor that overrides
    ``on_visit``/``on_leave`` itself is called through them for every node."""

    def __init__(self, visitors: Sequence[cst.CSTVisitor]) -> None:
        self.visitors = list(visitors)
        self.generic = [
            type(v).on_visit is not cst.CSTVisitor.on_visit or type(v).on_leave is not cst.CSTVisitor.on_leave
            for v in self.visitors
        ]
        self.hooks: dict[type, list[tuple[object, object]]] = {}
        self.skip: dict[type, bool] = {}

    def of(self, cls: type) -> list[tuple[object, object]]:
        hooks = self.hooks.get(cls)
        if hooks is None:
            name = cls.__name__
            hooks = self.hooks[cls] = [
                (None, None) if generic else (_own_hook(v, "visit_" + name), _own_hook(v, "leave_" + name))
                for v, generic in zip(self.visitors, self.generic)
            ]
            # a subtree of trivia no visitor looks at is not walked at all
            self.skip[cls] = _is_trivia(cls) and not any(self.generic) and all(h == (None, None) for h in hooks)
        return hooks


def walk(node: cst.CSTNode, visitors: Sequence[cst.CSTVisitor]) -> None:
    """Call each visitor's ``on_visit``/``on_leave`` (its ``visit_X``/``leave_X`` hooks) as
    ``node.visit(visitor)`` would, in one traversal for all of them; a visitor whose hook returns
    False skips that subtree (the others still see it). Whitespace, comments and tokens that none
    of the visitors has a hook for are not walked."""
    for visitor in visitors:
        _check(visitor)
    dispatch = _Dispatch(visitors)
    _walk(node, list(range(len(dispatch.visitors))), dispatch)


def _walk(node: cst.CSTNode, active: list[int], dispatch: _Dispatch) -> None:
    cls = type(node)
    hooks = dispatch.hooks.get(cls) or dispatch.of(cls)
    if dispatch.skip[cls]:
        return
    visitors, generic = dispatch.visitors, dispatch.generic
    inside = []
    for i in active:
        if generic[i]:
            go = visitors[i].on_visit(node)
        else:
            hook = hooks[i][0]
            go = hook is None or hook(node) is not False  # type: ignore[operator]
        if go:
            inside.append(i)
    if inside:
        for child in children(node):
            _walk(child, inside, dispatch)
    for i in active:
        if generic[i]:
            visitors[i].on_leave(node)
        elif hooks[i][1] is not None:
            hooks[i][1](node)  # type: ignore[operator]
