"""--device-identity: collectives of the emulated ``hccl`` on NPU tensors, computed by the backing's own.

How: every collective of a process group is a c10d operator of the dispatcher (``c10d::allreduce_``,
``c10d::broadcast_``, ``c10d::allgather_``, ``c10d::_reduce_scatter_base_``, ``c10d::barrier``, ...);
``ProcessGroup.allreduce`` and the rest, called from Python (``dist.all_reduce``) or from C++
(DistributedDataParallel's Reducer and its buckets, ``_broadcast_coalesced``,
``_verify_params_across_processes``), all call them, and the dispatcher picks the kernel by the
tensors' device. Each of these operators gets one kernel for the NPU (PrivateUse1), ``_collective``:
it replaces the NPU tensors by their backing data (identity.data_of: same storage, so an in-place
collective writes the NPU tensors' data), calls the same operator again, which now dispatches to the
backing's kernel and so to the process group's backend for the backing (gloo on the CPU, nccl on
CUDA, as devices.py maps ``hccl``), and gives back the NPU tensors that were passed in, with a Work
whose result (``wait``, ``get_future``, ``result``) is those NPU tensors. The numbers are the
backing backend's, bit for bit. A host tensor in the same collective as an NPU tensor is an error,
as it is for HCCL on a device.

This module chooses no backend (devices.py) and builds no NPU tensor (identity.py).
"""

from __future__ import annotations

import functools
import warnings

import torch
import torch.distributed as dist

from . import identity

NPU = identity.NPU
_LIBRARIES: list = []


def _unwrap(value, found: list, datas: dict):
    """``value`` with every NPU tensor replaced by its backing data; ``found`` gets every tensor seen,
    ``datas`` maps a data tensor's TensorImpl to the NPU tensor it stands for."""
    if isinstance(value, torch.Tensor):
        found.append(value)
        if value.device.type != NPU:
            return value
        data = identity.data_of(value)
        datas[data._cdata] = value
        return data
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, found, datas) for v in value)
    return value


def _rewrap(value, datas: dict):
    """``value`` (an operator's result) with the backing data of the NPU tensors passed in given back
    as those NPU tensors."""
    if isinstance(value, torch.Tensor):
        return datas.get(value._cdata, value)
    if isinstance(value, (list, tuple)):
        return type(value)(_rewrap(v, datas) for v in value)
    return value


def _device_error(op, found: list) -> RuntimeError:
    devices = sorted({str(t.device) for t in found})
    return RuntimeError(
        f"{op._schema.name}: all tensors of a collective must be on the NPU, found {', '.join(devices)} "
        "(hccl takes NPU tensors only)"
    )


def _work_of(boxed, datas: dict):
    """The Work ``boxed`` (as the dispatcher holds it), with the NPU tensors for the backing data in
    its result."""
    work = dist.Work.unbox(boxed)
    try:
        future = work.get_future()
    except (RuntimeError, NotImplementedError):  # a work without a future (some backends' send/recv): as it is
        return boxed
    wrapped = torch._C._distributed_c10d._create_work_from_future(  # type: ignore[attr-defined]  # (not in the stubs)
        future.then(lambda done: _rewrap(done.value(), datas))
    )
    return wrapped.boxed()


def _collective(op, *args, **kwargs):
    """A c10d operator on NPU tensors: the same operator on their backing data."""
    found: list = []
    datas: dict = {}
    args = _unwrap(args, found, datas)
    kwargs = {k: _unwrap(v, found, datas) for k, v in kwargs.items()}
    if any(t.device.type != NPU for t in found):
        raise _device_error(op, found)
    out = op(*args, **kwargs)
    if isinstance(out, tuple):  # (tensors, work)
        return tuple(_work_of(v, datas) if isinstance(v, torch.ScriptObject) else _rewrap(v, datas) for v in out)
    return _work_of(out, datas) if isinstance(out, torch.ScriptObject) else out


def install() -> None:
    """Give every c10d operator an NPU kernel that runs it on the backing data. Call once, after
    identity.install()."""
    if not torch.distributed.is_available():
        return
    library = torch.library.Library("c10d", "IMPL")
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    with warnings.catch_warnings():  # torch's own PrivateUse1 kernels are replaced: that is the point
        warnings.filterwarnings("ignore", "(?s).*Overriding a previously registered kernel", UserWarning)
        for qualified in torch._C._dispatch_get_all_op_names():
            if not qualified.startswith("c10d::") or not has_kernel(qualified, "PrivateUse1"):
                continue
            name, _, overload = qualified[len("c10d::") :].partition(".")
            op = getattr(getattr(torch.ops.c10d, name), overload or "default")
            library.impl(op, functools.partial(_collective, op), "PrivateUse1")
    _LIBRARIES.append(library)
