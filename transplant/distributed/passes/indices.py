"""Device-indices pass: a fixed NPU index in the entry file follows this process's NPU.

Every process of a distributed run would otherwise put its data on the one NPU the index names
while its model sits on the NPU the set-up selected. What the conversion emits for a fixed index is
rewritten: ``"npu:0"`` in a device position (an argument, an assigned or returned value, a default)
becomes ``f"npu:{npu_index(0)}"``, and the index of ``.npu(0)``, ``.to(0)``, ``device=0`` and
``torch.device("npu", 0)`` becomes ``npu_index(0)``; ``npu_index`` (templates.INDEX_HELPER) gives
the NPU the set-up selected when distributed and the index itself for a single process. A name
that the file binds once, to an integer, counts as that integer; any other computed index
(``args.gpu``, ``local_rank``) stays. ``set_device`` calls are the devices pass's.
"""

from __future__ import annotations

import re

import libcst as cst

from ...engine import dotted_parts
from ..analysis import short
from ..plan import chain
from ..templates import INDEX_FUNCTION
from .devices import SET_DEVICE

NPU_INDEX = re.compile(r"^npu:(\d+)$")
BINDINGS = (
    cst.AssignTarget,
    cst.AnnAssign,
    cst.AugAssign,
    cst.For,
    cst.AsName,
    cst.NamedExpr,
    cst.Param,
    cst.Global,
    cst.Nonlocal,
    cst.ImportAlias,
    cst.FunctionDef,
    cst.ClassDef,
    cst.CompFor,
)


def run(p) -> None:
    """Plan the rewrite of every fixed device index of the entry file."""
    a = p.a
    constants = _int_constants(p)
    for node in a.nodes:
        if a.in_helpers(node) or _in_set_device(p, node):
            continue
        if isinstance(node, cst.SimpleString) and _device_position(p, node):
            try:
                value = node.evaluated_value
            except Exception:  # malformed escapes
                continue
            found = NPU_INDEX.match(value) if isinstance(value, str) else None
            if found:
                new = cst.parse_expression(f"f{node.quote}npu:{{{INDEX_FUNCTION}({found.group(1)})}}{node.quote}")
                _rewrite(p, node, new, f"fixed device {value!r}")
        elif isinstance(node, cst.Arg) and _index_arg(p, node):
            index = node.value
            if isinstance(index, cst.Integer) or (isinstance(index, cst.Name) and index.value in constants):
                new = cst.Call(func=cst.Name(INDEX_FUNCTION), args=[cst.Arg(index)])
                _rewrite(p, index, new, f"fixed device index {short(index)} in {short(a.parent[id(node)])}")


def _rewrite(p, node: cst.CSTNode, new: cst.BaseExpression, what: str) -> None:
    k = p.key()
    plan = p.plan

    def replace(updated: cst.CSTNode) -> cst.BaseExpression:
        plan.anchors[k] = new
        return new

    plan.replace[id(node)] = chain(plan.replace.get(id(node)), replace)
    p.rewritten_devices.add(id(node))
    p.needs_index_helper = True
    plan.record(
        "device",
        f"{what} follows this process's NPU: {short(new)} (the NPU the set-up selected; "
        "the same index for a single process)",
        k,
    )


def _device_position(p, node: cst.SimpleString) -> bool:
    """Is the string used as a value (an argument, assigned, returned, a default), not compared?"""
    parent = p.a.parent.get(id(node))
    while isinstance(parent, cst.IfExp):
        parent = p.a.parent.get(id(parent))
    if isinstance(parent, cst.Arg):
        call = p.a.parent.get(id(parent))
        return not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "print")
    return isinstance(parent, (cst.Assign, cst.AnnAssign, cst.Param, cst.Return))


def _index_arg(p, arg: cst.Arg) -> bool:
    """Is ``arg`` a device index: of ``.npu()``/``.to()`` (first or ``device=``), ``device=`` of any
    call, or the index of ``torch.device("npu", i)``?"""
    call = p.a.parent.get(id(arg))
    if not isinstance(call, cst.Call) or arg.star:
        return False
    keyword = arg.keyword.value if arg.keyword is not None else None
    if keyword == "device":
        return True
    positional = [x for x in call.args if x.keyword is None and not x.star]
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("npu", "to"):
        return keyword is None and positional[:1] == [arg]
    if p.a.qual(call.func) == "torch.device":
        kind = next((x for x in call.args if x.keyword is not None and x.keyword.value == "type"), None)
        kind = kind or (positional[0] if positional else None)
        if kind is None or not isinstance(kind.value, cst.SimpleString) or kind.value.evaluated_value != "npu":
            return False
        return (keyword is None and kind is positional[0] and positional[1:2] == [arg]) or keyword == "index"
    return False


def _in_set_device(p, node: cst.CSTNode) -> bool:
    for anc in p.a.ancestors(node):
        if isinstance(anc, cst.Call):
            return p.a.qual(anc.func) in SET_DEVICE or (
                isinstance(anc.func, cst.Attribute) and anc.func.attr.value == "set_device"
            )
        if isinstance(anc, cst.BaseStatement):
            return False
    return False


def _int_constants(p) -> set[str]:
    """Names the file binds exactly once, at module level, to an integer literal."""
    counts: dict[str, int] = {}
    ints: set[str] = set()
    for node in p.a.nodes:
        if not isinstance(node, BINDINGS):
            continue
        if isinstance(node, cst.ImportAlias):
            names = {
                (
                    node.asname.name.value
                    if node.asname and isinstance(node.asname.name, cst.Name)
                    else ".".join(dotted_parts(node.name) or [""]).split(".")[0]
                )
            }
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            names = {n.name.value for n in node.names}
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
            names = {node.name.value}
        else:
            target = node.name if isinstance(node, cst.AsName) else node.target
            names = {n.value for n in [target, *p.a.subtree(target)] if isinstance(n, cst.Name)}
        for name in names:
            counts[name] = counts.get(name, 0) + 1
        if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Name):
            assign = p.a.parent.get(id(node))
            if (
                isinstance(assign, cst.Assign)
                and len(assign.targets) == 1
                and isinstance(assign.value, cst.Integer)
                and p.a.function_of(assign) is None
                and p.a.class_of(assign) is None
            ):
                ints.add(node.target.value)
    return {name for name in ints if counts.get(name) == 1}
