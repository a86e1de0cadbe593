"""The emulated torch_npu.profiler, torch_npu.optim, torch_npu.contrib and torch_npu.utils.

The profiler is torch.profiler with the NPU activity read as the backing device's (CUDA, or
nothing more than the CPU activity), keeping the activities it was given for the program to read; the fused optimizers are torch.optim's optimizers of the same
algorithm; contrib modules with a torch equivalent are that module. Names without one are
NotEmulated (coverage.py). This module builds namespaces only.
"""

from __future__ import annotations

import enum
from typing import Any

import torch
import torch.autograd.profiler as autograd_profiler
import torch.profiler as torch_profiler

from .coverage import NotEmulated
from .devices import Backing
from .npu_api import module


def _profiler(backing: Backing) -> dict:
    class ProfilerActivity(enum.Enum):
        CPU = "CPU"
        NPU = "NPU"

    def activities_on_backing(activities):
        if activities is None:
            return None
        mapped = []
        for activity in activities:
            name = getattr(activity, "name", str(activity))
            if name == "CPU" or (name == "NPU" and backing.kind == "cpu"):  # NPU work is CPU work here
                mapped.append(torch_profiler.ProfilerActivity.CPU)
            elif name in ("NPU", "CUDA"):
                mapped.append(torch_profiler.ProfilerActivity.CUDA)
        return sorted(set(mapped), key=lambda a: a.name)

    class ExperimentalConfig(torch._C._profiler._ExperimentalConfig):
        """torch_npu.profiler._ExperimentalConfig: its options (profiler_level, aic_metrics, l2_cache,
        export_type, ...) are kept as torch_npu keeps them (``_profiler_level``, ..., ``record_op_args``)
        and mean nothing on the backing; to torch's profiler it is torch's default configuration."""

        def __init__(self, *args, **kwargs):
            super().__init__()
            for name, value in kwargs.items():
                setattr(self, name if name == "record_op_args" else f"_{name}", value)

    class profile(torch_profiler.profile):  # noqa: N801 - torch_npu's name
        def __init__(self, *, activities=None, experimental_config=None, **kwargs):
            # torch_npu keeps the configuration it is given, or a default one (torch_npu/profiler/profiler.py)
            config = ExperimentalConfig() if experimental_config is None else experimental_config
            torch_config = config if isinstance(config, torch._C._profiler._ExperimentalConfig) else None
            super().__init__(activities=activities_on_backing(activities), experimental_config=torch_config, **kwargs)
            self.experimental_config = config
            if activities is not None:
                self.activities = _Activities(activities, self.activities)

    def tensorboard_trace_handler(dir_name, worker_name=None, analyse_flag=True, async_mode=False):
        return torch_profiler.tensorboard_trace_handler(dir_name, worker_name)

    return dict(
        profile=profile,
        schedule=torch_profiler.schedule,
        ProfilerAction=torch_profiler.ProfilerAction,
        ProfilerActivity=ProfilerActivity,
        tensorboard_trace_handler=tensorboard_trace_handler,
        _ExperimentalConfig=ExperimentalConfig,
        record_function=torch_profiler.record_function,
    )


class _Activities(set):
    """A profiler's activities: the values the program gave (torch_npu.profiler.ProfilerActivity), as
    it reads them back; torch's own checks (``ProfilerActivity.CPU in self.activities``) also find the
    torch activities they stand for on the backing device."""

    def __init__(self, given, on_backing):
        super().__init__(given)
        self.on_backing = frozenset(on_backing)

    def __contains__(self, item):
        return set.__contains__(self, item) or item in self.on_backing


def _patch_autograd_profiler(backing: Backing) -> None:
    """torch.autograd.profiler.profile(use_device="npu"), as the rules write it, profiles the backing."""
    base: Any = autograd_profiler.profile

    class profile(base):  # noqa: N801 - torch's name
        def __init__(self, *args, use_device=None, **kwargs):
            if use_device == "npu":
                use_device = None if backing.kind == "cpu" else "cuda"
            super().__init__(*args, use_device=use_device, **kwargs)

    profile.__module__, profile.__qualname__ = base.__module__, base.__qualname__
    autograd_profiler.profile = profile  # type: ignore[misc]  # the emulator replaces torch's own


def _named(base: type, name: str) -> type:
    return type(name, (base,), {"__doc__": f"torch_npu.optim.{name}, emulated by {base.__module__}.{base.__name__}"})


def build(backing: Backing) -> dict:
    """The modules torch_npu.profiler, .optim, .contrib(.module), .utils(.cpp_extension) by name."""
    _patch_autograd_profiler(backing)
    optim = torch.optim
    optimizers: dict[str, Any] = {
        name: _named(base, name)
        for name, base in (
            ("NpuFusedSGD", optim.SGD),
            ("NpuFusedAdam", optim.Adam),
            ("NpuFusedAdamW", optim.AdamW),
            ("NpuFusedAdadelta", optim.Adadelta),
            ("NpuFusedRMSprop", optim.RMSprop),
        )
    }
    optimizers["NpuFusedLamb"] = NotEmulated("torch_npu.optim.NpuFusedLamb")
    contrib_modules: dict[str, Any] = {
        name: NotEmulated(f"torch_npu.contrib.module.{name}")
        for name in ("FastSyncBatchNorm", "FusedColorJitter", "ModulatedDeformConv", "PSROIPool", "ROIAlign")
    }
    contrib_modules.update(Mish=torch.nn.Mish, SiLU=torch.nn.SiLU)
    contrib_module = module("torch_npu.contrib.module", "NPU modules: torch's where it has them", **contrib_modules)
    cpp_extension = module(
        "torch_npu.utils.cpp_extension",
        "NPU operator builds (not emulated)",
        NpuExtension=NotEmulated("torch_npu.utils.cpp_extension.NpuExtension"),
    )
    return {
        "torch_npu.profiler": module(
            "torch_npu.profiler", "torch.profiler on the backing device", **_profiler(backing)
        ),
        "torch_npu.optim": module("torch_npu.optim", "fused NPU optimizers: torch.optim's", **optimizers),
        # a package, so that its transfer_to_npu is found when imported (transfer.Finder)
        "torch_npu.contrib": module("torch_npu.contrib", "", module=contrib_module, __path__=[]),
        "torch_npu.contrib.module": contrib_module,
        "torch_npu.utils": module(
            "torch_npu.utils", "", cpp_extension=cpp_extension, get_cann_version=lambda module="CANN": "emulated"
        ),
        "torch_npu.utils.cpp_extension": cpp_extension,
    }
