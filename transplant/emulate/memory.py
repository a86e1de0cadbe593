"""--device-identity on the CPU: the emulated NPUs' memory statistics count the bytes of live NPU
tensors, as torch_npu's caching allocator counts them.

What torch_npu answers (Ascend/pytorch commit 9e73e708ab93): ``memory_allocated(device)`` is
``memory_stats(device)["allocated_bytes.all.current"]`` and ``max_memory_allocated`` its
``"allocated_bytes.all.peak"``; ``memory_reserved`` and ``max_memory_reserved`` are
``"reserved_bytes.all.current"`` and ``"peak"`` (``torch_npu/npu/memory.py``). The allocator counts
each tensor storage as the block it gets: its size plus 32 bytes of padding (``AddPadSize``: 0 only on
Ascend950 with CANN 9.1 or later), rounded up to 512 bytes (``round_size``, ``kMinBlockSize``;
``torch_npu/csrc/core/npu/NPUCachingAllocator.cpp``); a storage of no bytes takes no block. Freed
blocks stay reserved until ``empty_cache``; ``reset_peak_memory_stats`` sets each peak to the
current figure.

Here each NPU storage the kernels make for backing data (identity.py) is counted on its NPU as that
block, until the storage is freed (a weak reference's callback). Not modelled: the allocator's
segments (2 MiB and up, so a real NPU reserves more than it allocates): reserved memory is the most
allocated since the last ``empty_cache``.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from . import npus

PAD = 32  # bytes torch_npu's allocator adds to each block (AddPadSize)
BLOCK = 512  # kMinBlockSize: every block is a multiple of it

_allocated: dict[int, int] = {}  # NPU index -> bytes of the blocks of live NPU storages
_peak: dict[int, int] = {}
_reserved: dict[int, int] = {}
_peak_reserved: dict[int, int] = {}


class _Block(weakref.ref):
    """A live NPU storage's block: freed with the storage (every new NPU tensor's storage gets one,
    so it is kept small)."""

    __slots__ = ("index", "size")
    index: int
    size: int


_live: dict[int, _Block] = {}  # id -> the block (kept until its storage is freed)


def block(nbytes: int) -> int:
    """The bytes torch_npu's allocator counts for a storage of ``nbytes`` bytes."""
    return 0 if nbytes <= 0 else (nbytes + PAD + BLOCK - 1) // BLOCK * BLOCK


def held(storage: Any, index: int, nbytes: int) -> None:
    """``storage``, an NPU storage on npu:``index`` standing for ``nbytes`` bytes of backing data, is
    allocated until it is freed."""
    if nbytes <= 0:
        return
    size = (nbytes + PAD + BLOCK - 1) // BLOCK * BLOCK  # block(nbytes), without a call: every result's path
    held_block = _Block(storage, _freed)
    held_block.index, held_block.size = index, size
    _live[id(held_block)] = held_block
    now = _allocated.get(index, 0) + size
    _allocated[index] = now
    if now > _peak.get(index, 0):
        _peak[index] = now
    if now > _reserved.get(index, 0):
        _reserved[index] = now
        if now > _peak_reserved.get(index, 0):
            _peak_reserved[index] = now


def _freed(freed: _Block, _live=_live, _allocated=_allocated) -> None:
    # (the tables are bound here: a storage freed while the interpreter exits finds them still)
    if _live.pop(id(freed), None) is not None:
        _allocated[freed.index] -= freed.size


def _index(device) -> int:
    if device is None:
        return npus.current()
    if isinstance(device, int):
        return device
    return npus.index_of(torch.device(device))


def memory_allocated(device=None) -> int:
    return _allocated.get(_index(device), 0)


def max_memory_allocated(device=None) -> int:
    return _peak.get(_index(device), 0)


def memory_reserved(device=None) -> int:
    return _reserved.get(_index(device), 0)


def max_memory_reserved(device=None) -> int:
    return _peak_reserved.get(_index(device), 0)


def memory_stats(device=None) -> dict:
    index = _index(device)
    return {
        "allocated_bytes.all.current": _allocated.get(index, 0),
        "allocated_bytes.all.peak": _peak.get(index, 0),
        "reserved_bytes.all.current": _reserved.get(index, 0),
        "reserved_bytes.all.peak": _peak_reserved.get(index, 0),
    }


def reset_peak_memory_stats(device=None) -> None:
    index = _index(device)
    _peak[index] = _allocated.get(index, 0)
    _peak_reserved[index] = _reserved.get(index, 0)


def empty_cache() -> None:
    """The blocks no tensor holds go back to the device: reserved is what is allocated."""
    for index in set(_reserved) | set(_allocated):
        _reserved[index] = _allocated.get(index, 0)


def api() -> dict:
    """The torch_npu.npu memory functions that answer from these figures."""
    return {
        "memory_allocated": memory_allocated,
        "max_memory_allocated": max_memory_allocated,
        "memory_reserved": memory_reserved,
        "max_memory_reserved": max_memory_reserved,
        "memory_cached": memory_reserved,
        "max_memory_cached": max_memory_reserved,
        "memory_stats": memory_stats,
        "reset_peak_memory_stats": reset_peak_memory_stats,
        "reset_max_memory_allocated": reset_peak_memory_stats,
        "reset_max_memory_cached": reset_peak_memory_stats,
        "empty_cache": empty_cache,
    }
