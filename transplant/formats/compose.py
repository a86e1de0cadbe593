"""Docker Compose files (``docker-compose.yaml``, ``compose.yml``): services that ask the NVIDIA
container runtime for GPUs, ``driver: nvidia`` in ``deploy.resources.reservations.devices`` or
``runtime: nvidia``. Reported (TP207, an error: the service does not start) with the Ascend route, never rewritten; the rest of
the file is read as any YAML configuration (formats/configs.py). Facts and sources:
rules/project/docker.json (``compose_*``). Line-based: a key and its value on one line.
"""

from __future__ import annotations

import fnmatch
import re

from ..records import CODES, SKIP_LINE, Conversion, Record, skips_file
from ..resources import project_data

RULE = "docker.json"
_KEY = re.compile(rb"^(\s*-?\s*)(driver|runtime)\s*:\s*[\"']?nvidia[\"']?\s*(#.*)?$")


def is_compose(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in project_data(RULE)["compose_files"])


def compose_records(data: bytes) -> list[Record]:
    facts = project_data(RULE)
    records: list[Record] = []
    for number, line in enumerate(data.splitlines(), start=1):
        m = _KEY.match(line)
        if m is None or SKIP_LINE.search(line) or m.group(2).decode() not in facts["compose_nvidia"]:
            continue
        key = m.group(2).decode()
        col = len(m.group(1)) + 1
        records.append(
            Record(
                number,
                col,
                number,
                len(line.rstrip()) + 1,
                CODES["project_file"],
                "error",  # the service does not start: it fails on an NPU machine
                "container setting",
                facts["compose_message"].format(key=key),
                RULE,
                api=f"{key}: nvidia",
                suggestion=facts["compose_suggestion"],
            )
        )
    return records


def may_match(path: str, data: bytes) -> bool:
    return b"nvidia" in data and is_compose(path)


def apply(path: str, data: bytes, conv: Conversion) -> Conversion:
    """The hook into the config conversion: ``conv`` plus the compose file's findings."""
    if skips_file(data) or not may_match(path, data):
        return conv
    found = compose_records(data)
    if not found:
        return conv
    return Conversion(conv.new, sorted(conv.records + found, key=lambda r: (r.line, r.col)))
