"""Attributes the project sets itself under a renamed name: ``self.is_cuda = ...`` is no Tensor.is_cuda.

An attribute rule (``x.is_cuda`` -> ``x.is_npu``) matches by name on any object. Tensor.is_cuda
is read-only, so a file that assigns ``self.is_cuda = ...`` (or ``args.is_cuda = ...``) keeps a
flag of its own under that name. Renaming the flag with all its uses is harmless, and stays in
step with the uses in other files that the rule renames by name; but two cases break it:

* the same object also gets the new name (``self.is_npu = ...`` beside ``self.is_cuda = ...``:
  the project tells the devices apart): renaming makes the two flags one, and the CUDA one
  overwrites the NPU one;
* a use is kept as it is because it sits in code that already handles NPU (npu_aware.py): the
  renamed assignment then leaves that use reading a name that no longer exists (AttributeError).

In both cases every use of the flag on that object (the assignments, with the values they assign,
which are tests for CUDA, and the reads) is kept, each saying why. "The same object" is the
spelling of the receiver: ``self`` within one class, any other expression (``args``) within the file.
Owns ``own_attribute_keeps``, run before the traversal; driver.py merges its result into the
kept nodes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import libcst as cst

from ..rules import Rule
from .traverse import children, walk


BESIDE = "an attribute the project sets itself beside its NPU counterpart on the same object (not Tensor.{name})"
KEPT_USE = (
    "an attribute the project sets itself (not Tensor.{name}), read in code kept as it is: renaming it would lose it"
)


@dataclass
class _Uses:
    stores: list[cst.Attribute] = field(default_factory=list)
    values: list[cst.CSTNode] = field(default_factory=list)
    reads: list[cst.Attribute] = field(default_factory=list)


class _Collector(cst.CSTVisitor):
    def __init__(self, module: cst.Module, names: Collection[str]) -> None:
        super().__init__()
        self.module = module
        self.names = names  # the renamed attribute names and their new names
        self.classes: list[int] = []
        self.uses: dict[tuple[int | None, str, str], _Uses] = {}
        self._stored: set[int] = set()

    def _key(self, node: cst.Attribute) -> tuple[int | None, str, str]:
        base = self.module.code_for_node(node.value)
        scope = self.classes[-1] if self.classes and base in ("self", "cls") else None
        return scope, base, node.attr.value

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(id(node))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()

    def _stores(self, target: cst.BaseExpression, value: cst.CSTNode | None) -> None:
        if isinstance(target, cst.Attribute) and target.attr.value in self.names:
            entry = self.uses.setdefault(self._key(target), _Uses())
            entry.stores.append(target)
            if value is not None:
                entry.values.append(value)
            self._stored.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._stores(element.value, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._stores(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._stores(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._stores(node.target, None)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) not in self._stored and node.attr.value in self.names:
            self.uses.setdefault(self._key(node), _Uses()).reads.append(node)


def own_attribute_keeps(
    module: cst.Module, text: bytes, renames: Mapping[str, Rule], kept: dict[int, str]
) -> dict[int, str]:
    """(id of each node to keep -> why) for the flags the project sets under a name an attribute
    rule renames, in the two cases of the module docstring. ``text`` is the whole source (a quick
    look for the names), ``renames`` maps an attribute name to its rule, ``kept`` is what
    npu_aware.py keeps."""
    collector = own_attribute_collector(module, text, renames)
    if collector is None:
        return {}
    walk(module, [collector])
    return own_attribute_result(collector, renames, kept)


def own_attribute_collector(module: cst.Module, text: bytes, renames: Mapping[str, Rule]) -> _Collector | None:
    """The visitor of own_attribute_keeps, for a walk shared with other analyses (None: no name)."""
    if not any(name.encode() in text for name in renames):
        return None
    names = {*renames, *(str(rule["new_name"]).rsplit(".", 1)[-1] for rule in renames.values())}
    return _Collector(module, names)


def own_attribute_result(
    collector: _Collector | None, renames: Mapping[str, Rule], kept: dict[int, str]
) -> dict[int, str]:
    """own_attribute_keeps' result once ``collector`` has walked the module."""
    if collector is None:
        return {}
    keeps: dict[int, str] = {}
    for (scope, base, name), uses in collector.uses.items():
        rule = renames.get(name)
        if rule is None or not uses.stores:
            continue
        new = str(rule["new_name"]).rsplit(".", 1)[-1]
        counterpart = collector.uses.get((scope, base, new))
        if counterpart is not None and counterpart.stores:
            reason = BESIDE.format(name=name)
        elif any(id(read.attr) in kept for read in uses.reads):
            reason = KEPT_USE.format(name=name)
        else:
            continue
        for node in [*uses.stores, *uses.values, *uses.reads]:
            stack = [node]
            while stack:
                current = stack.pop()
                keeps.setdefault(id(current), reason)
                stack.extend(children(current))
    return keeps
