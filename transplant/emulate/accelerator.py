"""``torch.accelerator`` in an emulated process, answered as on an NPU host with torch_npu loaded.

There torch's device-generic API reports the NPU: available, ``current_accelerator()`` is
``device(type='npu')``, the count and current index are torch_npu's, and synchronize, streams and
memory statistics go to ``torch.npu``. Here each of them goes to the emulated ``torch_npu.npu``
(npu_api.py), so a program that asks ``torch.accelerator`` for its device gets the emulated NPU, and
what it does there is translated to the backing device as any npu device is (devices.py).

torch's own C++ side keeps seeing the backing device (``torch._C._get_accelerator``), for the
process group's default backend and barrier, which must pick the backing's collectives.
"""

from __future__ import annotations

import functools

import types
from typing import Any

import torch


def install(npu: types.ModuleType) -> None:
    """Answer ``torch.accelerator`` (and its ``memory`` module) from the emulated ``torch_npu.npu``;
    after "npu" is a device name (devices.install)."""
    accelerator = torch.accelerator
    npu_device = torch.device("npu")

    def index(device=None) -> int:
        """A device argument as torch.accelerator takes it (int, "npu:1", torch.device), as an NPU index."""
        if device is None:
            return npu.current_device()
        if isinstance(device, int):
            return device
        device = torch.device(device)
        if device.type != "npu":
            raise ValueError(f"{device.type} doesn't match the current accelerator {npu_device}.")
        return npu.current_device() if device.index is None else device.index

    class device_index:  # noqa: N801 - torch's name
        """Select NPU ``idx`` (None: leave it) for the ``with`` block, as torch.accelerator.device_index."""

        def __init__(self, device, /):
            self.idx, self.previous = device, None

        def __enter__(self):
            if self.idx is not None:
                self.previous = npu.current_device()
                npu.set_device(self.idx)
            return self

        def __exit__(self, *exc):
            if self.previous is not None:
                npu.set_device(self.previous)
            return False

    def set_device_index(device, /):
        npu.set_device(index(device))

    def current_device_index():
        return npu.current_device()

    def memory_stats(device_index=None, /):
        return npu.memory_stats(index(device_index))

    api: dict[str, Any] = dict(
        current_accelerator=lambda check_available=False: npu_device,
        is_available=lambda: npu.is_available(),
        device_count=lambda: npu.device_count(),
        current_device_index=current_device_index,
        current_device_idx=current_device_index,
        set_device_index=set_device_index,
        set_device_idx=set_device_index,
        device_index=device_index,
        current_stream=lambda device=None, /: npu.current_stream(index(device)),
        set_stream=lambda stream: npu.set_stream(stream),
        synchronize=lambda device=None, /: npu.synchronize(index(device)),
        get_device_capability=lambda device=None, /: {},
    )
    memory: dict[str, Any] = dict(
        empty_cache=lambda: npu.empty_cache(),
        empty_host_cache=lambda: None,
        memory_stats=memory_stats,
        memory_allocated=lambda device_index=None, /: npu.memory_allocated(index(device_index)),
        max_memory_allocated=lambda device_index=None, /: npu.max_memory_allocated(index(device_index)),
        memory_reserved=lambda device_index=None, /: npu.memory_reserved(index(device_index)),
        max_memory_reserved=lambda device_index=None, /: npu.max_memory_reserved(index(device_index)),
        reset_accumulated_memory_stats=lambda device_index=None, /: npu.reset_accumulated_memory_stats(
            index(device_index)
        ),
        reset_peak_memory_stats=lambda device_index=None, /: npu.reset_peak_memory_stats(index(device_index)),
        get_memory_info=lambda device_index=None, /: npu.mem_get_info(index(device_index)),
    )
    for name, function in {**api, **memory}.items():
        if callable(function) and getattr(function, "__name__", "") == "<lambda>":
            function.__name__ = function.__qualname__ = name
        setattr(accelerator, name, function)
    for name, function in memory.items():
        setattr(accelerator.memory, name, function)
    base_get_device_module = torch.get_device_module

    # functools.wraps gives it __wrapped__, which torch.compile's tracer reads from torch's own
    @functools.wraps(base_get_device_module)
    def get_device_module(device=None):
        """torch.get_device_module(): with no device, the accelerator's module (torch.npu), as on an NPU host."""
        return npu if device is None else base_get_device_module(device)

    torch.get_device_module = get_device_module  # type: ignore[assignment]  # the emulator replaces torch's own
