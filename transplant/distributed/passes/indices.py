"""Device-indices pass: a fixed NPU index in the entry file follows this process's NPU.

Every process of a distributed run would otherwise put its data on the one NPU the index names
while its model sits on the NPU the set-up selected. What the conversion emits for a fixed index is
rewritten: ``"npu:0"`` in a device position (an argument, an assigned or returned value, a default)
becomes ``f"npu:{npu_index(0)}"``, and the index of ``.npu(0)``, ``.to(0)``, ``device=0`` and
``torch.device("npu", 0)`` becomes ``npu_index(0)``; ``npu_index`` (templates.INDEX_HELPER) gives
the NPU the set-up selected when distributed and the index itself for a single process. A variable that holds a fixed index, followed through
assignments, parameters, attributes of ``self`` and constructor arguments across the functions of the
file (``indexflow.py``: ``device = 0`` -> ``main(device)`` -> ``Trainer(gpu_id)`` ->
``model.to(gpu_id)``), counts as that index; any other computed index (``args.gpu``,
``local_rank``) stays. A fixed index under a device's name that goes where the file cannot follow it
(a function of another module, a function called in other ways too) is reported.
``set_device`` calls are the devices pass's.
"""

from __future__ import annotations

import builtins
import re

import libcst as cst

from ..analysis import short
from ..indexflow import DEVICE_NAME, IndexFlow
from ..plan import anchoring, chain
from ..templates import INDEX_FUNCTION
from .devices import SET_DEVICE

NPU_INDEX = re.compile(r"^npu:(\d+)$")
# calls that take an index without picking a device with it (logging, formatting, containers)
UNDEVICED = frozenset({"format", "info", "debug", "warning", "error", "log", "write", "append", "add_argument"})


def run(p) -> None:
    """Plan the rewrite of every fixed device index of the entry file."""
    a = p.a
    flow = IndexFlow(a)
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
            values = flow.value(index, node)
            if values is not None:
                new = cst.Call(func=cst.Name(INDEX_FUNCTION), args=[cst.Arg(index)])
                held = "" if isinstance(index, cst.Integer) else f" (holds {', '.join(map(str, sorted(values)))})"
                _rewrite(p, index, new, f"fixed device index {short(index)}{held} in {short(a.parent[id(node)])}")
        elif isinstance(node, cst.Arg) and not node.star:
            _unfollowed(p, flow, node)


def _unfollowed(p, flow: IndexFlow, arg: cst.Arg) -> None:
    """Report a fixed index under a device's name (or given to a parameter with one) that a call
    takes where the file cannot follow it."""
    a = p.a
    call = a.parent.get(id(arg))
    if (
        not isinstance(call, cst.Call)
        or id(call) in flow.followed
        or not isinstance(call.func, (cst.Name, cst.Attribute))
    ):
        return
    name = call.func.value if isinstance(call.func, cst.Name) else call.func.attr.value
    if name in UNDEVICED or (isinstance(call.func, cst.Name) and name in dir(builtins) and name not in a.imports):
        return
    index = arg.value
    values = flow.value(index, arg)
    if values is None:
        return
    keyword = arg.keyword.value if arg.keyword is not None else ""
    if not (flow.device_like(index, arg) or DEVICE_NAME.search(keyword)):
        return
    k = p.key()
    p.plan.replace[id(index)] = chain(p.plan.replace.get(id(index)), anchoring(p.plan, k))
    shown = ", ".join(map(str, sorted(values)))
    p.plan.finding(
        "device",
        f"fixed device index {short(index)} ({shown}) goes to {short(call.func)}, which this file cannot follow: "
        f"if it picks the device, every process would use NPU {shown}; pass {INDEX_FUNCTION}({short(index)}) "
        "(the NPU the set-up selected)",
        k,
    )


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
