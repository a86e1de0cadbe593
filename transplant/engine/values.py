"""Device, backend and environment values outside call arguments.

Owns where a string is a device or backend by its place: assigned to a name like
``device``/``map_location``/``backend`` (tests of such a value are device_tests.py's), a parameter
default, a dict value under such a key (in a literal, or assigned to an item: ``kwargs["device_type"]
= "cuda"`` reaches torch through ``**kwargs`` as a variable would), a computed device template anywhere but a dict key,
environment names in literals (``CUDA_*`` renamed, ``NCCL_DEBUG`` reported) and
``"torch.cuda.XTensor"`` type strings. Which literal is a device is literals.py's.
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import code_of, dotted_parts, replace_string, string_value
from .literals import (
    BACKEND_NAME,
    DEVICE_NAME,
    TYPE_STRING_PREFIX,
    is_device_template,
    rewrite_backend_expr,
    rewrite_device_expr,
)
from .state import State

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
# torch's modules of other accelerators, which a conditional expression may choose beside torch.cuda
DEVICE_MODULES = frozenset({"torch.xpu", "torch.mps", "torch.mtia", "torch.hpu", "torch.npu", "torch_npu.npu"})


class ValueHandlers(State):
    """Device and backend values by their place; environment names in strings."""

    def _device_target(self, node: cst.BaseExpression) -> bool:
        """Is ``node`` a device by its name: ``device``, ``args.device``, ``x.device.type``, ``dev``?"""
        parts = dotted_parts(node)
        if not parts:
            # on any expression: (x if x is not None else img).device.type, get(x).device, xs[0].device
            if isinstance(node, cst.Attribute) and node.attr.value == "type" and isinstance(node.value, cst.Attribute):
                node = node.value
            return isinstance(node, cst.Attribute) and node.attr.value == "device"
        if DEVICE_NAME.search(parts[-1]):
            return True
        return len(parts) >= 2 and parts[-1] == "type" and DEVICE_NAME.search(parts[-2]) is not None

    def _device_value(self, value: cst.BaseExpression, anchor: cst.BaseExpression) -> cst.BaseExpression | None:
        new = rewrite_device_expr(value)
        if new is not None and self.record(anchor, "device", "device string cuda -> npu", None, new=code_of(new)):
            return new
        return None

    def _backend_value(self, value: cst.BaseExpression, anchor: cst.BaseExpression) -> cst.BaseExpression | None:
        new = rewrite_backend_expr(value)
        if new is not None and self.record(anchor, "args", "collective backend nccl -> hccl", None, new=code_of(new)):
            return new
        return None

    def _named_value(
        self, name: str | None, value: cst.BaseExpression, anchor: cst.BaseExpression, *, variable: bool = False
    ) -> cst.BaseExpression | None:
        """The new value given to a variable, parameter or dict key called ``name``; a variable
        (or parameter) also by what the file passes it to (flow.py). A dataclass field's default,
        ``field(default="nccl")``, is the value."""
        if name is None:
            return None
        default = _field_default(value)
        if default is not None and isinstance(value, cst.Call) and isinstance(anchor, cst.Call):
            new = self._named_value(name, value.args[default].value, anchor.args[default].value, variable=variable)
            if new is None:
                return None
            args = list(value.args)
            args[default] = args[default].with_changes(value=new)
            return value.with_changes(args=args)
        if DEVICE_NAME.search(name) or variable and name in self.flow.devices:
            return self._device_value(value, anchor)
        if BACKEND_NAME.search(name) or variable and name in self.flow.backends:
            return self._backend_value(value, anchor)
        return None

    @staticmethod
    def _target_name(node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            return string_value(node.slice[0].slice.value)  # kwargs["device_type"] = "cuda": a dict item
        parts = dotted_parts(node)
        if not parts:
            return None
        if len(parts) >= 2 and parts[-1] == "type" and DEVICE_NAME.search(parts[-2]):
            return parts[-2]  # x.device.type
        return parts[-1]

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        for target in original_node.targets:
            new = self._named_value(
                self._target_name(target.target),
                updated_node.value,
                original_node.value,
                variable=isinstance(target.target, cst.Name),
            )
            if new is not None:
                return updated_node.with_changes(value=new)
        return updated_node

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign) -> cst.AnnAssign:
        if updated_node.value is not None and original_node.value is not None:
            new = self._named_value(
                self._target_name(original_node.target),
                updated_node.value,
                original_node.value,
                variable=isinstance(original_node.target, cst.Name),
            )
            if new is not None:
                return updated_node.with_changes(value=new)
        return updated_node

    def leave_Param(self, original_node: cst.Param, updated_node: cst.Param) -> cst.Param:
        if updated_node.default is not None and original_node.default is not None:
            new = self._named_value(
                original_node.name.value, updated_node.default, original_node.default, variable=True
            )
            if new is not None:
                return updated_node.with_changes(default=new)
        return updated_node

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self.dict_keys.add(id(node.key))

    def leave_DictElement(self, original_node: cst.DictElement, updated_node: cst.DictElement) -> cst.DictElement:
        new = self._named_value(string_value(original_node.key), updated_node.value, original_node.value)
        if new is not None:
            return updated_node.with_changes(value=new)
        return updated_node

    # ---- computed device strings anywhere: f"cuda:{rank}", "cuda:{}".format(i), "cuda:%d" % i,
    # "cuda:" + str(i). They can only be devices; a dict key is left alone (map_location keys name
    # where a checkpoint was saved).

    def _template(self, original_node: cst.BaseExpression, updated_node: cst.BaseExpression) -> cst.BaseExpression:
        if (
            id(original_node) in self.dict_keys
            or id(original_node) in self.call_args
            or not is_device_template(original_node)
        ):
            return updated_node
        new = self._device_value(updated_node, original_node)
        return new if new is not None else updated_node

    def leave_FormattedString(self, original_node: cst.FormattedString, updated_node: cst.FormattedString):
        return self._template(original_node, updated_node)

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation, updated_node: cst.BinaryOperation):
        return self._template(original_node, updated_node)

    # ---- environment variable names in string literals

    def _env_finding(self, anchor: cst.CSTNode, name: str, rule) -> None:
        """A variable with no NPU counterpart (EnvVarModifyRule without new_name): reported, kept."""
        level = rule.get("level", "note")
        kind = {"error": "no_counterpart", "warning": "unsupported", "note": "note"}[level]
        self.record(anchor, kind, f"{name}: {rule.get('message', 'has no effect on NPU')}", rule, api=name, level=level)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        """``"CUDA_VISIBLE_DEVICES" if <CUDA> else "ASCEND_RT_VISIBLE_DEVICES"`` chooses between the
        backends already: the CUDA name stays (renamed, both branches would say the NPU one).
        ``torch.xpu if <XPU> else torch.cuda`` chooses a device module: torch.cuda there is the module
        of the accelerator at hand (references.py renames it to torch_npu.npu, which has its functions)."""
        for one, other in ((node.body, node.orelse), (node.orelse, node.body)):
            module = self.resolve_name(other)
            if module in DEVICE_MODULES and self.resolve_name(one) == "torch.cuda":
                self.device_modules[id(one)] = f"chosen beside {module}"
            value, twin = string_value(one), string_value(other)
            if value is None or twin is None or not ENV_NAME.match(value):
                continue
            rule = self.rules.env_rule(value)
            if rule is not None and rule.get("new_name") == twin:
                self.env_twins.add(id(one))

    def device_module_default(self, node: cst.Call) -> None:
        """``getattr(torch, device_type, torch.cuda)``: the module of the device at hand, looked up by
        its name, with torch.cuda as the fallback; on an NPU the lookup finds torch.npu, and the
        fallback is torch_npu.npu too (references.py)."""
        func = node.func
        if (
            isinstance(func, cst.Name)
            and func.value == "getattr"
            and len(node.args) == 3
            and all(arg.keyword is None and not arg.star for arg in node.args)
            and not any("getattr" in scope for scope in self.shadow)
            and self.resolve_name(node.args[0].value) == "torch"
            and self.resolve_name(node.args[2].value) == "torch.cuda"
        ):
            self.device_modules[id(node.args[2].value)] = "that getattr(torch, <device type>, ...) falls back on"

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.BaseExpression:
        if id(original_node) in self.force_devices:  # "cuda:0" in a collection of devices converted whole
            new = self._device_value(updated_node, original_node)
            if new is not None:
                return new
        value = string_value(original_node)
        rule = self.rules.env_rule(value) if value is not None and ENV_NAME.match(value) else None
        if rule is not None and id(original_node) in self.env_twins:
            rule = None
        if rule is not None and value is not None:
            if rule.get("new_name") is None:
                self._env_finding(original_node, value, rule)
            elif self.record(
                original_node, "env", f"{value} -> {rule['new_name']}", rule, api=value, new=rule["new_name"]
            ):
                return replace_string(updated_node, value, rule["new_name"])
        elif value is not None and value.startswith(TYPE_STRING_PREFIX) and value.endswith("Tensor"):
            # legacy type names as strings: x.type("torch.cuda.HalfTensor"), x.type() == "...",
            # torch.set_default_tensor_type("torch.cuda.FloatTensor"); torch_npu registers them
            # as "torch.npu.<Type>"
            rule = self.rules.rename_q.get(value)
            new_name = rule["new_name"] if rule is not None else ""
            if new_name.startswith("torch_npu.npu.") and "." not in new_name[len("torch_npu.npu.") :]:
                new_api = "torch.npu." + new_name[len("torch_npu.npu.") :]
                if self.record(original_node, "rename", f"{value} -> {new_api}", rule, api=value, new=new_api):
                    return replace_string(updated_node, value, new_api)
        return self._named_string(original_node, updated_node)  # named_strings.py


def _field_default(value: cst.BaseExpression) -> int | None:
    """The index of the ``default=`` argument of a dataclass ``field(...)`` / ``dataclasses.field(...)``
    call, or None."""
    if not isinstance(value, cst.Call):
        return None
    parts = dotted_parts(value.func)
    if not parts or parts[-1] != "field":
        return None
    return next(
        (i for i, arg in enumerate(value.args) if arg.keyword is not None and arg.keyword.value == "default"), None
    )
