""" "npu" as a device name in an emulated process, backed by the CPU or a CUDA GPU.

How: torch's PrivateUse1 device type is renamed "npu" (``torch.utils.rename_privateuse1_backend``),
so ``torch.device("npu:1")`` is a real torch.device of type "npu" with index 1, as it is with
torch_npu, and parses wherever torch parses devices. Under device identity NPU tensors are tensors of
that device (identity.py), and plain emulate runs no device mode (entries.py does its jobs);
with --strict or --no-device-identity, a
``TorchFunctionMode``, entered in the main thread and in every thread started later, sees every torch
function and tensor method call (factories, ``.to``, ``.new_*``, ``_parse_to`` under ``Module.to``,
...) and replaces each npu device argument (a torch.device or a string "npu"/"npu:N") by the
backing device. The few APIs that take a device type but are not torch functions (autocast,
GradScaler, custom_fwd/custom_bwd, torch.load, the process group, DistributedDataParallel) are
wrapped here. Tensors report where they really are (``x.device`` is the backing device).

This module must not decide what counts as a CUDA use (strict.py does) nor build torch_npu
(npu_api.py, extras.py).
"""

from __future__ import annotations

import functools
import re
import sys
import threading
import types
from typing import Any

import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode

from . import generators, npus

NPU = "npu"
_NPU_DEVICE = re.compile(r"npu(?::(\d+))?\Z")
_LEGACY_TYPE = re.compile(r"torch\.npu\.(\w+Tensor)\Z")  # x.type("torch.npu.HalfTensor")


class Backing:
    """The device the emulated NPUs are: "cpu" (one device, however many NPUs) or "cuda"."""

    def __init__(self, kind: str, identity: bool = False):
        self.kind = kind
        self.identity = identity  # --device-identity: npu devices stay npu devices (identity.py computes)
        self.active = False  # npu devices mean something only once torch_npu is imported, as on an NPU
        self.modeless = False  # no device mode: its jobs are entries.py's (plain emulate under device identity)

    def count(self) -> int:
        """How many NPUs: with device identity, as many as npus.py says; without, the GPUs or one."""
        if self.identity:
            return npus.count()
        return max(torch.cuda.device_count(), 1) if self.kind == "cuda" else 1

    def device(self, index: int | None = None) -> torch.device:
        if self.kind == "cpu":
            return torch.device("cpu")
        # NPU n is GPU n modulo the GPUs there are, so a launch on NPUs 3,5 runs on one GPU too
        return (
            torch.device("cuda") if index is None else torch.device("cuda", index % max(torch.cuda.device_count(), 1))
        )

    def translate(self, value):
        """``value`` with an npu device (object or string) replaced by the backing device."""
        if not self.active or self.identity:
            return value
        if isinstance(value, torch.device):
            return self.device(value.index) if value.type == NPU else value
        if isinstance(value, str) and value.startswith(("npu", "torch.npu.")):
            match = _NPU_DEVICE.match(value)
            if match:  # a string stays a string ("cpu", "cuda:1"): some APIs take device type names
                return str(self.device(int(match.group(1)) if match.group(1) else None))
            match = _LEGACY_TYPE.match(value)
            if match:
                return f"torch.{match.group(1)}" if self.kind == "cpu" else f"torch.cuda.{match.group(1)}"
        return value

    def ordinals(self, func, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Integer devices as torch_npu makes them: with torch_npu imported, PyTorch (>= 2.1) takes a
        bare ordinal (``x.to(0)``, ``device=0``) as a device of the PrivateUse1 backend, the NPU."""

        def ordinal(value) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        if self.identity:  # torch itself reads ordinals as PrivateUse1 devices; "npu" is the selected NPU
            return npus.name_selected(args, kwargs, func in _TO_METHODS or func is _PARSE_TO)

        if ordinal(kwargs.get("device")):
            kwargs = {**kwargs, "device": self.device(kwargs["device"])}
        if func in _TO_METHODS and len(args) > 1 and ordinal(args[1]):
            args = (args[0], self.device(args[1]), *args[2:])
        return args, kwargs

    def device_type(self, value):
        """A device type argument ("npu" for autocast, GradScaler, ...) as the backing's type."""
        return self.kind if value == NPU and not self.identity else value

    def backend(self, value):
        """A process group backend string with hccl as the backing's collective library."""
        if not isinstance(value, str):
            return value
        value = re.sub(r"\bhccl\b", "gloo" if self.kind == "cpu" else "nccl", value)
        value = re.sub(r"\bnpu:", f"{self.kind}:", value)
        pairs = [part.split(":", 1) for part in value.split(",")]
        if len(pairs) > 1 and all(len(pair) == 2 for pair in pairs):
            backends = {backend.strip() for _, backend in pairs}
            if len(backends) == 1:  # "cpu:gloo,npu:hccl" on the CPU: one library for every device
                return backends.pop()
            kept = {device.strip(): backend.strip() for device, backend in reversed(pairs)}  # (the first wins)
            return ",".join(f"{device}:{backend}" for device, backend in reversed(list(kept.items())))
        return value


class NpuDeviceMode(TorchFunctionMode):
    """Translates npu devices in the arguments of every torch call; ``check`` sees the call first."""

    def __init__(self, backing: Backing, check=None):
        super().__init__()
        self.backing, self.check = backing, check
        # a check that only looks at calls with keyword arguments, a device among the positional ones,
        # or a .to: the summary's (without --strict); other calls skip it
        self.devices_only = getattr(check, "devices_only", False)
        self.sees_all = check is not None and not self.devices_only  # --strict's check sees every call

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if _COMPILER._is_compiling_flag:
            # TorchDynamo traces the modes on the stack (torch._dynamo.export, torch.compile's capture):
            # the calls it captures are the graph's, run later; here they go on as they are (dynamo
            # cannot trace the checks below: it cannot hash a builtin to look it up in a set)
            return func(*args, **(kwargs or {}))
        backing = self.backing
        if not kwargs and backing.active and not self.sees_all:
            # most calls of a program (a bigram model's loop is made of them): no keyword, no device
            # or string among the arguments, none of the calls handled below. Nothing to translate or
            # count, so they go straight on (what follows would do the same, with or without device
            # identity: translate and ordinals change only devices, strings and .to's arguments)
            for value in args:
                kind = value.__class__
                if kind is str or kind is torch.device:
                    break
            else:
                if func not in _HANDLED and func not in PIN_MEMORY:
                    return func(*args)
        kwargs = kwargs or {}
        names = None
        if self.check is not None:
            if self.devices_only:
                names = _names_a_device(args)
                if names or kwargs or func in _TO_CALLS:
                    self.check(func, args, kwargs)
            else:
                self.check(func, args, kwargs)
        backing = self.backing
        if backing.identity and backing.active and func is not torch.device:
            # NPU tensors: only "npu" without an index is read (as the selected NPU); most calls name
            # no device, and this path is every torch call's cost (a bigram model's loop is made of them)
            if "device" in kwargs or (_names_a_device(args) if names is None else names):
                args, kwargs = npus.name_selected(args, kwargs, func in _TO_METHODS or func is _PARSE_TO)
            if "generator" in kwargs:
                generators.check_call(func, args, kwargs)
            if backing.kind == "cpu":
                if func in PIN_MEMORY:
                    return args[0]
                if func is _IS_PINNED:
                    return False
                if kwargs.get("pin_memory"):
                    kwargs = {**kwargs, "pin_memory": False}
            return func(*args, **kwargs)
        if func is not torch.device:  # torch.device("npu") stays an npu device
            translate = self.backing.translate
            args = tuple(translate(a) for a in args)
            kwargs = {k: translate(v) for k, v in kwargs.items()}
            if self.backing.active:
                args, kwargs = self.backing.ordinals(func, args, kwargs)
            if self.backing.active and self.backing.kind == "cpu":
                # page-locked memory is for copies to a device; with the CPU as the NPU there are none
                if func in PIN_MEMORY:
                    return args[0]
                if func is _IS_PINNED:
                    return False
                if kwargs.get("pin_memory"):
                    kwargs["pin_memory"] = False
        return func(*args, **kwargs)


def _names_a_device(args: tuple) -> bool:
    for value in args:
        if value.__class__ is str or value.__class__ is torch.device:
            return True
    return False


_IS_PINNED = torch.Tensor.is_pinned
# torch.compiler.is_compiling()'s flag, read without its two calls (this is every torch call's path):
# True only while TorchDynamo (or export) traces, and a constant there
_COMPILER: Any = (
    torch.compiler if hasattr(torch.compiler, "_is_compiling_flag") else types.SimpleNamespace(_is_compiling_flag=False)
)
# Tensor.pin_memory as torch dispatches it: under the name it has on Tensor, so also the runtime
# migration's wrapper of it (transfer.py adds it)
PIN_MEMORY = {torch.Tensor.pin_memory}
_TO_METHODS = (torch.Tensor.to,)
_PARSE_TO = torch._C._nn._parse_to
_TO_CALLS = (torch.Tensor.to, _PARSE_TO)
# the calls the device mode does something with even without a keyword or a device among their
# arguments (PIN_MEMORY too, which transfer.py adds to)
_HANDLED = frozenset({*_TO_CALLS, _IS_PINNED, torch.device})


def enter_mode(backing: Backing, check=None) -> None:
    """Enter the device mode now and at the start of every thread started later (torch keeps its
    function-mode stack per thread). It translates nothing until install() is called."""
    make_mode = functools.partial(NpuDeviceMode, backing, check)
    make_mode().__enter__()
    bootstrap = getattr(threading.Thread, "_bootstrap_inner", None)  # CPython's start of every thread
    if bootstrap is None:
        return

    @functools.wraps(bootstrap)
    def bootstrap_in_mode(self):
        with make_mode():
            bootstrap(self)

    threading.Thread._bootstrap_inner = bootstrap_in_mode  # type: ignore[attr-defined]  # (private: not in the stubs)


def _index(device) -> int | None:
    if device is None or isinstance(device, int):
        return device
    device = torch.device(device)
    return device.index


def install(backing: Backing) -> None:
    """Make "npu" a device name in this process, backed by ``backing``: on ``import torch_npu``,
    after enter_mode(). Call once."""
    torch.utils.rename_privateuse1_backend(NPU)
    backing.active = True
    _accelerator(backing)
    if backing.identity:
        from . import autocast, composites, identity, loading

        identity.install(backing.device())
        autocast.install(backing.kind)  # autocast on "npu", as the backing's
        torch.load = loading.onto_npu(torch.load)  # map_location="npu": loaded on the backing, then moved
        generators.install()  # torch.Generator("npu")
        composites.install(whole=backing.kind == "cpu")  # LSTM, GRU, their cells, attention: as the backing runs them
        if backing.modeless:
            from . import entries

            entries.install(backing)
    else:
        _methods(backing)
    _amp(backing)
    _loading(backing)
    _distributed(backing)


def _accelerator(backing: Backing) -> None:
    """torch's C++ side as without the emulation: renaming PrivateUse1 makes it take "npu" for this
    machine's accelerator, and the process group's default backend and barrier would look for npu
    collectives. torch.accelerator itself answers as on an NPU host (accelerator.py)."""

    def accelerator(check: bool = False) -> torch.device:  # used by dist.barrier, FSDP, ...
        return torch.device(backing.kind)

    torch._C._get_accelerator = accelerator


def _methods(backing: Backing) -> None:
    def tensor_npu(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        index = _index(device)  # an npu device, which the mode translates (and the summary counts)
        return self.to(
            torch.device(NPU) if index is None else torch.device(NPU, index),
            non_blocking=non_blocking,
            memory_format=memory_format,
        )

    def module_npu(self, device=None):
        return self._apply(lambda t: tensor_npu(t, device))

    torch.Tensor.npu = tensor_npu  # type: ignore[attr-defined]  # (torch_npu adds these)
    torch.Tensor.is_npu = property(  # type: ignore[attr-defined]
        lambda self: self.device.type == backing.kind,
        doc="True when the tensor is on the device that backs the emulated NPUs",
    )
    torch.nn.Module.npu = module_npu  # type: ignore[attr-defined]
    base_generator: Any = torch.Generator

    class Generator(base_generator, metaclass=generators.Meta):  # torch's generators stay torch.Generator's
        def __new__(cls, device="cpu"):
            return base_generator.__new__(cls, backing.translate(device))

        def __init__(self, device="cpu"):
            pass

    Generator.__module__, Generator.__qualname__ = base_generator.__module__, base_generator.__qualname__
    torch.Generator = Generator  # type: ignore[misc]  # the emulator replaces torch's own


def _amp(backing: Backing) -> None:
    base_autocast: Any = torch.amp.autocast_mode.autocast

    class autocast(base_autocast):  # noqa: N801 - torch's name
        def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
            super().__init__(backing.device_type(device_type), dtype, enabled, cache_enabled)

    base_scaler: Any = torch.amp.grad_scaler.GradScaler

    class GradScaler(base_scaler):
        def __init__(self, device="cuda", *args, **kwargs):
            super().__init__(backing.device_type(device), *args, **kwargs)

    for name in ("__module__", "__qualname__", "__doc__"):
        setattr(autocast, name, getattr(base_autocast, name))
        setattr(GradScaler, name, getattr(base_scaler, name))
    torch.autocast = torch.amp.autocast = torch.amp.autocast_mode.autocast = autocast  # type: ignore[misc]
    torch.amp.GradScaler = torch.amp.grad_scaler.GradScaler = GradScaler  # type: ignore[misc]

    def with_device_type(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if "device_type" in kwargs:
                kwargs["device_type"] = backing.device_type(kwargs["device_type"])
            if args and isinstance(args[0], str):
                args = (backing.device_type(args[0]), *args[1:])
            return function(*args, **kwargs)

        return wrapper

    for module, names in (
        (torch.amp, ("custom_fwd", "custom_bwd")),
        (torch, ("is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype", "set_autocast_enabled")),
    ):
        for name in names:
            setattr(module, name, with_device_type(getattr(module, name)))
    torch.amp.autocast_mode.custom_fwd, torch.amp.autocast_mode.custom_bwd = torch.amp.custom_fwd, torch.amp.custom_bwd


def _loading(backing: Backing) -> None:
    load = torch.load

    def translate_location(location):
        if isinstance(location, dict):
            return {key: backing.translate(value) for key, value in location.items()}
        return backing.translate(location)

    @functools.wraps(load)
    def load_on_backing(*args, **kwargs):
        if "map_location" in kwargs:
            kwargs["map_location"] = translate_location(kwargs["map_location"])
        elif len(args) > 1:
            args = (args[0], translate_location(args[1]), *args[2:])
        return load(*args, **kwargs)

    torch.load = load_on_backing

    set_default_device = torch.set_default_device
    torch.set_default_device = functools.wraps(set_default_device)(
        lambda device: set_default_device(backing.translate(device))
    )


def _distributed(backing: Backing) -> None:
    if not dist.is_available():
        return
    if backing.identity:  # the collectives of the emulated hccl take NPU tensors
        from . import collectives

        collectives.install()
    init = dist.init_process_group

    @functools.wraps(init)
    def init_process_group(backend=None, *args, **kwargs):
        if "device_id" in kwargs:  # gloo takes no device; a GPU keeps its index
            kwargs["device_id"] = None if backing.kind == "cpu" else backing.translate(kwargs["device_id"])
        init(backing.backend(backend), *args, **kwargs)
        npu = sys.modules.get("torch_npu.npu")
        where = f", NPU {npu.current_device()}" if npu is not None else ""
        print(
            f"transplant emulate: process group {backend or 'default'} as {dist.get_backend()}: "
            f"rank {dist.get_rank()} of {dist.get_world_size()}{where}",
            file=sys.stderr,
            flush=True,
        )

    new_group = dist.new_group

    @functools.wraps(new_group)
    def new_group_on_backing(*args, **kwargs):
        if "backend" in kwargs:
            kwargs["backend"] = backing.backend(kwargs["backend"])
        elif len(args) > 2:
            args = (*args[:2], backing.backend(args[2]), *args[3:])
        return new_group(*args, **kwargs)

    dist.init_process_group, dist.new_group = init_process_group, new_group_on_backing
    dist.is_hccl_available = lambda: True  # type: ignore[attr-defined]  # (torch_npu adds it)
    base_ddp: Any = torch.nn.parallel.DistributedDataParallel

    class DistributedDataParallel(base_ddp):
        def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
            if backing.identity and any(p.device.type == NPU for p in module.parameters()):
                pass  # an NPU module: DDP reads the ids as on an NPU (inputs go to device_ids[0])
            elif backing.kind == "cpu":  # a CPU module takes no device ids
                device_ids = output_device = None
            else:
                device_ids = None if device_ids is None else [_gpu(backing, d) for d in device_ids]
                output_device = None if output_device is None else _gpu(backing, output_device)
            super().__init__(module, device_ids, output_device, *args, **kwargs)

    DistributedDataParallel.__module__ = base_ddp.__module__
    DistributedDataParallel.__qualname__ = base_ddp.__qualname__
    torch.nn.parallel.DistributedDataParallel = DistributedDataParallel  # type: ignore[misc]


def _gpu(backing: Backing, device):
    """An NPU id or device given to DistributedDataParallel, as the GPU that backs it."""
    if isinstance(device, int):
        return backing.device(device)
    return backing.translate(device)
