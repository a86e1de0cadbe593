"""CUDA-only extension builds under emulate: they fail naming the build, as they would on an NPU.

A program that reaches ``torch.utils.cpp_extension.load_inline(..., cuda_sources=...)`` or
``load(name, ["kernel.cu", ...])`` on its NPU path needs a CUDA compiler and a GPU that an NPU host
does not have; on a machine with CUDA the emulated run would build it and pass. Once the program
imports torch.utils.cpp_extension (slow to import, so not before), both functions first check their
sources; a CUDA-only build is an EmulationError naming the build and where the program asked for it.
C++-only builds go on as on any host.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import sys
import traceback

from . import EmulationError

MODULE = "torch.utils.cpp_extension"
_CUDA_SUFFIXES = (".cu", ".cuh")


def _where() -> str:
    """file:line of the program's call (the innermost frame outside torch and this package)."""
    for frame in reversed(traceback.extract_stack()[:-3]):
        name = frame.filename.replace("\\", "/")
        if "/torch/" not in name and "/transplant/emulate/" not in name:
            return f"{os.path.relpath(frame.filename)}:{frame.lineno}: "
    return ""


def _refuse(name, how: str):
    raise EmulationError(
        f"{_where()}CUDA-only extension build {name!r} ({how}): an NPU host has no CUDA "
        "compiler or GPU, so this build fails there too; give the NPU path a portable "
        "implementation (or an Ascend C / torch_npu custom operator)"
    )


def _patch(module) -> None:
    load_inline, load = module.load_inline, module.load

    @functools.wraps(load_inline)
    def checked_load_inline(name, cpp_sources, cuda_sources=None, *args, **kwargs):
        if cuda_sources:
            _refuse(name, "load_inline with cuda_sources")
        if kwargs.get("with_cuda"):
            _refuse(name, "load_inline with with_cuda=True")
        return load_inline(name, cpp_sources, cuda_sources, *args, **kwargs)

    @functools.wraps(load)
    def checked_load(name, sources, *args, **kwargs):
        listed = [sources] if isinstance(sources, str) else list(sources)
        cuda = [s for s in listed if str(s).endswith(_CUDA_SUFFIXES)]
        if cuda:
            _refuse(name, f"load with CUDA sources {', '.join(map(str, cuda))}")
        if kwargs.get("with_cuda"):
            _refuse(name, "load with with_cuda=True")
        return load(name, sources, *args, **kwargs)

    module.load_inline, module.load = checked_load_inline, checked_load


class _Finder(importlib.abc.MetaPathFinder):
    """Patches torch.utils.cpp_extension right after it is first imported."""

    def find_spec(self, fullname, path, target=None):
        if fullname != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_then_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_then_patch
        return spec


def install() -> None:
    """Check CUDA-only builds in this process (before or after the program imports cpp_extension)."""
    if MODULE in sys.modules:
        _patch(sys.modules[MODULE])
    else:
        sys.meta_path.insert(0, _Finder())
