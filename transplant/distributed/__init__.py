"""Distributed mode: turn a single-device training script into a data-parallel multi-NPU one.

``transplant -i PROJECT -o OUT distributed -m PROJECT/train.py [-t model]`` first converts the
project as usual, then rewrites the entry file of the result and writes ``run_distributed_npu.sh``
beside it. In the entry file:

* a small set of helper functions is added after the imports (process-group set-up with the hccl
  backend from the launcher's environment, rank and world size that also work for one process,
  unwrapping of the DistributedDataParallel model), and the set-up is called at the start of the
  entry point;
* every ``torch.utils.data.DataLoader`` built from a dataset gets a DistributedSampler (``shuffle``
  moves into the sampler) and every epoch loop that uses such a loader calls ``set_epoch``;
* the target model is wrapped in DistributedDataParallel once it is on its device, in place of any
  ``DataParallel``;
* ``torch.save`` of the model saves the unwrapped model on rank 0 only; per-epoch ``print`` calls
  and hard-coded ``set_device`` calls are limited to rank 0 / to a single process;
* fixed device indices ("npu:0", ``.npu(0)``, ``.to(0)``) follow the process's NPU.

A script that is distributed already (its own process group, ``mp.spawn``, torchrun variables)
keeps its own set-up: only the ordinary conversion applies. Everything else keeps its bytes, and
converting the result again changes nothing. ``run_distributed_npu.sh`` starts one machine's
share of a job on one or several machines.

Where things are (data flows down the list):

* ``entry.py``      -m/-t checks, reading the entry file, writing the result and the launch script
* ``analysis.py``   what the entry file contains (tree, bindings from the engine, scopes, the model)
* ``planner.py``    EditPlanner: the state the passes share; convert_distributed / convert_source
* ``passes/``       one module per rewrite, run in the order of ``passes.PASSES``: samplers,
                    loaders (data flow), epochs, dataparallel, indices, ddp, rank0 (saves,
                    prints), devices, setup
* ``plan.py``       the Plan the passes fill, applying it in one traversal, its records
* ``templates.py``  the helper functions inserted into the entry file
* ``launch.py``     the text of run_distributed_npu.sh

Records carry the codes TP301-TP306 (``transplant.records.CODES``, keys ``dist_*``).
"""

from __future__ import annotations

from ..runner import UsageError
from .entry import apply_to_result, prepare_distributed, resolve_entry
from .launch import LAUNCH_SCRIPT, launch_script
from .planner import convert_distributed, convert_source
from .templates import HELPERS

__all__ = [
    "HELPERS",
    "LAUNCH_SCRIPT",
    "UsageError",
    "apply_to_result",
    "convert_distributed",
    "convert_source",
    "launch_script",
    "prepare_distributed",
    "resolve_entry",
]
