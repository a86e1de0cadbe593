"""What a run sent to the NPU, said on stderr when it ends (``-q`` turns it off).

Three things: how many tensor and module moves went to the NPU (every torch call given an npu
device: ``.to``, ``.npu()``, factories' ``device=``, ``Module.to``/``.npu()``); the places in the
project's own code where the run first went to the NPU (file:line, the first few, in order: the
branches that took the NPU path); and the torch_npu names the project's own code used. It observes
through the device mode's hook (devices.py) and the torch_npu modules' attribute reads; it changes
nothing the program sees.
"""

from __future__ import annotations

import os
import sys
import types

import torch

from . import compiling, strict

NPU = "npu"
SHOWN = 5  # places listed; the rest are counted


class Summary:
    def __init__(self):
        self.tensors = 0
        self.modules = 0
        self.places: dict[str, str] = {}  # "file:line" -> what went to the NPU there
        self.names: dict[str, None] = {}
        self._frames = strict.Checker()  # only its notion of the project's own code

    def _place(self, what: str) -> None:
        frame = self._frames.caller()
        if frame is not None:
            where = f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"
            self.places.setdefault(where, what)

    def torch_call(self, func, args, kwargs) -> None:
        """The device mode's hook: a call given an npu device is a move to the NPU."""
        if not (any(_is_npu(a) for a in args) or any(_is_npu(v) for v in kwargs.values())):
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

    def lines(self) -> list[str]:
        out = [
            f"transplant emulate: summary: {self.tensors} tensor move{'s' * (self.tensors != 1)} and "
            f"{self.modules} module move{'s' * (self.modules != 1)} to the NPU"
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


def _is_npu(value) -> bool:
    if isinstance(value, str):
        return value == NPU or value.startswith("npu:")
    return isinstance(value, torch.device) and value.type == NPU


_PARSE_TO = torch._C._nn._parse_to
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
    summary = _state.setdefault("summary", Summary())
    if check is None:
        return summary.torch_call

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


def report() -> None:
    summary = _state.get("summary")
    if summary is not None:
        print("\n".join(summary.lines()), file=sys.stderr, flush=True)
