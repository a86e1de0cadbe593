"""``TORCH_NPU_FALLBACK_CPU_DISABLE=1`` under emulate: the operators torch_npu would run on the CPU
raise, as they do on an NPU (accuracy mode sets the variable in the converted entry file).

torch_npu reads the variable once (Ascend/pytorch ``torch_npu/csrc/framework/utils/CpuFallbackUtils.h``,
``CheckCpuFallbackAllowed``); with it at 1, an operator that would compute on the CPU raises before
it does: the dispatcher's fallback for operators with no NPU kernel
(``torch_npu/csrc/aten/VariableFallbackKernel.cpp``, ``npu_cpu_fallback``; torch_npu's own test
``test/npu/test_cpu_fallback_control.py`` uses ``aten::fmax.out``) and the explicit CPU kernels of
the sparse CSR reductions (``torch_npu/csrc/aten/ops/SparseCsrReductionFallbackKernelNpu.cpp``).
Emulate has no list of the operators without an NPU kernel, so it refuses only these, the ones
Ascend's sources name; any other operator runs as before.
"""

from __future__ import annotations

import os

ENV = "TORCH_NPU_FALLBACK_CPU_DISABLE"
CPU_FALLBACKS = frozenset(
    {
        "aten::fmax.out",  # dispatcher fallback: no NPU kernel
        "aten::_sparse_csr_sum.dim_dtype",  # explicit CPU kernels
        "aten::_sparse_csr_prod.dim_dtype",
    }
)
_named: dict[object, str | None] = {}  # operator -> its name when it is one of CPU_FALLBACKS


def may_refuse(op) -> bool:
    """Whether ``op`` is one of the operators refuse_cpu_fallback refuses (the kernel asks once)."""
    try:
        return op.name() in CPU_FALLBACKS
    except (AttributeError, TypeError):
        return False


def refuse_cpu_fallback(op) -> None:
    """Raise for an operator torch_npu would run on the CPU, when the variable forbids it (read at
    each such call: the entry file sets it after emulate has started)."""
    name = _named.get(op, "")
    if name == "":
        try:
            full = op.name()
        except (AttributeError, TypeError):
            full = None
        name = _named[op] = full if full in CPU_FALLBACKS else None
    if name is not None and os.environ.get(ENV) == "1":
        raise RuntimeError(
            f"transplant emulate: {name} has no NPU kernel in torch_npu, which computes it on the CPU; "
            f"{ENV}=1 forbids that (an NPU raises here too): unset it to allow the fallback"
        )
