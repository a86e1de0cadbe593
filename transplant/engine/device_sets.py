"""Collections of device strings are converted whole or not at all (issue 18, pattern 7).

Owns, before the traversal, the families of a file's device collections: a name assigned a list,
tuple or set literal of device strings (``devices = ["cpu", "cuda:0"]``, or ``["cpu"]`` that a
``devices.append("cuda")`` makes a CUDA one), what is added to it
(``devices.append(f"cuda:{n}")``, ``.add``, ``.insert``, ``.extend``, ``+=``) and the collection
literals it is compared with (``devices == ["cpu", "cuda:0"]``). A family that names NPU already
is kept as it is, all of it (its appended ``f"cuda:{n}"`` too), and so is one that the privateuse1
backend's name is appended to (``torch._C._get_privateuse1_backend_name()``, "npu" under torch_npu:
a second "npu" would be a duplicate and "cuda" would be lost); any other family has every CUDA
device string of it converted, also plain ones such as ``"cuda:0"`` that are not devices by
their place. Converting only the computed ones would make ``str(x.device) in devices`` fail.

Runs only when the file's bytes assign a collection literal holding a CUDA, NPU or CPU string.
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import string_value
from .literals import is_cuda_device, is_device_template
from .traverse import walk
from .npu_aware import NPU_STRING

# `name = [ ... "cuda...` (or ( or {): a collection literal of strings with a CUDA (or NPU, or CPU: the
# list CUDA is appended to when there is a GPU) one, assigned
GATE = re.compile(rb"""=\s*[\[({]\s*(?:f?["'][\w:{}]*["']\s*,\s*)*f?["'](?:cuda|npu|cpu)""")
DEVICE_WORDS = re.compile(r"^(cpu|cuda|npu|mps|xpu|meta|hpu|xla)(:\d+)?$")
MUTATORS = frozenset({"append", "add", "insert", "extend"})
PRIVATEUSE1_BYTES = re.compile(rb"(\w+)\.(?:append|add|insert)\([^()]*?\b_get_privateuse1_backend_name\(")


def _device_string(node: cst.CSTNode) -> bool:
    value = string_value(node) if isinstance(node, cst.SimpleString) else None
    if value is not None:
        return DEVICE_WORDS.match(value) is not None
    return isinstance(node, cst.BaseExpression) and _template(node)


def _template(node: cst.BaseExpression) -> bool:
    if is_device_template(node):
        return True
    if isinstance(node, cst.FormattedString) and node.parts and isinstance(node.parts[0], cst.FormattedStringText):
        return node.parts[0].value == "npu:" and len(node.parts) == 2
    return False


def _npu(node: cst.CSTNode) -> bool:
    value = string_value(node) if isinstance(node, cst.SimpleString) else None
    if value is not None:
        return NPU_STRING.match(value) is not None
    return isinstance(node, cst.FormattedString) and _template(node) and not is_device_template(node)


def _elements(node: cst.CSTNode) -> list[cst.BaseExpression] | None:
    """The elements of a collection literal of device strings, or None."""
    if not isinstance(node, (cst.List, cst.Tuple, cst.Set)) or not node.elements:
        return None
    values = [el.value for el in node.elements if isinstance(el, cst.Element)]
    if len(values) != len(node.elements) or not all(_device_string(v) for v in values):
        return None
    return values


def _privateuse1(node: cst.BaseExpression) -> bool:
    """``torch._C._get_privateuse1_backend_name()``: "npu" once torch_npu is imported."""
    func = node.func if isinstance(node, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value == "_get_privateuse1_backend_name"


class _Families(cst.CSTVisitor):
    def __init__(self) -> None:
        self.literals: dict[str, list[cst.BaseExpression]] = {}  # name -> its strings
        self.added: dict[str, list[cst.BaseExpression]] = {}  # name -> strings added or compared
        self.privateuse1: set[str] = set()  # names given the privateuse1 backend's name ("npu" with torch_npu)

    def _assigned(self, name: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        elements = _elements(value) if value is not None else None
        if isinstance(name, cst.Name) and elements is not None:  # a family when CUDA or NPU is in it or added
            self.literals.setdefault(name.value, []).extend(elements)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assigned(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._assigned(node.target, node.value)

    def _add(self, name: cst.BaseExpression, values: list[cst.BaseExpression]) -> None:
        if isinstance(name, cst.Name):
            self.added.setdefault(name.value, []).extend(v for v in values if _device_string(v))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._add(node.target, _elements(node.value) or [])

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATORS and node.args:
            value = node.args[-1].value
            if _privateuse1(value) and isinstance(func.value, cst.Name):
                self.privateuse1.add(func.value.value)  # .append(torch._C._get_privateuse1_backend_name())
            self._add(func.value, _elements(value) or ([value] if func.attr.value != "extend" else []))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        names = [o.value if isinstance(o, cst.Subscript) else o for o in operands]  # devices[:2] == [...]
        names = [o for o in names if isinstance(o, cst.Name)]
        literals = [e for o in operands for e in (_elements(o) or [])]
        for name in names:
            self._add(name, literals)


def device_families(module: cst.Module, text: bytes) -> tuple[set[int], set[int]]:
    """(ids of the CUDA device strings to convert, ids of the nodes of families to keep)."""
    finder = families_finder(text)
    if finder is not None:
        walk(module, [finder])
    return families_result(finder)


def families_finder(text: bytes) -> _Families | None:
    """The visitor of device_families, for a walk shared with other analyses (None: none here)."""
    if GATE.search(text) is None:
        return None
    finder = _Families()
    if b"_get_privateuse1_backend_name" in text:  # (also in statements the skeleton folded away)
        finder.privateuse1 |= {m.group(1).decode() for m in PRIVATEUSE1_BYTES.finditer(text)}
    return finder


def families_result(finder: _Families | None) -> tuple[set[int], set[int]]:
    """device_families' result once ``finder`` has walked the module."""
    if finder is None:
        return set(), set()
    convert: set[int] = set()
    keep: set[int] = set()
    for name, strings in finder.literals.items():
        family = strings + finder.added.get(name, [])
        if not any(is_cuda_device(s) or _npu(s) for s in family):
            continue  # ["cpu"] and nothing CUDA added: nothing to convert
        if any(_npu(s) for s in family) or name in finder.privateuse1:
            keep |= {id(s) for s in family}
        else:
            convert |= {id(s) for s in family if is_cuda_device(s)}
    return convert, keep
