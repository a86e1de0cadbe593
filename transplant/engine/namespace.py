"""The ``torch.cuda`` namespace as a whole: every reference to it is converted or reported.

The rule tables name the torch.cuda API transplant knows; torch's private CUDA bindings
(``torch._C._cuda_*``, ``torch._C._nccl_*``) count as part of the namespace. A name under ``torch.cuda`` that no rule
converts or reports (a newer API, a private helper, ``torch.cuda.nccl`` imported as a module, a
typo kept alive by ``try/except ImportError``) would otherwise pass through silently and fail on
the NPU machine. This module decides which qualified names those are and says what to do; the
handlers (references.py for uses, scopes.py for imports) make the records.
"""

from __future__ import annotations

from ..rules import RuleSet

NAMESPACE = "torch.cuda"
COUNTERPART = "torch_npu.npu"  # torch_npu's module of the same shape (in torch_npu's public names)
# torch's private CUDA and NCCL bindings (torch._C._cuda_getDeviceCount, torch._C._nccl_version, ...):
# CUDA-only by their name, whatever the function
PRIVATE = ("torch._C._cuda", "torch._C._nccl")


def in_namespace(qualified: str) -> bool:
    return qualified == NAMESPACE or qualified.startswith(NAMESPACE + ".") or _private(qualified)


def _private(qualified: str) -> bool:
    return qualified.startswith(PRIVATE) and "." not in qualified[len("torch._C.") :]


def unknown(rules: RuleSet, qualified: str) -> bool:
    """Is ``qualified`` under torch.cuda (or a private CUDA binding of torch._C) and named by no rule,
    neither itself nor as the module of names the rules know (``torch.cuda.amp`` is known through
    ``torch.cuda.amp.GradScaler``)?"""
    if not in_namespace(qualified) or qualified == NAMESPACE:
        return False
    if rules.new_name(qualified) is not None or qualified in rules.unsupported_q:
        return False
    return qualified not in rules.known_modules()


def message(qualified: str) -> str:
    if _private(qualified):
        return (
            f"{qualified}: a private CUDA binding of torch._C, with no torch_npu counterpart known; "
            f"use the public {COUNTERPART} API (device, memory, stream queries) or rewrite this code by hand"
        )
    if qualified == NAMESPACE:
        return (
            f"{NAMESPACE} used as a whole: what is done with it cannot be followed; "
            f"use {COUNTERPART}, which has the same functions"
        )
    return (
        f"{qualified}: not in transplant's torch.cuda table, so no torch_npu counterpart is known; "
        f"look for it in {COUNTERPART}, or rewrite this code by hand for NPU"
    )


def suggestion(qualified: str) -> str:
    """What to do about an unknown name under torch.cuda (every error says what to do)."""
    if qualified == NAMESPACE:
        return f"use {COUNTERPART} where the module is chosen (or torch.accelerator's device-neutral API)"
    return (
        f"look for the same name in {COUNTERPART} (torch_npu's public names); a private CUDA helper "
        "(CUDA graphs, NVTX, cuBLAS) has none: keep this step on the CUDA path and give NPU its own"
    )
