"""The workbook written by a child process that imported openpyxl while the run converted.

openpyxl's import (about 0.1 s of CPU and 250 modules, numpy left out) is most of the fixed cost
of a small repository run, and a thread cannot overlap it with the conversion (both need the
GIL). So a repository run forks, at its start, a child that imports openpyxl and then waits; the run converts meanwhile, on another core where the machine has one,
and at the end hands the child its sheets through a pipe (pickled, length first). The child
writes the file with xlsx.write_workbook, the same code a run without a child calls, and exits 0
once it is written. Where there is no child (no ``fork`` on this system, it could not start, it
died) or it fails, the run writes the workbook itself, so the file is the same either way.

The child ignores SIGINT (an interrupted run closes the pipe: the child sees the end of it and
leaves), never runs the parent's exit handlers and writes nothing to the terminal.
"""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .xlsx import Sheet

_LENGTH = struct.Struct("<Q")
_child: tuple[int, int] | None = None  # (its process id, the write end of its pipe)


def start() -> None:
    """Fork the child (once; nothing where ``os.fork`` is missing or fails)."""
    global _child
    if _child is not None or not hasattr(os, "fork"):
        return
    try:
        read, write = os.pipe()
    except OSError:
        return
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return
    if pid == 0:  # the child
        os.close(write)
        _serve(read)
    os.close(read)
    _child = (pid, write)


def running() -> bool:
    return _child is not None


def write(path: Path, sheets: list[Sheet]) -> bool:
    """Have the child write ``sheets`` to ``path``; True once it did, False where there is no child
    or it failed (the caller writes the file then)."""
    global _child
    if _child is None:
        return False
    pid, fd = _child
    _child = None
    data = pickle.dumps((path, sheets), protocol=pickle.HIGHEST_PROTOCOL)
    try:
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(_LENGTH.pack(len(data)) + data)
    except OSError:
        pass  # the child is gone: its status says so
    return _reap(pid) == 0


def stop() -> None:
    """End a child that was not given a workbook (the run failed or was interrupted)."""
    global _child
    if _child is None:
        return
    pid, fd = _child
    _child = None
    try:
        os.close(fd)  # the end of the pipe: the child leaves
    except OSError:
        pass
    _reap(pid)


def in_worker() -> None:
    """In a worker process forked from the run (pool.py): close the inherited write end of the
    child's pipe. Only the run writes to it; a worker that kept it open would keep the child
    waiting after the run itself ended (killed, it never closes its end) until the worker ends too."""
    global _child
    if _child is None:
        return
    _pid, fd = _child
    _child = None  # (the worker never writes a workbook nor reaps a process it did not start)
    try:
        os.close(fd)
    except OSError:
        pass


def _reap(pid: int) -> int:
    while True:
        try:
            _pid, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return -1
        return os.waitstatus_to_exitcode(status)


def _serve(read: int) -> None:
    """The child: import openpyxl, wait for the sheets, write them. Never returns."""
    status = 1
    try:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        from . import xlsx

        xlsx.load_openpyxl()
        head = _read(read, _LENGTH.size)
        if len(head) == _LENGTH.size:
            (size,) = _LENGTH.unpack(head)
            data = _read(read, size)
            if len(data) == size:
                path, sheets = pickle.loads(data)
                xlsx.write_workbook(path, sheets)
                status = 0
    except BaseException:  # noqa: BLE001 (the parent writes the file itself)
        status = 1
    finally:
        os._exit(status)


def _read(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
