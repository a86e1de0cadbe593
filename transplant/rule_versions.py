"""Which rules hold for the chosen PyTorch version (``--pytorch-version``).

Owns the meaning of a rule's ``since`` and ``until`` fields: a rule holds from ``since`` on and
below ``until``. A rename that does not hold is not dropped silently: its old name is reported
instead (a note saying from which version the new name exists), so that a user of an older
PyTorch learns why ``except torch.cuda.OutOfMemoryError:`` was kept (a note: the old spelling names
the same class) or that ``torch.cuda.host_memory_stats()`` still needs porting (a warning: the
torch_npu counterpart is younger than the chosen version).
"""

from __future__ import annotations

from typing import Any


KEPT = "kept_rename"  # marks the findings made by kept_rename


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def holds(entry: dict[str, Any], version: str) -> bool:
    """Does the rule ``entry`` hold for PyTorch ``version``?"""
    since, until = entry.get("since"), entry.get("until")
    if since is None and until is None:
        return True
    key = version_key(version)
    return (since is None or key >= version_key(since)) and (until is None or key < version_key(until))


def choose_version(since: str, versions: tuple[str, ...]) -> str:
    """What to tell a user whose rename needs PyTorch ``since``: the first of the accepted
    ``versions`` (--pytorch-version's choices) that has it, never a version the option refuses."""
    later = [v for v in versions if version_key(v) >= version_key(since)]
    if later:
        first = min(later, key=version_key)
        tail = " or later" if first != max(versions, key=version_key) else ""
        return f"with PyTorch {since} or later, choose --pytorch-version {first}{tail} to rename it"
    return (
        f"none of the PyTorch versions --pytorch-version accepts ({', '.join(versions)}) has it yet: "
        "port it by hand or keep it"
    )


def kept_rename(kind: str, entry: dict[str, Any], version: str, versions: tuple[str, ...]) -> dict[str, Any] | None:
    """The UnsupportedRule entry that reports a rename which does not hold for ``version``, or
    None (other kinds, and a rename that ends before ``version``: a later rule replaces it).
    ``versions``: those --pytorch-version accepts, for the suggestion."""
    since = entry.get("since")
    if (
        kind != "FuncNameModifyRule"
        or entry.get("on", "name") != "name"
        or since is None
        or version_key(version) >= version_key(since)
    ):
        return None
    message = (
        f"kept as it is: its NPU counterpart {entry['new_name']} exists from PyTorch {since} on "
        f"(--pytorch-version {version})"
    )
    if entry.get("message"):
        message += f"; {entry['message']}"
    # a torch.* target is a device-generic spelling of the same object (torch.OutOfMemoryError is
    # torch.cuda.OutOfMemoryError): the kept original works on NPU. A torch_npu target is the NPU
    # counterpart of a CUDA call: the kept original fails there.
    level = "warning" if entry["new_name"].startswith("torch_npu.") else "note"
    found = {
        "name": entry["old_name"],
        "level": level,
        "message": message,
        "suggestion": choose_version(since, versions),
    }
    if entry.get("source"):
        found["source"] = entry["source"]
    found[KEPT] = True  # (made here, never read from a file) its imports are reported too
    return found
