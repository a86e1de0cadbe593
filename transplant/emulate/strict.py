"""--strict: every CUDA use left in the project's own files is an error naming the file and line.

A use is: reading anything from ``torch.cuda`` and its submodules (``torch.cuda.is_available()``
included, which would otherwise send the script down its CPU path quietly), ``.cuda()`` on a tensor
or module, ``.is_cuda``, a "cuda" device (string or torch.device) given to any torch function,
``torch.autocast("cuda")``, a GradScaler for "cuda" (torch.amp.GradScaler's default), and the
nccl backend. It counts only when the code that does it directly is the project's: torch's own
files, the standard library, site-packages and the emulator itself may use CUDA as they like
(torch asks ``torch.cuda.is_available()`` itself in many places). Each use is recorded and raised
as EmulationError; cli.py reports the recorded uses even when the script catches the error.

This module only detects; devices.py translates npu devices.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
import types
from typing import Any

import torch
import torch.distributed as dist

from . import EmulationError

_CUDA_DEVICE = re.compile(r"cuda(?::\d+)?\Z")
_HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")  # transplant/
# the emulator's modules that only pass a call on (the checks, the summary, the device mode, the
# wrappers that translate npu arguments, and the NPU kernels, which count the summary's moves where
# no device mode runs): the code behind them made the call; any other module of the emulator making
# a call is the emulator's own doing (torch_npu.npu's functions on a CUDA backing). The kernels'
# own tensor calls are no program's: they run with torch functions disabled (no check sees them)
_PASS_ON = tuple(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    for name in ("strict.py", "summary.py", "devices.py", "identity.py", "entries.py")
)
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))
_OVERRIDES = os.path.join(_TORCH, "overrides.py")


class Checker:
    """Decides whether a use comes from the project's own code, and records it."""

    def __init__(self):
        self.uses: list[str] = []
        self._own: dict[str, bool] = {}
        paths = sysconfig.get_paths()
        self._not_own = tuple(
            os.path.join(os.path.abspath(p), "")
            for p in {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths} | {_TORCH}
        ) + (_HERE,)

    def _is_own(self, filename: str) -> bool:
        own = self._own.get(filename)
        if own is None:
            path = os.path.abspath(filename)
            parts = path.split(os.sep)
            own = not (
                filename.startswith("<")
                or "site-packages" in parts
                or "dist-packages" in parts
                or path.startswith(self._not_own)
            )
            self._own[filename] = own
        return own

    def caller(self) -> types.FrameType | None:
        """The frame that made the current call, past the emulator's checks and wrappers and torch's
        dispatch, when the project's own code made it; else None."""
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if not (filename in _PASS_ON or filename.startswith("<frozen") or filename == _OVERRIDES):
                break
            frame = frame.f_back
        return frame if frame is not None and self._is_own(frame.f_code.co_filename) else None

    def use(self, what: str, frame: types.FrameType | None = None) -> None:
        """Record and raise ``what`` if the project's own code is doing it: the frame the use was
        made in when given (a name read from torch.cuda), else the caller() past the emulator."""
        frame = self.caller() if frame is None else frame if self._is_own(frame.f_code.co_filename) else None
        if frame is None:
            return
        where = f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"
        message = f"{where}: {what} (CUDA use; --strict)"
        self.uses.append(message)
        raise EmulationError(message)

    # ------------------------------------------------------------------ the torch function mode hook

    def torch_call(self, func, args, kwargs) -> None:
        """Called by the device mode for every torch function and tensor method call."""
        if func is torch.device and _state.get("migrated"):
            return  # a value only: under the runtime migration it is a use where an API gets it unwrapped
        if func is _TENSOR_CUDA:
            self.use(".cuda()")
        elif getattr(func, "__self__", None) is _IS_CUDA:
            self.use(".is_cuda")
        for value in (*args, *kwargs.values()):
            if (
                isinstance(value, str)
                and _CUDA_DEVICE.match(value)
                or isinstance(value, torch.device)
                and value.type == "cuda"
            ):
                self.use(f"device {str(value)!r} in {getattr(func, '__name__', func)}()")


_TENSOR_CUDA = torch.Tensor.cuda
_IS_CUDA = torch.Tensor.__dict__.get("is_cuda") or torch._C.TensorBase.__dict__["is_cuda"]


class _CudaModule(types.ModuleType):
    """The class given to torch.cuda and its submodules: reading a name is a use when the code that
    reads it is the project's. The emulator reads torch.cuda itself where a GPU backs the NPUs (the
    number of GPUs, the device of an NPU id, torch_npu.npu's functions): the line of the project's
    that led there did not read it."""

    def __getattribute__(self, name):
        if not name.startswith("__") and _checker is not None:
            _checker.use(f"{types.ModuleType.__getattribute__(self, '__name__')}.{name}", sys._getframe(1))
        return types.ModuleType.__getattribute__(self, name)


_checker: Checker | None = None
_state: dict[str, bool] = {}


def install(checker: Checker) -> None:
    """Watch torch.cuda, Module.cuda, autocast, GradScaler and the process group for ``checker``."""
    global _checker
    _checker = checker
    for name, module in list(sys.modules.items()):
        if (name == "torch.cuda" or name.startswith("torch.cuda.")) and type(module) is types.ModuleType:
            module.__class__ = _CudaModule

    module_cuda = torch.nn.Module.cuda

    @functools.wraps(module_cuda)
    def cuda(self, device=None):
        checker.use(".cuda()")
        return module_cuda(self, device)

    torch.nn.Module.cuda = cuda  # type: ignore[method-assign]  # (the emulator replaces torch's own: here and below)
    base_autocast: Any = torch.amp.autocast_mode.autocast

    class autocast(base_autocast):  # noqa: N801 - torch's name
        def __init__(self, device_type, *args, **kwargs):
            if device_type == "cuda":
                checker.use('autocast("cuda")')
            super().__init__(device_type, *args, **kwargs)

    base_scaler: Any = torch.amp.grad_scaler.GradScaler

    class GradScaler(base_scaler):
        def __init__(self, device="cuda", *args, **kwargs):
            if device == "cuda" and not _state.get("migrated"):
                checker.use('GradScaler for "cuda" (torch.amp.GradScaler\'s default device)')
            super().__init__(device, *args, **kwargs)

    for made, base in ((autocast, base_autocast), (GradScaler, base_scaler)):
        made.__module__, made.__qualname__, made.__doc__ = base.__module__, base.__qualname__, base.__doc__
    torch.autocast = torch.amp.autocast = torch.amp.autocast_mode.autocast = autocast  # type: ignore[misc]
    torch.amp.GradScaler = torch.amp.grad_scaler.GradScaler = GradScaler  # type: ignore[misc]
    if dist.is_available():
        for name in ("init_process_group", "new_group"):
            setattr(dist, name, _no_nccl(checker, getattr(dist, name), 0 if name == "init_process_group" else 2))


def migrated() -> None:
    """Under torch_npu's runtime migration (transfer.py) torch.cuda is torch_npu.npu: reading it is
    no CUDA use, nor is a GradScaler for "cuda" (its availability check reads torch.cuda.amp, which
    is torch_npu's then). What the migration does not wrap (torch.amp.autocast("cuda"), which casts
    nothing on an NPU, a "cuda" string given to another API) still is one."""
    _state["migrated"] = True
    for name, module in list(sys.modules.items()):
        if (name == "torch.cuda" or name.startswith("torch.cuda.")) and type(module) is _CudaModule:
            module.__class__ = types.ModuleType  # type: ignore[assignment]  # back to a plain module


def _no_nccl(checker: Checker, function, position: int):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        backend = kwargs.get("backend", args[position] if len(args) > position else None)
        if isinstance(backend, str) and "nccl" in backend.lower():
            checker.use(f"the {backend!r} backend")
        return function(*args, **kwargs)

    return wrapper
