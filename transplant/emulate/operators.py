"""torch_npu's own operators (``torch_npu.npu_*``: npu_fusion_attention, npu_rms_norm, ...) under emulate.

Their kernels exist only on an NPU, so they are not emulated. Libraries import them all the same
once torch_npu is installed (transformers' NPU flash-attention module runs ``from torch_npu import
npu_fusion_attention`` when it is imported, whichever attention the model uses), and a failing import
there would stop programs that never call one. So each operator that torch_npu exports at its top
level (rules/npu_support/torch_npu_public_names.txt) can be imported, and refuses by name when it is
used (coverage.NotEmulated). Any other unknown name stays an AttributeError. No torch import here.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..resources import rules_dir
from .coverage import NotEmulated

REASON = "an NPU operator: its kernel runs only on the NPU (use the PyTorch operation it fuses here)"
_OPERATOR = re.compile(r"torch_npu\.(npu_\w+)")


@lru_cache(maxsize=1)
def names() -> frozenset[str]:
    """The operators torch_npu exports at its top level (``npu_fusion_attention``, ...)."""
    text = (rules_dir() / "npu_support" / "torch_npu_public_names.txt").read_text(encoding="utf-8")
    return frozenset(m.group(1) for m in map(_OPERATOR.fullmatch, text.split()) if m)


def stub(name: str) -> NotEmulated | None:
    """What ``torch_npu.<name>`` is under emulate when nothing else provides it."""
    return NotEmulated(f"torch_npu.{name}", REASON) if name in names() else None
