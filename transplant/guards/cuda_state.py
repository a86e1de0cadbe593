"""Attributes that only a kept CUDA path sets: reading one chooses CUDA-only state.

A constructor that stops early off CUDA (``if not torch.cuda.is_available(): return``, kept as a
CUDA test because what follows reads CUDA device properties) leaves ``self.cuda_config`` at its
``None`` default on an NPU. A later test that picks it (``config = self.cuda_config if x.is_cuda
else self.cpu_config``) must stay a CUDA test too: rewritten to ``x.is_npu`` it would pick the
``None`` on an NPU. So an attribute ``self.NAME`` whose every store outside the regions of kept
tests assigns ``None`` (or that has none there), and which is stored in such a region, is CUDA-only
state; reach.py reports a read of it as what a test reaches. Owns ``cuda_only_attributes``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable


def cuda_only_attributes(nodes: Iterable[ast.AST], regions: Iterable[list[ast.AST]]) -> dict[str, int]:
    """``self`` attribute name -> the line of its first store inside ``regions`` (the code kept
    tests choose), for the attributes stored there and nowhere else but with ``None``."""
    inside: set[int] = set()
    for region in regions:
        for root in region:
            inside.update(id(n) for n in ast.walk(root))
    kept_stores: dict[str, int] = {}
    other: set[str] = set()
    for node in nodes:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
                continue
            if target.value.id != "self":
                continue
            if id(target) in inside:
                kept_stores.setdefault(target.attr, target.lineno)
            elif not (isinstance(node.value, ast.Constant) and node.value.value is None):
                other.add(target.attr)
    return {name: line for name, line in kept_stores.items() if name not in other}


__all__ = ["cuda_only_attributes"]
