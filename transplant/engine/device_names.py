"""Collections of accepted device names gain "npu" and keep "cuda" (issue 31, mechanism 3).

Owns, before the traversal, which list, tuple or set literals of bare device type names
(``("cpu", "cuda", "mps")``, or backends such as ``["cuda", "rocm"]``) are sets of *accepted* names rather than devices to use, and the
rewrite that adds ``"npu"`` right after ``"cuda"`` in them. Renaming "cuda" there would make every
config, checkpoint and command line that says ``device: cuda`` fail the validation.

A literal is a set of accepted names where the file tests membership in it: the right operand of
``in``/``not in`` (``device in ("cuda", "xpu")``), ``choices=[...]``, or a name assigned the literal
whose every other mention in the file is such a test (``KNOWN_DEVICES``; an upper-case constant
the file never mentions again is taken as one, it is exported to be tested elsewhere). A literal,
or a name, that the file iterates (``for d in ("cpu", "cuda")``, ``parametrize``) or uses any other
way is a list of devices to run on: those keep being converted (device_sets.py, values.py).

A collection that names "npu" already is left whole (npu_aware.py), so the rewrite is idempotent
and never duplicates an entry, and a "npu" spelled by a later ``.append`` is kept as well.
Runs only when the file's bytes hold a quoted "cuda" next to another quoted device name.
"""

from __future__ import annotations

import re
from typing import TypeVar

import libcst as cst

from .cst_util import string_value
from .state import State
from .traverse import walk

CollectionT = TypeVar("CollectionT", cst.List, cst.Tuple, cst.Set)

# bare device type names (torch.device's types and the common third-party ones)
DEVICE_TYPES = frozenset({"cpu", "cuda", "npu", "mps", "xpu", "hpu", "xla", "meta", "ipu", "mtia", "vulkan", "tpu"})
# names of backends that projects accept beside "cuda" without being torch device types
# (``--gpu_arch_type`` with ``choices=["cuda", "rocm"]``): the same sets of accepted names
BACKEND_NAMES = frozenset({"rocm", "hip", "gpu", "musa", "mlu"})
# "cuda" beside another device name in a collection: the one gate of the libcst pass (cheap bytes search)
_OTHER = rb"""['"](?:cpu|mps|xpu|hpu|xla|meta|ipu|mtia|vulkan|tpu|rocm|hip|gpu|musa|mlu)['"]"""
GATE = re.compile(_OTHER + rb"""\s*,\s*['"]cuda['"]|['"]cuda['"]\s*,\s*""" + _OTHER)
MESSAGE = "device names: 'npu' accepted beside 'cuda' (the collection still accepts 'cuda')"


def names_of(node: cst.CSTNode) -> list[str] | None:
    """The device type names of a list, tuple or set literal of two or more of them with "cuda"
    and no "npu"; None for any other node."""
    if not isinstance(node, (cst.List, cst.Tuple, cst.Set)) or len(node.elements) < 2:
        return None
    names = []
    for el in node.elements:
        value = (
            string_value(el.value) if isinstance(el, cst.Element) and isinstance(el.value, cst.SimpleString) else None
        )
        if value is None or value not in DEVICE_TYPES and value not in BACKEND_NAMES:
            return None
        names.append(value)
    if "cuda" not in names or "npu" in names:
        return None
    return names


class _Uses(cst.CSTVisitor):
    def __init__(self) -> None:
        self.direct: dict[int, cst.CSTNode] = {}  # literals in a membership test or choices=
        self.assigned: dict[str, list[cst.CSTNode]] = {}  # name -> collection literals assigned to it

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for comp in node.comparisons:
            if isinstance(comp.operator, (cst.In, cst.NotIn)) and names_of(comp.comparator) is not None:
                self.direct[id(comp.comparator)] = comp.comparator

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value == "choices" and names_of(node.value) is not None:
            self.direct[id(node.value)] = node.value

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name) and value is not None and names_of(value) is not None:
            self.assigned.setdefault(target.value, []).append(value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._assigned(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._assigned(node.target, node.value)


def _membership_only(name: str, text: str) -> bool:
    """Is every mention of ``name`` in ``text`` but its assignment a membership test or choices=?
    (An upper-case constant mentioned nowhere else counts: it is tested where it is imported.)"""
    word = re.escape(name)
    mentions = len(re.findall(rf"(?<![\w.]){word}\b", text))
    assignments = len(re.findall(rf"(?m)^[ \t]*{word}\s*(?::[^=\n]*)?=(?!=)", text))
    tests = re.findall(rf"(?<![\w.])(for\b[^\n]*?\s)?in\s+{word}\b(?!\s*[\[.(])|choices\s*=\s*{word}\b", text)
    if any(t.startswith("for") for t in tests):
        return False  # (the regex's group: "for x in NAME" iterates it)
    others = mentions - assignments - len(tests)
    if others > 0:
        return False
    return bool(tests) or (name.isupper() and others == 0)


def accepted_names(module: cst.Module, text: bytes) -> dict[int, cst.CSTNode]:
    """The collection literals of ``module`` that gain "npu" beside "cuda", by id."""
    if GATE.search(text) is None:
        return {}
    uses = _Uses()
    walk(module, [uses])  # (traverse.py: read only, no copy of the tree)
    found = dict(uses.direct)
    if uses.assigned:
        decoded = text.decode("utf-8", "replace")
        for name, literals in uses.assigned.items():
            if len(literals) == 1 and _membership_only(name, decoded):
                found[id(literals[0])] = literals[0]
    return found


def with_npu(node: CollectionT) -> CollectionT | None:
    """``node`` with an "npu" element right after its "cuda" one (same quotes); None when it has none."""
    elements = list(node.elements)
    i = next(
        (
            k
            for k, el in enumerate(elements)
            if isinstance(el, cst.Element)
            and isinstance(el.value, cst.SimpleString)
            and string_value(el.value) == "cuda"
        ),
        -1,
    )
    if i < 0:
        return None
    cuda = elements[i]
    value = cuda.value
    assert isinstance(value, cst.SimpleString)
    npu = cst.Element(value.with_changes(value=value.prefix + value.quote + "npu" + value.quote), comma=cuda.comma)
    comma = cuda.comma
    before = elements[i - 1].comma if i > 0 else None
    if isinstance(before, cst.Comma) and isinstance(before.whitespace_after, cst.ParenthesizedWhitespace):
        comma = cst.Comma(whitespace_after=before.whitespace_after)  # one name a line: "npu" on a line of its own
    elif not isinstance(comma, cst.Comma):
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    elif isinstance(comma.whitespace_after, cst.SimpleWhitespace) and not comma.whitespace_after.value:
        # ("cuda",): "npu" takes the trailing comma
        comma = comma.with_changes(whitespace_after=cst.SimpleWhitespace(" "))
    elements[i : i + 1] = [cuda.with_changes(comma=comma), npu]
    return node.with_changes(elements=elements)


class DeviceNameHandlers(State):
    """Adds "npu" to the collections of accepted device names found before the traversal."""

    def _accepted(self, original_node: cst.CSTNode, updated_node: CollectionT) -> CollectionT:
        if id(original_node) not in self.accepted_names:
            return updated_node
        new = with_npu(updated_node)
        if new is None or not self.record(original_node, "device", MESSAGE, None, new='"npu"'):
            return updated_node
        return new

    def leave_Set(self, original_node: cst.Set, updated_node: cst.Set) -> cst.Set:
        return self._accepted(original_node, updated_node)


REGISTRY = "a registry keyed by device: the project registers its own NPU implementations under 'npu'"
_DEVICE_KEYWORDS = frozenset({"device", "device_type"})


class _Registries(cst.CSTVisitor):
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.keep: dict[int, str] = {}

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in self.names:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in _DEVICE_KEYWORDS:
                    self.keep[id(arg.value)] = REGISTRY

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value in self.names:
            for param in (*node.params.params, *node.params.kwonly_params):
                if param.default is not None and param.name.value in _DEVICE_KEYWORDS:
                    self.keep[id(param.default)] = REGISTRY


def registry_keeps(module: cst.Module, text: bytes, registries: frozenset[str]) -> dict[int, str]:
    """The device values of the calls and parameter defaults of the project's NPU registries
    (project/registries.py) in ``module``: kept, with why."""
    if not registries or not any(name.encode() in text for name in registries):
        return {}
    finder = _Registries(registries)
    walk(module, [finder])
    return finder.keep
