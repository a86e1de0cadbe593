"""Plain emulate under device identity runs no TorchFunctionMode: what the device mode did on every
torch call is done where it is needed instead.

Why: a ``TorchFunctionMode`` costs every torch call of the program a pass through Python, even one
whose ``__torch_function__`` only calls on, and a program made of many tiny operators is made of such
calls (``bench/emulate_cost.py --kinds bigram``). Under device identity NPU tensors are real tensors
of the PrivateUse1 device, so almost nothing needs translating; the device mode's jobs (devices.py's
``NpuDeviceMode``), and where each is done without it:

* **The summary's tensor moves**: the NPU kernels (identity.py) count each operator given an NPU
  device (``.to("npu")``, ``.npu()``, ``.to(0)``, a factory's ``device=``); module moves are counted by
  ``Module.to`` (here) and ``Module.npu`` (summary.py).
* **"npu" without an index is the selected NPU**: the kernels read a device argument so
  (npus.index_of); where PyTorch asks its device guard for the index instead (the Python backend's
  guard always answers 0), the entry points are wrapped here: ``Tensor.to`` (so ``Module.to``),
  ``torch.tensor``, ``torch.as_tensor``, ``torch.asarray``.
* **Generators of the wrong device**: an NPU operator given a host generator is refused by its kernel
  (identity.py); a host operator given an NPU generator by the random draws' wrappers, put in place
  when the program makes its first NPU generator (generators.py).
* **Page-locked memory on the CPU backing** (there are no copies to a device to speed up):
  ``Tensor.pin_memory`` gives the tensor back, ``Tensor.is_pinned`` answers False, and a factory's
  ``pin_memory=True`` is False (the Python backend has no pinned-memory allocator: PyTorch would raise).

``--strict`` (its checks see every call) and ``--no-device-identity`` (every device argument is
translated) keep the device mode. A wrapped torch function stays a TorchScript builtin of its operator
(compiling.builtin), so scripted code that calls it compiles as before.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from . import compiling, npus

NPU = "npu"
# the torch functions that ask the device guard which NPU "npu" is (the others leave the index to
# the kernels, which read it as the selected NPU)
_GUARDED = ("tensor", "as_tensor", "asarray")


def needed(identity: bool, strict: bool) -> bool:
    """Whether a process needs the device mode (devices.enter_mode): with --strict or without device
    identity; plain emulate under device identity does without it (this module)."""
    return strict or not identity


def install(backing: Any) -> None:
    """On ``import torch_npu`` under device identity without the device mode (devices.install)."""
    from . import identity, summary

    identity.count_moves(summary.tensor_moved)
    import torch.utils._device as device_context

    # the factories a device context (`with torch.device(...)`, set_default_device) gives its device:
    # cached before they are wrapped, so the context's mode finds them when a wrapper calls them
    device_context._device_constructors()
    _tensor_to()
    _module_to(summary)
    pinning = backing.kind == "cpu"
    if pinning:
        _no_pinning()
    for name in sorted({*_GUARDED, *(_pinning_factories() if pinning else ())}):
        function = getattr(torch, name, None)
        if function is not None:
            setattr(torch, name, _factory(function, name, name in _GUARDED, pinning))


def _tensor_to() -> None:
    base = torch.Tensor.to

    @functools.wraps(base)
    def to(self, *args, **kwargs):
        if npus.current():  # "npu" is npu:0 to PyTorch's guard: right only while NPU 0 is selected
            args, kwargs = npus.name_selected(args, kwargs, True)
        return base(self, *args, **kwargs)

    torch.Tensor.to = to  # type: ignore[method-assign]  # the emulator's, as torch_npu's own patches are


def _module_to(summary: Any) -> None:
    base = torch.nn.Module.to

    @functools.wraps(base)
    def to(self, *args, **kwargs):
        if summary.moves_module(args, kwargs):
            summary.module_moved()
        return base(self, *args, **kwargs)

    torch.nn.Module.to = to  # type: ignore[method-assign]


def _no_pinning() -> None:
    def pin_memory(self, device=None):
        return self

    def is_pinned(self, device=None) -> bool:
        return False

    for name, function in (("pin_memory", pin_memory), ("is_pinned", is_pinned)):
        base = getattr(torch.Tensor, name)
        function.__name__, function.__qualname__, function.__doc__ = base.__name__, base.__qualname__, base.__doc__
        setattr(torch.Tensor, name, function)


def _pinning_factories() -> set[str]:
    """The torch functions whose operator takes ``pin_memory`` (torch.tensor's binding takes it too)."""
    names = {"tensor"}
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::") and any(a.name == "pin_memory" for a in schema.arguments):
            name = schema.name[len("aten::") :]
            if not name.startswith("_") and callable(getattr(torch, name, None)):
                names.add(name)
    return names


def _factory(base: Callable, name: str, guarded: bool, pinning: bool) -> Callable:
    @functools.wraps(base)
    def factory(*args, **kwargs):
        if kwargs:
            if pinning and kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
            if guarded and npus.current():
                args, kwargs = npus.name_selected(args, kwargs, False)
        return base(*args, **kwargs)

    compiling.builtin(base, factory, name)
    return factory
