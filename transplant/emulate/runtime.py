"""Starting emulation in a process: start() when the process begins, activate() on ``import torch_npu``.

start() imports torch, enters the device mode where one is needed (entries.needed) and, with
--strict, installs the CUDA-use checks, so they see the script from its first line. With the shim on
the path, PyTorch's device-extension autoload (>= 2.5, unless TORCH_DEVICE_BACKEND_AUTOLOAD=0)
imports the emulated torch_npu during ``import torch``, through the entry point in
shim/torch_npu-0+emulated.dist-info; autoload() makes sure of it before the program's first line. activate() is run by the shim package's ``torch_npu``: it
makes "npu" a device and fills the torch_npu module with the emulated namespaces. A process
that imports the shim without start() (a child the script started with the shim on PYTHONPATH)
starts from the environment. This module wires the others together and owns no behaviour.
"""

from __future__ import annotations

import os
import sys
import types

from . import BACKING_ENV, IDENTITY_ENV, STRICT_ENV

_state: dict = {}


def start(backing_kind: str, strict: bool):
    """Prepare this process; returns the strict Checker (or None)."""
    import torch  # noqa: F401 - with the shim on the path, this may autoload torch_npu, which starts us first

    if "backing" in _state:
        return _state["checker"]
    from . import devices, entries, summary

    checker = None
    if strict:
        from . import strict as strict_checks

        checker = strict_checks.Checker()
        strict_checks.install(checker)
    backing = devices.Backing(backing_kind, identity=os.environ.get(IDENTITY_ENV) != "0")
    observer = summary.observer(checker.torch_call if checker else None)
    if entries.needed(backing.identity, strict):
        devices.enter_mode(backing, observer)
    else:  # plain emulate under device identity: the mode's jobs are done without it (entries.py)
        backing.modeless = True
    _state.update(backing=backing, checker=checker)
    return checker


def autoloads() -> bool:
    """Whether this PyTorch loads installed device extensions on ``import torch`` (>= 2.5, unless
    TORCH_DEVICE_BACKEND_AUTOLOAD says otherwise), so that torch_npu is there without an import."""
    import torch

    enabled = getattr(torch, "_is_device_backend_autoload_enabled", None)
    return enabled is not None and enabled()


def autoload() -> None:
    """Before the program's first line: load the emulated torch_npu where PyTorch would have loaded a
    real one (in processes the program starts, ``import torch`` does it through the shim's entry point)."""
    if autoloads():
        import torch_npu  # noqa: F401 - the shim on sys.path


def activate(torch_npu: types.ModuleType) -> None:
    """Fill the shim's ``torch_npu`` module and make "npu" a device."""
    if "backing" not in _state:
        start(os.environ.get(BACKING_ENV, "cpu"), os.environ.get(STRICT_ENV) == "1")
    import torch

    from . import accelerator, builds, compiling, devices, extras, npu_api, summary

    backing = _state["backing"]
    devices.install(backing)
    builds.install()
    compiling.install()
    modules = {**npu_api.build(backing), **extras.build(backing)}
    modules["torch_npu"] = torch_npu
    sys.modules.update(modules)
    for name, made in modules.items():  # each module is an attribute of its parent, as after an import
        if "." in name:
            parent, _, last = name.rpartition(".")
            setattr(modules[parent], last, made)
    vars(torch_npu)["__version__"] = f"emulated on {backing.kind} (transplant emulate)"
    summary.install(modules)
    torch._register_device_module("npu", modules["torch_npu.npu"])
    accelerator.install(modules["torch_npu.npu"])
    from . import transfer

    sys.meta_path.insert(0, transfer.Finder())  # import torch_npu.contrib.transfer_to_npu
    if transfer.requested():  # TORCH_TRANSFER_TO_NPU=1, as torch_npu's optional features read it
        transfer.install(torch_npu)
