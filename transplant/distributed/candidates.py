"""Variables of the entry file that look like they hold a model, for the message of a ``-t`` that
names none. Reads the Analysis; decides nothing about the conversion.
"""

from __future__ import annotations

import libcst as cst

from ..engine import dotted_parts
from .analysis import MOVES, Analysis, dotted

# methods only modules have (optimizers, schedulers and scalers have state_dict and zero_grad too)
MODULE_ONLY_METHODS = frozenset(
    {
        "parameters",
        "named_parameters",
        "train",
        "eval",
        "modules",
        "children",
        "named_modules",
        "buffers",
        "named_buffers",
    }
)
NOT_MODEL_SUFFIXES = (
    "Loader",
    "Dataset",
    "Sampler",
    "Parser",
    "Optimizer",
    "Scheduler",
    "Scaler",
    "Writer",
    "Logger",
    "Loss",
    "Generator",
    "Tensor",
    "Path",
    "Compose",
    "Meter",
    "Timer",
    "LR",
)
NOT_MODEL_PREFIXES = (
    "torch.optim",
    "torch.utils",
    "argparse",
    "torch.cuda",
    "torch_npu",
    "torch.amp",
    "torchvision.transforms",
    "torchvision.datasets",
    "logging",
    "pathlib",
    "collections",
)


def candidates(a: Analysis) -> list[str]:
    """Variables that look like they hold a model: assigned from a model-like constructor, moved
    to a device outside loops, or used like a module (``.parameters()``, ``.state_dict()``...)."""
    assigned: dict[str, int] = {}
    found: dict[str, int] = {}
    not_models: set[str] = set()  # assigned from an optimizer, a loader, a scaler...
    for i, node in enumerate(a.nodes):
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                name = dotted(t)
                if name is None:
                    continue
                assigned.setdefault(name, i)
                if _model_like(a, node.value) and not a.in_loop(node):
                    found.setdefault(name, i)
                elif _not_model(a, node.value):
                    not_models.add(name)
    for node in a.nodes:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            name = dotted(node.func.value)
            method = node.func.attr.value
            if name is None or name not in assigned or name in not_models:
                continue
            if method in MODULE_ONLY_METHODS or (method in MOVES and not a.in_loop(node)):
                found.setdefault(name, assigned[name])
    return [name for name, _ in sorted(found.items(), key=lambda kv: kv[1])][:8]


def _constructor(a: Analysis, value: cst.BaseExpression) -> tuple[str, str] | None:
    """(qualified name, last name) of the call that builds ``value``, past device moves."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in MOVES:
        value = value.func.value
    if not isinstance(value, cst.Call):
        return None
    parts = dotted_parts(value.func)
    if not parts:
        return None
    return a.qual(value.func) or ".".join(parts), parts[-1]


def _not_model(a: Analysis, value: cst.BaseExpression) -> bool:
    built = _constructor(a, value)
    return built is not None and (built[0].startswith(NOT_MODEL_PREFIXES) or built[1].endswith(NOT_MODEL_SUFFIXES))


def _model_like(a: Analysis, value: cst.BaseExpression) -> bool:
    built = _constructor(a, value)
    if built is None or _not_model(a, value) or built[1] == "DataParallel":
        return False
    qualified, last = built
    return last[:1].isupper() or "model" in last.lower() or ".models." in f".{qualified}"
