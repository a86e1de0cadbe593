"""Values the project's own launch scripts and configs pass to its programs, where the conversion of
those files leaves them as they are (issue 31, mechanism 5).

``--comm nccl`` in a launch script, ``accel: cuda`` in a YAML config: their option is not named
like a backend or a device (../devices.py ``option_value``), so the script and the config keep
"nccl" and "cuda". A Python default of the same option renamed alone (``add_argument("--comm",
default="nccl")`` -> "hccl") would make the shipped recipes take another path than the default
does. Owns finding, from bytes, those (option, value) pairs and where each is passed; the engine
keeps the Python default of such an option and says why (engine/calls.py): one value, one
decision across the project.
"""

from __future__ import annotations

import re

from ..devices import option_value

SUFFIXES = (".sh", ".bash", ".zsh", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf")
VALUES = (b"nccl", b"cuda")
MAX_BYTES = 1 << 20
# --name value / --name=value (shell), name: value (YAML), "name": "value" (JSON), name = value (TOML/INI)
_PAIR = re.compile(
    rb"""(?:--?([A-Za-z][\w.-]*)(?:=|[ \t]+)|(?m:^[ \t]*([A-Za-z_][\w.-]*)[ \t]*[:=][ \t]*)|"([A-Za-z_][\w.-]*)"[ \t]*:[ \t]*)"""
    rb"""['"]?(nccl|cuda)(?![\w:])['"]?"""
)


def is_candidate(rel: str) -> bool:
    return rel.lower().endswith(SUFFIXES)


def passed_values(data: bytes) -> list[tuple[str, str, int]]:
    """(option name with "_" for "-", value, line) of each "nccl" or "cuda" that ``data`` passes to an
    option its own conversion leaves as it is."""
    if not any(v in data for v in VALUES):
        return []
    found = []
    for m in _PAIR.finditer(data):
        name = (m.group(1) or m.group(2) or m.group(3)).decode("ascii", "replace")
        value = m.group(4).decode()
        key = name.rsplit(".", 1)[-1].replace("-", "_")
        if option_value(name, value) is None:
            found.append((key, value, data.count(b"\n", 0, m.start()) + 1))
    return found
