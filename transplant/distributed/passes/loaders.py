"""Loaders pass: which variables, attributes and parameters hold the loaders the samplers pass
saw, followed through assignments, tuple unpacking, functions that return loaders and arguments
of calls to functions of the same file. It plans no edit.
"""

from __future__ import annotations

from typing import cast

import libcst as cst

from ..plan import LoaderInfo


def loader_of(p, expr: cst.BaseExpression, at: cst.CSTNode) -> LoaderInfo | None:
    if isinstance(expr, cst.Call) and id(expr) in p.loader_calls:
        return p.loader_calls[id(expr)]
    if isinstance(expr, (cst.Name, cst.Attribute)):
        key = p.a.key_of(expr, at)
        if key is not None:
            return p.loaders.get(key)
    return None


def _returns(p, fn: cst.FunctionDef) -> list[LoaderInfo | None]:
    for node in p.a.subtree(fn):
        if isinstance(node, cst.Return) and node.value is not None and p.a.function_of(node) is fn:
            value = node.value
            elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
            infos = [loader_of(p, e, node) for e in elements]
            if any(infos):
                return infos
    return []


def _value_infos(p, value: cst.BaseExpression, at: cst.CSTNode) -> list[LoaderInfo | None]:
    """Loader information for the value(s) an expression gives: a call of a function that
    returns loaders, or a variable holding one."""
    if isinstance(value, cst.Call) and id(value) not in p.loader_calls:
        fn = p.a.callee(value)
        return _returns(p, fn) if fn is not None else []
    if isinstance(value, (cst.Name, cst.Attribute)):
        info = loader_of(p, value, at)
        return [info] if info else []
    return []


def run(p) -> None:
    """Follow loaders through assignments, functions returning them and parameters."""
    for _round in range(4):
        before = len(p.loaders)
        for node in p.a.nodes:
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target = node.targets[0].target
                leaves = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
                values = (
                    [e.value for e in node.value.elements]
                    if isinstance(node.value, (cst.Tuple, cst.List)) and len(leaves) > 1
                    else [node.value]
                )
                if len(values) == 1 and len(leaves) > 1:
                    infos = _value_infos(p, values[0], node)
                elif len(values) == len(leaves):
                    infos = []
                    for v in values:
                        found = _value_infos(p, v, node)
                        infos.append(found[0] if len(found) == 1 else None)
                else:
                    infos = []
                if len(infos) == len(leaves):
                    for leaf, info in zip(leaves, infos):
                        key = p.a.key_of(leaf, node) if info else None
                        if key is not None:
                            # a key only for a known loader (key is None when info is)
                            known = cast(LoaderInfo, info)
                            p.loaders.setdefault(
                                key,
                                known
                                if isinstance(node.value, (cst.Name, cst.Attribute))
                                else LoaderInfo(known.distributed),
                            )
            elif isinstance(node, cst.Call) and (fn := p.a.callee(node)) is not None:
                params = [q for q in fn.params.params if not (q.name.value == "self" and p.a.class_of(fn))]
                by_name = {q.name.value: q for q in (*fn.params.params, *fn.params.kwonly_params)}
                for i, arg in enumerate(node.args):
                    if arg.star:
                        break
                    info = loader_of(p, arg.value, node)
                    if info is None:
                        continue
                    param = (
                        by_name.get(arg.keyword.value)
                        if arg.keyword is not None
                        else (params[i] if i < len(params) else None)
                    )
                    if param is not None:
                        p.loaders.setdefault(("name", id(fn), param.name.value), LoaderInfo(info.distributed))
        if len(p.loaders) == before:
            break
