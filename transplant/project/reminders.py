"""Findings about the project as a whole, settled once every file is converted.

``torch`` listed without ``torch_npu`` (packages.py) is found in each file that lists requirements;
the project needs torch_npu once, and only when the converted code imports it. This pass keeps one
such finding for the project (in the file nearest the project's root, a requirements file first), as a note (installing a
package is a step of the setup, not code to rewrite: it does not count against the conversion
rate), and drops them all when no converted file imports torch_npu (nothing was converted, or only
shell commands).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

from ..filetypes import FileResult
from ..records import CODES, Record

TORCH_NPU = "torch_npu"


def _is_reminder(r: Record) -> bool:
    return r.code == CODES["project_file"] and r.api == TORCH_NPU and r.rule in ("packages.json", "conda.json")


def torch_npu_once(results: Sequence[FileResult]) -> None:
    """Keep one torch_npu reminder for the project (see the module's docstring), in place."""
    settle(results, lambda res: res.path)


def _nearest(path: str) -> tuple[int, bool, str]:
    """The root's files first, and among them a requirements file (where torch_npu is installed from)."""
    return path.count("/"), not path.rsplit("/", 1)[-1].startswith("requirements"), path


class _Holder(Protocol):
    records: list[Record]


def settle(items: Sequence[_Holder], path: Callable[[Any], str]) -> None:
    """The pass over anything that holds a file's ``records`` (a FileResult of a repository
    conversion, an Outcome of --check on a folder), ``path`` giving its path."""
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
