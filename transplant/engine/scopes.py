"""Name resolution during the traversal: which qualified name a dotted reference stands for here.

Owns the scope stack (parameters, names a function binds other than by import, lambda and
comprehension variables shadow imported names) and
``qualified``/``resolve_name`` through the file's bindings; marks the names that are never references
(definitions, parameters, keywords). It rewrites nothing.
"""

from __future__ import annotations

import libcst as cst

from .cst_util import dotted_parts, import_module_name, target_names
from . import namespace
from ..rule_versions import KEPT
from .state import State


class ScopeHandlers(State):
    """Scopes and name resolution."""

    def qualified(self, parts: list[str]) -> str | None:
        root = parts[0]
        if any(root in scope for scope in self.shadow):
            return None
        base = self.b.original.get(root)
        if base is None:
            return None
        return ".".join([base, *parts[1:]])

    def resolve_name(self, node: cst.BaseExpression) -> str | None:
        parts = dotted_parts(node)
        return self.qualified(parts) if parts else None

    # ---- scopes (parameters shadow imported names)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.skip_names.add(id(node.name))
        # a name the function binds anywhere in its body is local to all of it (Python's rule):
        # ``torch = make_fake()`` in a function makes every ``torch`` there another object
        self.shadow.append(self._params(node.params) | local_names(node.body) & self.b.original.keys())

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.shadow.pop()
        return updated_node

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.shadow.append(self._params(node.params))

    def leave_Lambda(self, original_node: cst.Lambda, updated_node: cst.Lambda) -> cst.Lambda:
        self.shadow.pop()
        return updated_node

    # comprehension variables shadow imported names inside the comprehension
    def _comp_enter(self, node) -> None:
        names: set[str] = set()
        comp = node.for_in
        while comp is not None:
            names |= target_names(comp.target)
            comp = comp.inner_for_in
        self.shadow.append(names)

    def _comp_leave(self, original_node, updated_node):
        self.shadow.pop()
        return updated_node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comp_enter
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _comp_leave

    @staticmethod
    def _params(params: cst.Parameters) -> set[str]:
        names = set()
        for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
            names.add(p.name.value)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                names.add(star.name.value)
        return names

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.skip_names.add(id(node.name))

    def visit_Param(self, node: cst.Param) -> None:
        self.skip_names.add(id(node.name))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip_names.add(id(node.keyword))
        self.call_args.add(id(node.value))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.stores |= {id(n) for n in _bound_names(node.target)}

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.stores |= {id(n) for n in _bound_names(node.target)}

    def visit_For(self, node: cst.For) -> None:
        self.stores |= {id(n) for n in _bound_names(node.target)}

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            self._unknown_cuda_import(alias, import_module_name(alias.name))
        return False

    def _unknown_cuda_import(self, alias: cst.ImportAlias, qualified: str) -> None:
        """An import of a torch.cuda name no rule knows, or of a CUDA-only library (the uses of the
        names it binds are reported where they are)."""
        if namespace.unknown(self.rules, qualified):
            self._no_counterpart(alias, qualified)
        elif self.rules.new_name(qualified) is not None and (caveat := self.rules.unsupported_q.get(qualified)):
            # renamed by the import (its uses are not edited), but the counterpart does not behave the same
            self._finding(alias, qualified, caveat)
        elif (kept := self.rules.unsupported_q.get(qualified)) is not None and kept.get(KEPT):
            # a rename that does not hold for the chosen version (rule_versions.py): the import keeps it too
            self._finding(alias, qualified, kept)
        elif (library := self.rules.library_of(qualified)) is not None and self.rules.new_name(qualified) is None:
            self._library_finding(alias, qualified, library, use=False)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if (
            isinstance(node.names, cst.ImportStar)
            and id(node) not in self.b.plans
            and not node.relative
            and node.module is not None
        ):
            module = import_module_name(node.module)
            prefix = module + "."
            if any(name.startswith(prefix) for name in self.rules.rename_q):
                # the names a star import binds are invisible here: their uses cannot be converted
                self.record(
                    node,
                    "note",
                    f"from {module} import *: the names it binds are not converted; import the ones you use by name",
                    None,
                    api=f"{module}.*",
                    level="note",
                )
        elif not isinstance(node.names, cst.ImportStar) and not node.relative and node.module is not None:
            module = import_module_name(node.module)
            for alias in node.names:
                name = alias.name.value if isinstance(alias.name, cst.Name) else import_module_name(alias.name)
                self._unknown_cuda_import(alias, f"{module}.{name}")
        return False


def _bound_names(target: cst.BaseExpression) -> list[cst.Name]:
    """The Name nodes an assignment or loop target binds: ``x``, ``(a, [b, *c])``."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _bound_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return []


def local_names(body: cst.BaseSuite) -> set[str]:
    """The names a function body binds by statements other than imports (assignments, loop and
    ``with`` targets, ``except ... as``, ``del``, nested ``def``/``class``), less those it declares
    ``global`` or ``nonlocal``; nested function and class bodies are their own scopes. (Imports in
    the body are the bindings' business: bindings.py resolves them.)"""
    bound: set[str] = set()
    declared: set[str] = set()

    def targets(node: cst.BaseExpression | None) -> None:
        if node is not None:
            bound.update(n.value for n in _bound_names(node))

    def suite(block: cst.BaseSuite | None) -> None:
        if block is None:
            return
        if isinstance(block, cst.SimpleStatementSuite):
            small(block.body)
        else:
            for stmt in block.body:
                statement(stmt)

    def small(stmts) -> None:
        for stmt in stmts:
            if isinstance(stmt, cst.Assign):
                for target in stmt.targets:
                    targets(target.target)
            elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign)):
                targets(stmt.target)
            elif isinstance(stmt, cst.Del):
                targets(stmt.target)
            elif isinstance(stmt, (cst.Global, cst.Nonlocal)):
                declared.update(item.name.value for item in stmt.names)

    def statement(stmt: cst.CSTNode) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            small(stmt.body)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            bound.add(stmt.name.value)
        else:
            if isinstance(stmt, cst.For):
                targets(stmt.target)
            elif isinstance(stmt, cst.With):
                for item in stmt.items:
                    if item.asname is not None:
                        targets(item.asname.name)
            for handler in getattr(stmt, "handlers", ()):
                if handler.name is not None:
                    targets(handler.name.name)
                suite(handler.body)
            for case in getattr(stmt, "cases", ()):
                suite(case.body)
            suite(getattr(stmt, "body", None))
            orelse = getattr(stmt, "orelse", None)
            if isinstance(orelse, cst.If):
                statement(orelse)
            elif orelse is not None:
                suite(orelse.body)
            final = getattr(stmt, "finalbody", None)
            if final is not None:
                suite(final.body)

    suite(body)
    return bound - declared
