"""Who binds which name: the file's imports, as local name -> qualified name, and the plan of
how each import statement is rewritten.

Owns the one binding table of a file (``Bindings``, built by ``analyse_imports`` in one walk over
every statement, nested ones included) and the ``ImportPlan`` of each import a rename rule
applies to. It decides nothing about references; shadowing by parameters and comprehension
variables is the traversal's (scopes.py), applying the plans is imports.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import libcst as cst

from ..rules import Rule, RuleSet
from .cst_util import fix_commas, import_asname, import_module_name, make_dotted


@dataclass
class ImportPlan:
    """What happens to one import statement."""

    new_nodes: list[cst.BaseSmallStatement]
    message: str
    names: list[str]  # local names whose binding the rewrite changes
    needs_npu: bool = True  # the rewrite comes from a built-in rule or names torch_npu


class Bindings:
    """Names bound by imports anywhere in the file: local name -> qualified name."""

    def __init__(self) -> None:
        self.original: dict[str, str] = {}
        self.rewritten: dict[str, str] = {}  # names whose import is rewritten -> new qualified
        self.plans: dict[int, ImportPlan] = {}  # id(import node) -> plan
        self.import_nodes: list[cst.Import | cst.ImportFrom] = []


def walk_statements(body: Sequence[cst.CSTNode]) -> Iterable[cst.BaseSmallStatement]:
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, cst.BaseCompoundStatement):
            inner = getattr(stmt, "body", None)  # a match statement has only cases
            if isinstance(inner, cst.IndentedBlock):
                yield from walk_statements(inner.body)
            elif isinstance(inner, cst.SimpleStatementSuite):
                yield from inner.body
            for extra in ("orelse", "finalbody"):
                sub = getattr(stmt, extra, None)
                if sub is not None:
                    yield from walk_statements([sub])
            for handler in getattr(stmt, "handlers", ()):
                yield from walk_statements([handler])
            for case in getattr(stmt, "cases", ()):
                yield from walk_statements([case])
        elif isinstance(stmt, (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase)):
            inner = stmt.body
            if isinstance(inner, cst.IndentedBlock):
                yield from walk_statements(inner.body)
            elif isinstance(inner, cst.SimpleStatementSuite):
                yield from inner.body
        elif isinstance(stmt, cst.If):  # elif chains
            yield from walk_statements([stmt])


def analyse_imports(module: cst.Module, rules: RuleSet) -> Bindings:
    b = Bindings()
    for small in walk_statements(module.body):
        if isinstance(small, cst.Import):
            b.import_nodes.append(small)
            _plan_import(small, rules, b)
        elif isinstance(small, cst.ImportFrom):
            b.import_nodes.append(small)
            _plan_import_from(small, rules, b)
    return b


def _plan_import(node: cst.Import, rules: RuleSet, b: Bindings) -> None:
    changed = False
    rules_used: list[Rule] = []
    new_aliases = []
    notes = []
    for alias in node.names:
        qualified = import_module_name(alias.name)
        local = import_asname(alias)
        if local is not None:
            b.original[local] = qualified
            found = rules.new_name(qualified)
            if found is not None:
                new_qualified = found[0]
                rules_used.append(found[1])
                b.rewritten[local] = new_qualified
                alias = alias.with_changes(name=make_dotted(new_qualified))
                changed = True
                notes.append(f"{qualified} -> {new_qualified}{_rule_note(found[1])}")
        else:
            root = qualified.split(".")[0]
            b.original.setdefault(root, root)
            found = rules.new_name(qualified)
            # "import a.old" binds "a": it can become "import a.new" only while the root stays
            if found is not None and found[0] != qualified and found[0].split(".")[0] == root:
                rules_used.append(found[1])
                alias = alias.with_changes(name=make_dotted(found[0]))
                changed = True
                notes.append(f"{qualified} -> {found[0]}")
        new_aliases.append(alias)
    if changed:
        b.plans[id(node)] = ImportPlan(
            [node.with_changes(names=new_aliases)],
            "import " + ", ".join(notes),
            [n for n in b.rewritten if b.original.get(n) and n in bound_locals(node)],
            any(targets_npu(r) for r in rules_used),
        )


def _plan_import_from(node: cst.ImportFrom, rules: RuleSet, b: Bindings) -> None:
    if node.relative or node.module is None:
        return
    module = import_module_name(node.module)
    if isinstance(node.names, cst.ImportStar):
        found = rules.new_name(module)
        if found is not None and found[0] != module:
            # the module itself has a counterpart: the star import takes its names from there
            b.plans[id(node)] = ImportPlan(
                [node.with_changes(module=make_dotted(found[0]))],
                f"from-import {module}.* -> {found[0]}.*",
                [],
                targets_npu(found[1]),
            )
        return
    kept: list[cst.ImportAlias] = []
    moved: dict[str, list[cst.ImportAlias]] = {}
    notes = []
    rules_used: list[Rule] = []
    for alias in node.names:
        name = alias.name.value if isinstance(alias.name, cst.Name) else import_module_name(alias.name)
        local = import_asname(alias) or name
        qualified = f"{module}.{name}"
        b.original[local] = qualified
        found = rules.new_name(qualified)
        if found is None:
            kept.append(alias)
            continue
        new_qualified = found[0]
        new_module, _, new_name = new_qualified.rpartition(".")
        if not new_module:
            kept.append(alias)
            continue
        rules_used.append(found[1])
        b.rewritten[local] = new_qualified
        notes.append(f"{qualified} -> {new_qualified}{_rule_note(found[1])}")
        if new_name == local:
            new_alias = alias.with_changes(name=cst.Name(new_name), asname=None)
        else:
            new_alias = alias.with_changes(
                name=cst.Name(new_name),
                asname=cst.AsName(name=cst.Name(local)) if alias.asname is None else alias.asname,
            )
        moved.setdefault(new_module, []).append(new_alias)
    if not moved:
        return
    statements: list[cst.BaseSmallStatement] = []
    if kept:
        statements.append(node.with_changes(names=fix_commas(kept)))
    for new_module, aliases in moved.items():
        if not kept and len(moved) == 1:
            statements.append(node.with_changes(module=make_dotted(new_module), names=fix_commas(aliases, node.names)))
        else:
            statements.append(cst.ImportFrom(module=make_dotted(new_module), names=fix_commas(aliases)))
    b.plans[id(node)] = ImportPlan(
        statements,
        "from-import " + ", ".join(notes),
        [n for n in bound_locals(node) if n in b.rewritten],
        any(targets_npu(r) for r in rules_used),
    )


def _rule_note(rule: Rule) -> str:
    return f" ({rule['message']})" if rule.get("message") else ""


def targets_npu(rule: Rule) -> bool:
    """Does applying this rename make the file need ``import torch_npu``?"""
    return not rule.user or "torch_npu" in f"{rule.get('parent_module', '')}.{rule.get('new_name', '')}"


def bound_locals(node: cst.Import | cst.ImportFrom) -> list[str]:
    out: list[str] = []
    if isinstance(node.names, cst.ImportStar):
        return out
    for alias in node.names:
        local = import_asname(alias)
        if local is not None:
            out.append(local)
        elif isinstance(alias.name, cst.Name):
            out.append(alias.name.value)
        else:
            out.append(import_module_name(alias.name).split(".")[0])
    return out


@dataclass(frozen=True)
class StarNames:
    """What a file's star imports of the project's own modules provide (project/stars.py): name ->
    qualified name, and the modules (as written, dots included) that were found in the project."""

    provided: dict[str, str] = field(default_factory=dict)
    resolved: tuple[str, ...] = ()


NO_STARS = StarNames()
FREE_ROOT = "torch"  # the one free name taken for a module when a star import may provide it


def star_module(node: cst.ImportFrom) -> str:
    """The module of a ``from ... import *`` as written: leading dots, then the dotted name."""
    return "." * len(node.relative) + (import_module_name(node.module) if node.module is not None else "")


def apply_stars(b: Bindings, stars: StarNames) -> cst.ImportFrom | None:
    """Add the names star imports provide (an explicit import of the same name wins). When
    ``torch`` is still unbound and a star import of a module the project does not have could
    provide it, take it for the torch module and return that import (its record says so)."""
    for name, qualified in stars.provided.items():
        b.original.setdefault(name, qualified)
    if FREE_ROOT in b.original:
        return None
    for node in b.import_nodes:
        if (
            isinstance(node, cst.ImportFrom)
            and isinstance(node.names, cst.ImportStar)
            and star_module(node) not in stars.resolved
            and star_module(node) != "__future__"
        ):
            b.original[FREE_ROOT] = FREE_ROOT
            return node
    return None
