"""Option defaults that the project's own scripts pass as they are (issue 31, mechanism 5).

Owns one decision of the call rules (calls.py): the default of ``parser.add_argument("--comm",
default="nccl")`` stays as it is, with a note, when the project's launch scripts or configs pass that
option the same value and their conversion keeps it (project/passed.py): renamed in Python alone,
the shipped recipes would take another path than the default. The same value elsewhere in Python is
the same decision: a test of the option that the file would convert (``comm == "nccl"`` where
``comm = args.comm`` is passed as a backend) keeps it too (device_tests.py).
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import dotted_parts, string_value
from .state import State

# name = getattr(obj, "option", ...) / name = cfg.get("option", ...) / name = args.option
_LOCAL = re.compile(
    rb"""^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:getattr\(\s*[\w.]+\s*,\s*|[\w.]+\.get\(\s*)['"](\w+)['"]"""
    rb"""|^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*[A-Za-z_][\w]*(?:\.\w+)*\.(\w+)[ \t]*(?:#.*)?$""",
    re.M,
)
LOOKUP_KEYS = {"getattr": 1, "get": 0}  # where a lookup's key is


def option_locals(text: bytes) -> dict[str, str]:
    """Local names the source ``text`` assigns an option's value (``backend = args.sync_backend``,
    ``backend = getattr(args, "sync_backend", "nccl")``) -> the option."""
    found: dict[str, str] = {}
    for m in _LOCAL.finditer(text):
        name, option = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        found.setdefault(name.decode(), option.decode())
    return found


def passed_as_is(handler: State, call: cst.Call, value: cst.BaseExpression) -> bool:
    """Is ``value`` ("nccl", "cuda") the default of an option that the project's launch scripts or
    configs pass with the same value, which their conversion keeps (project/passed.py)? Then the
    default is kept too, with a note: renamed here alone, the shipped recipes would take another
    path than the default."""
    text = string_value(value) if isinstance(value, cst.SimpleString) and handler.passed else None
    if text is None:
        return False
    where = next((handler.passed[(n, text)] for n in option_names(call) if (n, text) in handler.passed), None)
    if where is None:
        return False
    _note(handler, value, text, where, "the default")
    return True


def _note(handler: State, value: cst.BaseExpression, text: str, where: str, what: str) -> None:
    handler.record(
        value,
        "note",
        f"'{text}' kept: the project's own scripts or configs pass the same value to this option "
        f"({where}) and are not converted (the option is not named like a device or backend); "
        f"renamed here alone, they would take another path than {what}",
        None,
        api=text,
        level="note",
    )


def compared_as_is(handler: State, operand: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """``args.comm == "nccl"``, ``getattr(args, "comm", "nccl") == "nccl"``, ``backend == "nccl"``
    (``backend = args.comm`` in this file): the option's value as the project's scripts pass it, kept
    there, is tested here; the test keeps it too (one value, one decision)."""
    text = string_value(value) if isinstance(value, cst.SimpleString) and handler.passed else None
    option = _option_of(handler, operand) if text is not None else None
    where = handler.passed.get((option, text or "")) if option is not None else None
    if where is None:
        return False
    _note(handler, value, text or "", where, "this test")
    return True


def _option_of(handler: State, node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Call):
        func = dotted_parts(node.func)
        at = LOOKUP_KEYS.get(func[-1]) if func else None
        if at is not None and len(node.args) > at:
            return string_value(node.args[at].value)
        return None
    parts = dotted_parts(node)
    if not parts:
        return None
    return parts[-1] if len(parts) >= 2 else handler.passed_locals.get(parts[0])


def option_names(call: cst.Call) -> list[str]:
    """The names of the option ``parser.add_argument("--comm", "-c", ...)`` defines, "-" as "_"."""
    names = []
    for arg in call.args:
        value = string_value(arg.value) if arg.keyword is None and isinstance(arg.value, cst.SimpleString) else None
        if value is not None and value.startswith("-"):
            names.append(value.lstrip("-").replace("-", "_").rsplit(".", 1)[-1])  # --vllm.sync_backend
    return names
