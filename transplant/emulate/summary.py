"""What a run sent to the NPU, said on stderr when it ends (``-q`` turns it off).

Three things: how many tensor and module moves went to the NPU (every torch call given an npu
device: ``.to``, ``.npu()``, factories' ``device=``, ``Module.to``/``.npu()``); the places in the
project's own code where the run first went to the NPU (file:line, the first few, in order: the
branches that took the NPU path); and the torch_npu names the project's own code used. It observes
through the device mode's hook (devices.py) or, where no device mode runs (plain emulate under device
identity: entries.py), the NPU kernels and ``Module.to``, and through the torch_npu modules' attribute
reads; it changes nothing the program sees.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
import types

import torch

from . import compiling, strict

NPU = "npu"
# "folder<pathsep>pid": where the processes the program starts (torchrun's and accelerate's ranks,
# spawned workers) leave their summaries for the process of `transplant emulate` (pid) to add up
CHILDREN_ENV = "TRANSPLANT_EMULATE_SUMMARIES"
SHOWN = 5  # places listed; the rest are counted


class Summary:
    def __init__(self):
        self.tensors = 0
        self.modules = 0
        self.places: dict[str, str] = {}  # "file:line" -> what went to the NPU there
        self.names: dict[str, None] = {}
        self._frames = strict.Checker()  # only its notion of the project's own code
        self._seen: set[tuple[str, int]] = set()

    def _place(self, what: str) -> None:
        frame = self._frames.caller()
        if frame is not None:
            seen = (frame.f_code.co_filename, frame.f_lineno)  # a place in a loop: its path is made once
            if seen in self._seen:
                return
            self._seen.add(seen)
            where = f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"
            self.places.setdefault(where, what)

    def torch_call(self, func, args, kwargs) -> None:
        """The device mode's hook: a call given an npu device is a move to the NPU; so is one given a
        device index (``.to(0)``, ``Module.to(0)``, ``device=0``), which means the NPU where torch_npu
        is loaded."""
        if not (_names_npu(args) or (kwargs and _names_npu(kwargs.values())) or _index_move(func, args, kwargs)):
            return
        if func is torch.device:  # naming a device moves nothing
            return
        if func is _PARSE_TO:  # Module.to(...) parses its arguments with it
            self.modules += 1
            self._place("module")
        else:
            self.tensors += 1
            self._place("tensor")

    def module_npu(self) -> None:
        self.modules += 1
        self._place("module")

    def used(self, qualified: str) -> None:
        if qualified not in self.names and self._frames.caller() is not None:
            self.names[qualified] = None

    def add(self, other: dict) -> None:
        """Another process's summary (``as_dict``) added to this one."""
        self.tensors += other["tensors"]
        self.modules += other["modules"]
        for where, what in other["places"].items():
            self.places.setdefault(where, what)
        self.names.update(dict.fromkeys(other["names"]))

    def as_dict(self) -> dict:
        return {"tensors": self.tensors, "modules": self.modules, "places": self.places, "names": list(self.names)}

    def lines(self, processes: int = 1) -> list[str]:
        among = f" (all {processes} processes)" if processes > 1 else ""
        out = [
            f"transplant emulate: summary: {self.tensors} tensor move{'s' * (self.tensors != 1)} and "
            f"{self.modules} module move{'s' * (self.modules != 1)} to the NPU{among}"
        ]
        if self.places:
            shown = [f"{where} ({what})" for where, what in list(self.places.items())[:SHOWN]]
            more = len(self.places) - SHOWN
            out.append(
                "transplant emulate:   NPU path first taken at "
                + ", ".join(shown)
                + (f" and {more} more places" if more > 0 else "")
            )
        if self.names:
            out.append(f"transplant emulate:   torch_npu names used ({len(self.names)}): " + ", ".join(self.names))
        count = compiling.skipped()
        if count:
            out.append(
                f"transplant emulate:   torch.compile ran eagerly ({count} call{'s' * (count != 1)}): "
                "compiled code is not emulated"
            )
        return out


def _names_npu(values) -> bool:
    """Whether one of the values is an npu device (or its name): a loop without calls, since every
    torch call of the program comes here."""
    for value in values:
        cls = value.__class__
        if cls is str:
            if value == NPU or value.startswith("npu:"):
                return True
        elif cls is torch.device and value.type == NPU:
            return True
    return False


def tensor_moved() -> None:
    """A tensor move seen by an NPU kernel (plain emulate under device identity, without the device
    mode: entries.py)."""
    summary = _state.get("summary")
    if summary is not None:
        summary.tensors += 1
        summary._place("tensor")


def module_moved() -> None:
    """A module move seen by ``Module.to`` (entries.py)."""
    summary = _state.get("summary")
    if summary is not None:
        summary.module_npu()


def moves_module(args: tuple, kwargs: dict) -> bool:
    """Whether ``Module.to(*args, **kwargs)`` moves the module to the NPU: an npu device or its name,
    or a device index (the NPU's where torch_npu is loaded)."""
    return (
        _names_npu(args)
        or bool(kwargs and _names_npu(kwargs.values()))
        or (bool(args) and _is_index(args[0]) and _npu_loaded())
        or (bool(kwargs) and _is_index(kwargs.get("device")) and _npu_loaded())
    )


def _is_index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _index_move(func, args, kwargs) -> bool:
    if kwargs and _is_index(kwargs.get("device")):
        return _npu_loaded()
    if func is _PARSE_TO:
        return bool(args) and _is_index(args[0]) and _npu_loaded()
    if func is _TENSOR_TO:
        return len(args) > 1 and _is_index(args[1]) and _npu_loaded()
    return False


def _npu_loaded() -> bool:
    """An index means the NPU once torch_npu is loaded (PrivateUse1 is then torch's accelerator)."""
    return "torch_npu" in sys.modules


_PARSE_TO = torch._C._nn._parse_to
_TENSOR_TO = torch.Tensor.to
_state: dict = {}


class _Recording(types.ModuleType):
    """A torch_npu module whose public names, read by the project's own code, are recorded."""

    def __getattribute__(self, name):
        value = super().__getattribute__(name)
        if not name.startswith("_") and not isinstance(value, types.ModuleType):
            summary = _state.get("summary")
            if summary is not None:
                summary.used(f"{super().__getattribute__('__name__')}.{name}")
        return value


def observer(check):
    """The device mode's hook: the summary's, then ``check`` (the strict checks) if any."""
    if "summary" not in _state:
        _state["summary"] = Summary()
        _leave_for_parent()
    summary = _state["summary"]
    if check is None:

        def moves(func, args, kwargs):
            summary.torch_call(func, args, kwargs)

        moves.devices_only = True  # the device mode's filter (devices.py)
        return moves

    def both(func, args, kwargs):
        summary.torch_call(func, args, kwargs)
        check(func, args, kwargs)

    return both


def install(modules: dict) -> None:
    """Record the names read from the emulated torch_npu modules (after runtime.activate built them)."""
    for name, module in modules.items():
        if name.startswith("torch_npu") and type(module) is types.ModuleType:
            module.__class__ = _Recording
    module_npu = torch.nn.Module.npu  # type: ignore[attr-defined]  # added by the emulator (npu_api.py)

    def counted_npu(self, *args, **kwargs):
        summary = _state.get("summary")
        if summary is not None:
            summary.module_npu()
        return module_npu(self, *args, **kwargs)

    counted_npu.__doc__, counted_npu.__name__ = module_npu.__doc__, module_npu.__name__
    torch.nn.Module.npu = counted_npu  # type: ignore[attr-defined]


def gather() -> None:
    """In the process of `transplant emulate`, before the program runs: the processes it starts will
    leave their summaries in a folder of this run (removed by ``report``)."""
    folder = tempfile.mkdtemp(prefix="transplant-emulate-summaries-")
    os.environ[CHILDREN_ENV] = f"{folder}{os.pathsep}{os.getpid()}"


def _leave_for_parent() -> None:
    """In a process the program started: its summary goes to the folder when it exits."""
    folder, _, pid = os.environ.get(CHILDREN_ENV, "").rpartition(os.pathsep)
    if not folder or pid == str(os.getpid()):
        return

    def leave() -> None:
        summary = _state.get("summary")
        if summary is not None and os.path.isdir(folder):
            path = os.path.join(folder, f"{os.getpid()}.json")
            with open(path + ".part", "w", encoding="utf-8") as out:
                json.dump(summary.as_dict(), out)
            os.replace(path + ".part", path)

    atexit.register(leave)


def _children() -> list[dict]:
    folder, _, pid = os.environ.get(CHILDREN_ENV, "").rpartition(os.pathsep)
    if not folder or pid != str(os.getpid()) or not os.path.isdir(folder):
        return []
    found = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    found.append(json.load(f))
            except (OSError, ValueError):
                continue
    return found


def report(show: bool = True) -> None:
    """The summary of this process and of the processes the program started (a launcher's ranks):
    their moves added up, so that a launcher's own zeros are not what the user reads."""
    summary = _state.get("summary")
    children = _children()
    folder = os.environ.get(CHILDREN_ENV, "").rpartition(os.pathsep)[0]
    if folder and os.environ.get(CHILDREN_ENV, "").endswith(f"{os.pathsep}{os.getpid()}"):
        shutil.rmtree(folder, ignore_errors=True)
    if summary is None or not show:
        return
    for child in children:
        summary.add(child)
    print("\n".join(summary.lines(1 + len(children))), file=sys.stderr, flush=True)
