"""torch.load with an NPU map_location under device identity: an NPU storage holds no bytes to load
into, so the checkpoint is loaded on the backing device, then moved to the NPU it names."""

from __future__ import annotations

import functools

import torch

from .identity import NPU, _State


def _npu(location) -> torch.device | None:
    """The NPU a map_location names (a device, a string, or a dict's values), or None."""
    if isinstance(location, dict):
        found = [_npu(v) for v in location.values()]
        return next((d for d in found if d is not None), None)
    if isinstance(location, (str, torch.device)) and str(location).startswith(NPU):
        return torch.device(location)
    return None


def _onto(value, device: torch.device):
    if isinstance(value, torch.nn.Parameter):
        return torch.nn.Parameter(value.to(device), value.requires_grad)
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return value.to(device)
    if isinstance(value, dict):
        moved = {k: _onto(v, device) for k, v in value.items()}
        if type(value) is dict:
            return moved
        copy = value.copy()
        copy.update(moved)
        return copy
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_onto(v, device) for v in value)
    return value


def onto_npu(load):
    """torch.load(..., map_location=npu): loaded on the backing device, then moved to the NPU (an NPU
    storage holds no bytes to load into)."""

    @functools.wraps(load)
    def load_then_move(f, map_location=None, *args, **kwargs):
        target = _npu(map_location)
        if target is None:
            return load(f, map_location, *args, **kwargs)
        if isinstance(map_location, dict):
            map_location = {k: str(_State.backing) if _npu(v) else v for k, v in map_location.items()}
        else:
            map_location = _State.backing
        return _onto(load(f, map_location, *args, **kwargs), target)

    return load_then_move
