"""torch_npu as `transplant emulate` gives it: the NPU software stack emulated on the backing device.

This folder is put on the module search path only by `transplant emulate` (and inherited through
PYTHONPATH by the processes the emulated script starts); nowhere else can this package be imported.
"""

import importlib.util
import os
import sys


def _transplant():
    """Load the transplant package from the folder ``transplant emulate`` names, when this process's
    Python does not have it (a child started by another interpreter): only that folder, never the
    environment around it, whose compiled packages may be for another Python."""
    folder = os.environ.get("TRANSPLANT_EMULATE_PACKAGE", "")
    init = os.path.join(folder, "__init__.py")
    if not folder or not os.path.isfile(init):
        raise ImportError(
            "transplant emulate: this process cannot import transplant (started by another Python than "
            f"the one transplant is installed in: {sys.executable}); start it with that Python"
        )
    spec = importlib.util.spec_from_file_location("transplant", init, submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules["transplant"] = module
    spec.loader.exec_module(module)


try:
    import transplant  # noqa: F401
except ModuleNotFoundError as exc:
    if exc.name != "transplant":
        raise
    _transplant()

from transplant.emulate.operators import stub  # noqa: E402
from transplant.emulate.runtime import activate  # noqa: E402

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
