"""torch_npu as `transplant emulate` gives it: the NPU software stack emulated on the backing device.

This folder is put on the module search path only by `transplant emulate` (and inherited through
PYTHONPATH by the processes the emulated script starts); nowhere else can this package be imported.
"""

import sys

from transplant.emulate.operators import stub
from transplant.emulate.runtime import activate

activate(sys.modules[__name__])


def _autoload():
    """The ``torch.backends`` entry point (see ../torch_npu-0+emulated.dist-info): with PyTorch >= 2.5,
    ``import torch`` imports this package, as it imports torch_npu on an NPU host; nothing more to do."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    operator = stub(name)  # torch_npu's own operators: importable, refused when used
    if operator is not None:
        globals()[name] = operator
        return operator
    raise AttributeError(f"torch_npu.{name} is not emulated (NPU-specific operators have no emulation)")
