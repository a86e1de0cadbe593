"""Imports: applying the import plans, pruning what the conversion left unused, inserting
``import torch_npu`` (and the modules rules ask for).

Owns the rewrite of import statements during the traversal (``ImportHandlers``), the pruner run
after it (which also turns ``import torch.cuda`` into ``import torch``), and where new imports go.
Which imports to rewrite is planned in bindings.py; whether torch_npu is needed is state.py's.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from .bindings import Bindings
from .cst_util import fix_commas, import_asname, import_module_name, is_docstring_stmt, is_future_import, make_dotted
from .state import State


class ImportHandlers(State):
    """Applies each import statement's plan during the traversal."""

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine):
        plans = [(i, self.b.plans.get(id(s))) for i, s in enumerate(original_node.body)]
        if not any(p is not None for _, p in plans):
            return updated_node
        new_body: list[cst.BaseSmallStatement] = []
        for (i, plan), small in zip(plans, updated_node.body):
            original_small = original_node.body[i]
            if plan is not None and self.record(original_small, "import", plan.message, None, needs_npu=plan.needs_npu):
                new_body.extend(plan.new_nodes)
            else:
                new_body.append(small)
        if len(new_body) == len(updated_node.body):
            return updated_node.with_changes(body=new_body)
        if len(original_node.body) == 1:
            lines = [updated_node.with_changes(body=[new_body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])]
            lines += [
                cst.SimpleStatementLine(body=[s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)])
                for s in new_body[1:]
            ]
            return cst.FlattenSentinel(lines)
        fixed = [
            s.with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))) for s in new_body[:-1]
        ] + [new_body[-1]]
        return updated_node.with_changes(body=fixed)


class ImportPruner(cst.CSTTransformer):
    """Removes import aliases whose every reference was rewritten to the new namespace."""

    def __init__(self, unused: set[str], bindings: Bindings, replace_torch_cuda: bool) -> None:
        super().__init__()
        self.unused = unused
        self.plain_torch = any(
            isinstance(n, cst.Import)
            and any(a.asname is None and import_module_name(a.name) == "torch" for a in n.names)
            for n in bindings.import_nodes
        )
        self.replace_torch_cuda = replace_torch_cuda
        self.removed: list[str] = []
        self.emptied: set[int] = set()  # original statement lines whose imports all went

    def notes_for(self, node: cst.Import | cst.ImportFrom) -> list[str]:
        """What pruning does to one import statement (run on the original statements, in order)."""
        before = len(self.removed)
        if isinstance(node, cst.Import):
            self.leave_Import(node, node)
        else:
            self.leave_ImportFrom(node, node)
        return self.removed[before:]

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.BaseExpression, cst.BaseSmallStatement)) and not isinstance(
            node, (cst.Import, cst.ImportFrom)
        ):
            return False
        return super().on_visit(node)

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        keep = []
        for alias in updated_node.names:
            module = import_module_name(alias.name)
            local = import_asname(alias)
            if local is not None and local in self.unused:
                self.removed.append(f"import {module} as {local}")
                continue
            if local is None and self.replace_torch_cuda and is_torch_cuda(module):
                if self.plain_torch:
                    self.removed.append(f"import {module}")
                    continue
                self.removed.append(f"import {module} -> import torch")
                alias = alias.with_changes(name=cst.Name("torch"))
                self.plain_torch = True
            keep.append(alias)
        if not keep:
            return cst.RemoveFromParent()
        return updated_node.with_changes(
            names=fix_commas(keep, updated_node.names if len(keep) == len(updated_node.names) else None)
        )

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        keep = []
        for alias in updated_node.names:
            local = import_asname(alias) or (alias.name.value if isinstance(alias.name, cst.Name) else None)
            if local is not None and local in self.unused:
                self.removed.append(f"from {import_module_name(updated_node.module)} import {local}")
                continue
            keep.append(alias)
        if not keep:
            return cst.RemoveFromParent()
        if len(keep) == len(updated_node.names):
            return updated_node
        return updated_node.with_changes(names=fix_commas(keep))

    # A statement line whose imports were all removed becomes a placeholder here and is dropped by
    # its block, which hands the comments above it to the next statement (or to its footer).

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if not updated_node.body:
            self.emptied.add(id(original_node))
            return updated_node.with_changes(body=[cst.Expr(cst.Name(_REMOVED))])
        return updated_node

    def leave_IndentedBlock(self, original_node, updated_node):
        body, footer = _drop_empty_lines(updated_node.body, updated_node.footer)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()], leading_lines=footer)]
            footer = []
        return updated_node.with_changes(body=body, footer=footer)

    def leave_Module(self, original_node, updated_node):
        body, footer = _drop_empty_lines(updated_node.body, updated_node.footer)
        if not original_node.has_trailing_newline and id(_last_line(original_node)) in self.emptied:
            # the file's last line went, the line before it keeps the newline it has in the source
            return updated_node.with_changes(body=body, footer=footer, has_trailing_newline=True)
        return updated_node.with_changes(body=body, footer=footer)


def _last_line(node: cst.CSTNode) -> cst.CSTNode:
    """The statement that ends ``node``'s code: the last statement of its last block, however deep."""
    blocks = (cst.BaseSuite, cst.BaseStatement, cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler)
    while not isinstance(node, cst.SimpleStatementLine):
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            inner: list[cst.CSTNode] = list(node.body)
        else:
            inner = [c for c in node.children if isinstance(c, (*blocks, cst.MatchCase))]
        if not inner:
            return node
        node = inner[-1]
    return node


def pruned_aliases(bindings: Bindings, unused: set[str]) -> set[int]:
    """The import aliases the pruner removes for ``unused`` (as ImportPruner decides: an alias with
    ``as``, or a from-import's name, whose every use was rewritten; a plain ``import a.b`` stays)."""
    gone: set[int] = set()
    for node in bindings.import_nodes:
        if isinstance(node.names, cst.ImportStar):
            continue
        for alias in node.names:
            local = import_asname(alias)
            if local is None and isinstance(node, cst.ImportFrom) and isinstance(alias.name, cst.Name):
                local = alias.name.value
            if local is not None and local in unused:
                gone.add(id(alias))
    return gone


_REMOVED = "__transplant_removed_import__"


def _is_removed(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.Name)
        and stmt.body[0].value.value == _REMOVED
    )


def _drop_empty_lines(body: Sequence[cst.BaseStatement], footer: Sequence[cst.EmptyLine]):
    if not any(_is_removed(s) for s in body):
        return list(body), list(footer)
    out: list[cst.BaseStatement] = []
    carry: list[cst.EmptyLine] = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and _is_removed(stmt):
            if any(line.comment is not None for line in stmt.leading_lines):
                carry += stmt.leading_lines  # keep the comments (and their spacing)
            continue
        if carry:
            # every statement has leading_lines; libcst's BaseStatement does not declare them
            stmt = stmt.with_changes(leading_lines=[*carry, *stmt.leading_lines])  # type: ignore[attr-defined]
            carry = []
        out.append(stmt)
    return out, [*carry, *footer]


def insertion_index(body: Sequence[cst.BaseStatement]) -> int:
    """Where new imports go: after the docstring and ``__future__`` imports, and after the first
    top-level import of torch when there is one."""
    index = 0
    while index < len(body) and (is_docstring_stmt(body[index]) and index == 0 or is_future_import(body[index])):
        index += 1
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            (
                isinstance(s, cst.Import)
                and any(import_module_name(a.name).split(".")[0] in ("torch", "torch_npu") for a in s.names)
            )
            or (
                isinstance(s, cst.ImportFrom)
                and s.module is not None
                and not s.relative
                and import_module_name(s.module).split(".")[0] in ("torch", "torch_npu")
            )
            for s in stmt.body
        ):
            index = max(index, i + 1)
            break
    return index


def is_torch_cuda(module: str) -> bool:
    return module == "torch.cuda" or module.startswith("torch.cuda.")


def imports_torch_cuda(bindings: Bindings) -> bool:
    """Is there a plain ``import torch.cuda...`` (one the import pruner may rewrite)?"""
    return any(
        isinstance(n, cst.Import)
        and any(a.asname is None and is_torch_cuda(import_module_name(a.name)) for a in n.names)
        for n in bindings.import_nodes
    )


def insertion_anchor(body: Sequence[cst.BaseStatement], index: int) -> list[cst.CSTNode]:
    """The original statement new imports follow (its first small statement, so that its line is
    not that of the blank lines and comments above it), if any; ``index`` is insertion_index."""
    if index == 0:
        return []
    anchor: cst.CSTNode = body[index - 1]
    if isinstance(anchor, cst.SimpleStatementLine) and anchor.body:
        anchor = anchor.body[0]
    return [anchor]


def insert_imports(
    module: cst.Module, names: Sequence[str], anchor_code: str | None, occurrence: int = 1
) -> cst.Module:
    """Insert ``import NAME`` lines after the converted form of the original anchor statement.

    ``anchor_code`` is the source of the original statement the imports follow (None: at the top),
    and ``occurrence`` which of the statements with that source it is (two top-level ``x.step()``
    lines are the same text). It is usually unchanged by the conversion and found as it is; when
    it was rewritten (a ``from torch.cuda...`` import, say), the anchor is looked for again in the
    converted body.
    """
    body = list(module.body)
    index = 0
    if anchor_code is not None:
        # the code of the statements up to the one wanted, not of the whole module
        found: list[int] = []
        for i, stmt in enumerate(body):
            if module.code_for_node(stmt) == anchor_code:
                found.append(i + 1)
                if len(found) == occurrence:
                    break
        index = found[min(occurrence, len(found)) - 1] if found else insertion_index(body)
    new_lines = [cst.SimpleStatementLine([cst.Import([cst.ImportAlias(make_dotted(n))])]) for n in names]
    return module.with_changes(body=body[:index] + new_lines + body[index:])


def imports_module(bindings: Bindings, name: str) -> bool:
    return bindings.original.get(name.split(".")[0]) == name.split(".")[0] and (
        "." not in name
        or any(
            isinstance(n, cst.Import) and any(import_module_name(a.name) == name for a in n.names)
            for n in bindings.import_nodes
        )
    )
