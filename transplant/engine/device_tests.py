"""Tests of a device or backend value: the string it is tested against is a device (or backend) too.

Owns ``leave_Comparison`` (``x.device.type == "cuda"``, ``"cuda" in args.device``,
``args.dist_backend != "nccl"``, ``dist.get_backend() == "nccl"``), prefix tests
and parsing (``device.startswith("cuda:")``, ``str(device).replace("cuda:", "")``, called from
calls.py's ``leave_Call``), ``match device:`` with
``case "cuda":``, and mappings from device type to backend (``{"cuda": "nccl", "cpu": "gloo"}``).
A device is recognised by its name (values.py's ``_device_target``), also seen through ``str(...)``,
``.strip()``/``.lower()`` and ``torch.device(...)`` / ``torch.device(...).type``: once the devices of a file are "npu", a test
left against "cuda" silently takes the other branch.
"""

from __future__ import annotations

import libcst as cst

from .cst_util import code_of, dotted_parts, replace_string, string_value
from .literals import BACKEND_NAME, DEVICE_NAME, DEVICE_STR, rewrite_device_prefix
from .passed_options import LOOKUP_KEYS, compared_as_is
from .values import ValueHandlers

# calls whose result is the process group's backend name
BACKEND_QUERIES = frozenset({"torch.distributed.get_backend", "torch.distributed.distributed_c10d.get_backend"})
# string methods whose first argument is a prefix of the device they are called on
PREFIX_METHODS = frozenset({"startswith", "replace", "removeprefix"})
# string methods that keep a device string a device string
NORMALIZERS = frozenset({"strip", "lstrip", "rstrip", "lower"})
# calls that turn a device into the string or device tested
DEVICE_VIEWS = frozenset({"str", "torch.device"})


def _lookup_key(node: cst.BaseExpression) -> str | None:
    """The key of ``getattr(obj, "key", default)`` / ``cfg.get("key", default)`` (with a default)."""
    if not isinstance(node, cst.Call):
        return None
    func = dotted_parts(node.func)
    at = LOOKUP_KEYS.get(func[-1]) if func else None
    if at is None or len(node.args) != at + 2 or any(a.keyword is not None or a.star for a in node.args):
        return None
    return string_value(node.args[at].value)


class DeviceTestHandlers(ValueHandlers):
    """Strings a device or backend value is tested against."""

    def _device_operand(self, node: cst.BaseExpression) -> bool:
        """A device by its name (``device``, ``args.device``, ``x.device.type``), or ``str(<device>)``,
        ``torch.device(<anything>)`` and its ``.type``."""
        if self._device_target(node):
            return True
        if isinstance(node, cst.Attribute) and node.attr.value == "type":
            return isinstance(node.value, cst.Call) and self._device_view(node.value) == "torch.device"
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in NORMALIZERS:
                return self._device_operand(node.func.value)  # str(device).strip().lower()
            view = self._device_view(node)
            if view == "torch.device":
                return True
            if view == "str" and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
                return self._device_operand(node.args[0].value)
        return False

    def _device_view(self, call: cst.Call) -> str | None:
        if isinstance(call.func, cst.Name) and call.func.value == "str":
            return "str" if self.resolve_name(call.func) in (None, "str") else None
        qualified = self.resolve_name(call.func)
        return qualified if qualified in DEVICE_VIEWS else None

    def _compared_kind(self, node: cst.BaseExpression):
        """How a value compared with ``node`` is rewritten: as a device (``x.device.type``, ``args.device``),
        as a backend (``args.dist_backend``, ``dist.get_backend()``), or not (None)."""
        if self._device_operand(node):
            return self._device_value
        parts = dotted_parts(node)
        if parts and BACKEND_NAME.search(parts[-1]):
            return self._backend_value
        if isinstance(node, cst.Call) and self.resolve_name(node.func) in BACKEND_QUERIES:
            return self._backend_value
        key = _lookup_key(node)  # getattr(args, "dist_backend", "nccl") == "nccl": as its default (calls.py)
        if key is not None and DEVICE_NAME.search(key):
            return self._device_value
        if key is not None and BACKEND_NAME.search(key):
            return self._backend_value
        return None

    def leave_Comparison(self, original_node: cst.Comparison, updated_node: cst.Comparison) -> cst.Comparison:
        left_kind = self._compared_kind(original_node.left)
        new_left = updated_node.left
        targets = []
        for i, comp in enumerate(original_node.comparisons):
            if not isinstance(comp.operator, (cst.Equal, cst.NotEqual, cst.In, cst.NotIn)):
                continue
            if left_kind is not None:
                if not compared_as_is(self, original_node.left, comp.comparator):
                    targets.append(i)
            elif (kind := self._compared_kind(comp.comparator)) is not None:
                if compared_as_is(self, comp.comparator, original_node.left):
                    continue
                new = kind(updated_node.left, original_node.left)
                if new is not None:
                    new_left = new
        comparisons = list(updated_node.comparisons)
        for i in targets:
            new = left_kind(comparisons[i].comparator, original_node.comparisons[i].comparator)
            if new is not None:
                comparisons[i] = comparisons[i].with_changes(comparator=new)
        return updated_node.with_changes(left=new_left, comparisons=comparisons)

    def _device_prefix_test(self, call: cst.Call, args: list[cst.Arg]) -> bool:
        """``<device>.startswith("cuda")`` / ``("cuda:", ...)``, and the prefix parsed off a device,
        ``str(device).replace("cuda:", "")``, ``device.removeprefix("cuda:")``: the prefix becomes "npu"."""
        func = call.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value in PREFIX_METHODS
            and args
            and args[0].keyword is None
            and self._device_operand(func.value)
        ):
            return False
        new = rewrite_device_prefix(args[0].value)
        if new is None or not self.record(
            call.args[0].value, "device", "device string cuda -> npu", None, new=code_of(new)
        ):
            return False
        args[0] = args[0].with_changes(value=new)
        return True

    # ---- match <device>: case "cuda": ...

    def visit_Match(self, node: cst.Match) -> None:
        if self._device_operand(node.subject):
            self.device_matches.add(id(node))

    def leave_Match(self, original_node: cst.Match, updated_node: cst.Match) -> cst.Match:
        if id(original_node) not in self.device_matches:
            return updated_node
        cases = []
        for original, case in zip(original_node.cases, updated_node.cases):
            new = self._device_pattern(case.pattern, original.pattern)
            cases.append(case.with_changes(pattern=new) if new is not None else case)
        return updated_node.with_changes(cases=cases)

    def _device_pattern(self, pattern: cst.MatchPattern, anchor: cst.MatchPattern) -> cst.MatchPattern | None:
        # (``anchor`` is the original of ``pattern``: the same kind of pattern)
        if isinstance(pattern, cst.MatchValue) and isinstance(anchor, cst.MatchValue):
            new = self._device_value(pattern.value, anchor.value)
            return pattern.with_changes(value=new) if new is not None else None
        if isinstance(pattern, cst.MatchOr) and isinstance(anchor, cst.MatchOr):
            patterns = []
            for el, original in zip(pattern.patterns, anchor.patterns):
                new_pattern = self._device_pattern(el.pattern, original.pattern)
                patterns.append(el.with_changes(pattern=new_pattern) if new_pattern is not None else el)
            changed = any(a is not b for a, b in zip(patterns, pattern.patterns))
            return pattern.with_changes(patterns=patterns) if changed else None
        if (
            isinstance(pattern, cst.MatchAs)
            and pattern.pattern is not None
            and isinstance(anchor, cst.MatchAs)
            and anchor.pattern is not None
        ):
            new_pattern = self._device_pattern(pattern.pattern, anchor.pattern)
            return pattern.with_changes(pattern=new_pattern) if new_pattern is not None else None
        return None

    # ---- {"cuda": "nccl", "cpu": "gloo"}: the backend of each device type

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict) -> cst.Dict:
        """A mapping from device type to backend with "cuda": "nccl" and no "npu" key: looked up with
        the (converted) device type it would miss, so its entry becomes "npu": "hccl"."""
        keys = [string_value(el.key) if isinstance(el, cst.DictElement) else None for el in original_node.elements]
        if "npu" in keys:
            return updated_node
        elements = list(updated_node.elements)
        changed = False
        for i, (original, el) in enumerate(zip(original_node.elements, updated_node.elements)):
            if (
                (key := keys[i]) is None
                or not DEVICE_STR.match(key)
                or not isinstance(el, cst.DictElement)
                or not isinstance(original, cst.DictElement)
                or string_value(original.value) != "nccl"
                or not isinstance(el.key, cst.SimpleString)
            ):
                continue
            new_key = replace_string(el.key, "cuda", "npu")
            if not self.record(
                original.key, "device", "device type of a backend mapping cuda -> npu", None, new=code_of(new_key)
            ):
                continue
            value = self._backend_value(el.value, original.value)
            elements[i] = el.with_changes(key=new_key, value=value if value is not None else el.value)
            changed = True
        return updated_node.with_changes(elements=elements) if changed else updated_node
