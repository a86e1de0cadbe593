"""What an NPU says about itself: ``get_device_properties``, ``get_device_name`` and ``mem_get_info``
of the emulated ``torch_npu.npu`` (and so of ``torch.npu``), with torch_npu's fields, types and checks.

The source: Ascend/pytorch commit 9e73e708ab93 (torch_npu for PyTorch 2.13), ``torch_npu/csrc/npu/
Module.cpp`` (``NPUDeviceProp``, ``RegisterNPUDeviceProperties``, ``initDeviceProperty``) and
``torch_npu/npu/__init__.py`` (the Python functions, their ``_get_device_index`` from
``torch_npu/npu/utils.py``). There ``get_device_properties`` gives a ``_NPUDeviceProperties`` whose
read-only fields are ``name`` (str), ``total_memory``, ``cube_core_num``, ``vector_core_num``,
``L2_cache_size`` (ints), ``multi_processor_count`` (the vector core count, an int), ``uuid`` (a
``_CUuuid``) and the CUDA names ``major``, ``minor``, ``is_multi_gpu_board``, ``is_integrated``,
``max_threads_per_multi_processor``, ``warp_size``, ``regs_per_multiprocessor`` and ``gcnArchName``,
which torch_npu never fills: they are None, so ``props.major >= 8`` fails on an NPU as it does here.
Any other CUDA field (``shared_memory_per_block``, ``clock_rate``, ...) is not there: reading it is
an AttributeError, which the emulator words (with the file and line) and reports as its error.

The values are the backing's: on the CPU the host's memory, its processors as cores and its L2
cache; on a GPU the GPU's memory, multiprocessors and L2 cache. No torch_npu namespace is built here
(npu_api.py does).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import torch

from . import EmulationError, npus

# the fields of torch_npu's _NPUDeviceProperties, in its order; those it never fills are None
FIELDS = (
    "name",
    "total_memory",
    "cube_core_num",
    "vector_core_num",
    "L2_cache_size",
    "major",
    "minor",
    "is_multi_gpu_board",
    "is_integrated",
    "multi_processor_count",
    "max_threads_per_multi_processor",
    "warp_size",
    "regs_per_multiprocessor",
    "gcnArchName",
    "uuid",
)
UNFILLED = (
    "major",
    "minor",
    "is_multi_gpu_board",
    "is_integrated",
    "max_threads_per_multi_processor",
    "warp_size",
    "regs_per_multiprocessor",
    "gcnArchName",
)
_MB = 1024 * 1024


class MissingProperty(EmulationError, AttributeError):
    """A field torch_npu's device properties do not have: an AttributeError (``hasattr`` and
    ``getattr(props, name, default)`` answer as on an NPU) that the emulator reports as its error."""


class _CUuuid:
    """torch_npu's ``_CUuuid``: 16 bytes, zeros where the runtime gives none."""

    __slots__ = ("_bytes",)

    def __init__(self, data: bytes = bytes(16)):
        self._bytes = bytes(data)

    @property
    def bytes(self) -> list[int]:
        return list(self._bytes)

    def __str__(self) -> str:
        h = self._bytes.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _NPUDeviceProperties:
    """torch_npu's ``_NPUDeviceProperties``: read-only fields, torch_npu's repr."""

    __slots__ = ("_values",)

    def __init__(self, **values: Any):
        object.__setattr__(self, "_values", {field: values.get(field) for field in FIELDS})

    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        caller = sys._getframe(1)
        raise MissingProperty(
            f"{caller.f_code.co_filename}:{caller.f_lineno}: an NPU's device properties have no "
            f"{attribute!r} (a CUDA field; torch_npu's _NPUDeviceProperties has {', '.join(FIELDS)}; "
            f"{', '.join(UNFILLED)} are None)"
        )

    def __setattr__(self, attribute: str, value) -> None:
        raise AttributeError(f"property {attribute!r} of '_NPUDeviceProperties' object has no setter")

    def __repr__(self) -> str:
        v = self._values
        return (
            f"_NPUDeviceProperties(name='{v['name']}', total_memory={v['total_memory'] // _MB}MB, "
            f"cube_core_num={v['cube_core_num']}, vector_core_num={v['vector_core_num']}, uuid={v['uuid']}, "
            f"L2_cache_size={v['L2_cache_size'] // _MB}MB)"
        )


def _reader(field: str) -> property:
    return property(lambda self: self._values[field], doc=f"torch_npu's {field}")


for _field in FIELDS:
    setattr(_NPUDeviceProperties, _field, _reader(_field))
_NPUDeviceProperties.__module__ = "torch_npu._C"


def _host_values() -> dict:
    cores = os.cpu_count() or 1
    try:
        l2 = max(os.sysconf("SC_LEVEL2_CACHE_SIZE"), 0)
    except (ValueError, OSError):
        l2 = 0
    return dict(
        total_memory=os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"),
        cube_core_num=cores,
        vector_core_num=cores,
        L2_cache_size=l2,
    )


def _gpu_values(gpu) -> dict:
    found = torch.cuda.get_device_properties(gpu)
    return dict(
        total_memory=int(found.total_memory),
        cube_core_num=int(found.multi_processor_count),
        vector_core_num=int(found.multi_processor_count),
        L2_cache_size=int(getattr(found, "L2_cache_size", 0)),
    )


def device_index(device, count: Callable[[], int], checked: bool) -> int:
    """torch_npu's reading of a device argument (``_get_device_index(device, optional=True)`` and the
    range check of its callers): an int as it is, a string or torch.device of type npu (another type
    is a ValueError), None or "npu" the selected NPU; out of range an AssertionError. Without device
    identity (``checked`` False) one device stands for all, so no index is out of range."""
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"Expected a npu device, but got: {device}")
        device = device.index
    index = npus.current() if device is None else int(device)
    if checked and not 0 <= index < count():
        raise AssertionError("Invalid device id")
    return index


def build(kind: str, count: Callable[[], int], checked: bool, gpu: Callable[[int], torch.device]) -> dict:
    """The three functions for a backing of ``kind`` ("cpu" or "cuda"); ``gpu`` gives the GPU of an NPU."""
    made: dict[int, _NPUDeviceProperties] = {}

    def get_device_name(device_name=None) -> str:
        index = device_index(device_name, count, checked)
        return torch.cuda.get_device_name(gpu(index)) if kind == "cuda" else "emulated NPU (cpu)"

    def get_device_properties(device_name=None) -> _NPUDeviceProperties:
        index = device_index(device_name, count, checked)
        if index not in made:  # torch_npu reads them once per device
            values = _gpu_values(gpu(index)) if kind == "cuda" else _host_values()
            made[index] = _NPUDeviceProperties(
                name=get_device_name(index),
                multi_processor_count=values["vector_core_num"],
                uuid=_CUuuid(),
                **values,
            )
        return made[index]

    def mem_get_info(device=None) -> tuple[int, int]:
        index = device_index(device, count, checked)
        if kind == "cuda":
            free, total = torch.cuda.mem_get_info(gpu(index))
            return int(free), int(total)
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page

    return dict(get_device_name=get_device_name, get_device_properties=get_device_properties, mem_get_info=mem_get_info)
