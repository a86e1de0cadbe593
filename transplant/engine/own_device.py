"""Device strings of a file that drives an NVIDIA simulator (issue 31, mechanism 2).

A library marked ``own_device`` in rules/ (Isaac Sim, Isaac Lab, Isaac Gym: rules/libraries_nvidia.json)
runs on its own NVIDIA GPU, and its ``"cuda:0"`` names that GPU. calls.py keeps the device arguments
of calls into it; but an environment wrapper usually keeps the simulator's device in a value of its
own first (``self.device = cfg.get("device", "cuda:0")``, later ``env_cfg.sim.device = self.device``,
and the observations it returns are made there too). Owns finding, in a file that imports such a
library (anywhere in the file: wrappers import it late, after the app is launched), its CUDA device
strings held for later (a lookup's default, a parameter's default, an assigned value): they stay, each
with a note naming the library; a string given straight to a call (``policy.to("cuda:0")``) and the
other files, the policy's side, convert as usual. A project also holds the simulator's settings in a
class of its own, in a file that never imports the simulator (the settings of an environment fetched
at run time: ``class IsaacLabEnvConfig: device: str = "cuda:0"``): the "cuda" defaults of the device
fields and parameters of a class named for such a simulator, and ``sim_device`` settings anywhere,
stay the same way.
"""

from __future__ import annotations

import re

import libcst as cst

from ..rules import RuleSet
from .literals import is_cuda_device
from .passed_options import LOOKUP_KEYS
from .traverse import substance, walk

_IMPORT = rb"^[ \t]*(?:from|import)[ \t]+%s\b"


def own_device_strings(module: cst.Module, text: bytes, rules: RuleSet) -> dict[int, str]:
    """id of each CUDA device string of ``module`` -> why it stays, when the file (``text``, its whole
    source) imports a library that runs on its own NVIDIA GPU; empty otherwise."""
    if b"cuda" not in text:
        return {}
    found = _settings(module, text, rules)
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
        return found
    why = (
        f"the file drives {library}, which runs on its own NVIDIA GPU: a device it keeps for later (a "
        "default, an assigned value) names that GPU, the simulator's, not the NPU"
    )
    return {**found, **{id(value): why for value in _held_values(module) if is_cuda_device(value)}}


def _held_values(module: cst.Module):
    """The values a device is kept in for later: a lookup's default (``cfg.get("device", "cuda:0")``),
    a parameter's default, the value of an assignment (``self.device = "cuda:0"``). A string given
    straight to a call (``policy.to("cuda:0")``) is the policy's and converts."""
    for node in substance(module):
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


# in a simulator's class: its device and its simulation/physics devices (a policy_device is the NPU's)
_DEVICE = re.compile(r"^(?:device|sim\w*_device|physics\w*_device)$")
_SIM_DEVICE = "sim_device"


def simulator_words(rules: RuleSet) -> tuple[str, ...]:
    """The lower-case names the simulators go by (``isaacsim``, ``isaac``, ``isaaclab``), from the
    modules of the libraries marked ``own_device``."""
    words = {
        part.lower()
        for module, rule in rules.library_q.items()
        if rule.get("own_device")
        for part in module.split(".")
        if part.lower() != "omni"
    }
    return tuple(sorted(words))


class _Finder(cst.CSTVisitor):
    def __init__(self, words: tuple[str, ...], why: str) -> None:
        self.words = words
        self.why = why
        self.depth = 0  # classes of a simulator we are in
        self.found: dict[int, str] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        name = node.name.value.lower()
        if self.depth or any(word in name for word in self.words):
            self.depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        if self.depth:
            self.depth -= 1

    def _keep(self, name: str, value: cst.BaseExpression | None) -> None:
        if value is not None and is_cuda_device(value) and (name == _SIM_DEVICE or self.depth and _DEVICE.search(name)):
            self.found[id(value)] = self.why

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name):
            self._keep(node.target.value, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._keep(target.target.value, node.value)

    def visit_Param(self, node: cst.Param) -> None:
        self._keep(node.name.value, node.default)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._keep(node.keyword.value, node.value)


def _settings(module: cst.Module, text: bytes, rules: RuleSet) -> dict[int, str]:
    """The "cuda" device defaults of the simulator settings classes of ``module`` and its
    ``sim_device`` settings, by id, with why (the file need not import the simulator)."""
    words = simulator_words(rules)
    lowered = text.lower()
    if _SIM_DEVICE.encode() not in text and not any(word.encode() in lowered for word in words):
        return {}
    why = "the device of a simulator's own settings: an NVIDIA simulator runs on its GPU, the policy moves to the NPU"
    finder = _Finder(words, why)
    walk(module, [finder])  # (read-only: module.visit would rebuild every node)
    return finder.found
