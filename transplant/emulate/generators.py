"""--device-identity: ``torch.Generator("npu")`` as torch_npu makes it, drawing the backing's numbers.

On an NPU, ``torch.Generator(device="npu:0")`` is an NPU generator (torch_npu's ``getNewGenerator``
hook, ``NPUGeneratorImpl``): its ``device`` is the device asked for (``npu`` without an index stays
so), its initial seed is PyTorch's default one, and it is accepted only by operators that compute on
an NPU; an operator on host tensors (``torch.randperm(n, generator=g)``, which a DataLoader's sampler
calls) refuses it, and an NPU operator refuses a host generator, each with PyTorch's message
"Expected a 'cpu' device type for generator but found 'npu'" (``at::check_generator``). PyTorch's
Python backend for PrivateUse1 has no generator hook, so here an NPU generator is a generator of the
backing (a subclass of ``torch.Generator`` that says it is on the NPU): seeded alike, it draws what
the backing's generator draws, which is what the tests compare. ``torch.default_generator`` stands
for the NPU default generators too (npu_api.py), so NPU operators take it.

The check: with the device mode (``--strict``, ``--no-device-identity``) the mode's, for the calls
with a ``generator`` argument (``check_call``). Without it (plain emulate: entries.py), an NPU
operator's kernel checks the generator it receives (``check_kernel``: C++ hands it back as a plain
backing generator, told apart from an NPU one by the C++ generator it wraps, ``_cdata``), and the
host operators that draw are wrapped to check theirs once the program has made an NPU generator
(``_watch_host_draws``): before that, no generator can be an NPU one.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch

NPU = "npu"
_BASE: Any = torch._C.Generator


class Meta(type(_BASE)):  # type: ignore[misc]  # torch's metaclass of Generator
    def __instancecheck__(cls, instance) -> bool:
        # torch's own generators (torch.default_generator, those C++ makes) stay torch.Generator's
        return isinstance(instance, _BASE)


class Generator(_BASE, metaclass=Meta):
    """torch.Generator in an emulated process: an NPU device gives a backing generator on that NPU."""

    def __new__(cls, device="cpu"):
        npu = _npu(device)
        made = _BASE.__new__(cls, "cpu" if npu is not None else device)
        made._npu = npu
        if npu is not None:
            _remember(made)
        return made

    def __init__(self, device="cpu"):
        pass

    @property
    def device(self) -> torch.device:
        return self._npu if self._npu is not None else _BASE.device.__get__(self)

    def __reduce__(self):
        return torch.Generator, (self.device,), _BASE.__reduce__(self)[2]


Generator.__module__, Generator.__qualname__ = "torch", "Generator"


def _npu(device) -> torch.device | None:
    if isinstance(device, int) and not isinstance(device, bool):
        return torch.device(NPU, device)  # a bare ordinal is the NPU's (PrivateUse1's) with torch_npu
    if isinstance(device, str) and device.startswith(NPU):
        device = torch.device(device)
    if isinstance(device, torch.device) and device.type == NPU:
        return device
    return None


def _refuse(wanted: str, generator) -> RuntimeError:
    return RuntimeError(f"Expected a '{wanted}' device type for generator but found '{generator.device.type}'")


def check_call(func, args: tuple, kwargs: dict) -> None:
    """A torch call with a ``generator`` argument: the generator must be of the device the call
    computes on (its ``device`` argument, else its first tensor's device, else the default device),
    as on an NPU; the default generator stands for the NPUs' too."""
    generator = kwargs.get("generator")
    if generator is None:
        return
    npu = getattr(generator, "_npu", None) is not None
    device = kwargs.get("device")
    if device is None:
        first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
        kind = first.device.type if first is not None else torch.get_default_device().type
    elif isinstance(device, int):
        kind = NPU
    else:
        kind = torch.device(device).type
    if npu and kind != NPU:
        raise _refuse(kind, generator)
    if kind == NPU and not npu and generator is not torch.default_generator:
        raise _refuse(NPU, generator)


_NPU_GENERATORS: set[int] = set()  # the C++ generators (_cdata) of the live NPU generators


def _remember(generator: Any) -> None:
    cdata = generator._cdata
    _NPU_GENERATORS.add(cdata)
    weakref.finalize(generator, _NPU_GENERATORS.discard, cdata)
    _watch_host_draws()


def check_kernel(generator) -> None:
    """In an NPU operator's kernel: its generator (as C++ hands it back) must be an NPU generator or
    the default generator, which stands for the NPUs' too."""
    if generator is None:
        return
    cdata = generator._cdata
    default: Any = torch.default_generator
    if cdata not in _NPU_GENERATORS and cdata != default._cdata:
        raise _refuse(NPU, generator)


def _draws() -> list[str]:
    """The torch functions and Tensor methods whose operator takes a generator."""
    names = set()
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::") and any(a.name == "generator" for a in schema.arguments):
            names.add(schema.name[len("aten::") :])
    return sorted(name for name in names if not name.startswith("_"))


def _checked(base, name: str):
    @functools.wraps(base)
    def draw(*args, **kwargs):
        if kwargs:
            generator = kwargs.get("generator")
            if generator is not None and getattr(generator, "_npu", None) is not None:
                check_call(base, args, kwargs)
        return base(*args, **kwargs)

    return draw


def _watch_host_draws() -> None:
    """Once: the draws check an NPU generator given to them (a host operator refuses it), also where
    the program runs no device mode. Installed at the first NPU generator, so a program without one
    pays nothing."""
    if _watch_host_draws.done:  # type: ignore[attr-defined]
        return
    _watch_host_draws.done = True  # type: ignore[attr-defined]
    from . import compiling

    for name in _draws():
        function = getattr(torch, name, None)
        if callable(function):
            wrapper = _checked(function, name)
            compiling.builtin(function, wrapper, name)
            setattr(torch, name, wrapper)
        method = getattr(torch.Tensor, name, None)
        if callable(method):
            setattr(torch.Tensor, name, _checked(method, name))
    import torch.utils.data.dataset as dataset  # random_split's randperm, imported by name

    if hasattr(dataset, "randperm"):
        dataset.randperm = torch.randperm


_watch_host_draws.done = False  # type: ignore[attr-defined]


def install() -> None:
    """Replace torch.Generator (under device identity, on ``import torch_npu``)."""
    torch.Generator = Generator  # type: ignore[misc]  # the emulator replaces torch's own
