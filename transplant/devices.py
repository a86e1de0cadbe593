"""Which names and strings are CUDA devices or the NCCL backend, by their text alone.

Shared by the engine (engine/literals.py, where libcst nodes are judged) and the other file kinds
(formats/shell_values.py: launch commands and variables), which must not load libcst or the engine.
"""

from __future__ import annotations

import re

DEVICE_STR = re.compile(r"^cuda(:\d+)?$")
DEVICE_NAME = re.compile(r"(^|_)(device|dev|device_type|map_location|device_map)$", re.IGNORECASE)
BACKEND_NAME = re.compile(r"(^|_)backend$", re.IGNORECASE)


def option_value(name: str, value: str) -> tuple[str, str] | None:
    """The NPU form of a command-line value and its record kind ("device" or "args"), for an option or
    variable ``name`` (``--dist-backend``, ``DEVICE``, ``trainer.device``: ``-`` counts as ``_``, the
    last dotted part decides) holding ``value``; None unless the name plainly names a device holding a
    CUDA device or a backend holding "nccl"."""
    name = name.lstrip("-").rsplit(".", 1)[-1].replace("-", "_")
    if value == "nccl":
        return ("hccl", "args") if BACKEND_NAME.search(name) else None
    if DEVICE_STR.match(value) and DEVICE_NAME.search(name):
        return "npu" + value[4:], "device"
    return None
