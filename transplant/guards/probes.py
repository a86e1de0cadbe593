"""CUDA capability probes: what they mean on an NPU, and which queries must stay CUDA queries.

* ``torch.cuda.get_device_capability()`` read as a number (compared, indexed, unpacked, used in
  arithmetic, directly or through the name it is assigned to): torch_npu's counterpart returns
  None, so the renamed query raises ``TypeError``. The query is kept (and the guard in front of it,
  see sites.py) and reported (TP243).
* ``.major``, ``.minor``, ``.multi_processor_count``, ``.gcnArchName`` of
  ``torch.cuda.get_device_properties(...)`` (directly or through a name): CUDA or ROCm facts that an
  NPU's properties do not have. The query is kept like a capability and each read is reported (TP242).
  ``.multi_processor_count`` only up to PyTorch 2.10: torch_npu for PyTorch 2.11 and later fills it
  (with the vector core count; Ascend/pytorch commit 2adc584a8, see emulate/properties.py), so there
  the query is renamed like any other (``unfilled_fields``).
* ``torch.version.cuda`` / ``torch.version.hip`` in a test: None with torch_npu, so the branch is
  the non-CUDA one on an NPU (TP242, a note).
* ``torch.cuda.get_device_name()`` compared with a GPU model: never true on an NPU; the rename
  stays, its change message carries the warning (TP242).

Works on a CPython ``ast`` tree; the records are made in __init__.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..project.pynames import qualify
from .reach import CAPABILITY_ROUTE, Reason

CAPABILITY = "torch.cuda.get_device_capability"
PROPERTIES = "torch.cuda.get_device_properties"
DEVICE_NAME = "torch.cuda.get_device_name"
VERSIONS = {
    "torch.version.cuda": "the CUDA version torch was built with",
    "torch.version.hip": "the ROCm (HIP) version torch was built with",
}
# what each CUDA/ROCm field of the device properties is, and what to use on an NPU
FIELDS = {
    "major": "the CUDA compute capability (major)",
    "minor": "the CUDA compute capability (minor)",
    "multi_processor_count": "the number of CUDA streaming multiprocessors, used to size grids",
    "gcnArchName": "the ROCm GPU architecture (gfx...)",
}
FIELD_ROUTE = {
    "major": CAPABILITY_ROUTE,
    "minor": CAPABILITY_ROUTE,
    "multi_processor_count": "an NPU's properties give its AI cores (cube_core_num, vector_core_num) instead; a grid "
    "sized for SMs needs retuning",
    "gcnArchName": "this is a ROCm test: on an NPU the branch for other devices applies; test torch_npu itself "
    "(torch_npu.npu.get_device_name()) where NPU needs its own branch",
}
GPU_MODEL = re.compile(
    r"\b(?:[AHV]\d00|H800|A800|T4|L4|L40S?|RTX|GTX|Tesla|NVIDIA|GeForce|Quadro|MI\d{2,3}X?|AMD|Radeon)", re.IGNORECASE
)
# torch_npu fills these CUDA fields from this PyTorch version on (Ascend/pytorch commit 2adc584a8:
# ``multi_processor_count`` is the vector core count for PyTorch 2.11 and later)
FILLED_SINCE = {"multi_processor_count": (2, 11)}
NUMBER_PARENTS = (ast.Compare, ast.BinOp, ast.Starred, ast.Subscript)


@dataclass
class Probe:
    node: ast.expr
    code: str  # "probe" (TP242) | "capability" (TP243)
    level: str
    message: str
    suggestion: str
    api: str
    replaces: bool = False  # replaces the engine's generic finding of ``api`` on its line
    risk: str = ""  # a warning for the change made on its line, when the rename stays
    keep: ast.AST | None = None  # the CUDA query that stays a CUDA query


def unfilled_fields(pytorch_version: str) -> dict[str, str]:
    """The CUDA/ROCm fields of the device properties that torch_npu for ``pytorch_version`` leaves
    unfilled (what each is)."""
    version = tuple(int(part) for part in pytorch_version.split("."))
    return {name: said for name, said in FIELDS.items() if version < FILLED_SINCE.get(name, (99,))}


def probes(
    tree: ast.Module,
    names: dict[str, str],
    nodes: list[ast.AST],
    parents: dict[int, ast.AST],
    pytorch_version: str,
) -> tuple[list[Probe], dict[int, Reason]]:
    """The probes of a file (``nodes``: all of its nodes, ``parents``: the parent of each), and the
    capability queries read as numbers (id of the call -> Reason), for torch_npu of ``pytorch_version``."""
    unfilled = unfilled_fields(pytorch_version)
    calls: dict[str, list[ast.Call]] = {CAPABILITY: [], PROPERTIES: [], DEVICE_NAME: []}
    versions: list[ast.Attribute] = []
    for node in nodes:
        if isinstance(node, ast.Call):
            found = calls.get(qualify(node.func, names) or "")
            if found is not None:
                found.append(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if qualify(node, names) in VERSIONS:
                versions.append(node)
    out: list[Probe] = []
    numbers: dict[int, Reason] = {}
    for call in calls[CAPABILITY]:
        uses = _uses(call, parents, tree)
        if any(_numeric(use, parents) for use in uses):
            numbers[id(call)] = Reason(
                "capability", "a CUDA compute capability read as a number", f"line {call.lineno}", CAPABILITY_ROUTE
            )
            out.append(Probe(call, "capability", "warning", "", CAPABILITY_ROUTE, CAPABILITY, replaces=True, keep=call))
    for call in calls[PROPERTIES]:
        reads = [
            parent
            for use in _uses(call, parents, tree)
            if isinstance(parent := parents.get(id(use)), ast.Attribute) and parent.attr in unfilled
        ]
        if not reads:
            continue
        fields = list(dict.fromkeys(read.attr for read in reads))
        numbers[id(call)] = Reason(
            "capability", f"CUDA device properties (.{fields[0]})", f"line {call.lineno}", FIELD_ROUTE[fields[0]]
        )
        said = "; ".join(f".{f}: {FIELDS[f]}" for f in fields)
        lines = sorted({read.lineno for read in reads if read.lineno != call.lineno})
        at = f" (read at line {', '.join(map(str, lines))})" if lines else ""
        out.append(
            Probe(
                call,
                "probe",
                "warning",
                f"torch.cuda.get_device_properties(...) is read for CUDA or ROCm "
                f"facts{at}: {said}; an NPU's device properties have no such field, so the CUDA query is kept",
                "; ".join(dict.fromkeys(FIELD_ROUTE[f] for f in fields)),
                PROPERTIES,
                keep=call,
            )
        )
    for call in calls[DEVICE_NAME]:
        if _names_gpu_model(call, parents):
            out.append(
                Probe(
                    call,
                    "probe",
                    "warning",
                    "torch.cuda.get_device_name() is compared with a GPU model: an "
                    "NPU's name (Ascend...) never matches, so an NPU run takes the other branch",
                    "check that branch is right for NPU, or test torch_npu.npu.get_device_name() for the Ascend model",
                    DEVICE_NAME,
                    risk="the device name is compared with a GPU model, which an NPU's name never matches",
                )
            )
    for attr in versions:
        if _in_test(attr, parents):
            qualified = qualify(attr, names) or ""
            out.append(
                Probe(
                    attr,
                    "probe",
                    "note",
                    f"{qualified} is {VERSIONS[qualified]}; it is None with the torch "
                    "build used with torch_npu, so an NPU run takes the branch for builds without it",
                    "right when the branch is CUDA- or ROCm-specific; where it stands for 'a GPU is present', "
                    "test torch_npu.npu.is_available() as well",
                    qualified,
                    replaces=True,
                )
            )
    return out, numbers


def _uses(call: ast.Call, parents: dict[int, ast.AST], tree: ast.Module) -> list[ast.AST]:
    """The call itself, and where a name it is assigned to (``cap = ...``) is read in the same scope."""
    parent = parents.get(id(call))
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
        return [call]
    name = parent.targets[0].id
    scope: ast.AST | None = parent
    while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        scope = parents.get(id(scope))
    scope = scope if scope is not None else tree
    return [
        call,
        *(n for n in ast.walk(scope) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)),
    ]


def _numeric(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    if isinstance(parent, NUMBER_PARENTS):
        return not (isinstance(parent, ast.Subscript) and parent.slice is node)
    if isinstance(parent, (ast.Assign, ast.For)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return any(isinstance(t, (ast.Tuple, ast.List)) for t in targets)
    return False


def _names_gpu_model(call: ast.Call, parents: dict[int, ast.AST]) -> bool:
    """``"A100" in get_device_name()``, ``get_device_name() == "..."``, ``get_device_name().startswith("NVIDIA")``."""
    parent = parents.get(id(call))
    if isinstance(parent, ast.Attribute) and parent.attr in (
        "startswith",
        "endswith",
        "find",
        "count",
        "lower",
        "upper",
    ):
        grand = parents.get(id(parent))
        if parent.attr in ("lower", "upper") and isinstance(grand, ast.Call):
            return _names_gpu_model(grand, parents)
        strings = list(grand.args) if isinstance(grand, ast.Call) else []
    elif isinstance(parent, ast.Compare):
        strings = [parent.left, *parent.comparators]
    else:
        return False
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and GPU_MODEL.search(n.value)
        for s in strings
        for n in ast.walk(s)
    )


def _in_test(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Is ``node`` part of the test of an if, while, conditional expression or assert (or of a boolean
    operation)?"""
    child: ast.AST = node
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.IfExp) and parent.test is child or isinstance(parent, ast.BoolOp):
            return True
        child, parent = parent, parents.get(id(parent))
    return isinstance(parent, (ast.If, ast.While, ast.Assert)) and parent.test is child
