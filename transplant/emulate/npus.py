"""The emulated NPUs under device identity: how many there are, which one is selected, and blank NPU
tensors on each (``npu:i``) for identity.py to give data to.

How many: TRANSPLANT_EMULATE_NPUS (default 8, one Atlas 800 node), or as many as
ASCEND_RT_VISIBLE_DEVICES lists when it is set, as torch_npu counts them; an index outside them is
the error a device gives. The selected NPU is the process's (torch_npu.npu.set_device), and a device
without an index ("npu") means it, as on a device.

How an NPU tensor gets index i: PyTorch's Python backend makes tensors on index 0 only
(``torch._C._acc.create_empty_tensor``), and ``set_`` refuses a storage of another device. So the
first tensor on npu:i is made once from a DLPack capsule of an empty tensor on DLPack's "extension
device" i (which PyTorch reads as PrivateUse1 i), and every later one is a shallow copy of it (its
``.data``: a TensorImpl of its own, with a version counter of its own) that identity.py sets onto a
storage of its own, made for npu:i without an allocation (``_construct_storage_from_data_pointer``).
"""

from __future__ import annotations

import ctypes
import os
from typing import cast

import torch

from . import NPUS_ENV

NPU = "npu"
DEFAULT_COUNT = 8
_KDL_EXT_DEV = 12  # DLPack's device type for an extension device: PyTorch's PrivateUse1
_KDL_UINT = 1


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))),
]

_selected = [0]
_seeds: dict = {}  # (index, dtype) -> an empty NPU tensor on npu:index, never given to the program
_capsule_memory: list = []  # the DLPack structures the first tensors were made from (no deleter: kept)
_count: list = []


def count() -> int:
    """How many NPUs this process has."""
    if not _count:
        visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
        if visible:
            _count.append(len([v for v in visible.split(",") if v.strip()]))
        else:
            _count.append(int(os.environ.get(NPUS_ENV) or DEFAULT_COUNT))
    return _count[0]


def check(index: int) -> int:
    """``index`` when it names one of the NPUs, else the error a device gives for it."""
    if not 0 <= index < count():
        raise RuntimeError(
            f"Invalid device ID {index}: this emulated machine has {count()} NPUs (ids 0 to {count() - 1}; "
            f"{NPUS_ENV} or ASCEND_RT_VISIBLE_DEVICES set how many)"
        )
    return index


def current() -> int:
    return _selected[0]


def select(index: int, checked: bool = True) -> None:
    _selected[0] = check(index) if checked else index


def index_of(device: torch.device) -> int:
    """The NPU a device names: its index, or the selected NPU when it has none."""
    return _selected[0] if device.index is None else check(device.index)


def _selected_device(value, strings: bool):
    if isinstance(value, torch.device):
        if value.type == NPU and value.index is None:
            return torch.device(NPU, _selected[0])
    elif strings and isinstance(value, str) and value == NPU:
        return torch.device(NPU, _selected[0])
    return value


def name_selected(args: tuple, kwargs: dict, positional_strings: bool) -> tuple[tuple, dict]:
    """A torch call's arguments with "npu" (a device without an index) as the selected NPU. PyTorch
    itself asks its device guard for the current index in some of them (``x.to("npu")``,
    ``torch.tensor(..., device="npu")``), and the Python backend's guard always answers 0."""
    device = kwargs.get("device")
    if device is not None:
        kwargs = {**kwargs, "device": _selected_device(device, True)}
    return tuple(_selected_device(a, positional_strings) for a in args), kwargs


def _first(index: int) -> torch.Tensor:
    """An empty uint8 tensor on npu:index, made from a DLPack capsule."""
    shape = (ctypes.c_int64 * 1)(0)
    managed = _DLManagedTensor()
    managed.dl_tensor = _DLTensor(None, _DLDevice(_KDL_EXT_DEV, index), 1, _DLDataType(_KDL_UINT, 8, 1), shape, None, 0)
    _capsule_memory.append((managed, shape))
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype = ctypes.py_object
    new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return torch._C._from_dlpack(new_capsule(ctypes.addressof(managed), b"dltensor", None))


_META = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)


def blank(index: int, dtype: torch.dtype) -> torch.Tensor:
    """A new empty tensor on npu:index (a TensorImpl and version counter of its own; its storage is
    its seed's until identity.py sets one)."""
    seed = _seeds.get((index, dtype))
    if seed is None:
        first = _seeds.get((index, torch.uint8))
        if first is None:
            first = _seeds[(index, torch.uint8)] = _first(index)
        # a view with the dtype, made by the meta kernel (the NPU kernels would compute)
        seed = _seeds[(index, dtype)] = torch.ops.aten.view.dtype.redispatch(_META, first, dtype)
    return seed.data


def storage(device: torch.device, address: int, nbytes: int) -> torch.UntypedStorage:
    """A storage on the NPU ``device`` of ``nbytes`` bytes at ``address`` (its data's, so that
    ``data_ptr()`` tells tensors that share memory apart as on a device), which neither allocates
    nor frees anything."""
    made = torch._C._construct_storage_from_data_pointer(address, device, nbytes)
    return cast(torch.UntypedStorage, made)  # (an UntypedStorage: the stubs say Storage)
