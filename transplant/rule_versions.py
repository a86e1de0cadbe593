"""Which rules hold for the chosen Ascend stack: a PyTorch version (``--pytorch-version``) and
the torch_npu release that ships it (``--torch-npu``).

Owns the table of torch_npu releases and the PyTorch versions each ships, the default pair, and
the meaning of a rule's ``since``/``until`` (PyTorch versions) and ``npu_since``/``npu_until``
(torch_npu releases) fields: a rule holds from ``since`` on and below ``until``, and from the
release ``npu_since`` on and below the release ``npu_until``. A rename that does not hold is not dropped silently: its old name is reported
instead (a note saying from which version the new name exists), so that a user of an older
PyTorch learns why ``except torch.cuda.OutOfMemoryError:`` was kept (a note: the old spelling names
the same class) or that ``torch.cuda.host_memory_stats()`` still needs porting (a warning: the
torch_npu counterpart is younger than the chosen version).
"""

from __future__ import annotations

from typing import Any


KEPT = "kept_rename"  # marks the findings made by kept_rename

# torch_npu releases and the PyTorch versions each ships (major.minor), from Ascend/pytorch:
# COMPATIBILITY.md (master 9e73e708, August 2026) and the release tags v<PyTorch>-<release> and
# v<release>-pytorch<PyTorch>. 26.2 exists as betas only (tags v26.2.0-beta.1-pytorch2.7.1 ...
# 2.13.0 and v26.2.0-0day-pytorch2.13.0): it is chosen by default only where no final release
# ships the PyTorch version (2.13).
RELEASES: dict[str, tuple[str, ...]] = {
    "6.0": ("2.1", "2.3", "2.4"),
    "7.0": ("2.1", "2.3", "2.4", "2.5"),
    "7.1": ("2.1", "2.5", "2.6"),
    "7.2": ("2.1", "2.6", "2.7", "2.8"),
    "7.3": ("2.6", "2.7", "2.8", "2.9"),
    "26.0": ("2.7", "2.8", "2.9", "2.10"),
    "26.1": ("2.7", "2.9", "2.10", "2.11", "2.12"),
    "26.2": ("2.7", "2.9", "2.10", "2.11", "2.12", "2.13"),
}
PRERELEASES = frozenset({"26.2"})
# The PyTorch versions transplant converts for (each has a support list in rules/npu_support/).
PYTORCH_VERSIONS = ("2.1", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.13")
# The recommended pair of COMPATIBILITY.md ("Recommended Version Combination": TorchNPU 2.12.0,
# PyTorch 2.12.0, CANN 9.1.0; the package 2.12.0 is branch v2.12.0-26.1.0).
DEFAULT_PYTORCH_VERSION = "2.12"
DEFAULT_TORCH_NPU = "26.1"
TORCH_NPU_RELEASES = tuple(r for r in RELEASES if set(RELEASES[r]) & set(PYTORCH_VERSIONS))


class StackError(ValueError):
    """A PyTorch version or torch_npu release transplant does not know, or a pair no release ships."""


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def default_release(pytorch_version: str) -> str:
    """The newest final torch_npu release that ships ``pytorch_version`` (a pre-release where none does)."""
    shipping = [r for r, versions in RELEASES.items() if pytorch_version in versions]
    final = [r for r in shipping if r not in PRERELEASES]
    return max(final or shipping, key=version_key)


def resolve_stack(pytorch_version: str | None, torch_npu: str | None) -> tuple[str, str]:
    """The (PyTorch version, torch_npu release) pair for the given choices, either of which may be
    None: no release means the newest that ships the version; no version means the recommended
    one where the release ships it, else the newest the release ships. StackError for an unknown
    version or release, or a pair that no release ships."""
    if pytorch_version is not None and pytorch_version not in PYTORCH_VERSIONS:
        raise StackError(f"unknown PyTorch version {pytorch_version!r} (choose from {', '.join(PYTORCH_VERSIONS)})")
    if torch_npu is not None and torch_npu not in TORCH_NPU_RELEASES:
        raise StackError(f"unknown torch_npu release {torch_npu!r} (choose from {', '.join(TORCH_NPU_RELEASES)})")
    if torch_npu is None:
        version = pytorch_version or DEFAULT_PYTORCH_VERSION
        return version, default_release(version)
    ships = [v for v in RELEASES[torch_npu] if v in PYTORCH_VERSIONS]
    if pytorch_version is None:
        return (DEFAULT_PYTORCH_VERSION if DEFAULT_PYTORCH_VERSION in ships else ships[-1]), torch_npu
    if pytorch_version not in ships:
        raise StackError(
            f"torch_npu {torch_npu} does not ship PyTorch {pytorch_version} (it ships {', '.join(ships)}; "
            f"PyTorch {pytorch_version} comes with torch_npu {', '.join(r for r in RELEASES if pytorch_version in RELEASES[r])})"
        )
    return pytorch_version, torch_npu


def _within(since: str | None, until: str | None, key: tuple[int, ...]) -> bool:
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


def holds(entry: dict[str, Any], version: str, release: str | None = None) -> bool:
    """Does the rule ``entry`` hold for PyTorch ``version`` with torch_npu ``release`` (by default
    the newest that ships ``version``)?"""
    since, until = entry.get("since"), entry.get("until")
    npu_since, npu_until = entry.get("npu_since"), entry.get("npu_until")
    if since is None and until is None and npu_since is None and npu_until is None:
        return True
    if not _within(since, until, version_key(version)):
        return False
    if npu_since is None and npu_until is None:
        return True
    return _within(npu_since, npu_until, version_key(release or default_release(version)))


def kept_rename(kind: str, entry: dict[str, Any], version: str) -> dict[str, Any] | None:
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
        "suggestion": choose_version(since, PYTORCH_VERSIONS),
    }
    if entry.get("source"):
        found["source"] = entry["source"]
    found[KEPT] = True  # (made here, never read from a file) its imports are reported too
    return found
