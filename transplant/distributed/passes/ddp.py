"""DDP pass: the target model is wrapped in DistributedDataParallel once it is complete (after its
last assignment or device move in the scope that builds it), and ``load_state_dict`` calls that may
see the wrapped model load into the model inside. A model the script wraps itself is left alone.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from ..analysis import MOVES
from ..plan import PlanApplier, anchor_of, parse_stmt

DDP_NAMES = frozenset(
    {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
)


def run(p) -> None:
    """Plan the DistributedDataParallel wrap of the target model."""
    a = p.a
    wrapped = [c for c in a.calls_to(DDP_NAMES) if c.args and a.is_target(c.args[0].value)]
    if wrapped:
        return
    sites = _ddp_sites(p)
    if not sites:
        return
    placement = _placement(p, sites)
    if placement is None:
        p.plan.warnings.append(
            f"{a.target_code} is assigned in a one-line block; not wrapped in DistributedDataParallel"
        )
        return
    stmt, _block = placement
    t = a.target_code
    wrap = parse_stmt(
        f"if torch.distributed.is_initialized():\n"
        f"    {t} = torch.nn.parallel.DistributedDataParallel({t}, "
        f"device_ids=[torch_npu.npu.current_device()])\n"
    )
    k = p.key()
    p.plan.anchors[k] = anchor_of(wrap)
    ret = _return_of(stmt)
    if ret is not None and not a.is_target(ret.value):
        # `return model.to(device)`: assign, wrap, then return the wrapped model
        # the edits planned inside the returned expression are made on the copy that moves
        returned = cast(cst.BaseExpression, ret.value)  # _return_of gives only a return with a value
        value = cast(cst.BaseExpression, returned.visit(PlanApplier(p.plan)))
        for node in [returned, *a.subtree(returned)]:
            p.plan.replace.pop(id(node), None)
        target = cast(cst.BaseAssignTargetExpression, cst.parse_expression(t))
        assign = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], value)])
        p.plan.before.setdefault(id(stmt), []).extend([assign, wrap])
        p.plan.replace[id(ret)] = lambda updated: updated.with_changes(value=cst.parse_expression(t))
    elif ret is not None:
        p.plan.before.setdefault(id(stmt), []).append(wrap)
    else:
        p.plan.after.setdefault(id(stmt), []).append(wrap)
    p.edit_sites.append(stmt)
    p.plan.record("ddp", f"wrap {t} in DistributedDataParallel on this process's NPU", k)
    # a DDP-wrapped model takes and gives state dicts with "module." keys: load into the inner
    # model wherever the wrapped one may be seen (after the wrap, or in functions that do not
    # build a model of their own)
    wrap_scope = a.function_of(stmt) or a.module
    order = {id(n): i for i, n in enumerate(a.nodes)}
    building = {id(a.function_of(s) or a.module) for s in a.target_sites}
    for call in a.nodes:
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "load_state_dict"
            and a.is_target(call.func.value)
            and not a.in_helpers(call)
        ):
            scope = a.function_of(call) or a.module
            if (
                scope is wrap_scope
                and order[id(call)] < order[id(stmt)]
                or (scope is not wrap_scope and id(scope) in building)
            ):
                continue
            lk = p.key()

            def unwrap(updated: cst.Call, lk=lk) -> cst.Call:
                inner = cst.parse_expression(f"npu_unwrap({t})")
                p.plan.anchors[lk] = inner
                return updated.with_changes(func=updated.func.with_changes(value=inner))

            p.plan.replace[id(call)] = unwrap
            p.plan.record("ddp", "load_state_dict into the model inside the DistributedDataParallel wrapper", lk)


def _ddp_sites(p) -> list[cst.CSTNode]:
    """Assignments and device moves of the target in the scope where it is built."""
    a = p.a
    sites = a.target_sites
    if not sites:
        return []
    scopes: list[cst.CSTNode] = []
    for s in sites:
        scope = a.function_of(s) or a.module
        if scope not in scopes:
            scopes.append(scope)
    training = {id(a.function_of(n) or a.module) for n in a.nodes if p.a.is_epoch_loop(n)}
    main = p.a.main_function()

    def rank(scope: cst.CSTNode) -> int:
        if isinstance(scope, cst.FunctionDef) and scope.name.value == "__init__":
            return 0
        if id(scope) in training:
            return 1
        if scope is main or scope is a.module:
            return 2
        return 3

    scope = min(scopes, key=lambda s: (rank(s), scopes.index(s)))
    found: list[cst.CSTNode] = []
    for node in a.nodes:
        if (a.function_of(node) or a.module) is not scope or a.in_loop(node):
            continue
        if node in sites:
            found.append(node)
        elif (
            isinstance(node, cst.Expr)
            and isinstance(node.value, cst.Call)
            and isinstance(node.value.func, cst.Attribute)
            and node.value.func.attr.value in MOVES
            and a.is_target(node.value.func.value)
        ):
            found.append(node)
        elif isinstance(node, cst.Return) and node.value is not None and any(a.is_target(n) for n in a.subtree(node)):
            found.append(node)
            break
        elif isinstance(node, (cst.For, cst.While)) and found:
            break
    return found


def _placement(p, sites: list[cst.CSTNode]) -> tuple[cst.BaseStatement, cst.CSTNode] | None:
    """The statement after which the model is complete: in the deepest block holding every site,
    the statement that contains the last one."""
    chains: list[list[tuple[cst.BaseStatement, cst.CSTNode]]] = []
    for site in sites:
        chain: list[tuple[cst.BaseStatement, cst.CSTNode]] = []
        current: cst.CSTNode = site
        for anc in p.a.ancestors(site):
            if isinstance(anc, cst.SimpleStatementSuite):
                chain = []
            if isinstance(anc, (cst.IndentedBlock, cst.Module)) and isinstance(current, cst.BaseStatement):
                chain.append((current, anc))
            if isinstance(anc, (cst.FunctionDef, cst.Module)):
                break
            current = anc
        if not chain:
            return None
        chains.append(list(reversed(chain)))
    depth = 0
    while all(len(c) > depth for c in chains) and all(c[depth][1] is chains[0][depth][1] for c in chains):
        depth += 1
    if depth == 0:
        return None
    return chains[-1][depth - 1]


def _return_of(stmt: cst.BaseStatement) -> cst.Return | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return):
        return stmt.body[0] if stmt.body[0].value is not None else None
    return None
