"""Device strings of a file that drives an NVIDIA simulator (issue 31, mechanism 2).

A library marked ``own_device`` in rules/ (Isaac Sim, Isaac Lab, Isaac Gym: rules/libraries_nvidia.json)
runs on its own NVIDIA GPU, and its ``"cuda:0"`` names that GPU. calls.py keeps the device arguments
of calls into it; but an environment wrapper usually keeps the simulator's device in a value of its
own first (``self.device = cfg.get("device", "cuda:0")``, later ``env_cfg.sim.device = self.device``,
and the observations it returns are made there too). Owns finding, in a file that imports such a
library (anywhere in the file: wrappers import it late, after the app is launched), its CUDA device
strings held for later (a lookup's default, a parameter's default, an assigned value): they stay, each
with a note naming the library; a string given straight to a call (``policy.to("cuda:0")``) and the
other files, the policy's side, convert as usual.
"""

from __future__ import annotations

import re

import libcst as cst

from ..rules import RuleSet
from .literals import is_cuda_device
from .passed_options import LOOKUP_KEYS
from .traverse import descendants

_IMPORT = rb"^[ \t]*(?:from|import)[ \t]+%s\b"


def own_device_strings(module: cst.Module, text: bytes, rules: RuleSet) -> dict[int, str]:
    """id of each CUDA device string of ``module`` -> why it stays, when the file (``text``, its whole
    source) imports a library that runs on its own NVIDIA GPU; empty otherwise."""
    if b"cuda" not in text:
        return {}
    library = next(
        (
            name
            for name, rule in rules.library_q.items()
            if rule.get("own_device")
            and name.encode() in text
            and re.search(_IMPORT % re.escape(name.encode()), text, re.M) is not None
        ),
        None,
    )
    if library is None:
        return {}
    why = (
        f"the file drives {library}, which runs on its own NVIDIA GPU: a device it keeps for later (a "
        "default, an assigned value) names that GPU, the simulator's, not the NPU"
    )
    return {id(value): why for value in _held_values(module) if is_cuda_device(value)}


def _held_values(module: cst.Module):
    """The values a device is kept in for later: a lookup's default (``cfg.get("device", "cuda:0")``),
    a parameter's default, the value of an assignment (``self.device = "cuda:0"``). A string given
    straight to a call (``policy.to("cuda:0")``) is the policy's and converts."""
    for node in descendants(module):
        if isinstance(node, cst.Param) and node.default is not None:
            yield node.default
        elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            yield node.value
            if isinstance(node.value, cst.Call):
                yield from _lookup_default(node.value)
        elif isinstance(node, cst.Call):
            yield from _lookup_default(node)


def _lookup_default(call: cst.Call):
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    at = LOOKUP_KEYS.get(name)
    if at is not None and len(call.args) == at + 2:
        yield call.args[at + 1].value
