"""Findings about the project as a whole, settled once every file is converted (and, through
variants.py, the files that are not the program an NPU runs: other accelerators' images, CI).

``torch`` listed without ``torch_npu`` (packages.py) is found in each file that lists requirements;
the project needs torch_npu once, and only when the converted code imports it. This pass keeps one
such finding for the project (in the file nearest the project's root, a requirements file first), as a note (installing a
package is a step of the setup, not code to rewrite: it does not count against the conversion
rate), and drops them all when no converted file imports torch_npu (nothing was converted, or only
shell commands).

Lightning's ``accelerator: gpu`` in a YAML or JSON configuration is a Lightning setting only where
the project uses Lightning: when no Python file of the project imports lightning,
pytorch_lightning or lightning_fabric, such a finding becomes a note that says so (the key may
belong to another tool, or to a Lightning-based command the project runs).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Protocol, Sequence

from ..records import CODES, Record

TORCH_NPU = "torch_npu"
LIGHTNING = "lightning accelerator"
_PROGRAMS = (".py", ".ipynb")  # (a notebook's code lines are JSON strings: an import may follow a quote)
_IMPORTS_LIGHTNING = re.compile(
    rb"^[ \t\"]*(?:import|from)[ \t]+(?:lightning|pytorch_lightning|lightning_fabric)\b", re.M
)


def _is_reminder(r: Record) -> bool:
    return r.code == CODES["project_file"] and r.api == TORCH_NPU and r.rule in ("packages.json", "conda.json")


def torch_npu_once(results: Sequence[Any], read: Callable[[str], bytes] | None = None) -> None:
    """Keep one torch_npu reminder for the project and settle Lightning's configuration findings
    (see the module's docstring), in place. ``results``: the FileResults of a repository conversion
    (filetypes imports this package: no import back); ``read`` gives a file's bytes by its path."""
    settle(results, lambda res: res.path, read)


def _nearest(path: str) -> tuple[int, bool, str]:
    """The root's files first, and among them a requirements file (where torch_npu is installed from)."""
    return path.count("/"), not path.rsplit("/", 1)[-1].startswith("requirements"), path


class _Holder(Protocol):
    records: list[Record]


def settle(items: Sequence[_Holder], path: Callable[[Any], str], read: Callable[[str], bytes] | None = None) -> None:
    """The pass over anything that holds a file's ``records`` (a FileResult of a repository
    conversion, an Outcome of --check on a folder), ``path`` giving its path."""
    from .variants import settle_variants  # images for other accelerators, CI configuration

    settle_variants(items, path, read)
    if read is not None:
        from .plugins import settle_plugins  # vllm where the project installs vllm-ascend

        settle_plugins(items, path, read)
        _lightning_configs(items, path, read)
    holders = [item for item in items if any(_is_reminder(r) for r in item.records)]
    if not holders:
        return
    imports_npu = any(
        r.is_change and r.code == CODES["import"] and r.api == TORCH_NPU for item in items for r in item.records
    )
    keep = min(holders, key=lambda item: _nearest(path(item))) if imports_npu else None
    for item in holders:
        kept: list[Record] = []
        for r in item.records:
            if not _is_reminder(r):
                kept.append(r)
            elif item is keep and not any(_is_reminder(k) for k in kept):
                r.level = "note"
                if len(holders) > 1:
                    others = ", ".join(path(h) for h in holders if h is not item)
                    r.message += f" (once for the project; also listed without torch_npu in {others})"
                kept.append(r)
        item.records = kept


def _lightning_configs(items: Sequence[_Holder], path: Callable[[Any], str], read: Callable[[str], bytes]) -> None:
    configs = [
        r
        for item in items
        if not path(item).endswith(_PROGRAMS)
        for r in item.records
        if r.api == LIGHTNING and r.level != "note"
    ]
    if not configs:
        return
    for item in items:
        if path(item).endswith(_PROGRAMS):
            try:
                if _IMPORTS_LIGHTNING.search(read(path(item))):
                    return
            except OSError:
                return  # not known: keep the findings as they are
    for r in configs:
        r.level = "note"
        r.message += " (no Python file of the project imports Lightning: check which tool reads this key)"
