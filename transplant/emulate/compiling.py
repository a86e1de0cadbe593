"""torch.compile under emulate: the program runs eagerly.

Inductor generates code for the devices it knows, and the emulated NPU is not one of them (on an
NPU host torch_npu brings its own backend), and TorchDynamo cannot trace through the emulator's
device translation. So every ``torch.compile`` (a call, a decorator, with or without arguments) is
made with ``disable=True``, torch's own switch that turns it into a no-op: the module or function is
given back as it is, and the program computes what its eager code computes. The end-of-run summary
says how many compilations were skipped.

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


def install() -> None:
    compile_ = torch.compile

    @functools.wraps(compile_)
    def compile_eagerly(*args, **kwargs):
        if (args[0] if args else kwargs.get("model")) is not None:  # (not the decorator factory's call)
            _skipped[0] += 1
        kwargs["disable"] = True
        return compile_(*args, **kwargs)

    torch.compile = compile_eagerly
