"""The project's own definitions of renamed members: ``def cuda(self)``, an ``is_cuda`` property.

Method and attribute rules (``x.cuda()`` -> ``x.npu()``, ``x.is_cuda`` -> ``x.is_npu``) match by
name on any object, since a receiver's type cannot be known statically. A class of the project that
defines such a member itself (a box list, a nested tensor, a batch with ``def cuda(self)``) would then
be called by the new name it lacks: ``BoxList(...).npu()`` raises AttributeError. So a method, a
property or a class attribute of that name directly in a class body is renamed with its calls,
unless the class already defines the new name. Owns ``leave_ClassDef``.
"""

from __future__ import annotations

import re

import libcst as cst

from .state import State


class MemberHandlers(State):
    """Definitions in class bodies that the method and attribute rules rename at their uses."""

    def _member_rule(self, name: str, stmt: cst.CSTNode):
        """The rule renaming member ``name`` as ``stmt`` defines it: a method rule renames calls
        ``x.name(...)`` only, so only a ``def`` (a class attribute ``cuda = True`` read as ``cfg.cuda``
        stays); an attribute rule renames every ``x.name``, so any definition."""
        if isinstance(stmt, cst.FunctionDef) and name in self.rules.rename_method:
            return self.rules.rename_method[name]
        return self.rules.rename_attribute.get(name)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        body = updated_node.body
        if not isinstance(body, cst.IndentedBlock):
            return updated_node
        defined = {name for stmt in original_node.body.body for name in _defined_names(stmt, self.folds)}
        statements = list(body.body)
        changed = False
        for i, (original, stmt) in enumerate(zip(original_node.body.body, body.body)):
            for name in _defined_names(original, []):
                rule = self._member_rule(name, original)
                if rule is None:
                    continue
                new = rule["new_name"].rsplit(".", 1)[-1]
                if new in defined or new == name:
                    continue
                anchor = original.name if isinstance(original, cst.FunctionDef) else original
                if not self.record(
                    anchor,
                    "method",
                    f"{name} -> {new} where {updated_node.name.value} defines it "
                    f"(its uses x.{name} are renamed by name)",
                    rule,
                    api=name,
                    new=new,
                ):
                    continue
                statements[i] = _renamed(stmt, name, new)
                changed = True
        if not changed:
            return updated_node
        return updated_node.with_changes(body=body.with_changes(body=statements))


_FOLD = re.compile(r"^__transplant_folded_(\d+)__$")
_DEFINES = re.compile(rb"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)|^[ \t]*(\w+)[ \t]*(?::[^=\n]*)?=(?!=)")


def _defined_names(stmt: cst.CSTNode, folds: list[bytes]) -> list[str]:
    """The member names a class-body statement defines: ``def NAME``, ``NAME = ...``, ``NAME: T = ...``;
    for a folded run of statements (skeleton.py), those its least indented lines define."""
    if isinstance(stmt, cst.FunctionDef):
        return [stmt.name.value]
    if isinstance(stmt, cst.SimpleStatementLine):
        names = []
        if (
            len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, cst.Name)
            and (fold := _FOLD.match(stmt.body[0].value.value))
            and int(fold.group(1)) < len(folds)
        ):
            lines = [line for line in folds[int(fold.group(1))].splitlines() if line.strip()]
            indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
            for line in lines:
                if len(line) - len(line.lstrip()) == indent and (m := _DEFINES.match(line)):
                    names.append((m.group(1) or m.group(2)).decode())
            return names
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                names += [t.target.value for t in small.targets if isinstance(t.target, cst.Name)]
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                names.append(small.target.value)
        return names
    return []


def _renamed(stmt: cst.BaseStatement, old: str, new: str) -> cst.BaseStatement:
    if isinstance(stmt, cst.FunctionDef):
        return stmt.with_changes(name=stmt.name.with_changes(value=new))
    if not isinstance(stmt, cst.SimpleStatementLine):  # (_defined_names found no name in it)
        return stmt
    body = []
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            small = small.with_changes(
                targets=[
                    t.with_changes(target=t.target.with_changes(value=new))
                    if isinstance(t.target, cst.Name) and t.target.value == old
                    else t
                    for t in small.targets
                ]
            )
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == old:
            small = small.with_changes(target=small.target.with_changes(value=new))
        body.append(small)
    return stmt.with_changes(body=body)
