"""--device-identity: tensors moved to "npu" are NPU tensors, computed on the backing device.

How: PyTorch's Python backend for PrivateUse1 (``torch.utils.backend_registration.
_setup_privateuseone_for_python_backend``: a device guard and hooks written in Python), with "npu" as
its name. An NPU tensor is a plain ``torch.Tensor`` whose device is ``npu:i``; its metadata (sizes,
strides, storage offset) is that of its data; its storage holds no bytes and keeps, in the attribute
``_emu``, the backing storage it stands for (so shallow copies made in C++, which share the storage,
share the data). Every aten operator that reaches the PrivateUse1 key (after
autograd, autocast and the ADInplaceOrView key have done their work on the NPU tensors) comes to
one boxed fallback, ``_kernel``: it checks devices as a device does (a non-scalar tensor of another
device is an error), runs the same operator on the backing data, so the numbers are the backing
device's bit for bit, and gives the outputs NPU identity again (in-place and ``out=`` results are the
NPU tensors passed in; a view shares its base's NPU storage).

Devices have indices: a result goes to the NPU a device argument names ("npu" alone: the selected
one), else to that of the operator's NPU tensors, which must all be on one NPU, as on a device
(copies between NPUs are allowed). npus.py counts the NPUs and makes the tensors of each index; the
metadata of a new tensor is set by ``aten::set_``'s CPU kernel onto an NPU storage as large as the
data's, which allocates nothing. Backward passes run in the thread that asks for them (see
``_in_this_thread``).

Composite operators that pick their body by device type (LSTM, GRU, attention, dropout) run as the
backing runs them (composites.py), and torch_npu's shallow-copy compatibility of CPU and NPU tensors
is reproduced (tied weights stay tied through ``Module.to``). Autocast on "npu" (autocast.py) and
torch.load onto an NPU (loading.py) are installed beside this module, by devices.install.

Two shortcuts keep the common operator cheap: a view is made by the CPU's own view kernel run on the
NPU tensor (it only sets the metadata of a tensor that shares the NPU storage), and an operator whose
tensors are all NPU tensors of one NPU takes ``_fast_kernel``, which reads an operator's result kept
with its NPU storage instead of making a view of the data.

This module decides nothing about what counts as a CUDA use (strict.py) and builds no torch_npu
namespace (npu_api.py).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import torch

from . import generators, memory, npus
from .fallbacks import may_refuse, refuse_cpu_fallback

NPU = "npu"
_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)  # set_'s CPU kernel only sets metadata here
_SET = torch.ops.aten.set_.source_Storage_storage_offset
_SET_METADATA = (
    _SET._handle.redispatch_boxed
)  # (keyset, tensor, storage, offset, size, stride): OpOverload.redispatch without its frame
aten = torch.ops.aten

# operators whose arguments may mix an NPU tensor with a host tensor, as on a device
_MIXING = {
    aten._copy_from.default,
    aten._copy_from_and_resize.default,
    aten.copy_.default,
    aten.index.Tensor,
    aten.index_put_.default,
    aten.index_put.default,
    aten._index_put_impl_.default,
    aten.set_.source_Storage,
    aten.set_.source_Storage_storage_offset,
    aten.set_.source_Tensor,
    # packed sequences: the lengths and batch sizes stay on the host (torch's composite kernels read
    # them there; op-plugin's NPU kernels take them so too)
    aten._pack_padded_sequence.default,
    aten._pack_padded_sequence_backward.default,
    aten._pad_packed_sequence.default,
}
# results that are host tensors on a device too: (operator, return position)
_HOST_RESULTS = {(aten._pack_padded_sequence.default, 1), (aten._pad_packed_sequence.default, 1)}
_COPIES = {aten._copy_from.default, aten._copy_from_and_resize.default}
# how PyTorch puts a Python number on the device for an operator (``x[i] = 2.0``): not a move the program made
_SCALAR = aten.scalar_tensor.default


class _State:
    backing: torch.device = torch.device("cpu")
    moved: Any = None  # called for each operator given an NPU device, without the device mode (entries.py)


def count_moves(moved) -> None:
    """Have ``moved()`` called for each operator given an NPU device (a move or a factory's
    ``device=``): the summary's count where no device mode sees the program's calls (entries.py)."""
    _State.moved = moved


def _wrap(data: torch.Tensor, like: torch.Tensor | None = None, index: int = 0) -> torch.Tensor:
    """An NPU tensor whose data is ``data``: it shares ``like``'s NPU storage (and device) when given
    (a view or the same data), else it is on npu:``index`` with an NPU storage of its own that stands
    for ``data``'s storage."""
    if like is not None:
        storage = like.untyped_storage()
        out = npus.blank(like.device.index, data.dtype)
    else:
        out = npus.blank(index, data.dtype)
        storage = _npu_storage(index, data.untyped_storage())
        storage._emu_last = data  # (data_of's first answer)
    _SET_METADATA(_CPU, out, storage, data.storage_offset(), data.size(), data.stride())
    return out


_DEVICES: dict = {}  # index -> torch.device("npu", index)


def _npu_storage(index: int, data_storage):
    device = _DEVICES.get(index)
    if device is None:
        device = _DEVICES[index] = torch.device(NPU, index)
    nbytes = data_storage.nbytes()
    storage = npus.storage(device, data_storage.data_ptr(), nbytes)
    storage._emu = data_storage  # type: ignore[attr-defined]  # the emulator's own attribute: the data it stands for
    storage._emu_last = None  # type: ignore[attr-defined]  # (see data_of)
    memory.held(storage, index, nbytes)  # (the NPU's memory statistics)
    return storage


def data_of(tensor: torch.Tensor) -> torch.Tensor:
    """The backing data of an NPU tensor: its NPU storage's backing storage, with its metadata (so a
    detached or shallow copy made in C++, which shares the NPU storage, has the same data). The data
    an operator gave for a new NPU storage is kept with it (``_emu_last``) and answers as long as the
    tensor's metadata is still the data's: most tensors are an operator's result used as is by the
    next operators."""
    npu_storage: Any = tensor.untyped_storage()
    dtype = tensor.dtype
    last = getattr(npu_storage, "_emu_last", None)
    if last is not None and last.dtype == dtype:
        size, stride, offset = tensor.size(), tensor.stride(), tensor.storage_offset()
        if last.storage_offset() == offset and last.size() == size and last.stride() == stride:
            return last
        return last.as_strided(size, stride, offset)  # (a view of it: the same storage)
    try:
        whole = npu_storage._emu_whole[dtype]
    except (AttributeError, KeyError):
        whole = _whole(npu_storage, dtype, tensor)
    # a strided view of the whole data: one operator, where a new tensor set onto the storage takes two
    return whole.as_strided(tensor.size(), tensor.stride(), tensor.storage_offset())


def _whole(npu_storage, dtype: torch.dtype, tensor: torch.Tensor) -> torch.Tensor:
    """The whole backing storage of an NPU storage as a flat tensor of ``dtype``, kept with the NPU
    storage (not the backing one, which the tensor refers to: that would be a cycle the collector
    does not see, and the data would never be freed); _sync drops it when the data moves."""
    try:
        storage = npu_storage._emu
    except AttributeError:
        raise RuntimeError(f"an npu tensor without data (made outside the emulator): {tuple(tensor.shape)}") from None
    whole = torch.empty(0, dtype=dtype, device=storage.device)
    whole.set_(storage, 0, (storage.nbytes() // whole.element_size(),), (1,))
    try:
        npu_storage._emu_whole[dtype] = whole
    except AttributeError:
        npu_storage._emu_whole = {dtype: whole}
    return whole


def _sync(npu: torch.Tensor, data: torch.Tensor) -> None:
    """After an in-place change of the data's shape or storage (resize_, t_, ...), the NPU tensor follows."""
    storage = npu.untyped_storage()
    data_storage = data.untyped_storage()
    if data_storage._cdata != storage._emu._cdata:  # type: ignore[attr-defined]
        storage._emu = data_storage  # type: ignore[attr-defined]
        storage._emu_whole = {}  # type: ignore[attr-defined]  # (data_of's views of the data it stood for)
        storage._emu_last = None  # type: ignore[attr-defined]
    if storage.nbytes() < data_storage.nbytes() or storage.data_ptr() != data_storage.data_ptr():
        # the data moved or grew (resize_): an NPU storage that stands for it as it is now
        storage = _npu_storage(npu.device.index, data_storage)
    elif npu.size() == data.size() and npu.stride() == data.stride() and npu.storage_offset() == data.storage_offset():
        return
    _SET_METADATA(_CPU, npu, storage, data.storage_offset(), data.size(), data.stride())


def _device_error(op, npu: torch.Tensor, other: torch.Tensor) -> RuntimeError:
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{npu.device} and {other.device}! (when checking argument for {op.__name__})"
    )


class _Op:
    """What the kernel needs to know of an operator, found once (at registration, or at its first call
    through the fallback) rather than at each call: an OpOverload's hash is a Python method, and each
    set or cache lookup keyed by the operator calls it."""

    __slots__ = (
        "op", "call", "packet", "slots", "aliasing", "mixing", "copy", "host_results", "refused", "generator",
        "view", "redispatch", "fast",
    )  # fmt: skip

    def __init__(self, op):
        self.op = op
        self.call = op._op  # the C++ callable, without OpOverload.__call__'s frame
        self.packet = op.overloadpacket
        self.slots = _tensor_slots(op)
        self.aliasing = _aliasing(op)
        self.mixing = op in _MIXING
        self.copy = op in _COPIES
        self.host_results = frozenset(i for o, i in _HOST_RESULTS if o is op)
        self.refused = may_refuse(op)
        self.generator = _generator_slot(op)
        self.view = _metadata_view(op, self.aliasing)
        self.redispatch = op._handle.redispatch_boxed
        # _fast_kernel's kind of results (0: not for it: host results, copies, generators to look at)
        plain = not (self.mixing or self.copy or self.host_results) and self.generator is None
        self.fast = _fast_results(self.aliasing) if plain else 0


def _fast_results(aliasing: tuple) -> int:
    """What an operator returns, for _fast_kernel: 1 one new tensor, 2 its first argument written in
    place, 3 several new tensors, 4 nothing; 0 anything else (views, other arguments written)."""
    if aliasing == _NEW:
        return 1
    if aliasing == _IN_PLACE:
        return 2
    if not aliasing:
        return 4
    return 3 if len(aliasing) > 1 and not any(aliasing) else 0


def _metadata_view(op, aliasing: tuple) -> bool:
    """Whether ``op`` returns views of its one tensor argument, the first, and nothing else (view,
    transpose, select, split, ...): the CPU's kernel of such an operator only sets the metadata of a
    new tensor that shares the argument's storage, so run on an NPU tensor it makes the NPU view
    itself, sharing the NPU storage, without touching data."""
    if not aliasing or any(a != ("view", 0) for a in aliasing):
        return False
    has_kernel, name = torch._C._dispatch_has_kernel_for_dispatch_key, op.name()
    if has_kernel(name, "CompositeImplicitAutograd"):
        return False  # (reshape, contiguous, to: a body that may copy, and never reaches the NPU's kernels)
    if not any(has_kernel(name, key) for key in ("CPU", "CompositeExplicitAutograd")):
        return False  # no CPU kernel to make the view (a GPU-only operator on a GPU backing)
    arguments = op._schema.arguments
    return bool(arguments) and all(("Tensor" not in str(a.type)) == (i > 0) for i, a in enumerate(arguments))


def _generator_slot(op):
    """Where ``op`` takes its generator: a position, a keyword's name, or None."""
    for i, argument in enumerate(op._schema.arguments):
        if argument.name == "generator":
            return argument.name if argument.kwarg_only else i
    return None


_OPS: dict = {}  # operator -> its _Op, for the calls that come through the fallback


def _info(op) -> _Op:
    info = _OPS.get(op)
    if info is None:
        info = _OPS[op] = _Op(op)
    return info


_PLAIN = frozenset({int, float, bool, type(None), torch.dtype, torch.memory_format, torch.layout, str})


def _unwrap(mixing: bool, value, found: list, datas: dict, devices: list):
    kind = value.__class__
    if kind in _PLAIN:  # most arguments: sizes, dims, scalars, dtypes
        return value
    if isinstance(value, torch.Tensor):
        if value.device.type == NPU:
            data = data_of(value)
            found.append(value)
            datas[id(value)] = data
            return data
        if not mixing and value.dim() > 0:
            found.append(value)
        return value
    if kind is list or kind is tuple:
        for v in value:
            if v.__class__ not in _PLAIN:
                return kind(_unwrap(mixing, v, found, datas, devices) for v in value)
        return value  # sizes, strides: nothing to unwrap
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(mixing, v, found, datas, devices) for v in value)
    if isinstance(value, torch.device) and value.type == NPU:
        devices.append(value)
        return _State.backing
    return value


def _kernel(op, *args, **kwargs):
    """Every aten operator on NPU tensors, or making one: the same operator on the backing data (the
    fallback's entry; the operators registered one by one enter at _op_kernel)."""
    return _op_kernel(_info(op), *args, **kwargs)


def _op_kernel(info: _Op, *args, **kwargs):
    """The kernel of one operator. Torch function modes (emulate's device mode) are off inside: the
    kernel's own tensor calls (``.device``, ``.size()``, ``set_``, ...) are the emulator's, not the
    program's, and would each cost a pass through the mode in Python (most of a tiny operator's cost)."""
    if info.refused:
        refuse_cpu_fallback(info.op)  # TORCH_NPU_FALLBACK_CPU_DISABLE=1 (fallbacks.py)
    if info.view:  # the NPU view, made by the CPU's kernel (see _metadata_view)
        return info.redispatch(_CPU, *args, **kwargs)
    with torch._C.DisableTorchFunction():
        if info.fast:
            out = _fast_kernel(info, args, kwargs)
            if out is not _GENERAL:
                return out
        return _backing_kernel(info, args, kwargs)


_GENERAL = object()  # _fast_kernel's answer where _backing_kernel must decide
_Tensor = torch.Tensor


def _fast_kernel(info: _Op, args: tuple, kwargs: dict):
    """_backing_kernel for the common case, with less Python per call: every tensor argument (alone or
    in a list) is an NPU tensor of one NPU, the other arguments are plain values (numbers, sizes,
    dtypes) or that NPU, and the results are new tensors, the first argument written in place, or
    nothing (the in-place ``_foreach_`` operators). Anything else (a host tensor, another device, a
    number where the operator takes a tensor, NPUs that differ) is _GENERAL, before anything is run."""
    new_args = list(args)
    index = -1
    slots = info.slots
    for i, value in enumerate(args):
        kind = value.__class__
        if kind in _PLAIN:
            if i in slots:
                return _GENERAL  # a wrapped number (see _call_of)
            continue
        if kind is list or kind is tuple:
            datas = None
            for j, v in enumerate(value):
                if v.__class__ in _PLAIN:
                    if datas is None:
                        continue
                    return _GENERAL
                if datas is None:
                    if j:
                        return _GENERAL  # numbers, then tensors
                    datas = []
                where = _npu_index(v, index)
                if where < 0:
                    return _GENERAL
                index = where
                datas.append(data_of(v))
            if datas is not None:
                new_args[i] = datas
            continue
        if kind is not _Tensor and not isinstance(value, _Tensor):
            return _GENERAL
        where = _npu_index(value, index)
        if where < 0:
            return _GENERAL
        index = where
        new_args[i] = data_of(value)
    if index < 0:
        return _GENERAL
    new_kwargs = kwargs
    if kwargs:
        for key, value in kwargs.items():
            kind = value.__class__
            if kind in _PLAIN:
                continue
            # the NPU of the tensors, which C++ names for a cast (``x.to(dtype)``: _to_copy(x, dtype, device))
            if kind is torch.device and value.type == NPU and _same_npu(value, index):
                if new_kwargs is kwargs:
                    new_kwargs = dict(kwargs)
                new_kwargs[key] = _State.backing
                continue
            return _GENERAL
    out = info.call(*new_args, **new_kwargs)
    fast = info.fast
    if fast == 1:
        if out.__class__ is not _Tensor:
            return _rewrap(info, args, kwargs, out, {}, index)
        return _wrap(out, index=index)
    if fast == 2:
        _sync(args[0], new_args[0])
        return args[0]
    if fast == 3:  # several new tensors
        return _rewrap(info, args, kwargs, out, {}, index)
    return out  # no results


def _npu_index(value, index: int) -> int:
    """The NPU of ``value`` if it is an emulator's NPU tensor on NPU ``index`` (-1: any NPU), else -1."""
    if value.__class__ is not _Tensor and not isinstance(value, _Tensor):
        return -1
    where = value.get_device()
    if where < 0 or (where != index and index >= 0):
        return -1  # a host tensor, or another NPU
    try:
        storage: Any = value.untyped_storage()
    except RuntimeError:
        return -1  # (a sparse tensor)
    if not hasattr(storage, "_emu_last"):
        return -1  # not an NPU tensor of the emulator's (another device's)
    return where


def _same_npu(device: torch.device, index: int) -> bool:
    return (npus.current() if device.index is None else device.index) == index


def _backing_kernel(info: _Op, args: tuple, kwargs: dict):
    found: list = []
    datas: dict = {}  # id(NPU tensor) -> its data
    devices: list = []  # the NPU devices named by the arguments (a factory's, a copy's destination)
    mixing = info.mixing
    new_args = [_unwrap(mixing, a, found, datas, devices) for a in args]
    new_kwargs = {k: _unwrap(mixing, v, found, datas, devices) for k, v in kwargs.items()} if kwargs else kwargs
    index = _index(info, found, devices)
    if (
        devices
        and _State.moved is not None
        and info.op is not _SCALAR
        and not any(t.device.type == NPU and t.device.index == index for t in found)
    ):
        _State.moved()  # a move to the NPU, or a new tensor made there (not a cast that stays on its NPU)
    if info.generator is not None:
        generators.check_kernel(_argument(args, kwargs, info.generator))
    if info.copy:  # (src, dst): dst is an NPU tensor; its data takes src's values
        source, dst = new_args[0], args[1]
        target = new_args[1]
        if info.op is aten._copy_from_and_resize.default:
            target.resize_(source.shape)
            if target is not dst:
                _sync(dst, target)
        target.copy_(source, *new_args[2:3])
        return dst
    out = _call_of(info, new_args)(*new_args, **new_kwargs)
    return _rewrap(info, args, kwargs, out, datas, index)


def _index(info: _Op, found: list, devices: list) -> int:
    """The NPU the results of an operator go to: the one a device argument names (the selected NPU for
    "npu"), else that of the NPU tensors, which must all be on one device (as on a device, a host
    tensor other than a 0-dim one is an error, and so is another NPU)."""
    if len(found) == 1 and not devices:  # one tensor argument (a unary operator, a view)
        device = found[0].device
        if device.type == NPU:
            return device.index
    npu = None
    npu_index = None
    for tensor in found:
        device = tensor.device
        if device.type != NPU:
            if any(t.device.type == NPU for t in found):
                raise _device_error(info.op, next(t for t in found if t.device.type == NPU), tensor)
        elif npu is None:
            npu, npu_index = tensor, device.index
        elif device.index != npu_index and not info.mixing:
            raise _device_error(info.op, npu, tensor)
    if devices:
        return npus.index_of(devices[0])
    return npus.current() if npu_index is None else npu_index


def _tensor_slots(op) -> tuple:
    return tuple(i for i, a in enumerate(op._schema.arguments) if not a.kwarg_only and str(a.type) == "Tensor")


def _call_of(info: _Op, args):
    """The operator, or its overload packet when a number stands where it takes a tensor: a boxed
    kernel receives the number torch wrapped (``x.add_(1)``), and the packet finds the Scalar
    overload, which computes as the wrapped number did."""
    for i in info.slots:
        if i < len(args) and isinstance(args[i], (int, float, complex)):
            return info.packet
    return info.call


def _aliasing(op) -> tuple:
    """For each return of ``op``: ("write", argument index or name) when it is an argument written in
    place, ("view", argument index) when it is a view of one, or None."""
    schema = op._schema
    positions = {a.name: i for i, a in enumerate(schema.arguments) if not a.kwarg_only}
    found = []
    for ret in schema.returns:
        info = ret.alias_info
        which = None
        if info is not None:
            for arg in schema.arguments:
                if arg.alias_info is not None and set(arg.alias_info.before_set) & set(info.before_set):
                    where = positions.get(arg.name, arg.name)
                    which = ("write" if info.is_write else "view", where)
                    break
        found.append(which)
    return tuple(found)


def _argument(args, kwargs, where):
    if isinstance(where, int):
        return args[where] if where < len(args) else None
    return kwargs.get(where)


_NEW = (None,)  # the aliasing of an operator that returns one new tensor
_IN_PLACE = (("write", 0),)  # of one that returns its first argument, written in place


def _rewrap(info: _Op, args, kwargs, out, datas, index=0):
    """The outputs of an operator run on the backing data, as NPU tensors."""
    aliasing = info.aliasing
    if not aliasing:
        return out
    if aliasing == _NEW and out.__class__ is torch.Tensor and not kwargs:  # most operators: one new tensor
        return _wrap(out, index=index)
    if kwargs and kwargs.get("device") is not None and torch.device(kwargs["device"]).type != NPU:
        return out  # a copy to another device (_to_copy(npu_tensor, device="cpu"))
    if len(aliasing) == 1:
        return _rewrap_one(out, aliasing[0], args, kwargs, datas, index)
    return type(out)(
        v if i in info.host_results else _rewrap_one(v, a, args, kwargs, datas, index)
        for i, (v, a) in enumerate(zip(out, aliasing))
    )


def _rewrap_one(value, alias, args, kwargs, datas, index):
    source = _argument(args, kwargs, alias[1]) if alias is not None else None
    if isinstance(value, list):  # a Tensor[] return (split, unbind, _foreach_add, ...)
        if isinstance(source, torch.Tensor):  # views of one tensor
            return [_rewrap_one(v, alias, args, kwargs, datas, index) for v in value]
        return [_wrap(v, index=index) if isinstance(v, torch.Tensor) else v for v in value]
    if not isinstance(value, torch.Tensor):
        return value
    if not isinstance(source, torch.Tensor):
        return _wrap(value, index=index)
    if source.device.type != NPU:
        return source if alias[0] == "write" else value
    if alias[0] == "write":
        _sync(source, datas[id(source)])
        return source
    return _wrap(value, like=source)


_LIBRARIES: list = []


# shallow copies made in C++ share the NPU storage, and so the data: they keep torch's own kernel
# (nn.Parameter's _make_subclass needs a detached tensor no Python object was made for)
_METADATA_ONLY = {"aten::detach", "aten::alias", "aten::lift_fresh"}


def aten_ops(*keys: str):
    """The aten operators (OpOverloads) that have a kernel for any of the dispatch ``keys``."""
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    for qualified in torch._C._dispatch_get_all_op_names():
        if not qualified.startswith("aten::") or not any(has_kernel(qualified, key) for key in keys):
            continue
        name, _, overload = qualified[len("aten::") :].partition(".")
        try:
            yield getattr(getattr(aten, name), overload or "default")
        except AttributeError:
            continue


def _as_the_backing_does(backing_key: str):
    """Every operator with a kernel of its own for the backing (CPU or CUDA) gets ``_kernel`` as its
    NPU kernel too, so the NPU runs what the backing runs and not a generic decomposition of it (whose
    numbers could differ, or which refuses devices it does not know: convolution_overrideable)."""
    library = torch.library.Library("aten", "IMPL")
    for op in aten_ops(backing_key, "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"):
        if op.name() not in _METADATA_ONLY:
            library.impl(op, functools.partial(_op_kernel, _info(op)), "PrivateUse1")
    return library


def install(backing_device: torch.device) -> None:
    """Make "npu" (PrivateUse1, already renamed) a Python backend computing on ``backing_device``:
    the steps of torch.utils.backend_registration._setup_privateuseone_for_python_backend but the
    device module, which runtime.py registers (torch_npu.npu). Call once, on ``import torch_npu``."""
    from torch.utils import backend_registration

    _State.backing = backing_device
    torch.utils.generate_methods_for_privateuse1_backend()
    torch._C._acc.register_python_privateuseone_hook(backend_registration._DummyPrivateUse1Hook())
    torch._C._acc.register_python_privateuseone_device_guard(backend_registration._DummyDeviceGuard())
    library = torch.library.Library("_", "IMPL")
    library.fallback(_kernel, "PrivateUse1")
    _LIBRARIES.append(library)
    _LIBRARIES.append(_as_the_backing_does(backing_device.type.upper()))

    has_storage = torch._C._has_storage
    # torch.save writes an NPU tensor as its host copy, rebuilt on the NPU (an allowed global of
    # torch.load(weights_only=True)), as for devices whose tensors have no host storage
    torch._C._has_storage = lambda x: False if x.device.type == NPU else has_storage(x)
    numpy = torch.Tensor.numpy

    @functools.wraps(numpy)
    def npu_numpy(self, *args, **kwargs):
        if self.device.type == NPU:
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return numpy(self, *args, **kwargs)

    torch.Tensor.numpy = npu_numpy  # type: ignore[method-assign]  # the emulator replaces torch's own
    torch.autograd._engine_run_backward = _in_this_thread(torch.autograd._engine_run_backward)
    torch.autograd.graph._engine_run_backward = _in_this_thread(torch.autograd.graph._engine_run_backward)
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # torch warns that a kernel is overridden: torch_npu overrides it too
        warnings.simplefilter("ignore", UserWarning)
        library.impl("_has_compatible_shallow_copy_type", _compatible_shallow_copy_type, "CompositeImplicitAutograd")
    _LIBRARIES.append(library)
    # amp's default dtype on the NPU is the backing's (bfloat16 on the CPU), as without --device-identity
    torch.set_autocast_dtype(NPU, torch.get_autocast_dtype(backing_device.type))


_DENSE = (torch._C.DispatchKey.CPU, torch._C.DispatchKey.PrivateUse1)


def _compatible_shallow_copy_type(self: torch.Tensor, other: torch.Tensor) -> bool:
    """torch_npu's answer (its CatchAll kernel of aten::_has_compatible_shallow_copy_type, in
    Ascend/pytorch torch_npu/csrc/aten): the same dispatch keys, or both dense CPU or NPU tensors. So
    ``param.data = npu_tensor`` is allowed, and Module._apply keeps each parameter object when it
    moves a module to the NPU (weights tied by sharing a Parameter stay tied)."""
    mine, theirs = torch._C._dispatch_keys(self), torch._C._dispatch_keys(other)
    return mine == theirs or (any(mine.has(k) for k in _DENSE) and any(theirs.has(k) for k in _DENSE))


def _in_this_thread(run_backward):
    """Backward passes run in the thread that asks for them, as for CPU tensors: the autograd engine
    would give each NPU index a worker thread of its own, but counts the devices with the Python
    device guard, which counts one (its queue for npu:1 does not exist)."""

    @functools.wraps(run_backward)
    def run_here(*args, **kwargs):
        before = torch._C._is_multithreading_enabled()
        torch._C._set_multithreading_enabled(False)
        try:
            return run_backward(*args, **kwargs)
        finally:
            torch._C._set_multithreading_enabled(before)

    return run_here
