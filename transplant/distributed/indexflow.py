"""Which variables of the entry file hold a fixed device index, followed through the file.

PyTorch's DDP tutorial passes its device along: ``device = 0`` in the ``__main__`` block, then
``main(device, ...)``, ``Trainer(..., gpu_id)`` and ``self.model = model.to(gpu_id)``. A variable
(a local or global name, an attribute of ``self`` in a class, a parameter) holds a fixed index when
every value the file gives it is an integer literal or another such variable; a parameter's values
are the arguments of every call of its function in the file (and its default where a call leaves it
out). Anything the analysis cannot see makes the variable unknown: a binding other than a plain
assignment (a loop, ``+=``, unpacking of a call's result, an import), a function used other than by
a direct call (passed along, decorated, a method called on another object), an attribute assigned
from outside its class, or a call with ``*args``/``**kwargs``.

Reads the :class:`~.analysis.Analysis`; plans nothing (the indices pass rewrites the device uses).
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from .analysis import Analysis

Binding = Optional[tuple[cst.BaseExpression, cst.CSTNode]]  # a value and where it is read; None: unknown
OTHER_BINDINGS = (cst.AugAssign, cst.For, cst.AsName, cst.NamedExpr, cst.CompFor)
DEVICE_NAME = re.compile(r"device|gpu|npu|cuda|local_rank", re.IGNORECASE)


class IndexFlow:
    """``fixed``: Analysis.key_of of a variable -> the integer indices the file gives it."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.bindings: dict[tuple, list[Binding]] = {}
        self.names: dict[tuple, str] = {}  # key -> the variable's name, for messages
        self.followed: dict[int, cst.FunctionDef] = {}  # id of a call -> the function of the file it runs
        self._collect_assignments()
        self._collect_parameters()
        self.fixed: dict[tuple, frozenset[int]] = {}
        self._solve()

    # ---- what the file binds

    def _bind(self, target: cst.CSTNode, value: Binding, at: cst.CSTNode) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            values = value[0] if value is not None else None
            if (
                isinstance(values, (cst.Tuple, cst.List))
                and len(values.elements) == len(elements)
                and not any(isinstance(e, (cst.StarredElement,)) for e in (*target.elements, *values.elements))
            ):
                for element, v in zip(elements, values.elements):
                    self._bind(element, (v.value, at), at)
            else:
                for element in elements:
                    self._bind(element, None, at)
            return
        if isinstance(target, cst.StarredElement):
            self._bind(target.value, None, at)
            return
        if isinstance(target, (cst.Name, cst.Attribute)):
            key = self.a.key_of(target, at)
            if key is not None:
                self.bindings.setdefault(key, []).append(value)
                self.names[key] = target.value if isinstance(target, cst.Name) else target.attr.value

    def _collect_assignments(self) -> None:
        a = self.a
        foreign_attrs: set[str] = set()  # attributes some code assigns on an object other than self
        for node in a.nodes:
            if a.in_helpers(node):
                continue
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    self._bind(t.target, (node.value, node), node)
            elif isinstance(node, cst.AnnAssign) and node.value is not None:
                self._bind(node.target, (node.value, node), node)
            elif isinstance(node, OTHER_BINDINGS):
                target = node.name if isinstance(node, cst.AsName) else node.target
                self._bind(target, None, node)
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                self._bind(node.name, None, node)
            elif isinstance(node, cst.ImportAlias):
                bound: cst.BaseExpression = node.asname.name if node.asname is not None else node.name
                while isinstance(bound, cst.Attribute):
                    bound = bound.value
                if isinstance(bound, cst.Name):
                    self._bind(bound, None, node)
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
                for n in [node.target, *a.subtree(node.target)]:
                    if isinstance(n, cst.Attribute) and not (isinstance(n.value, cst.Name) and n.value.value == "self"):
                        foreign_attrs.add(n.attr.value)
        for key in self.bindings:
            if key[0] == "attr" and key[2] in foreign_attrs:
                self.bindings[key].append(None)

    def _collect_parameters(self) -> None:
        a = self.a
        calls: dict[int, list[cst.Call | None]] = {}  # id of a function -> its calls (None: a use that is not one)
        functions: dict[int, cst.FunctionDef] = {}
        for node in a.nodes:
            if isinstance(node, cst.FunctionDef) and not a.in_helpers(node):
                functions[id(node)] = node
                calls[id(node)] = []
        for node in a.nodes:
            if a.in_helpers(node):
                continue
            for fn in self._referenced(node):
                if id(fn) not in calls:  # the inserted helpers
                    continue
                parent = a.parent.get(id(node))
                if isinstance(parent, cst.Call) and parent.func is node and a.callee(parent) is fn:
                    calls[id(fn)].append(parent)
                    self.followed[id(parent)] = fn
                else:
                    calls[id(fn)].append(None)
        for fid, fn in functions.items():
            params = self._params(fn)
            sites = calls[fid]
            followable = bool(sites) and not fn.decorators and (a.function_of(fn) is None) and None not in sites
            for param in params:
                key = ("name", id(fn), param.name.value)
                self.names[key] = param.name.value
                values = self.bindings.setdefault(key, [])
                if not followable:
                    values.append(None)
            if not followable:
                continue
            for call in sites:
                assert call is not None
                for name, value in self._arguments(fn, params, call).items():
                    self.bindings[("name", id(fn), name)].append(value)

    def _referenced(self, node: cst.CSTNode) -> list[cst.FunctionDef]:
        """The functions of the file that ``node`` names: a module-level function or class (its
        ``__init__``) by name, a method by ``self.name`` in its class or ``x.name`` anywhere."""
        a = self.a
        if isinstance(node, cst.Name):
            parent = a.parent.get(id(node))
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node:
                return []
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                return []
            if a.key_of(node, node) != ("name", id(a.module), node.value):
                return []
            if node.value in a.functions:
                return [a.functions[node.value]]
            cls = a.classes.get(node.value)
            init = self._method(cls, "__init__") if cls is not None else None
            return [init] if init is not None else []
        if isinstance(node, cst.Attribute):
            found = []
            for cls in a.classes.values():
                method = self._method(cls, node.attr.value)
                if method is not None:
                    found.append(method)
            return found
        return []

    def _method(self, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        for stmt in self.a.block_statements(cls):
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
                return stmt
        return None

    def _params(self, fn: cst.FunctionDef) -> list[cst.Param]:
        ps = fn.params
        params = [*ps.posonly_params, *ps.params, *ps.kwonly_params]
        if self.a.class_of(fn) is not None and params:
            params = params[1:]  # self (decorated methods are not followed)
        for star in (ps.star_arg, ps.star_kwarg):
            if isinstance(star, cst.Param):
                self.bindings.setdefault(("name", id(fn), star.name.value), []).append(None)
        return params

    def _arguments(self, fn: cst.FunctionDef, params: list[cst.Param], call: cst.Call) -> dict[str, Binding]:
        """What ``call`` gives each parameter: its argument, or the default it leaves in place."""
        positional = [p for p in params if p not in fn.params.kwonly_params]
        given: dict[str, Binding] = {}
        if any(arg.star for arg in call.args):
            return {p.name.value: None for p in params}
        i = 0
        for arg in call.args:
            if arg.keyword is not None:
                given[arg.keyword.value] = (arg.value, call)
            elif i < len(positional):
                given[positional[i].name.value] = (arg.value, call)
                i += 1
        for p in params:
            if p.name.value not in given:
                given[p.name.value] = (p.default, fn) if p.default is not None else None
        return {p.name.value: given[p.name.value] for p in params}

    # ---- the fixed indices

    def value(self, expr: cst.BaseExpression, at: cst.CSTNode) -> frozenset[int] | None:
        """The integer indices ``expr`` can have, read at ``at``; None when it is not a fixed index."""
        if isinstance(expr, cst.Integer):
            try:
                return frozenset({int(expr.evaluated_value)})
            except ValueError:
                return None
        if isinstance(expr, (cst.Name, cst.Attribute)):
            key = self.a.key_of(expr, at)
            return self.fixed.get(key) if key is not None else None
        return None

    def _solve(self) -> None:
        changed = True
        while changed:
            changed = False
            for key, values in self.bindings.items():
                if key in self.fixed or not values or None in values:
                    continue
                found = [self.value(v, at) for v, at in values]  # type: ignore[misc]
                if all(f is not None for f in found):
                    self.fixed[key] = frozenset().union(*found)  # type: ignore[arg-type]
                    changed = True

    def device_like(self, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """Does ``expr`` hold a fixed index under a name that says it is a device?"""
        key = self.a.key_of(expr, at) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        return key is not None and key in self.fixed and bool(DEVICE_NAME.search(self.names.get(key, "")))
