"""Device and backend values as literals: which expressions are CUDA devices or the NCCL backend,
and their NPU spelling.

Owns the recognition of "cuda", "cuda:0", f"cuda:{i}", "cuda:{}".format(i), "cuda:%d" % i,
"cuda:" + str(i) (also inside conditional expressions, boolean operations, lists and dict values),
of "nccl" in a backend value, and the literal comparison of ArgsModifyRule. Pure functions of
nodes: *where* a value counts as a device is decided by the handlers (values.py, calls.py).
"""

from __future__ import annotations

import re

import libcst as cst

from ..devices import BACKEND_NAME, DEVICE_NAME, DEVICE_STR  # noqa: F401  (the engine imports them from here)
from .cst_util import code_of, replace_string, string_value

DEVICE_TEMPLATE = re.compile(r"^cuda:(\{\w*\}|%d|%s|%i)$")
DEVICE_PREFIX = "cuda:"
TYPE_STRING_PREFIX = "torch.cuda."
# device_map: Hugging Face from_pretrained / accelerate ("cuda", {"": "cuda:0"}, {"lm_head": "cuda:1"})
GENERIC_DEVICE_KEYWORDS = frozenset({"device", "device_type", "map_location", "output_device", "device_map"})
BACKEND_PER_DEVICE = re.compile(r"^\w+:\w+(,\w+:\w+)*$")  # "cpu:gloo,cuda:nccl"


def _device_literal(value: str) -> bool:
    return bool(DEVICE_STR.match(value) or DEVICE_TEMPLATE.match(value))


def rewrite_device_expr(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """Turn a CUDA device expression into its NPU form; None when it is not one.

    Handles "cuda", "cuda:0", f"cuda:{i}", "cuda:{}".format(i), "cuda:%d" % i, "cuda:" + str(i),
    conditional expressions and lists of those, and the values (never the keys) of
    map_location-style dicts. "cpu" and every other string are left alone.
    """
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        if value is not None and _device_literal(value):
            return replace_string(node, "cuda", "npu")
        return None
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        if parts and isinstance(parts[0], cst.FormattedStringText):
            text = parts[0].value
            rest_ok = all(isinstance(p, cst.FormattedStringExpression) for p in parts[1:])
            if (text == DEVICE_PREFIX and len(parts) == 2 and rest_ok) or (len(parts) == 1 and DEVICE_STR.match(text)):
                first = parts[0].with_changes(value="npu" + text[4:])
                return node.with_changes(parts=[first, *parts[1:]])
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        inner = node.func.value
        if (
            isinstance(inner, cst.SimpleString)
            and (value := string_value(inner)) is not None
            and _device_literal(value)
        ):
            return node.with_changes(func=node.func.with_changes(value=replace_string(inner, "cuda", "npu")))
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Modulo)):
        literal = node.left
        value = string_value(literal)
        if (
            isinstance(literal, cst.SimpleString)
            and value is not None
            and (value == DEVICE_PREFIX or _device_literal(value))
        ):
            return node.with_changes(left=replace_string(literal, "cuda", "npu"))
        return None
    if isinstance(node, cst.IfExp):
        if _names_npu(node.body) or _names_npu(node.orelse):
            return None  # "cuda" if <CUDA> else "npu": chooses between the backends already
        body = rewrite_device_expr(node.body)
        orelse = rewrite_device_expr(node.orelse)
        if body is None and orelse is None:
            return None
        return node.with_changes(body=body or node.body, orelse=orelse or node.orelse)
    if isinstance(node, cst.BooleanOperation):
        left = rewrite_device_expr(node.left)
        right = rewrite_device_expr(node.right)
        if left is None and right is None:
            return None
        return node.with_changes(left=left or node.left, right=right or node.right)
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        if any(isinstance(el, cst.Element) and string_value(el.value) == "npu" for el in node.elements):
            return None  # names NPU already (device_names.py added it beside "cuda"): whole
        changed = False
        elements = []
        for item in node.elements:
            new = rewrite_device_expr(item.value) if isinstance(item, cst.Element) else None
            if new is not None:
                changed = True
                item = item.with_changes(value=new)
            elements.append(item)
        return node.with_changes(elements=elements) if changed else None
    if isinstance(node, cst.Dict):
        changed = False
        entries = []
        keys = {string_value(el.key) for el in node.elements if isinstance(el, cst.DictElement)}
        for el in node.elements:
            new = rewrite_device_expr(el.value) if isinstance(el, cst.DictElement) else None
            if new is not None:
                changed = True
                el = el.with_changes(value=new)
            twin = _npu_twin(el, keys)
            if twin is not None:
                changed = True
                comma = el.comma
                if not isinstance(comma, cst.Comma):
                    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                elif isinstance(comma.whitespace_after, cst.SimpleWhitespace) and not comma.whitespace_after.value:
                    comma = comma.with_changes(whitespace_after=cst.SimpleWhitespace(" "))  # (a trailing comma)
                entries.append(el.with_changes(comma=comma))
                el = twin
            entries.append(el)
        return node.with_changes(elements=entries) if changed else None
    return None


def _names_npu(node: cst.BaseExpression) -> bool:
    """An "npu" device string ("npu", "npu:0", f"npu:{i}")."""
    value = string_value(node) if isinstance(node, cst.SimpleString) else None
    if value is not None:
        return value == "npu" or value.startswith("npu:")
    if isinstance(node, cst.FormattedString) and node.parts and isinstance(node.parts[0], cst.FormattedStringText):
        return node.parts[0].value.startswith("npu")
    return False


def _npu_twin(el: cst.BaseDictElement, keys: set[str | None]) -> cst.DictElement | None:
    """For a map_location entry keyed by where a CUDA checkpoint was saved (``"cuda:0": ...``), the
    same entry for a checkpoint the converted program saved on NPU (``"npu:0": ...``), unless the
    dict has that key already. (A dict of keys that are not devices, device_map's, gets none.)"""
    if not isinstance(el, cst.DictElement):
        return None
    key = string_value(el.key)
    if key is None or not isinstance(el.key, cst.SimpleString) or not DEVICE_STR.match(key) or "npu" + key[4:] in keys:
        return None
    return el.with_changes(key=replace_string(el.key, "cuda", "npu"))


def rewrite_device_prefix(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The argument of ``<device>.startswith(...)``: "cuda", "cuda:", "cuda:0" (or a tuple of prefixes)
    in their NPU form; None when there is none."""
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        if value is not None and (value == DEVICE_PREFIX or DEVICE_STR.match(value)):
            return replace_string(node, "cuda", "npu")
        return None
    if isinstance(node, cst.Tuple):
        elements = [
            el.with_changes(value=new)
            if isinstance(el, cst.Element) and (new := rewrite_device_prefix(el.value))
            else el
            for el in node.elements
        ]
        return (
            node.with_changes(elements=elements) if any(a is not b for a, b in zip(elements, node.elements)) else None
        )
    return None


def is_device_template(node: cst.BaseExpression) -> bool:
    """A device string computed from a template: f"cuda:{i}", "cuda:{}".format(i), "cuda:%d" % i,
    "cuda:" + str(i)."""
    if isinstance(node, cst.FormattedString):
        parts = node.parts
        return (
            len(parts) == 2
            and isinstance(parts[0], cst.FormattedStringText)
            and parts[0].value == DEVICE_PREFIX
            and isinstance(parts[1], cst.FormattedStringExpression)
        )
    if isinstance(node, cst.Call):
        func = node.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "format"
            and (value := string_value(func.value)) is not None
            and DEVICE_TEMPLATE.match(value) is not None
        )
    if isinstance(node, cst.BinaryOperation):
        value = string_value(node.left)
        if isinstance(node.operator, cst.Modulo):
            return value is not None and DEVICE_TEMPLATE.match(value) is not None
        if isinstance(node.operator, cst.Add):
            return value == DEVICE_PREFIX
    return False


def is_cuda_device(node: cst.CSTNode) -> bool:
    """A CUDA device written as a string ("cuda", "cuda:1") or computed from a template."""
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        return value is not None and DEVICE_STR.match(value) is not None
    return isinstance(node, cst.BaseExpression) and is_device_template(node)


def rewrite_backend_expr(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """'nccl' -> 'hccl' in a backend value, 'cuda:nccl' -> 'npu:hccl' in a backend per device type
    ("cpu:gloo,cuda:nccl"); also in conditional expressions, lists and tuples."""
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        if value == "nccl":
            return replace_string(node, "nccl", "hccl")
        if value is not None and BACKEND_PER_DEVICE.match(value) and "cuda:nccl" in value.split(","):
            # "cpu:gloo,cuda:nccl": a backend for each device type
            return replace_string(node, "cuda:nccl", "npu:hccl")
        return None
    if isinstance(node, cst.IfExp):
        if string_value(node.body) == "hccl" or string_value(node.orelse) == "hccl":
            return None  # "nccl" if <CUDA> else "hccl": chooses between the backends already
        body, orelse = rewrite_backend_expr(node.body), rewrite_backend_expr(node.orelse)
        if body is None and orelse is None:
            return None
        return node.with_changes(body=body or node.body, orelse=orelse or node.orelse)
    if isinstance(node, (cst.List, cst.Tuple)):
        elements = [
            el.with_changes(value=new)
            if isinstance(el, cst.Element) and (new := rewrite_backend_expr(el.value))
            else el
            for el in node.elements
        ]
        return (
            node.with_changes(elements=elements) if any(a is not b for a, b in zip(elements, node.elements)) else None
        )
    return None


def literal_equals(node: cst.BaseExpression, literal: str, literal_node: cst.BaseExpression) -> bool:
    """Does ``node`` have the value of the rule literal (strings compare by value)?"""
    wanted = string_value(literal_node)
    if wanted is not None:
        return string_value(node) == wanted
    return code_of(node).strip() == literal.strip()


def replace_literal(
    node: cst.BaseExpression, literal: str, literal_node: cst.BaseExpression, new: cst.BaseExpression
) -> cst.BaseExpression | None:
    """Replace the literal in ``node`` or in the branches of a conditional expression."""
    if literal_equals(node, literal, literal_node):
        if isinstance(node, cst.SimpleString) and isinstance(new, cst.SimpleString):
            # keep the user's quote style
            new_value = string_value(new)
            if new_value is not None and new_value.isidentifier():
                return node.with_changes(value=node.prefix + node.quote + new_value + node.quote)
        return new
    if isinstance(node, cst.IfExp):
        body = replace_literal(node.body, literal, literal_node, new)
        orelse = replace_literal(node.orelse, literal, literal_node, new)
        if body is None and orelse is None:
            return None
        return node.with_changes(body=body or node.body, orelse=orelse or node.orelse)
    return None
