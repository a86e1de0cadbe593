"""Device defaults of a simulator's own configuration (issue 31, mechanism 2).

NVIDIA's simulators (Isaac Sim, Isaac Lab, Isaac Gym: the libraries of rules/ marked
``own_device``) run on an NVIDIA GPU and take a device string of their own: ``"cuda:0"`` there is
the simulator's GPU, not where the policy computes. A call into the library keeps its device
arguments (calls.py). A project often holds the simulator's settings in a class of its own, filled
in before the library is imported, or handed to an environment fetched at run time
(``class IsaacLabEnvConfig: device: str = "cuda:0"``); converting that default sends the simulator
to a device it cannot use. Owns finding, before the traversal, the "cuda" defaults of the device
fields and parameters of classes whose name names such a simulator, and the ``sim_device``
settings anywhere: they are kept, and said as kept (npu_aware.py's notes).
"""

from __future__ import annotations

import re

import libcst as cst

from ..rules import RuleSet
from .cst_util import string_value

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


def _cuda(node: cst.BaseExpression | None) -> bool:
    value = string_value(node) if isinstance(node, cst.SimpleString) else None
    return value is not None and (value == "cuda" or value.startswith("cuda:"))


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
        if value is not None and _cuda(value) and (name == _SIM_DEVICE or self.depth and _DEVICE.search(name)):
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


def simulator_keeps(module: cst.Module, text: bytes, rules: RuleSet) -> dict[int, str]:
    """The "cuda" device defaults of ``module`` that belong to a simulator, by id, with why."""
    if b"cuda" not in text:
        return {}
    words = simulator_words(rules)
    lowered = text.lower()
    if _SIM_DEVICE.encode() not in text and not any(word.encode() in lowered for word in words):
        return {}
    why = "the device of a simulator's own settings: an NVIDIA simulator runs on its GPU, the policy moves to the NPU"
    finder = _Finder(words, why)
    module.visit(finder)
    return finder.found
