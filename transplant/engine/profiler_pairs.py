"""A profiler and its activities are one decision (issue 31, mechanism 4).

torch_npu's profiler takes torch_npu's own ``ProfilerActivity`` enum (``torch_npu._C._profiler``), not
torch's: given ``torch.profiler.ProfilerActivity.CPU`` it profiles neither the CPU nor the NPU. When a
file keeps its activities on torch (a multi-backend helper that maps "cpu", "cuda", "xpu" to
``torch.profiler.ProfilerActivity``, kept as it is in a project that runs on NPU), the profiler that
takes them stays torch's too: ``torch.profiler.profile`` and ``torch.profiler.schedule`` there are
kept, with a note, instead of becoming ``torch_npu.profiler``'s.

Owns finding those profiler references, after the other analyses have said what they keep.
"""

from __future__ import annotations

import libcst as cst

from .cst_util import dotted_parts
from .multi_backend import HELPER
from .traverse import descendants, substance

_PAIRED = frozenset({"profile", "schedule", "tensorboard_trace_handler"})


def profiler_keeps(module: cst.Module, text: bytes, kept: dict[int, str]) -> dict[int, str]:
    """id of each node of a ``torch.profiler`` profiler reference of ``module`` -> why it stays, when
    a multi-backend helper of the file keeps a ``ProfilerActivity`` reference on torch (``kept``: what
    the other analyses keep, and why)."""
    if b"ProfilerActivity" not in text or not kept:
        return {}
    nodes = list(substance(module))
    activity = next(
        (
            node
            for node in nodes
            if isinstance(node, cst.Name)
            and node.value == "ProfilerActivity"
            and kept.get(id(node), "").startswith(HELPER)  # (code that handles NPU itself may mix them)
        ),
        None,
    )
    if activity is None:
        return {}
    why = (
        "the profiler activities this file chooses stay torch.profiler's ("
        + kept[id(activity)].split(";")[0]
        + "), and torch_npu's profiler takes only its own ProfilerActivity: the profiler stays torch's"
    )
    found: dict[int, str] = {}
    for node in nodes:
        if isinstance(node, cst.Attribute) and node.attr.value in _PAIRED and id(node) not in kept:
            parts = dotted_parts(node)
            if parts is not None and parts[:2] == ["torch", "profiler"] and len(parts) == 3:
                for inner in descendants(node):
                    found[id(inner)] = why
    return found
