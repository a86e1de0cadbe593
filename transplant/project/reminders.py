"""Findings about the project as a whole, settled once every file is converted.

``torch`` listed without ``torch_npu`` (packages.py) is found in each file that lists requirements;
the project needs torch_npu once, and only when the converted code imports it. This pass keeps one
such finding for the project (in the file nearest the project's root), as a note (installing a
package is a step of the setup, not code to rewrite: it does not count against the conversion
rate), and drops them all when no converted file imports torch_npu (nothing was converted, or only
shell commands).
"""

from __future__ import annotations

from typing import Sequence

from ..filetypes import FileResult
from ..records import CODES, Record

TORCH_NPU = "torch_npu"


def _is_reminder(r: Record) -> bool:
    return r.code == CODES["project_file"] and r.api == TORCH_NPU and r.rule == "packages.json"


def torch_npu_once(results: Sequence[FileResult]) -> None:
    """Keep one torch_npu reminder for the project (see the module's docstring), in place."""
    holders = [res for res in results if any(_is_reminder(r) for r in res.records)]
    if not holders:
        return
    imports_npu = any(r.code == CODES["import"] and r.api == TORCH_NPU for res in results for r in res.changes)
    keep = min(holders, key=lambda res: (res.path.count("/"), res.path)) if imports_npu else None
    for res in holders:
        kept: list[Record] = []
        for r in res.records:
            if not _is_reminder(r):
                kept.append(r)
            elif res is keep and not any(_is_reminder(k) for k in kept):
                r.level = "note"
                if len(holders) > 1:
                    others = ", ".join(h.path for h in holders if h is not res)
                    r.message += f" (once for the project; also listed without torch_npu in {others})"
                kept.append(r)
        res.records = kept
