"""Samplers pass: every ``torch.utils.data.DataLoader`` built from a dataset gets a
DistributedSampler (``shuffle`` moves into the sampler; a dataset built inside the call is hoisted
into a variable). Loaders with a sampler of their own, a batch sampler or ``*args`` are registered
as they are. It decides nothing about epochs (epochs.py).
"""

from __future__ import annotations

from typing import Iterator, cast

import libcst as cst

from ...engine import code_of, dotted_parts
from ..analysis import short, dotted
from ..plan import anchor_of, parse_stmt
from ..plan import LoaderInfo

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DIST_SAMPLERS = frozenset({"torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler"})
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda)


def _sampler_expr(p, node: cst.BaseExpression | None) -> bool:
    """Is ``node`` a DistributedSampler (a call, or a variable assigned from one)?"""
    if node is None:
        return False
    if isinstance(node, cst.Call):
        return p.a.qual(node.func) in DIST_SAMPLERS
    if isinstance(node, (cst.Name, cst.Attribute)):
        code = dotted(node)
        for n in p.a.nodes:
            if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and p.a.qual(n.value.func) in DIST_SAMPLERS:
                if any(dotted(t.target) == code for t in n.targets):
                    return True
    return False


def run(p) -> None:
    """Plan a DistributedSampler for every DataLoader of the entry file."""
    for call in p.a.calls_to(DATALOADERS):
        if p.a.in_helpers(call):
            continue
        args = list(call.args)
        positional = [a for a in args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a for a in args if a.keyword is not None}
        sampler_arg = keywords.get("sampler") or (positional[3] if len(positional) > 3 else None)
        has_sampler = sampler_arg is not None and not (
            isinstance(sampler_arg.value, cst.Name) and sampler_arg.value.value == "None"
        )
        owner = _owner(p, call)
        stars = [a for a in args if a.star]
        # `**kwargs` may hold shuffle: it goes into the sampler, and False to the loader
        kwargs_arg = (
            stars[0]
            if len(stars) == 1
            and stars[0].star == "**"
            and "shuffle" not in keywords
            and (dotted_parts(stars[0].value))
            else None
        )
        if stars and kwargs_arg is None and not has_sampler:
            p.plan.warnings.append(f"DataLoader with {short(stars[0])} arguments: no DistributedSampler added")
        if has_sampler or "batch_sampler" in keywords or (stars and kwargs_arg is None):
            sampler = sampler_arg.value if sampler_arg is not None else None
            info = LoaderInfo(has_sampler and _sampler_expr(p, sampler))
            if info.distributed and isinstance(sampler, (cst.Name, cst.Attribute)):
                key = p.a.key_of(sampler, call)
                if key is not None:
                    info.sampler, info.sampler_key = code_of(sampler), key
            _register(p, call, owner, info)
            continue
        dataset = positional[0] if positional else keywords.get("dataset")
        if dataset is None:
            continue
        shuffle = keywords.get("shuffle") or (positional[2] if len(positional) > 2 else None)
        _add_sampler(p, call, owner, dataset, shuffle, sampler_arg, kwargs_arg)


def _owner(p, call: cst.Call) -> cst.BaseExpression | None:
    """The variable a DataLoader call is assigned to (``x = DataLoader(...)``), if any."""
    parent = p.a.parent.get(id(call))
    if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
        target = parent.targets[0].target
        if isinstance(target, cst.Name) or (
            isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"
        ):
            return target
    if isinstance(parent, cst.AnnAssign) and parent.value is call and isinstance(parent.target, cst.Name):
        return parent.target
    return None


def _register(p, call: cst.Call, owner: cst.BaseExpression | None, info: LoaderInfo) -> None:
    p.loader_calls[id(call)] = info
    if owner is not None:
        key = p.a.key_of(owner, call)
        if key is not None:
            p.loaders[key] = info


def _add_sampler(
    p,
    call: cst.Call,
    owner,
    dataset: cst.Arg,
    shuffle: cst.Arg | None,
    none_sampler: cst.Arg | None,
    kwargs_arg: cst.Arg | None = None,
) -> None:
    where = p.a.statement_of(call)
    inline = where is None or any(isinstance(a, COMPREHENSIONS) for a in _between(p, call, where[0]))
    simple_dataset = isinstance(dataset.value, (cst.Name, cst.Attribute)) and dotted_parts(dataset.value)
    if inline and not simple_dataset:
        p.plan.warnings.append(
            f"DataLoader over {short(dataset.value)} is built inside an expression; no DistributedSampler added"
        )
        return
    shuffle_code = code_of(shuffle.value) if shuffle is not None else "False"
    if kwargs_arg is not None:
        shuffle_code = f'{code_of(kwargs_arg.value)}.get("shuffle", False)'
    new_before: list[cst.BaseStatement] = []
    dataset_code = code_of(dataset.value)
    hoisted_dataset: str | None = None
    sampler_key = None
    if not inline:
        stmt, _block = where
        prefix = _prefix(owner)
        cls = p.a.class_of(call) if isinstance(owner, cst.Attribute) else None
        if not simple_dataset:
            hoisted_dataset = p.unique(f"{prefix}_dataset" if prefix else "dataset", cls)
            dataset_code = f"self.{hoisted_dataset}" if cls is not None else hoisted_dataset
            new_before.append(
                cst.SimpleStatementLine(
                    [
                        cst.Assign(
                            [
                                cst.AssignTarget(
                                    cast(cst.BaseAssignTargetExpression, cst.parse_expression(dataset_code))
                                )
                            ],
                            dataset.value,
                        )
                    ]
                )
            )
        name = p.unique(f"{prefix}_sampler" if prefix else "sampler", cls)
        sampler_code = f"self.{name}" if cls is not None else name
        sampler_stmt = parse_stmt(
            f"{sampler_code} = torch.utils.data.distributed.DistributedSampler(\n"
            f"    {dataset_code}, num_replicas=npu_world_size(), rank=npu_rank(), "
            f"shuffle={shuffle_code})\n"
        )
        new_before.append(sampler_stmt)
        sampler_expr: cst.BaseExpression = cst.parse_expression(sampler_code)
        if cls is not None:
            sampler_key = ("attr", id(cls), name)
        else:
            sampler_key = ("name", id(p.a.function_of(call) or p.module), name)
        p.plan.before.setdefault(id(stmt), []).extend(new_before)
        p.edit_sites.append(stmt)
        anchor_key = p.key()
        p.plan.anchors[anchor_key] = anchor_of(sampler_stmt)
        shuffled = (
            f" (shuffle={shuffle_code} moves into the sampler)"
            if (shuffle is not None or kwargs_arg is not None)
            else ""
        )
        p.plan.record(
            "sampler",
            f"DistributedSampler {sampler_code} for the DataLoader over {short(dataset.value)}{shuffled}",
            anchor_key,
        )
    else:
        sampler_code = None
        sampler_expr = cst.parse_expression(
            f"torch.utils.data.distributed.DistributedSampler({dataset_code}, num_replicas=npu_world_size(), "
            f"rank=npu_rank(), shuffle={shuffle_code})"
        )
    arg_key = p.key()
    plan = p.plan

    def rewrite(updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        originals = list(call.args)
        sampler_arg = cst.Arg(
            value=sampler_expr,
            keyword=cst.Name("sampler"),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
            ),
        )
        if hoisted_dataset is not None:
            i = originals.index(dataset)
            args[i] = args[i].with_changes(value=cst.parse_expression(dataset_code))
        if kwargs_arg is not None:
            i = originals.index(kwargs_arg)
            args[i] = args[i].with_changes(
                value=cst.parse_expression(f'{{**{code_of(kwargs_arg.value)}, "shuffle": False}}')
            )
        replace_at = (
            originals.index(shuffle)
            if shuffle is not None
            else (originals.index(none_sampler) if none_sampler is not None else None)
        )
        if replace_at is not None:
            old = args[replace_at]
            new = sampler_arg.with_changes(comma=old.comma, whitespace_after_arg=old.whitespace_after_arg)
            if old.keyword is not None:
                new = new.with_changes(equal=old.equal)
            args[replace_at] = new
            if shuffle is not None and none_sampler is not None:  # sampler=None given too: drop it
                drop = originals.index(none_sampler)
                if drop == len(args) - 1:  # the argument before it becomes the last one
                    args[drop - 1] = args[drop - 1].with_changes(
                        comma=args[drop].comma, whitespace_after_arg=args[drop].whitespace_after_arg
                    )
                    if drop - 1 == replace_at:
                        new = args[drop - 1]
                del args[drop]
            plan.anchors[arg_key] = new
        else:
            last = args[-1]
            if isinstance(last.comma, cst.Comma):  # trailing comma: keep the layout
                new = sampler_arg.with_changes(comma=last.comma)
                if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
                    args[-1] = last.with_changes(comma=args[-2].comma)
            else:  # the space before ")" moves to the new last argument
                args[-1] = last.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                    whitespace_after_arg=cst.SimpleWhitespace(""),
                )
                new = sampler_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
            args.append(new)
            plan.anchors[arg_key] = new
        return updated.with_changes(args=args)

    p.plan.replace[id(call)] = rewrite
    if inline:
        p.edit_sites.append(call)
        p.plan.record("sampler", f"DistributedSampler for the DataLoader over {short(dataset.value)}", arg_key)
    _register(p, call, owner, LoaderInfo(True, sampler_code, sampler_key))


def _between(p, node: cst.CSTNode, top: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for a in p.a.ancestors(node):
        if a is top:
            return
        yield a


def _prefix(owner: cst.BaseExpression | None) -> str:
    if owner is None:
        return ""
    name = owner.value if isinstance(owner, cst.Name) else cast(cst.Attribute, owner).attr.value
    for suffix in ("_dataloader", "dataloader", "_loader", "loader", "_dl"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: len(name) - len(suffix)].rstrip("_")
        if name.lower() == suffix.lstrip("_"):
            return ""
    return name
