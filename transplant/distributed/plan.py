"""The plan of one entry file's distributed edits, and applying it.

Passes never edit the tree: they add to a :class:`Plan` (replacements and statement insertions
keyed by the id of nodes of the original tree, statements to remove, records with anchor keys). :class:`PlanApplier`
applies every edit in one traversal; replacement functions put the nodes of the new tree that
records point at into ``Plan.anchors`` as they run, and :func:`plan_records` turns the records into
engine :class:`~transplant.records.Record` objects with result-file positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union, cast

import libcst as cst

from ..engine import Record, is_docstring_stmt, node_positions
from ..records import CODES, OPERATION

RULE = "distributed"
# pass kind -> key of the code in records.CODES (TP301-TP306)
KINDS = {
    "setup": "dist_setup",
    "sampler": "dist_sampler",
    "epoch": "dist_epoch",
    "ddp": "dist_ddp",
    "rank0": "dist_rank0",
    "device": "dist_device",
}


# the statements that carry their own leading lines (BaseStatement itself declares none)
Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


@dataclass
class LoaderInfo:
    """A DataLoader the passes found (kept here, below planner.py and passes/, which both use it)."""

    distributed: bool  # its sampler is a DistributedSampler
    sampler: str | None = None  # code of a variable holding that sampler
    sampler_key: tuple | None = None  # where that variable lives (see Analysis.key_of)


@dataclass
class Plan:
    """Edits keyed by the id of nodes of the original tree, applied by PlanApplier in one pass."""

    replace: dict[int, Callable[[cst.CSTNode], cst.CSTNode]] = field(default_factory=dict)
    before: dict[int, list[Statement]] = field(default_factory=dict)
    after: dict[int, list[Statement]] = field(default_factory=dict)
    prepend: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    # (code, message, key of the first anchor, key of the last anchor)
    records: list[tuple[str, str, str, str]] = field(default_factory=list)
    anchors: dict[str, cst.CSTNode] = field(default_factory=dict)
    remove: dict[int, str] = field(default_factory=dict)  # statements to drop -> key of the record anchor
    warnings: list[str] = field(default_factory=list)
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (code, message, anchor key)

    def record(self, kind: str, message: str, start: str, end: str | None = None) -> None:
        """A change of ``kind`` (a key of KINDS) shown from anchor ``start`` to anchor ``end``."""
        self.records.append((code(kind), message, start, end or start))

    def finding(self, kind: str, message: str, key: str) -> None:
        """A warning of ``kind`` at anchor ``key``: something left for the user."""
        self.findings.append((code(kind), message, key))


def code(kind: str) -> str:
    """The stable code (TP301-TP306) of a kind of distributed edit."""
    return CODES[KINDS[kind]]


def anchor_of(stmt: cst.CSTNode) -> cst.CSTNode:
    """A node inside ``stmt`` that keeps its identity when the statement's leading lines change."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return stmt.name
    if isinstance(stmt, (cst.If, cst.While)):
        return stmt.test
    if isinstance(stmt, cst.SimpleStatementLine) and stmt.body:
        return stmt.body[0]
    return stmt


def parse_stmt(code: str) -> cst.BaseStatement:
    """One statement parsed from ``code``."""
    return cst.parse_statement(code)


def guard(stmt: Statement, condition: str) -> cst.If:
    """``stmt`` inside ``if condition:``; the comment lines above it stay above the ``if``."""
    shell = cst.parse_statement(f"if {condition}:\n    pass\n")
    assert isinstance(shell, cst.If)
    return shell.with_changes(
        leading_lines=stmt.leading_lines, body=cst.IndentedBlock([stmt.with_changes(leading_lines=())])
    )


def chain(first, second):
    """``second`` applied after ``first`` (either a replacement function or None)."""
    if first is None:
        return second
    return lambda updated: second(first(updated))


def anchoring(plan: Plan, key: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """A replacement that changes nothing but remembers the node of the new tree."""
    anchors = plan.anchors

    def remember(updated: cst.CSTNode) -> cst.CSTNode:
        anchors[key] = updated
        return updated

    return remember


class PlanApplier(cst.CSTTransformer):
    """Applies a Plan: node replacements and statement insertions, keyed by original node ids."""

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        updated = super().on_leave(original_node, updated_node)
        fn = self.plan.replace.get(id(original_node))
        if fn is not None:
            updated = fn(cast(cst.CSTNode, updated))
        if isinstance(original_node, (cst.IndentedBlock, cst.Module)):
            updated = self._block(original_node, cast(Union[cst.IndentedBlock, cst.Module], updated))
        return updated

    def _block(self, original: cst.IndentedBlock | cst.Module, updated: cst.IndentedBlock | cst.Module):
        plan = self.plan
        body: list[cst.BaseStatement] = []
        carried: tuple[tuple[cst.EmptyLine, ...], str] | None = None  # a removed statement's lines, anchor key

        def emit(stmt: Statement) -> None:
            nonlocal carried
            if carried is not None:  # the comments above a removed statement stay, over what follows it
                lines, key = carried
                stmt = stmt.with_changes(leading_lines=[*lines, *stmt.leading_lines])
                plan.anchors[key] = anchor_of(stmt)
                carried = None
            body.append(stmt)

        for orig, new in zip(original.body, cast("list[Statement]", updated.body)):
            inserted = plan.before.get(id(orig))
            if inserted:
                inserted = list(inserted)
                inserted[0] = inserted[0].with_changes(leading_lines=new.leading_lines)
                new = new.with_changes(leading_lines=())
                for stmt in inserted:
                    emit(stmt)
            if id(orig) in plan.remove:
                carried = (tuple(new.leading_lines), plan.remove[id(orig)])
            else:
                emit(new)
            for stmt in plan.after.get(id(orig), ()):
                emit(stmt)
        if carried is not None and (not body or any(line.comment for line in carried[0])):
            emit(cst.SimpleStatementLine([cst.Pass()]))  # the block keeps a statement, the comments a place
        elif carried is not None:
            plan.anchors[carried[1]] = anchor_of(body[-1])
        if isinstance(original, cst.Module):
            body.extend(plan.after.get(id(original), ()))
        prepend = plan.prepend.get(id(original))
        if prepend:
            at = 1 if body and is_docstring_stmt(body[0]) else 0
            body[at:at] = prepend
        if len(body) == len(updated.body) and all(x is y for x, y in zip(body, updated.body)):
            return updated
        return updated.with_changes(body=body)


def plan_records(plan: Plan, new_module: cst.Module) -> list[Record]:
    """The plan's records (changes first, then findings) at their anchors' places in ``new_module``."""
    positions = node_positions(new_module, plan.anchors.values())
    operation = OPERATION[KINDS["setup"]]
    records = []
    for code, message, start, end in plan.records:
        first = positions.get(id(plan.anchors.get(start)), (1, 1, 1, 1))
        last = positions.get(id(plan.anchors.get(end)), first)
        records.append(Record(first[0], first[1], last[2], last[3], code, "fix", operation, message, RULE))
    for code, message, key in plan.findings:
        where = positions.get(id(plan.anchors.get(key)), (1, 1, 1, 1))
        records.append(
            Record(
                *where,
                code,
                "warning",
                operation,
                message,
                RULE,
                suggestion="use the current NPU ('npu') or torch_npu.npu.current_device()",
            )
        )
    return records
