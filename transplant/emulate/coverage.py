"""The torch_npu names the built-in rules can emit that the emulator does not emulate, and why.

A script that uses one of them gets an EmulationError naming it when it calls or reads it (the
name exists, so imports still work). tests/test_emulate.py checks that every torch_npu name the
rules can emit is either provided by the emulated torch_npu or listed here. No torch import here.
"""

from __future__ import annotations

from . import EmulationError

_GRAPHS = "NPU graphs capture device work; the backing device does not replay it"
_ALLOCATOR = "custom allocators and memory pools belong to the NPU caching allocator"

NOT_EMULATED: dict[str, str] = {
    "torch_npu.npu.NPUGraph": _GRAPHS,
    "torch_npu.npu.graph": _GRAPHS,
    "torch_npu.npu.graph_pool_handle": _GRAPHS,
    "torch_npu.npu.make_graphed_callables": _GRAPHS,
    "torch_npu.npu.MemPool": _ALLOCATOR,
    "torch_npu.npu.NPUPluggableAllocator": _ALLOCATOR,
    "torch_npu.npu.use_mem_pool": _ALLOCATOR,
    "torch_npu.npu.change_current_allocator": _ALLOCATOR,
    "torch_npu.npu.caching_allocator_alloc": _ALLOCATOR,
    "torch_npu.npu.caching_allocator_delete": _ALLOCATOR,
    "torch_npu.npu.backends.fft_plan_cache": "the NPU FFT plan cache has no counterpart on the backing device",
    "torch_npu.npu.npurt": "the NPU runtime bindings exist only with the CANN runtime",
    "torch_npu.optim.NpuFusedLamb": "PyTorch has no LAMB optimizer to stand in for it",
    "torch_npu.contrib.module.FastSyncBatchNorm": "an NPU kernel; torch.nn.SyncBatchNorm is the portable form",
    "torch_npu.contrib.module.FusedColorJitter": "an NPU kernel; torchvision's ColorJitter is the portable form",
    "torch_npu.contrib.module.ModulatedDeformConv": "an NPU kernel; mmcv's ModulatedDeformConv2d is the portable form",
    "torch_npu.contrib.module.PSROIPool": "an NPU kernel; torchvision's PSRoIPool is the portable form",
    "torch_npu.contrib.module.ROIAlign": "an NPU kernel; torchvision's RoIAlign is the portable form",
    "torch_npu.utils.cpp_extension.NpuExtension": "building NPU operators needs the CANN toolkit",
}


class NotEmulated:
    """Stands for a name in NOT_EMULATED: importing it works, using it raises EmulationError."""

    def __init__(self, name: str, reason: str | None = None):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_reason", reason or NOT_EMULATED[name])

    def _refuse(self, *args, **kwargs):
        name, reason = object.__getattribute__(self, "_name"), object.__getattribute__(self, "_reason")
        raise EmulationError(f"{name} is not emulated: {reason}")

    __call__ = __enter__ = __iter__ = _refuse

    def __getattr__(self, attribute):
        self._refuse()

    def __setattr__(self, attribute, value):
        self._refuse()

    def __repr__(self) -> str:
        return f"<{object.__getattribute__(self, '_name')}: not emulated>"
