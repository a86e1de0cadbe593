"""Integer device indices: ``device = 0; model.to(device)``, ``x.to(1)``, ``torch.ones(2, device=0)``.

With torch_npu loaded, PyTorch (>= 2.1) takes a bare index for a device of its PrivateUse1 backend,
the NPU; without it the index is CUDA's. Such code needs no rewrite, but it needs torch_npu to be
loaded: PyTorch >= 2.5 loads it by itself on ``import torch`` (its device-extension autoload), an
older one only on ``import torch_npu``. A file whose only device use is an index (common in DDP
tutorials) would otherwise get no row and, for PyTorch 2.1, no import. Here: the uses are collected
during the traversal; ``finish`` gives such a file one note on the first of them and, where the
chosen PyTorch has no autoload, ``import torch_npu``. Which statements can hold one is
rules.INDEX_DEVICE's (the pre-filter and the skeleton keep them).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from .cst_util import dotted_parts
from .state import State

if TYPE_CHECKING:
    from typing import TypeGuard  # (Python 3.10; the package runs on 3.9)

INDEX_NAME = re.compile(r"(^|_)(device|dev)$", re.IGNORECASE)


def _index(node: cst.BaseExpression | None) -> TypeGuard[cst.Integer]:
    return isinstance(node, cst.Integer)


def _device_name(node: cst.BaseExpression) -> bool:
    parts = dotted_parts(node)
    return bool(parts and INDEX_NAME.search(parts[-1]) is not None)


class DeviceIndexHandlers(State):
    """Collects integer device indices (``index_uses``); owns visit_SimpleStatementLine; its index_call runs
    from RedirectHandlers.visit_Call."""

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if not self.rules.index_devices:
            return
        for statement in node.body:
            if (
                isinstance(statement, cst.Assign)
                and _index(statement.value)
                and any(_device_name(target.target) for target in statement.targets)
            ):
                self.index_uses.append(statement.value)
            elif isinstance(statement, cst.AnnAssign) and _index(statement.value) and _device_name(statement.target):
                self.index_uses.append(statement.value)

    def index_call(self, node: cst.Call) -> None:
        """Called by RedirectHandlers.visit_Call (one owner per visit method: test_structure)."""
        if not self.rules.index_devices:
            return
        for i, arg in enumerate(node.args):
            keyword = arg.keyword.value if arg.keyword is not None else None
            if _index(arg.value) and (
                keyword is not None
                and INDEX_NAME.search(keyword)
                or keyword is None
                and i == 0
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "to"
            ):
                self.index_uses.append(arg.value)


def finish(state: State, uses_torch: bool, has_torch_npu: bool) -> None:
    """After the traversal: the note (and, without autoload, the import) for a file whose only device
    use is an integer index."""
    if not state.index_uses or state.needs_npu or has_torch_npu or not uses_torch:
        return
    first = state.index_uses[0]
    index = first.value
    if state.rules.autoload:
        message = (
            f"device index {index} is NPU {index} once torch_npu is loaded: PyTorch loads it by itself "
            "(device-extension autoload, unless TORCH_DEVICE_BACKEND_AUTOLOAD=0)"
        )
    else:
        message = (
            f"device index {index} is NPU {index} once torch_npu is loaded: this PyTorch does not load it "
            "by itself, so `import torch_npu` is added"
        )
    if state.record(first, "device", message, None, api=index, level="note") and not state.rules.autoload:
        state.needs_npu = True
