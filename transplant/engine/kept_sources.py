"""The code a file keeps as it is for reasons of its own, beside the code that already handles NPU.

Each analysis here reads the module (and what the project says of it) and returns the ids of the
nodes whose changes stay unmade, with why; the driver merges them after npu_aware.py and
multi_backend.py, the first reason given for a node being the one said. Owns their order; each
reason is its module's: own_attributes.py (the project's own flags named like a renamed attribute),
tf_children.py (CUDA_VISIBLE_DEVICES set for a TensorFlow child process), cuda_methods.py (CUDA's own
methods: cudart().cudaHostRegister), cuda_switches.py (a library's CUDA switch), cuda_modules.py (a
module that imports CuPy at its top level), own_device.py (a simulator's device), device_names.py
(the "cuda" keys of a registry the project fills for NPU itself) and backend_tables.py
(NCCL_BACKEND = "nccl" beside HCCL_BACKEND = "hccl").
"""

from __future__ import annotations

import libcst as cst

from ..project import ProjectFacts
from ..rules import RuleSet
from .backend_tables import backend_table_keeps
from .cuda_methods import cuda_method_keeps
from .cuda_modules import cuda_module_keeps
from .cuda_switches import switch_keeps
from .device_names import registry_keeps
from .own_device import own_device_strings
from .tf_children import tf_child_keeps


def kept_elsewhere(
    module: cst.Module,
    text: bytes,
    rules: RuleSet,
    project: ProjectFacts,
    children: frozenset[str],
    own_flags: dict[int, str],
) -> dict[int, str]:
    """id of each node the file keeps for one of these reasons -> why (``text``: its whole source;
    ``own_flags``: own_attributes.py's result, from the driver's shared walk, said first)."""
    kept: dict[int, str] = {}
    sources = (
        own_flags,
        tf_child_keeps(module, rules, children),
        cuda_method_keeps(module, text),
        switch_keeps(module, text, project.own_packages),
        cuda_module_keeps(module, text, rules),
        own_device_strings(module, text, rules),
        registry_keeps(module, text, project.npu_registries),
        backend_table_keeps(module, text),
    )
    for found in sources:
        for node_id, why in found.items():
            kept.setdefault(node_id, why)
    return kept
