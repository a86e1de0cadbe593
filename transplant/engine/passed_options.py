"""Option defaults that the project's own scripts pass as they are (issue 31, mechanism 5).

Owns one decision of the call rules (calls.py): the default of ``parser.add_argument("--comm",
default="nccl")`` stays as it is, with a note, when the project's launch scripts or configs pass that
option the same value and their conversion keeps it (project/passed.py): renamed in Python alone,
the shipped recipes would take another path than the default.
"""

from __future__ import annotations

import libcst as cst

from .cst_util import string_value
from .state import State


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
    handler.record(
        value,
        "note",
        f"'{text}' kept: the project's own scripts or configs pass the same value to this option "
        f"({where}) and are not converted (the option is not named like a device or backend); "
        f"renamed here alone, they would take another path than the default",
        None,
        api=text,
        level="note",
    )
    return True


def option_names(call: cst.Call) -> list[str]:
    """The names of the option ``parser.add_argument("--comm", "-c", ...)`` defines, "-" as "_"."""
    names = []
    for arg in call.args:
        value = string_value(arg.value) if arg.keyword is None and isinstance(arg.value, cst.SimpleString) else None
        if value is not None and value.startswith("-"):
            names.append(value.lstrip("-").replace("-", "_"))
    return names
