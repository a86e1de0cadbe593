"""Golden files: compare what a test produced with the file kept under tests/fixtures, or, with the
regenerate switch on, write it there.

The switch: ``python -m pytest --update-goldens`` (conftest.py) or ``TRANSPLANT_UPDATE_GOLDENS=1``.
Run it only after a change meant to alter the goldens, then read ``git diff`` of tests/fixtures and
say in the commit why they changed. A test that regenerates a golden still runs its other asserts.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def from_environment(environ=os.environ) -> bool:
    return environ.get("TRANSPLANT_UPDATE_GOLDENS", "") not in ("", "0")


_switch = {"on": from_environment()}
HINT = "(if the change is meant: regenerate with pytest --update-goldens, then review git diff)"


def set_updating(on: bool) -> None:
    _switch["on"] = _switch["on"] or on


def updating() -> bool:
    return _switch["on"]


def check_bytes(golden: Path, got: bytes) -> None:
    """``got`` is the golden file's content (or becomes it, with the switch on)."""
    if updating():
        if not golden.is_file() or golden.read_bytes() != got:
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_bytes(got)
        return
    assert golden.is_file(), f"no golden file {golden} {HINT}"
    want = golden.read_bytes()
    if got != want:  # text goldens get pytest's line diff
        try:
            assert got.decode("utf-8") == want.decode("utf-8"), f"{golden} differs {HINT}"
        except UnicodeDecodeError:
            pass
        assert got == want, f"{golden} differs {HINT}"


def check_text(golden: Path, got: str) -> None:
    check_bytes(golden, got.encode("utf-8"))


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def check_tree(golden: Path, got: Path, *, ignore: set[str] = frozenset()) -> None:
    """Every file below ``got`` (but those named in ``ignore``) is the file of the same name below
    ``golden``, and there are no others; with the switch on, ``golden`` is made so."""
    names = files(got) - set(ignore)
    if updating():
        for stale in files(golden) - set(ignore) - names:
            (golden / stale).unlink()
        for name in sorted(names):
            check_bytes(golden / name, (got / name).read_bytes())
            shutil.copymode(got / name, golden / name)
        return
    assert names == files(golden) - set(ignore), f"the files below {golden} differ {HINT}"
    for name in sorted(names):
        check_bytes(golden / name, (got / name).read_bytes())
