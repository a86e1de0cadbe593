"""torch.compile under emulate: the program runs eagerly.

Inductor generates code for the devices it knows, and the emulated NPU is not one of them (on an
NPU host torch_npu brings its own backend), and TorchDynamo cannot trace through the emulator's
device translation. So every ``torch.compile`` (a call, a decorator, with or without arguments) runs
eagerly: a module comes back as the ``OptimizedModule`` a compilation gives (its ``_orig_mod``, its
state dict's ``_orig_mod.`` keys), whose calls run with TorchDynamo disabled; a function is compiled
with ``disable=True``, torch's own switch that gives it back as it is. The program computes what its
eager code computes. The end-of-run summary says how many compilations were skipped.

TorchScript compiles a call of a torch function by the function's identity: a torch function the emulator wraps is registered as the builtin its original was
(``builtin``), so scripted code that calls it compiles as before.
"""

from __future__ import annotations

import functools
from typing import Callable

import torch

_skipped: list[int] = [0]


def skipped() -> int:
    """How many torch.compile calls the emulator turned into no-ops."""
    return _skipped[0]


def builtin(function: Callable, wrapper: Callable, name: str) -> None:
    """``wrapper`` (of the torch function ``function``) compiles in TorchScript as ``aten::name`` did."""
    from torch.jit import _builtins

    _builtins._register_builtin(wrapper, _builtins._find_builtin(function) or f"aten::{name}")


def _eager_module(module: torch.nn.Module):
    """What ``torch.compile(module)`` gives, run eagerly: TorchDynamo's ``OptimizedModule`` (so
    ``_orig_mod``, ``isinstance`` and the state dict's ``_orig_mod.`` keys are those of a compiled
    module, as on an NPU) whose calls run with TorchDynamo disabled; None where this torch has none."""
    try:
        from torch._dynamo.eval_frame import DisableContext, OptimizedModule
    except ImportError:
        return None
    return OptimizedModule(module, DisableContext())


def install() -> None:
    compile_ = torch.compile

    @functools.wraps(compile_)
    def compile_eagerly(*args, **kwargs):
        model = args[0] if args else kwargs.get("model")
        if model is None:  # the decorator factory's call (@torch.compile(mode=...))
            return lambda model: compile_eagerly(model, **{k: v for k, v in kwargs.items() if k != "model"})
        _skipped[0] += 1
        if isinstance(model, torch.nn.Module):
            eager = _eager_module(model)
            if eager is not None:
                return eager
        kwargs["disable"] = True
        return compile_(*args, **kwargs)

    torch.compile = compile_eagerly
