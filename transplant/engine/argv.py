"""Command lines written as lists in Python: ``["python", "train.py", "--device", "cuda"]``,
``("--dist-backend=nccl",)``, ``sys.argv += ["--device", "cuda:0"]``, ``parser.parse_args([...])``.

The list reaches a program's argument parser, whose converted default it overrides, exactly like
a launch script's ``--device cuda`` (../formats/shell_values.py). The option name decides
(../devices.py ``option_value``): ``"--device"`` followed by ``"cuda"``, or one ``"--device=cuda"``.
Owns ``leave_List`` and ``leave_Tuple``.
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import replace_string, string_value
from ..devices import option_value
from .state import State

_OPTION = re.compile(r"^--?[A-Za-z][\w.-]*$")  # (--vllm.sync_backend: the last part decides)
_OPTION_VALUE = re.compile(r"^(--?[A-Za-z][\w.-]*)=(.+)$")


class ArgvHandlers(State):
    """Device and backend values of options in list and tuple literals of strings."""

    def _argv(self, original_node: cst.List | cst.Tuple, updated_node: cst.List | cst.Tuple):
        elements = list(updated_node.elements)
        values = [
            string_value(el.value) if isinstance(el, cst.Element) and isinstance(el.value, cst.SimpleString) else None
            for el in original_node.elements
        ]
        changed = False
        for i, value in enumerate(values):
            if value is None:
                continue
            option = _OPTION_VALUE.match(value)
            if option is not None:  # "--device=cuda"
                found, old = option_value(option.group(1), option.group(2)), option.group(2)
                new_text = f"{option.group(1)}={found[0]}" if found else None
            elif i > 0 and (previous := values[i - 1]) is not None and _OPTION.match(previous):  # "--device", "cuda"
                found, old = option_value(previous, value), value
                new_text = found[0] if found else None
            else:
                continue
            current = elements[i].value
            if new_text is None or found is None or not isinstance(current, cst.SimpleString):
                continue
            if string_value(current) != value:  # changed by another rule
                continue
            anchor = original_node.elements[i].value
            what = "device string" if found[1] == "device" else "collective backend"
            # the value is read by the program the list is given to: this file needs no torch_npu for it
            if self.record(
                anchor,
                found[1],
                f"{what} {old} -> {found[0]} (a command-line argument)",
                None,
                new=new_text,
                needs_npu=False,
            ):
                elements[i] = elements[i].with_changes(value=replace_string(current, value, new_text))
                changed = True
        return updated_node.with_changes(elements=elements) if changed else updated_node

    def leave_List(self, original_node: cst.List, updated_node: cst.List) -> cst.List:
        return self._accepted(original_node, self._argv(original_node, updated_node))  # device_names.py

    def leave_Tuple(self, original_node: cst.Tuple, updated_node: cst.Tuple) -> cst.Tuple:
        return self._accepted(original_node, self._argv(original_node, updated_node))
