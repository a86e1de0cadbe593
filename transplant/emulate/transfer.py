"""torch_npu's runtime migration over the emulated torch_npu: ``TORCH_TRANSFER_TO_NPU=1`` (or
``import torch_npu.contrib.transfer_to_npu``, or ``transplant emulate --transfer-to-npu``) runs an
unconverted CUDA program as torch_npu's zero-edit path runs it on an NPU.

What the migration changes is a list of facts read from torch_npu's source (``SOURCE``); this
module applies each of them to the emulated stack, in torch_npu's order, so that what the runtime
path misses (a device test on ``x.device.type``, a "cuda" string given to an API it does not wrap,
``torch.amp.GradScaler()``'s default device, a CUDA-only library) shows here as it would on an NPU.
Not reproduced: the wrapping of third-party library functions listed in torch_npu's own
``apis_config.json`` (its content is release data this package does not ship) and the reset of
dynamo's disallowed-callable ids (dynamo is not run by the emulation: compiling.py).

This module owns the migration only; devices.py still turns "npu" into the backing device.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import os
import sys
import types
import warnings
from typing import Any, Callable

import torch

from ..rule_versions import DEFAULT_TORCH_NPU
from ..transfer_api import (  # the migration's facts, shared with the conversion's runtime mode
    CUDA_FUNCTIONS,
    DEVICE_KEYWORDS,
    ENV,
    MODULE_METHODS,
    NAMESPACES,
    ORDINAL_METHODS,
    SOURCE,
    TENSOR_METHODS,
    TORCH_FUNCTIONS,
    added_in,
)
from . import RELEASE_ENV

__all__ = ["ENV", "SOURCE", "install", "requested", "watch"]


def requested() -> bool:
    """Whether the environment asks for the migration, as torch_npu reads it: "1" yes, "0" or unset
    no, anything else an error."""
    value = os.environ.get(ENV, "0")
    if value not in ("0", "1"):
        raise ValueError(f"Invalid value for {ENV}: {value}. Only '0' or '1' is supported.")
    return value == "1"


# ----------------------------------------------------------------------------- the device rewrites


def _device_struct(value: torch.device) -> torch.device:
    return torch.device("npu") if value.index is None else torch.device(f"npu:{value.index}")


def _names(mapping: dict) -> dict:
    return {
        (k.replace("cuda", "npu") if isinstance(k, str) else k): (v.replace("cuda", "npu") if isinstance(v, str) else v)
        for k, v in mapping.items()
    }


def _positional(value, ordinals: bool):
    """An argument as the migration leaves it: any string holding "cuda" has it replaced (a substring
    replacement, so "cuda:1" and "cpu:gloo,cuda:nccl" alike), a CUDA torch.device becomes the NPU of
    the same index, a dict's string keys and values are rewritten, and an int is an NPU id only for
    ``to``/``to_empty``."""
    if isinstance(value, str) and "cuda" in value:
        return value.replace("cuda", "npu")
    if isinstance(value, torch.device) and "cuda" in value.type:
        return _device_struct(value)
    if ordinals and isinstance(value, int) and not isinstance(value, bool):
        return f"npu:{value}"
    if isinstance(value, dict):
        return _names(value)
    return value


def _keyword(value):
    """A device keyword's value (exact types, as torch_npu compares them): an int is an NPU id."""
    if type(value) is str and "cuda" in value:
        return value.replace("cuda", "npu")
    if type(value) is torch.device and "cuda" in value.type:
        return _device_struct(value)
    if type(value) is int:
        return f"npu:{value}"
    if type(value) is dict:
        return _names(value)
    return value


def release() -> str:
    """The torch_npu release whose migration applies (``--torch-npu``; transfer_api.ADDED)."""
    return os.environ.get(RELEASE_ENV) or DEFAULT_TORCH_NPU


def moving(function: Callable) -> Callable:
    """``function`` with its device arguments rewritten to the NPU."""
    ordinals = getattr(function, "__name__", "") in ORDINAL_METHODS
    tuples = added_in("tuple device_ids", release())

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        args = tuple(_positional(a, ordinals) for a in args)
        for key in DEVICE_KEYWORDS:
            if kwargs.get(key) is not None:
                kwargs[key] = _keyword(kwargs[key])
        ids = kwargs.get("device_ids")
        if type(ids) is list:
            ids[:] = [_positional(i, ordinals) for i in ids]
        elif tuples and type(ids) is tuple:
            kwargs["device_ids"] = tuple(_positional(i, ordinals) for i in ids)
        return function(*args, **kwargs)

    return wrapper


def _wrap_all(owner: Any, names: tuple[str, ...]) -> None:
    for name in names:
        function = getattr(owner, name, None)
        if function:
            setattr(owner, name, moving(function))


def hccl(function: Callable) -> Callable:
    """``function`` with "nccl" replaced by "hccl" in its string arguments and ``backend=`` (and, from
    26.1 on, "cuda" by "npu": "cpu:gloo,cuda:nccl" is "cpu:gloo,npu:hccl")."""
    cuda_too = added_in("backend string cuda", release())

    def backend(value):
        if type(value) is not str:
            return value
        value = value.replace("nccl", "hccl")
        return value.replace("cuda", "npu") if cuda_too else value

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        args = tuple(backend(a) for a in args)
        if "backend" in kwargs:
            kwargs["backend"] = backend(kwargs["backend"])
        return function(*args, **kwargs)

    return wrapper


# ----------------------------------------------------------------------------- the patches


def _namespaces() -> None:
    for left, right in NAMESPACES:
        source = sys.modules.get(f"torch_npu.{right}")
        if source is None:
            continue
        target: Any = torch
        for part in left.split("."):
            target = getattr(target, part)
        # torch_npu copies the names of each module's __all__ (its submodules are not among them:
        # torch.cuda.amp stays the module that `from torch.cuda.amp import ...` reads, and is patched
        # next); the emulated modules have no __all__, their public names that are no modules stand in
        for name, value in list(vars(source).items()):
            if not name.startswith("_") and not isinstance(value, types.ModuleType):
                setattr(target, name, value)


def _profiler(torch_npu: types.ModuleType) -> None:
    import torch.profiler

    npu_profiler = torch_npu.profiler
    for name in ("profile", "schedule", "tensorboard_trace_handler", "ProfilerAction"):
        setattr(torch.profiler, name, getattr(npu_profiler, name))
    try:  # a pybind11 enum of torch's: torch_npu sets its members all the same
        torch.profiler.ProfilerActivity.CUDA = npu_profiler.ProfilerActivity.NPU  # type: ignore[misc]
        torch.profiler.ProfilerActivity.CPU = npu_profiler.ProfilerActivity.CPU  # type: ignore[misc]
    except (AttributeError, TypeError):
        pass
    profile = torch.profiler.profile
    npu_config = getattr(npu_profiler, "_ExperimentalConfig", None)

    @functools.wraps(profile)
    def profile_without_cuda_config(*args, **kwargs):
        config = kwargs.get("experimental_config")
        if "experimental_config" in kwargs and (npu_config is None or type(config) is not npu_config):
            warnings.warn(
                "experimental_config of torch.profiler.profile was dropped by transfer_to_npu: it is CUDA's; "
                "use torch_npu.profiler._ExperimentalConfig",
                stacklevel=2,
            )
            del kwargs["experimental_config"]
        return profile(*args, **kwargs)

    torch.profiler.profile = profile_without_cuda_config  # type: ignore[misc,assignment]  # as torch_npu does


class _Generator(torch.Generator):
    def __new__(cls, device="cpu"):
        return super().__new__(cls, _positional(device, False))


def _distributed() -> None:
    import torch.distributed as dist

    if not dist.is_available():
        return
    dist.init_process_group = hccl(dist.init_process_group)
    dist.is_nccl_available = dist.is_hccl_available  # type: ignore[attr-defined]  # (devices.py adds it)
    dist.ProcessGroup._get_backend = moving(dist.ProcessGroup._get_backend)  # type: ignore[method-assign]
    from torch.distributed.fsdp import fully_sharded_data_parallel as fsdp

    fsdp.FullyShardedDataParallel.__init__ = moving(fsdp.FullyShardedDataParallel.__init__)  # type: ignore[method-assign]
    dist.Backend.default_device_backend_map.pop("cuda", None)
    from torch.distributed import device_mesh

    device_mesh.init_device_mesh = moving(device_mesh.init_device_mesh)
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_new_group_with_tag"):
        c10d._new_group_with_tag = hccl(c10d._new_group_with_tag)


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import torch_npu.contrib.transfer_to_npu`` applies the migration, as the real module's import does."""

    NAME = "torch_npu.contrib.transfer_to_npu"

    def find_spec(self, fullname, path, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname == self.NAME else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        install(sys.modules["torch_npu"])


def watch(torch_npu: types.ModuleType) -> None:
    """Apply the migration at the program's first import of torch (or torch_npu) if the program has
    set TORCH_TRANSFER_TO_NPU=1 by then (runtime mode's switch, transplant/entry_points.py): on an NPU,
    PyTorch's autoload reads the variable at that import; here the emulated stack is in place before
    the program starts, so that import is watched instead (``builtins.__import__``, given back at
    once)."""
    import builtins

    original = builtins.__import__

    def watching(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "torch" or name.startswith(("torch.", "torch_npu"))):
            builtins.__import__ = original
            if requested():
                install(torch_npu)
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = watching


def install(torch_npu: types.ModuleType) -> None:
    """Apply the runtime migration (once per process; the emulated torch_npu must be complete)."""
    if getattr(install, "done", False):
        return
    install.done = True  # type: ignore[attr-defined]
    from . import strict

    strict.migrated()  # names the migration answers for are no CUDA use any more
    import torch.utils._device as device_context

    # the factories a device context gives its device, cached before they are wrapped, as torch_npu
    # does at its import: a wrapper is not among them, and `with torch.device("cuda")` would make CPU tensors
    device_context._device_constructors()
    _namespaces()
    _wrap_all(torch.cuda, CUDA_FUNCTIONS)
    cuda_device: Any = torch.cuda.device
    cuda_device.__init__ = moving(cuda_device.__init__)
    _profiler(torch_npu)
    _wrap_all(torch, TORCH_FUNCTIONS)
    storage: Any = torch.UntypedStorage
    storage.__new__ = moving(storage.__new__)
    torch.Generator = _Generator  # type: ignore[misc]
    _wrap_all(torch.Tensor, TENSOR_METHODS)
    from . import devices

    devices.PIN_MEMORY.add(torch.Tensor.pin_memory)  # the device mode still finds it (page-locking on the CPU)
    tensor: Any = torch.Tensor
    tensor.cuda = tensor.npu
    tensor.is_cuda = tensor.is_npu
    torch.cuda.DoubleTensor = torch_npu.npu.FloatTensor  # type: ignore[attr-defined]  # as torch_npu does
    if added_in("torch.cuda.default_generators", release()):
        torch.cuda.default_generators = torch_npu.npu.default_generators
    if added_in("TypedStorage.is_cuda", release()):
        typed: Any = torch.storage.TypedStorage
        typed.is_cuda = property(lambda self: self._untyped_storage.device.type == "npu")  # TypedStorage.is_npu
    _wrap_all(torch.nn.Module, MODULE_METHODS)
    module: Any = torch.nn.Module
    module.cuda = module.npu
    _distributed()
    graph = getattr(torch_npu.npu, "NPUGraph", None)
    if graph is not None:
        torch.cuda.CUDAGraph = graph  # type: ignore[misc]
    ddp: Any = torch.nn.parallel.DistributedDataParallel
    ddp.__init__ = moving(ddp.__init__)
    context: Any = device_context.DeviceContext
    context.__init__ = moving(context.__init__)
    warnings.warn(
        "torch.jit.script and torch.jit.script_method will be disabled by transfer_to_npu",
        RuntimeWarning,
        stacklevel=2,
    )
    torch.jit.script = lambda obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None: obj
    torch.jit.script_method = lambda fn: fn
    import torch.utils._triton as triton_utils

    triton_utils.has_triton = lambda: False  # type: ignore[assignment]
    from torch.nn import parameter

    allowed = parameter.UninitializedTensorMixin._allowed_methods  # type: ignore[attr-defined]  # (not exported)
    for i, method in enumerate(allowed):
        if getattr(method, "__name__", "") == "to":
            allowed[i] = torch.Tensor.to
            break
    print(
        f"transplant emulate: torch_npu's runtime migration (transfer_to_npu) is on (torch_npu {release()}): "
        "torch.cuda is torch_npu.npu",
        file=sys.stderr,
        flush=True,
    )
