"""Devices passes: a hard-coded ``set_device`` runs for a single process only (the set-up selects
each process's NPU), and device strings with a fixed index ("npu:0") are reported.
"""

from __future__ import annotations

import re

import libcst as cst

from ...engine import code_of
from ..plan import anchoring, chain

SET_DEVICE = frozenset({"torch_npu.npu.set_device", "torch.npu.set_device", "torch.cuda.set_device"})
FIXED_DEVICE = re.compile(r"^(npu|cuda):\d+$")


def set_devices(p) -> None:
    a = p.a
    for call in a.calls_to(SET_DEVICE):
        if a.in_helpers(call) or a.guarded_by(call, "npu_world_size"):
            continue
        line = p.sole_expr_statement(call)
        if line is None:
            p.plan.warnings.append(
                f"{code_of(call)} sets one NPU for every process; the launcher's choice is overridden"
            )
            continue
        p.plan.record(
            "device",
            "set_device only for a single process: when distributed, each process uses the NPU the launcher gave it",
            p.guard_line(line, "npu_world_size() == 1"),
        )


def fixed_devices(p) -> None:
    """Report the device strings with a fixed index ("npu:0") that the indices pass left (compared,
    not used as a device): every process would use that NPU."""
    a = p.a
    for node in a.nodes:
        if isinstance(node, cst.SimpleString) and not a.in_helpers(node) and id(node) not in p.rewritten_devices:
            try:
                value = node.evaluated_value
            except Exception:  # malformed escapes
                continue
            if isinstance(value, str) and FIXED_DEVICE.match(value):
                k = p.key()
                p.plan.replace[id(node)] = chain(p.plan.replace.get(id(node)), anchoring(p.plan, k))
                p.plan.finding(
                    "device",
                    f"fixed device {value!r}: every process would use "
                    "this NPU; use 'npu' (the NPU the set-up selected for the process)",
                    k,
                )
