"""DataParallel pass: in distributed mode DistributedDataParallel takes the place of
``torch.nn.DataParallel`` (one process per NPU instead of one process driving several; DataParallel
is not supported on NPU). ``x = DataParallel(x, ...)`` is removed; any other use, assigned or inline
(``DataParallel(Net()).npu()``), becomes the module it wraps. ``model.module`` keeps working: the
DDP wrapper has ``.module`` too. Outside distributed mode nothing here runs and the engine's report
of DataParallel stays.
"""

from __future__ import annotations

import libcst as cst

from ...engine import dotted_parts
from ..analysis import short
from ..plan import chain

DATA_PARALLEL = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
)
ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)  # need no parentheses before ".npu()"


def run(p) -> None:
    """Plan the removal of every DataParallel wrap of the entry file, and of ``.module`` on the
    variables that held one."""
    a = p.a
    holders: list[list[str]] = []  # variables that held a DataParallel wrapper
    for call in a.calls_to(DATA_PARALLEL):
        if a.in_helpers(call):
            continue
        wrapped = _module_arg(call)
        if wrapped is None:
            p.plan.warnings.append(f"{short(call)}: DataParallel without a module argument is left as it is")
            continue
        p.removed_apis.add(a.qual(call.func))
        # the variable that held the wrapper; one returned or passed on is taken to reach the model
        holder = _holder(p, call) or a.target_parts
        if holder not in holders:
            holders.append(holder)
        line = _self_assignment(p, call, wrapped.value)
        k = p.key()
        if line is not None:
            p.plan.remove[id(line)] = k
            p.plan.record(
                "ddp", f"remove {short(line.body[0])}: DistributedDataParallel takes the place of DataParallel", k
            )
            continue
        index = list(call.args).index(wrapped)
        plan = p.plan

        def unwrap(updated: cst.Call, index=index, k=k, plan=plan) -> cst.BaseExpression:
            inner = updated.args[index].value
            if not isinstance(inner, ATOMS) and not inner.lpar:
                inner = inner.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            plan.anchors[k] = inner
            return inner

        p.plan.replace[id(call)] = chain(p.plan.replace.get(id(call)), unwrap)
        p.plan.record(
            "ddp",
            f"{short(wrapped.value)} instead of {short(call)}: DistributedDataParallel takes the place of DataParallel",
            k,
        )
    if holders:
        _module_attributes(p, holders)


def _holder(p, call: cst.Call) -> list[str] | None:
    """The variable assigned the wrapper: ``x = DataParallel(...)``, also ``x = DataParallel(...).npu()``."""
    node: cst.CSTNode = call
    parent = p.a.parent.get(id(node))
    while isinstance(parent, cst.Attribute) and parent.value is node:
        outer = p.a.parent.get(id(parent))
        if not (isinstance(outer, cst.Call) and outer.func is parent):
            return None
        node, parent = outer, p.a.parent.get(id(outer))
    if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
        return dotted_parts(parent.targets[0].target)
    return None


def _module_attributes(p, holders: list[list[str]]) -> None:
    """``x.module`` (the model inside DataParallel) -> ``npu_unwrap(x)`` for the target model, which
    DistributedDataParallel wraps when distributed only; -> ``x`` for any other holder."""
    a = p.a
    for node in a.nodes:
        if not (isinstance(node, cst.Attribute) and node.attr.value == "module" and not a.in_helpers(node)):
            continue
        parts = dotted_parts(node.value)
        parent = a.parent.get(id(node))
        if parts not in holders or isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.Del)):
            continue
        code = ".".join(parts)
        new_code = f"npu_unwrap({code})" if parts == a.target_parts else code
        k = p.key()
        plan = p.plan

        def unwrap(updated: cst.Attribute, new_code=new_code, k=k, plan=plan) -> cst.BaseExpression:
            new = cst.parse_expression(new_code)
            plan.anchors[k] = new
            return new

        plan.replace[id(node)] = chain(plan.replace.get(id(node)), unwrap)
        plan.record("ddp", f"{code}.module -> {new_code}: the model without a wrapper, in one process or several", k)


def _module_arg(call: cst.Call) -> cst.Arg | None:
    """The argument that holds the wrapped module (first positional, or ``module=``)."""
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value == "module":
            return arg
    return None


def _self_assignment(p, call: cst.Call, wrapped: cst.BaseExpression) -> cst.SimpleStatementLine | None:
    """The line ``x = DataParallel(x, ...)`` when it is that statement alone, in a block."""
    assign = p.a.parent.get(id(call))
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
        return None
    target = dotted_parts(assign.targets[0].target)
    if not target or target != dotted_parts(wrapped):
        return None
    line = p.a.parent.get(id(assign))
    if (
        isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
        and isinstance(p.a.parent.get(id(line)), (cst.IndentedBlock, cst.Module))
    ):
        return line
    return None
