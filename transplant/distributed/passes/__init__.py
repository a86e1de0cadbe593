"""The rewrites of distributed mode, one module per concern, in the order they run.

Each pass is a function of the shared :class:`~..planner.EditPlanner`; it reads the analysis and
earlier passes' results and adds edits to the plan. ``PASSES`` is the one list of the order, and
says for each pass which earlier passes it needs (checked when this module loads).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from . import dataparallel, ddp, devices, epochs, indices, loaders, rank0, samplers, setup


class Pass(NamedTuple):
    name: str
    run: Callable
    needs: tuple[str, ...]  # passes whose results this one reads


PASSES: tuple[Pass, ...] = (
    Pass("samplers", samplers.run, ()),  # DistributedSampler for each DataLoader
    Pass("loaders", loaders.run, ("samplers",)),  # which variables and parameters hold those loaders
    Pass("epochs", epochs.run, ("loaders",)),  # set_epoch in the epoch loops that use them
    Pass("dataparallel", dataparallel.run, ()),  # DataParallel gives way to DistributedDataParallel
    Pass("indices", indices.run, ()),  # fixed device indices follow this process's NPU
    # the wrap may move the model's expression out of a `return`: the edits planned inside it go along
    Pass("ddp", ddp.run, ("dataparallel", "indices")),  # DistributedDataParallel wrap; load_state_dict
    Pass("saves", rank0.saves, ()),  # torch.save of the unwrapped model, on rank 0 only
    Pass("prints", rank0.prints, ("epochs",)),  # epoch prints on rank 0 only
    Pass("set_device", devices.set_devices, ()),  # fixed set_device for a single process only
    Pass("fixed_devices", devices.fixed_devices, ("indices",)),  # fixed device strings left: reported
    # the set-up goes before the first edit that needs the process group: it runs last
    Pass("setup", setup.run, ("samplers", "epochs", "dataparallel", "indices", "ddp", "saves", "prints", "set_device")),
)


def _check_order(passes: tuple[Pass, ...]) -> None:
    seen: set[str] = set()
    for step in passes:
        missing = set(step.needs) - seen
        if missing:
            raise AssertionError(f"pass {step.name} runs before {', '.join(sorted(missing))}")
        seen.add(step.name)


_check_order(PASSES)
