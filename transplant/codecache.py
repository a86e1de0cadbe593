"""A faster start: the methods that ``dataclasses`` writes, compiled once and kept between runs.

libcst's syntax tree is some 300 frozen dataclasses, and the engine adds its own. For each class,
the dataclasses module writes the source text of ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__``, ... and compiles it with ``exec()``: more than half of the time
``import libcst`` takes (bench/coldstart.py shows it). The texts are the same at every start for
the same libcst and Python, so while the engine is imported, :func:`compiled_dataclasses` hands
``exec()`` the code object compiled from a text the previous time instead of the text.

Why this is exact: an entry is found by the whole source text, and ``exec()`` of the code compiled
from a text (with no ``__future__`` flags, as dataclasses' own module has none) does what ``exec()``
of the text does. The file is written for one interpreter build (``sys.version``); any other file
is ignored. A missing, unreadable, corrupt or unwritable cache costs only the time it would have
saved; nothing else reads it.

Where: ``$TRANSPLANT_CACHE_DIR``, else ``$XDG_CACHE_HOME/transplant``, else ``~/.cache/transplant``.
``TRANSPLANT_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from types import CodeType
from typing import Any, Iterator

FILE_PREFIX = "dataclass-code-"
STALE_ALLOWANCE = 500  # entries beyond twice a run's own before the file is cut back to that run's
_builtin_exec = exec


def cache_dir() -> str | None:
    """The folder of the cache, or None when it is turned off or no place is known."""
    if os.environ.get("TRANSPLANT_NO_CACHE"):
        return None
    explicit = os.environ.get("TRANSPLANT_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, or relative, which the XDG specification says to ignore
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "transplant") if os.path.isabs(base) else None


def cache_file(folder: str) -> str:
    return os.path.join(folder, f"{FILE_PREFIX}{sys.implementation.cache_tag}.marshal")


def _read(path: str) -> dict[str, Any]:
    import marshal

    try:
        with open(path, "rb") as fh:
            version, table = marshal.loads(fh.read())  # (marshal.load reads a file piece by piece)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    return table if version == sys.version and isinstance(table, dict) else {}


def _write(path: str, table: dict[str, Any]) -> None:
    """Replace the cache file in one step (a concurrent run reads the old file or the new one)."""
    import marshal
    import tempfile

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as fh:
                marshal.dump((sys.version, table), fh)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass  # a read-only home, a full disk: the next start compiles again


@contextmanager
def compiled_dataclasses() -> Iterator[None]:
    """Within this block, dataclasses' ``exec()`` of a text runs the code cached for that text
    (compiling and keeping it when it is new); at the end, new entries are saved."""
    folder = cache_dir()
    if folder is None:
        yield
        return
    import dataclasses

    if "exec" in vars(dataclasses):  # someone else's hook (or a nested block): leave it alone
        yield
        return
    path = cache_file(folder)
    table = _read(path)
    known = len(table)
    used: set[str] = set()

    def cached_exec(source: Any, globals_: Any = None, locals_: Any = None, /, **kwargs: Any) -> Any:
        if globals_ is None:  # as exec() called in dataclasses' own frame would take them
            globals_ = vars(dataclasses)
        if type(source) is not str or kwargs:
            return _builtin_exec(source, globals_, locals_, **kwargs)
        code = table.get(source)
        if type(code) is not CodeType:
            code = table[source] = compile(source, "<string>", "exec", dont_inherit=True)
        used.add(source)
        return _builtin_exec(code, globals_, locals_)

    dataclasses.exec = cached_exec  # type: ignore[attr-defined]  # a module global shadows the builtin dataclasses calls
    try:
        yield
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
    if len(table) > known:
        # texts of other runs (the language server's, a file mode's) stay; when most are no longer
        # made by anything (after upgrades of libcst), only this run's are kept
        _write(path, table if len(table) <= 2 * len(used) + STALE_ALLOWANCE else {t: table[t] for t in used})
