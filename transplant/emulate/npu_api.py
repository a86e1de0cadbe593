"""The emulated ``torch_npu.npu`` namespace: devices, streams, events, memory statistics, seeds, amp.

Each name behaves as the backing device does. On the CPU, without device identity, there is one
device however many NPUs the script addresses (the NPU it selects is remembered and reported back);
with it, there are as many as npus.py counts and an id outside them is an error; streams and events run
in order at once (events time with the host clock), the memory statistics are zeros without
device identity (the CPU allocator keeps none) and with it count the NPU tensors (memory.py), and
the NPU random generator is the CPU's. With a CUDA backing the names
forward to ``torch.cuda``. This module builds namespaces only; devices.py owns "npu" as a device.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
import warnings
import types
from typing import Any

import torch

from . import npus, properties
from .coverage import NOT_EMULATED, NotEmulated
from .devices import Backing

_ZERO = (
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
)
_RESET = (
    "empty_cache",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_peak_host_memory_stats",
    "reset_accumulated_host_memory_stats",
    "set_per_process_memory_fraction",
    "ipc_collect",
    "synchronize",
    "init",
    "set_sync_debug_mode",
)
_SEEDS = (
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
)
_MEMORY = (
    *_ZERO,
    "empty_cache",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_peak_host_memory_stats",
    "reset_accumulated_host_memory_stats",
    "set_per_process_memory_fraction",
    "get_per_process_memory_fraction",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_snapshot",
    "memory_summary",
    "host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "get_allocator_backend",
    "mem_get_info",
    "MemPool",
    "NPUPluggableAllocator",
    "use_mem_pool",
    "change_current_allocator",
    "caching_allocator_alloc",
    "caching_allocator_delete",
)
_TENSOR_TYPES = ("Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")


def _cpu_api(backing: Backing) -> dict:
    """torch_npu.npu functions for the CPU backing."""

    def set_device(device):
        # with device identity an id must name one of the NPUs; without, one device stands for all
        npus.select(device if isinstance(device, int) else (torch.device(device).index or 0), backing.identity)

    @contextlib.contextmanager
    def device(index):
        before = npus.current()
        if index is not None and index != -1:
            set_device(index)
        try:
            yield
        finally:
            npus.select(before, False)

    def device_of(tensor):
        return device(tensor.device.index if tensor.device.type == "npu" else None)

    generator = torch.default_generator  # the NPU generator is the CPU's (torch.manual_seed seeds it too)

    def manual_seed(seed):
        generator.manual_seed(int(seed))

    def seed():
        generator.seed()

    def get_rng_state(device="npu"):
        return torch.get_rng_state()

    def set_rng_state(state, device="npu"):
        torch.set_rng_state(state)

    api: dict[str, Any] = {name_: (lambda *args, **kwargs: 0) for name_ in _ZERO}
    api.update({name_: (lambda *args, **kwargs: None) for name_ in _RESET})
    api.update(
        is_available=lambda: True,
        is_initialized=lambda: True,
        device_count=lambda: backing.count(),
        current_device=npus.current,
        set_device=set_device,
        device=device,
        device_of=device_of,
        get_device_capability=device_capability,
        can_device_access_peer=lambda device, peer: True,
        utilization=lambda device=None: 0,
        is_bf16_supported=lambda *args: True,
        get_sync_debug_mode=lambda: 0,
        current_blas_handle=lambda: 0,
        get_per_process_memory_fraction=lambda device=None: 1.0,
        get_allocator_backend=lambda: "native",
        memory_stats=lambda device=None: {},
        memory_stats_as_nested_dict=lambda device=None: {},
        host_memory_stats=lambda: {},
        host_memory_stats_as_nested_dict=lambda: {},
        memory_snapshot=lambda: [],
        memory_summary=lambda device=None, abbreviated=False: "emulated NPU on the CPU: no memory statistics\n",
        manual_seed=manual_seed,
        manual_seed_all=manual_seed,
        seed=seed,
        seed_all=seed,
        initial_seed=lambda: generator.initial_seed(),
        _is_in_bad_fork=lambda: False,
        get_rng_state=get_rng_state,
        set_rng_state=set_rng_state,
        get_rng_state_all=lambda: [torch.get_rng_state()],
        set_rng_state_all=lambda states: set_rng_state(states[0]),
        default_generators=(torch.default_generator,),
        is_current_stream_capturing=lambda: False,
    )
    api.update(_cpu_streams())
    api.update(properties.build("cpu", backing.count, backing.identity, backing.device))
    if backing.identity:  # the bytes of live NPU tensors, as torch_npu's allocator counts them
        from . import memory

        api.update(memory.api())
    return api


_PRIVATEUSE1 = 20  # c10::DeviceType::PrivateUse1, the device type "npu" names


def _cpu_streams() -> dict:
    class Event:
        """An NPU event on the CPU: work is done when it is recorded; timing uses the host clock."""

        npu_event = 0

        def __init__(self, enable_timing=False, blocking=False, interprocess=False):
            self.enable_timing, self._time = enable_timing, None

        def record(self, stream=None):
            self._time = time.perf_counter()

        def elapsed_time(self, end_event):
            if not (self.enable_timing and end_event.enable_timing):
                raise RuntimeError("Events were not created with enable_timing=True")
            return (end_event._time - self._time) * 1000.0

        def query(self):
            return True

        def synchronize(self):
            pass

        def wait(self, stream=None):
            pass

    ids = itertools.count()

    class Stream(torch.Stream):
        """An NPU stream on the CPU: everything runs in order, at once. A ``torch.Stream`` of the NPU
        (``stream.device`` is an NPU, as torch_npu's streams are torch.Stream's): torch's own code
        takes it (``Tensor.record_stream``, dynamo's current-stream source reads its device)."""

        npu_stream = 0

        def __new__(cls, device=None, priority=0, **kwargs):
            if isinstance(device, torch.device) and device.index is not None:
                index = device.index
            elif isinstance(device, (str, torch.device)):
                index = torch.device(device).index
            else:
                index = device
            if index is None:
                index = npus.current()
            return super().__new__(cls, stream_id=next(ids), device_index=index, device_type=_PRIVATEUSE1)

        def __init__(self, device=None, priority=0, **kwargs):
            self.priority = priority

        def query(self):
            return True

        def synchronize(self):
            pass

        def wait_event(self, event):
            pass

        def wait_stream(self, stream):
            pass

        def record_event(self, event=None):
            event = event or Event()
            event.record(self)
            return event

    class ExternalStream(Stream):
        def __new__(cls, stream_ptr, device=None, **kwargs):
            return Stream.__new__(cls, device)

        def __init__(self, stream_ptr, device=None, **kwargs):
            super().__init__(device)

    default = Stream()
    current = {"stream": default}

    @contextlib.contextmanager
    def stream(value):
        before = current["stream"]
        current["stream"] = value if value is not None else before
        try:
            yield
        finally:
            current["stream"] = before

    def set_stream(value):
        current["stream"] = value

    return dict(
        Event=Event,
        Stream=Stream,
        ExternalStream=ExternalStream,
        StreamContext=stream,
        stream=stream,
        set_stream=set_stream,
        current_stream=lambda device=None: current["stream"],
        default_stream=lambda device=None: default,
    )


_CAPABILITY = re.compile(r"(\d+)\.(\d+)")


def device_capability(device=None) -> tuple[int, int] | None:
    """torch_npu's answer (torch_npu/npu/utils.py, get_device_capability; the environment variable
    TORCH_NPU_DEVICE_CAPABILITY in Ascend's environment variable reference): None, with a warning,
    unless TORCH_NPU_DEVICE_CAPABILITY is "major.minor" (non-negative integers), then (major, minor);
    it says nothing about the hardware. The device argument is not read."""
    value = os.environ.get("TORCH_NPU_DEVICE_CAPABILITY")
    if not value:
        warnings.warn(
            "get_device_capability is None on an NPU unless TORCH_NPU_DEVICE_CAPABILITY is set (torch_npu)",
            stacklevel=2,
        )
        return None
    match = _CAPABILITY.fullmatch(value)
    if match is None:
        warnings.warn(f"TORCH_NPU_DEVICE_CAPABILITY={value!r} is not major.minor: None (torch_npu)", stacklevel=2)
        return None
    return int(match.group(1)), int(match.group(2))


def _cuda_api(backing: Backing) -> dict:
    """torch_npu.npu functions for a CUDA backing: torch.cuda's, with NPU ids read as GPU ids."""
    cuda = torch.cuda

    def on_gpu(function):
        def call(*args, **kwargs):
            args = [
                backing.device(a) if isinstance(a, int) and not isinstance(a, bool) and a >= 0 else backing.translate(a)
                for a in args
            ]
            kwargs = {k: backing.translate(v) for k, v in kwargs.items()}
            return function(*args, **kwargs)

        call.__name__ = call.__qualname__ = function.__name__
        return call

    class Stream(cuda.Stream):
        npu_stream = property(lambda self: self.cuda_stream)

    class Event(cuda.Event):
        npu_event = property(lambda self: self.cuda_event)

    class ExternalStream(cuda.ExternalStream):
        npu_stream = property(lambda self: self.cuda_stream)

    names = (
        "is_available",
        "is_initialized",
        "device_count",
        "current_device",
        "set_device",
        "device",
        "device_of",
        "get_device_name",
        "get_device_properties",
        "get_device_capability",
        "can_device_access_peer",
        "utilization",
        "is_bf16_supported",
        "get_sync_debug_mode",
        "current_blas_handle",
        "StreamContext",
        "stream",
        "set_stream",
        "current_stream",
        "default_stream",
        "default_generators",
        "is_current_stream_capturing",
        *_ZERO,
        *_RESET,
        *_SEEDS,
        *_MEMORY,
    )
    api = {name: getattr(cuda, name) for name in names if name not in NOT_EMULATED and hasattr(cuda, name)}
    api.update({name: on_gpu(api[name]) for name in ("set_device", "device", "synchronize") if name in api})
    api.update(Stream=Stream, Event=Event, ExternalStream=ExternalStream, get_device_capability=device_capability)
    api.update(properties.build("cuda", backing.count, backing.identity, backing.device))
    return api


def _amp(backing: Backing) -> dict:
    kind = backing.device_type("npu")

    def autocast(enabled=True, dtype=None, cache_enabled=True):
        return torch.autocast(kind, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(torch.amp.GradScaler):
        def __init__(
            self,
            init_scale=2.0**16,
            growth_factor=2.0,
            backoff_factor=0.5,
            growth_interval=2000,
            enabled=True,
            dynamic=True,
        ):
            super().__init__(kind, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    def custom_fwd(fwd=None, *, cast_inputs=None):
        return torch.amp.custom_fwd(fwd, device_type=kind, cast_inputs=cast_inputs)

    def custom_bwd(bwd=None):
        return torch.amp.custom_bwd(bwd, device_type=kind)

    return dict(autocast=autocast, GradScaler=GradScaler, custom_fwd=custom_fwd, custom_bwd=custom_bwd)


def module(name: str, doc: str, **members) -> types.ModuleType:
    """A module of the emulated torch_npu; a name it lacks is an AttributeError saying so."""
    made = types.ModuleType(name, doc)
    made.__dict__.update(members)

    def __getattr__(attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise AttributeError(
            f"{name}.{attribute} is not emulated (transplant emulate provides the torch_npu "
            "names transplant's rules write, plus the device, stream, memory and amp APIs)"
        )

    vars(made)["__getattr__"] = __getattr__  # a module's __getattr__ (PEP 562) is looked up in its namespace
    return made


def build(backing: Backing) -> dict[str, types.ModuleType]:
    """The modules torch_npu.npu and below, by qualified name."""
    api = _cpu_api(backing) if backing.kind == "cpu" else _cuda_api(backing)
    amp_api = _amp(backing)
    kind = backing.device_type("npu")
    api.update(
        get_autocast_dtype=lambda: torch.get_autocast_dtype(kind),
        is_autocast_enabled=lambda: torch.is_autocast_enabled(kind),
        set_autocast_dtype=lambda dtype: torch.set_autocast_dtype(kind, dtype),
        get_amp_supported_dtype=lambda: [torch.float16, torch.bfloat16],
        matmul=types.SimpleNamespace(allow_hf32=False),
        conv=types.SimpleNamespace(allow_hf32=True),
    )
    for type_name in _TENSOR_TYPES:
        api[f"{type_name}Tensor"] = getattr(torch if kind == "cpu" else torch.cuda, f"{type_name}Tensor")
        api[f"{type_name}Storage"] = getattr(torch, f"{type_name}Storage")
    for qualified in NOT_EMULATED:
        if qualified.startswith("torch_npu.npu.") and qualified.count(".") == 2:
            api[qualified.rsplit(".", 1)[1]] = NotEmulated(qualified)

    def mark(message="", stream=None, domain="default"):
        pass

    class annotate(contextlib.ContextDecorator):  # noqa: N801 - torch_npu's name
        def __init__(self, message="", stream=None, domain="default"):
            self.message = message

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def sub(name, doc, names):
        return module(f"torch_npu.npu.{name}", doc, **{n: api[n] for n in names if n in api})

    amp = module("torch_npu.npu.amp", "mixed precision on the backing device", **amp_api)
    modules = {
        "torch_npu.npu.amp": amp,
        "torch_npu.npu.amp.autocast_mode": module("torch_npu.npu.amp.autocast_mode", "", **amp_api),
        "torch_npu.npu.amp.grad_scaler": module("torch_npu.npu.amp.grad_scaler", "", GradScaler=amp_api["GradScaler"]),
        "torch_npu.npu.amp.common": module("torch_npu.npu.amp.common", "", amp_definitely_not_available=lambda: False),
        "torch_npu.npu.memory": sub("memory", "memory statistics of the backing device", _MEMORY),
        "torch_npu.npu.random": sub("random", "the NPU random generator is the backing device's", _SEEDS),
        "torch_npu.npu.streams": sub("streams", "streams and events", ("Stream", "Event", "ExternalStream")),
        "torch_npu.npu.graphs": sub(
            "graphs",
            "NPU graphs (not emulated)",
            ("NPUGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing"),
        ),
        "torch_npu.npu.mstx": module(
            "torch_npu.npu.mstx",
            "NPU trace markers: no effect",
            mark=mark,
            range_start=lambda message="", stream=None, domain="default": 0,
            range_end=lambda range_id, domain="default": None,
            annotate=annotate,
        ),
        "torch_npu.npu.backends": module(
            "torch_npu.npu.backends", "", fft_plan_cache=NotEmulated("torch_npu.npu.backends.fft_plan_cache")
        ),
    }
    for qualified, made in modules.items():
        api[qualified.rsplit(".", 1)[1]] = made
    modules["torch_npu.npu"] = module("torch_npu.npu", "torch_npu.npu emulated on the " + kind, **api)
    return modules
