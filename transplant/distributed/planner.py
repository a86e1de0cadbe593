"""Plans the distributed edits of one entry module: runs the passes in order on shared state.

:class:`EditPlanner` holds what the passes share (the :class:`~.analysis.Analysis`, the
:class:`~.plan.Plan` they fill, the loaders found so far, the statements whose edits need the
process group, fresh names and anchor keys). The passes themselves live in ``passes/``, one module
per rewrite, and run in the order of ``passes.PASSES``. :func:`convert_distributed` plans, applies
and records; it never touches files (``entry.py`` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..engine import Record, parse
from .analysis import Analysis
from .passes import PASSES
from .plan import LoaderInfo, Plan, PlanApplier, chain, guard, plan_records


class EditPlanner:
    """The state the passes share while they plan the edits of one entry module."""

    def __init__(self, module: cst.Module, target: str) -> None:
        self.a = Analysis(module, target)
        self.plan = Plan()
        self.module = module
        self.loaders: dict[tuple, LoaderInfo] = {}  # Analysis.key_of of a variable -> its loader
        self.loader_calls: dict[int, LoaderInfo] = {}  # id of a DataLoader call -> its loader
        self.edit_sites: list[cst.CSTNode] = []  # statements whose edits need the process group
        self.epoch_loops: list[cst.For] = []  # epoch loops over sharded loaders (the epochs pass)
        self.removed_apis: set[str] = set()  # APIs whose every use the passes removed (DataParallel)
        self.rewritten_devices: set[int] = set()  # ids of fixed device indices that now follow the process
        self.needs_index_helper = False  # a rewritten index calls npu_index
        self.rank0_prints: set[int] = set()  # ids of print lines the saves pass limited to rank 0
        self.taken_names = {n.value for n in self.a.nodes if isinstance(n, cst.Name)}
        self.taken_attrs: dict[int, set[str]] = {}
        self._n = 0

    def run(self) -> Plan:
        for step in PASSES:
            step.run(self)
        return self.plan

    def key(self) -> str:
        """A fresh anchor key."""
        self._n += 1
        return f"a{self._n}"

    def unique(self, wanted: str, attr_class: cst.ClassDef | None = None) -> str:
        """``wanted``, or ``wanted2``, ``wanted3``... when the file already uses that name (for
        attributes of ``self``: when the class already uses that attribute)."""
        if attr_class is None:
            taken = self.taken_names
        else:
            taken = self.taken_attrs.setdefault(
                id(attr_class),
                {
                    n.attr.value
                    for n in self.a.nodes
                    if isinstance(n, cst.Attribute) and self.a.class_of(n) is attr_class
                },
            )
        name, i = wanted, 2
        while name in taken:
            name = f"{wanted}{i}"
            i += 1
        taken.add(name)
        return name

    def sole_expr_statement(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        """The line ``call`` is the only statement of, when that line sits in a block."""
        expr = self.a.parent.get(id(call))
        line = self.a.parent.get(id(expr)) if isinstance(expr, cst.Expr) else None
        if (
            isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
            and isinstance(self.a.parent.get(id(line)), (cst.IndentedBlock, cst.Module))
        ):
            return line
        return None

    def guard_line(self, line: cst.SimpleStatementLine, condition: str) -> str:
        """Plan ``if condition:`` around ``line``; the key of the record anchor."""
        k = self.key()
        plan = self.plan

        def guarded(updated: cst.SimpleStatementLine) -> cst.If:
            plan.anchors[k] = updated.body[0]
            return guard(updated, condition)

        plan.replace[id(line)] = chain(plan.replace.get(id(line)), guarded)
        return k


@dataclass
class Outcome:
    """What distributed mode did to one entry module."""

    module: cst.Module  # the new module (the same object when nothing changed)
    records: list[Record]  # with result-file lines
    warnings: list[str]
    removed_apis: set[str] = field(default_factory=set)  # their engine findings no longer apply
    already_distributed: str | None = None  # why the script was left to its own set-up


def convert_distributed(module: cst.Module, target: str) -> Outcome:
    """Plan and apply the distributed edits of one entry module. A script that is distributed
    already keeps its own set-up: nothing is planned for it."""
    planner = EditPlanner(module, target)
    reason = planner.a.already_distributed()
    if reason is not None:
        return Outcome(module, [], [], already_distributed=reason)
    plan = planner.run()
    if not plan.records:
        return Outcome(module, [], plan.warnings)
    new_module = module.visit(PlanApplier(plan))
    return Outcome(new_module, plan_records(plan, new_module), plan.warnings, planner.removed_apis)


def convert_source(source: bytes, target: str = "model") -> bytes:
    """The distributed form of one (already NPU-converted) entry source; for tests and tools."""
    return convert_distributed(parse(source), target).module.bytes
