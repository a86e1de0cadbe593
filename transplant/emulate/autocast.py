"""Autocast on NPU tensors under device identity, as the backing's autocast casts.

Each operator the backing's autocast has a kernel for (its cast lists: AutocastCPU's or
AutocastCUDA's) gets an AutocastPrivateUse1 kernel here; every other operator falls through, as it
falls through the backing's autocast. The kernel asks the backing's own autocast which of the
operator's arguments it casts, and to what, once per operator, autocast dtype and argument dtypes (it
runs the operator on the backing data under the backing's autocast in a mode that stops at the first
computation), then casts the NPU arguments alike, a float32 weight once per autocast region as
autocast's own cache does (``cached_cast``, aten/src/ATen/autocast_mode.cpp).

The NPU tensors, their data and the NPU kernels are identity.py's.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .identity import _PLAIN, NPU, _call_of, _info, _Op, _State, aten, aten_ops, data_of

_AUTOCAST_KEY = torch._C.DispatchKey.AutocastPrivateUse1  # type: ignore[attr-defined]  # (not in torch's stubs)


def _callable(op, args):
    """``op``'s callable for ``args`` (see identity._call_of)."""
    return _call_of(_info(op), args)


class _AutocastProbe(TorchDispatchMode):
    """Records the casts of an operator's input tensors, in order, up to the first operator that is
    not such a cast, where it stops (no computation is done)."""

    class Stop(Exception):
        pass

    def __init__(self, inputs):
        super().__init__()
        self.inputs: dict = {}  # id -> every position of the tensor (attention(h, h, h) passes one thrice)
        for i, t in enumerate(inputs):
            self.inputs.setdefault(id(t), []).append(i)
        self.casts: list = []  # (position, dtype), in the order made

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten._to_copy.default and id(args[0]) in self.inputs and "dtype" in kwargs:
            self.casts.extend((i, kwargs["dtype"]) for i in self.inputs[id(args[0])])
            return torch.empty_like(args[0], dtype=kwargs["dtype"])
        raise self.Stop


_POLICIES: dict = {}


def _autocast_kernel(info: _Op, *args, **kwargs):
    with torch._C.DisableTorchFunction():  # as in _op_kernel
        args, kwargs = _autocast_casts(info.op, args, kwargs)
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_SET):
        return _call_of(info, args)(*args, **kwargs)


def _floating_npu(value, tensors: list) -> None:
    """Put the floating-point NPU tensors in ``value`` (a tensor, or a list or tuple of them) in ``tensors``."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and value.device.type == NPU:
            tensors.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _floating_npu(v, tensors)


def _autocast_casts(op, args, kwargs):
    """``op``'s arguments with the casts the backing's autocast makes for it."""
    tensors: list = []
    for value in args:
        if value.__class__ not in _PLAIN:
            _floating_npu(value, tensors)
    for value in kwargs.values():
        _floating_npu(value, tensors)
    if not tensors:
        return args, kwargs
    dtype = torch.get_autocast_dtype(NPU)
    key = (op, dtype, tuple(t.dtype for t in tensors))
    policy = _POLICIES.get(key)
    if policy is None:
        policy = _POLICIES[key] = _probe(op, args, kwargs, tensors, dtype)
    if not policy:
        return args, kwargs
    cast = {id(t): policy[i] for i, t in enumerate(tensors) if i in policy}
    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_SET):
        return (
            tuple(_converted(a, cast, dtype) for a in args),
            {k: _converted(v, cast, dtype) for k, v in kwargs.items()},
        )


def _converted(value, cast: dict, autocast_dtype: torch.dtype):
    if isinstance(value, torch.Tensor):
        to = cast.get(id(value))
        return value if to is None else _cached_cast(value, to, autocast_dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_converted(v, cast, autocast_dtype) for v in value)
    return value


_CASTS = threading.local()  # .made: id -> (weak reference to a weight, its cast), as autocast's own cache


def _cached_cast(value: torch.Tensor, dtype: torch.dtype, autocast_dtype: torch.dtype) -> torch.Tensor:
    """``value`` cast to ``dtype`` as autocast's ``cached_cast`` casts it (aten/src/ATen/autocast_mode.cpp):
    a float32 weight (a leaf that requires grad, not a view) cast to the autocast dtype is cast once
    per autocast region, so each use of it is a use of one cast (whose gradient sums theirs in the
    autocast dtype, as on a device); every other tensor is cast at each use."""
    if not (
        dtype == autocast_dtype
        and value.dtype == torch.float32
        and value.requires_grad
        and value.is_leaf
        and not value._is_view()
        and torch.is_autocast_cache_enabled()
    ):
        return _TO_COPY(value, dtype=dtype)
    made = getattr(_CASTS, "made", None)
    if made is None:
        made = _CASTS.made = {}
    hit = made.get(id(value))
    if hit is not None and hit[0]() is value:
        return hit[1]
    cast = _TO_COPY(value, dtype=dtype)
    made[id(value)] = (weakref.ref(value), cast)
    return cast


def _clearing_casts(clear):
    """torch.clear_autocast_cache (which leaving the outermost autocast region calls) clears the
    NPU weights' casts too."""

    @functools.wraps(clear)
    def clear_both() -> None:
        clear()
        made = getattr(_CASTS, "made", None)
        if made:
            made.clear()

    return clear_both


_AUTOCAST_SET = torch._C.DispatchKeySet(_AUTOCAST_KEY)
_TO_COPY = aten._to_copy.default._op  # the cast autocast makes (Tensor.to's operator), without OpOverload's frame


def _probe(op, args, kwargs, tensors, dtype: torch.dtype) -> dict:
    """The casts of ``op``'s floating-point NPU arguments (by position in ``tensors``) that the
    backing's autocast to ``dtype`` makes: ``op`` runs on the backing data under that autocast up to
    its first computation, and again without autocast, and the casts of the second run are the
    operator's own, not autocast's (attention's math body upcasts half-precision inputs to float
    before it computes: under autocast, inputs already in ``dtype`` stay as they are); so are casts
    to a dtype other than the first cast's. An in-place
    op (``detach_``, ``add_``) is cast by no autocast policy and is not run: on the data of a view (an
    NPU argument's data is a view of a cached flat tensor) ``detach_`` refuses."""
    if getattr(getattr(op, "_schema", None), "name", "").endswith("_"):
        return {}
    datas = {id(t): data_of(t) for t in tensors}
    order = [datas[id(t)] for t in tensors]

    def swap(value):
        if isinstance(value, torch.Tensor) and value.device.type == NPU:
            return datas.get(id(value)) if id(value) in datas else data_of(value)
        if isinstance(value, (list, tuple)):
            return type(value)(swap(v) for v in value)
        if isinstance(value, torch.device) and value.type == NPU:
            return _State.backing
        return value

    args, kwargs = [swap(a) for a in args], {k: swap(v) for k, v in kwargs.items()}

    def casts(enabled: bool) -> list:
        probe = _AutocastProbe(order)
        with torch.autocast(_State.backing.type, dtype=dtype, enabled=enabled), probe:
            try:
                _callable(op, args)(*args, **kwargs)
            except _AutocastProbe.Stop:
                pass
            except Exception:
                if enabled:
                    raise  # (the operator's own error, which the call itself would raise)
                # without autocast the arguments are refused (attention of mixed dtypes): no casts of its own
        return probe.casts

    made, own = casts(True), casts(False)
    if own and made[-len(own) :] == own:
        made = made[: -len(own)]
    # autocast casts an operator's arguments to one dtype (its list's); a cast to another one is the
    # body's, of an argument autocast left as it was (attention of a bfloat16 query, float32 keys)
    return {i: to for i, to in itertools.takewhile(lambda cast: cast[1] == made[0][1], made)}


_LIBRARIES: list = []


def install(backing_type: str) -> None:
    """The operators the backing's autocast has a kernel for (its cast lists: AutocastCPU's or
    AutocastCUDA's) get ``_autocast_kernel`` for AutocastPrivateUse1; every other operator falls
    through to the next key, as it falls through the backing's autocast (a composite one reaches
    the operators it is made of, each cast or not by its own entry). So an operator no list names costs
    nothing under autocast, as on the backing. torch.clear_autocast_cache (which leaving the outermost
    autocast region calls) clears the NPU weights' casts too. Call once, after identity.install."""
    library = torch.library.Library("_", "IMPL")
    library.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    ops = torch.library.Library("aten", "IMPL")
    for op in aten_ops("Autocast" + ("CUDA" if backing_type == "cuda" else backing_type.upper())):
        ops.impl(op, functools.partial(_autocast_kernel, _info(op)), "AutocastPrivateUse1")
    torch.clear_autocast_cache = _clearing_casts(torch.clear_autocast_cache)
    _LIBRARIES.extend((library, ops))
