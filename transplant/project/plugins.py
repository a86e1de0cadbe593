"""NPU plugins the project installs itself: vLLM's Ascend plugin, vllm-ascend.

vLLM runs on Ascend NPUs through its hardware plugin; the route of every vllm finding is "install
vllm-ascend". Where the project already installs it (a requirements file, pyproject.toml, a shell
script or a Dockerfile names ``vllm-ascend``/``vllm_ascend``, as verl's Ascend images do), that work
is done: the vllm findings become notes that name the file. Findings about vLLM's own CUDA ops
(``vllm._C``, ``vllm._custom_ops``, its NCCL communicator) stay, since the plugin does not provide
them. Settled once every file is converted (reminders.settle calls this pass).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from ..records import CODES

LIBRARY = "vllm"
_PLUGIN = re.compile(rb"vllm[-_]ascend")
_KEEPS = ("vllm._C", "vllm._custom_ops", "pynccl")  # what the plugin does not provide
_INSTALLERS = re.compile(
    r"(?i)(requirements[^/]*\.txt|pyproject\.toml|setup\.py|setup\.cfg|\.sh|dockerfile[^/]*|[^/]*\.dockerfile)$"
)


def settle_plugins(items: Sequence[Any], path: Callable[[Any], str], read: Callable[[str], bytes]) -> None:
    """The vllm findings made notes where a file of the project installs vllm-ascend, in place."""
    findings = [
        r
        for item in items
        for r in item.records
        if r.code == CODES["library"]
        and r.api == LIBRARY
        and r.level in ("error", "warning")
        and not any(k in r.message for k in _KEEPS)
    ]
    if not findings:
        return
    where = None
    for item in sorted(items, key=lambda i: path(i)):
        rel = path(item)
        if not _INSTALLERS.search(rel):
            continue
        try:
            if _PLUGIN.search(read(rel)):
                where = rel
                break
        except OSError:
            continue
    if where is None:
        return
    for r in findings:
        r.level = "note"
        r.message += f" (the project installs vllm-ascend, vLLM's Ascend plugin: {where})"
