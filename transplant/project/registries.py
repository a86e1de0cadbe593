"""Registries keyed by device that the project fills with its own NPU implementations (issue 31,
mechanism 3).

A project that registers an implementation for ``"npu"`` itself (``@register("attn",
device="npu")``, ``register_kernel(name, device_type="npu")``) has a registry keyed by device:
its CUDA keys and its default ``device="cuda"`` must stay, or the plain (CUDA) entry would claim
the NPU before the NPU-specific one. Owns finding, from bytes, the names of the functions called
with a device keyword set to "npu"; the engine keeps "cuda" in the calls and parameter defaults of
those functions (engine/calls.py, values.py) and says so in a note.
"""

from __future__ import annotations

import re

# name(..., device="npu") / device_type='npu' (arguments without nested calls before the keyword)
_CALL = re.compile(rb"""(?<![\w.])(?:\w+\.)*(\w+)\((?:[^()\n]|\n)*?\b(?:device|device_type)\s*=\s*['"]npu['"]""")
_GATE = re.compile(rb"""=\s*['"]npu['"]""")
# calls that name a device but register nothing
NOT_REGISTRIES = frozenset(
    {"device", "to", "tensor", "zeros", "ones", "empty", "rand", "randn", "full", "arange", "autocast", "load"}
)


def npu_registrations(data: bytes) -> set[str]:
    """Names of the functions ``data`` calls with ``device="npu"`` (or ``device_type="npu"``)."""
    if _GATE.search(data) is None:
        return set()
    names = {m.group(1).decode("ascii", "replace") for m in _CALL.finditer(data)}
    return {n for n in names if n not in NOT_REGISTRIES and not n.startswith(("torch", "npu"))}
