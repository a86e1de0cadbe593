"""Device and backend values in shell code: ``python train.py --device cuda:0 --dist-backend nccl``,
``--device=cuda``, ``DEVICE=cuda``, Hydra-style ``trainer.device=cuda``.

A command-line value overrides the default the Python code was converted to, so it must change as
well. The name decides, as in Python (../devices.py ``option_value``): an option or variable
named like a device (``device``, ``*_device``, ``dev``, ``device_type``, ...; ``-`` counts as ``_``)
holding ``cuda``/``cuda:N``, or like a backend (``backend``, ``*_backend``) holding ``nccl``. Pure function of
one line's code (the part before a comment); the caller records and applies the edits.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..devices import option_value

_VALUE = rb"(['\"]?)(cuda(?::\d+)?|nccl)\2(?![\w:./-])"
_OPTION = re.compile(
    rb"(?<![\w-])--?([A-Za-z][\w.-]*)(?:=|[ \t]+)" + _VALUE
)  # (--vllm.sync_backend: the last part decides)
_ASSIGN = re.compile(rb"(?<![\w./-])([A-Za-z_][\w.]*)=" + _VALUE)


class ValueEdit(NamedTuple):
    start: int
    end: int
    old: str
    new: str
    kind: str  # "device" or "args" (backend)


def value_edits(code: bytes) -> list[ValueEdit]:
    """The device and backend values of one line of shell code, in order."""
    edits: dict[int, ValueEdit] = {}
    for pattern in (_OPTION, _ASSIGN):
        for match in pattern.finditer(code):
            value = match.group(3).decode()
            found = option_value(match.group(1).decode(), value)
            if found is None:
                continue
            new, kind = found
            edits.setdefault(match.start(3), ValueEdit(match.start(3), match.end(3), value, new, kind))
    return [edits[k] for k in sorted(edits)]
