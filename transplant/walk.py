"""Walking the input tree: every entry in a stable order, by one folder policy (repository mode
mirrors all of it; the file modes take the sources below the folders they are given)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
# Third-party code is copied, never converted: it is not the user's to migrate.
VENDOR_MARKERS = ("pyvenv.cfg",)
VENDOR_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__"})


@dataclass
class Entry:
    rel: str  # "/"-separated path relative to the input root
    kind: str  # file | link | dir
    convert: bool = True


def walk(
    root: Path,
    warn: Callable[[str], None],
    *,
    unlistable: Callable[[str, str], None] | None = None,
    vendored_too: bool = True,
) -> Iterator[Entry]:
    """Every entry below ``root`` in a stable order; symlinks are reported, never followed.

    A folder that cannot be listed goes to ``unlistable(rel, reason)`` when given, else is a
    warning. Third-party folders are walked with ``convert=False`` on their files, or not at
    all without ``vendored_too``.
    """

    def scan(directory: Path, rel: str, vendored: bool) -> Iterator[Entry]:
        try:
            with os.scandir(directory) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if unlistable is not None:
                unlistable(rel, exc.strerror or str(exc))
            else:
                warn(f"{rel or '.'}: cannot list folder ({exc.strerror}); skipped")
            return
        vendored = vendored or any(i.name in VENDOR_MARKERS for i in items)
        if vendored and not vendored_too:
            return
        for item in items:
            child_rel = f"{rel}/{item.name}" if rel else item.name
            if item.is_symlink():
                yield Entry(child_rel, "link", False)
            elif item.is_dir(follow_symlinks=False):
                if item.name in SKIP_DIRS or item.name in VENDOR_DIRS and not vendored_too:
                    continue
                yield Entry(child_rel, "dir", False)
                yield from scan(Path(item.path), child_rel, vendored or item.name in VENDOR_DIRS)
            elif item.is_file(follow_symlinks=False):
                yield Entry(child_rel, "file", not vendored)
            else:
                warn(f"{child_rel}: not a regular file (device, socket or pipe); skipped")

    yield from scan(root, "", False)
