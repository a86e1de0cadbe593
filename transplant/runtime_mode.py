"""The conversion's runtime mode (``--mode runtime``, ``mode = "runtime"`` in [tool.transplant]):
leave to torch_npu's runtime migration (``TORCH_TRANSFER_TO_NPU=1``, transfer_api.py) what it
patches, turn it on where the project's programs start, and change the source only where the
runtime path is wrong for the project.

It is a filter over the one rule engine, not a second engine: the engine matches as in the full
conversion, and each change it is about to make passes ``judge`` (called from the engine's one
place that records changes, engine/state.py). ``judge`` answers None for a change the migration
makes by itself at run time (the change is not made, nothing is reported) or the reason the
runtime path needs it, which the change list's message carries after ``RUNTIME_PATH``. What the
migration leaves is data below (transfer_api.py holds what it patches); findings (errors, warnings,
notes) are reported as in the full conversion. The other file kinds (shell scripts, requirements,
configs, Dockerfiles) change as in the full conversion: the migration never sees them
(``explain`` adds their reasons). entry_points.py inserts the variable into the programs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable

from .rule_versions import version_key
from .transfer_api import (
    ADDED,
    CUDA_FUNCTIONS,
    NAMESPACES,
    OTHER_CALLS,
    PROFILER_NAMES,
    SINCE_RELEASE,
    TORCH_FUNCTIONS,
    TWIN_MEMBERS,
    added_in,
)

if TYPE_CHECKING:
    import libcst as cst

    from .records import Record

FULL = "full"
RUNTIME = "runtime"
MODES = (FULL, RUNTIME)
RUNTIME_PATH = "runtime path: "  # what the change list's message says before the reason

# callables whose device arguments the migration rewrites (a "cuda" there needs no change); a
# torch.device the program makes stays CUDA's, but it is a value until a patched API receives it
PATCHED_CALLS = frozenset(
    {f"torch.{name}" for name in TORCH_FUNCTIONS}
    | {f"torch.cuda.{name}" for name in CUDA_FUNCTIONS}
    | set(OTHER_CALLS)
    | {"torch.device"}
)
# calls whose "nccl" the migration makes "hccl": init_process_group, and the group makers that reach
# c10d's _new_group_with_tag
BACKEND_CALLS = frozenset(
    {
        "torch.distributed.init_process_group",
        "torch.distributed.new_group",
        "torch.distributed.new_subgroups",
        "torch.distributed.new_subgroups_by_enumeration",
    }
)
# renames outside the copied namespaces that the migration makes: old -> new
RENAMES = {"torch.distributed.is_nccl_available": "torch.distributed.is_hccl_available"}
# torch.cuda's submodules: the migration copies torch_npu.npu's public names that are no modules,
# so torch.cuda.memory.X stays CUDA's
CUDA_SUBMODULES = frozenset(
    {"memory", "graphs", "streams", "random", "nvtx", "amp", "jiterator", "sparse", "comm", "nccl", "profiler"}
)
# A variable, parameter or attribute spelled so holds the device type that torch.amp.autocast and
# torch.amp.GradScaler take (their parameter's name); the migration patches neither, so the value is
# changed in every file, and so are the tests of it (one file's value reaches another's parameter).
DEVICE_TYPE_NAMES = frozenset({"device_type"})
# names whose ``.device`` is the program's own setting, not a tensor's (``args.device == "cuda"``)
PROGRAM_OWNERS = frozenset(
    {"args", "opt", "opts", "options", "cfg", "config", "conf", "hparams", "params", "settings", "flags", "self"}
)
# the reasons, by what the runtime path misses
WHY_UNPATCHED_CALL = "the runtime migration does not patch {callee}: it would get 'cuda'"
WHY_DEVICE_TEST = "a device test: under the runtime migration tensors are on 'npu', never on 'cuda'"
WHY_DEVICE_TYPE = (
    "a device type for torch.amp.autocast/GradScaler (a name spelled device_type), which the runtime migration "
    "does not patch: with 'cuda' autocast casts nothing on an NPU"
)
WHY_DEVICE_DEFAULT = "{callee} defaults to 'cuda' and the runtime migration does not patch it"
WHY_RENAME = (
    "{old}: the runtime migration leaves it as it is (it copies only torch_npu.npu's own names into torch.cuda)"
)
WHY_ENV = "the runtime migration does not rename environment variables: an NPU reads {new}"
WHY_BACKEND_CUDA = (
    "torch_npu {release}'s runtime migration makes 'nccl' 'hccl' in a backend string but leaves 'cuda' "
    "(it becomes 'npu' from {since} on)"
)
WHY_OTHER = "not among what the runtime migration patches"
WHY_UNKNOWN = "where this value goes is not known here: changed as in the full conversion"
WHY_BY_CODE = {  # the other file kinds (explain): what the migration never sees
    "TP105": "the runtime migration does not rename environment variables",
    "TP107": "the runtime migration does not see shell commands",
    "TP207": "the runtime migration does not see project files",
    "TP104": "the runtime migration does not see configuration files",
    "TP103": "the runtime migration does not see configuration files",
    "TP106": "a name of torch_npu that this file now uses needs the import (PyTorch loads the module, not the name)",
}


class ModeError(ValueError):
    """A mode transplant does not know, or runtime mode for a release without the migration variable."""


def check(mode: str, release: str) -> None:
    """ModeError for an unknown ``mode``, or runtime mode with a torch_npu ``release`` older than
    the one that reads TORCH_TRANSFER_TO_NPU."""
    if mode not in MODES:
        raise ModeError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    if mode == RUNTIME and version_key(release) < version_key(SINCE_RELEASE):
        raise ModeError(
            f"--mode runtime needs torch_npu {SINCE_RELEASE} or later (TORCH_TRANSFER_TO_NPU), not {release}: "
            "choose --torch-npu or --pytorch-version accordingly"
        )


# ----------------------------------------------------------------------------- renames


def covered_name(old: str, new: str) -> bool:
    """Does the migration make ``old`` (a qualified name) what the conversion renames it to (``new``)?"""
    for left, right in sorted(NAMESPACES, key=lambda pair: -len(pair[0])):
        prefix = f"torch.{left}."
        if old.startswith(prefix):
            rest = old[len(prefix) :]
            first = rest.split(".", 1)[0]
            if first in CUDA_SUBMODULES:
                return False
            return new in (f"torch_npu.{right}.{rest}", f"torch.{right}.{rest}")
    if RENAMES.get(old) == new:
        return True
    if old.startswith("torch.profiler."):
        rest = old[len("torch.profiler.") :]
        if rest.split(".", 1)[0] in PROFILER_NAMES:
            # ProfilerActivity.CUDA is ProfilerActivity.NPU under the migration
            return new.replace("ProfilerActivity.NPU", "ProfilerActivity.CUDA") == f"torch_npu.profiler.{rest}"
    return False


def _import_pairs(message: str) -> list[tuple[str, str]] | None:
    """The "old -> new" pairs of an import rewrite's message; None when it says something else."""
    for head in ("import ", "from-import "):
        if message.startswith(head):
            pairs = []
            for part in message[len(head) :].split(", "):
                old, sep, new = part.partition(" -> ")
                if not sep or " " in old or " " in new:
                    return None
                pairs.append((old.removesuffix(".*"), new.removesuffix(".*")))
            return pairs
    return None


def _rename_names(rule: Any, api: str, new: str) -> tuple[str, str]:
    if rule is not None and rule.kind == "FuncNameModifyRule":
        return rule["old_name"], rule["new_name"]
    if rule is not None and rule.kind == "ModuleNameModifyRule":
        return f"{rule['parent_module']}.{rule['old_name']}", f"{rule['parent_module']}.{rule['new_name']}"
    return api, new


# ----------------------------------------------------------------------------- device strings


class Parents:
    """The parent of each node of one module (built on the first device string judged)."""

    def __init__(self, module: cst.Module) -> None:
        self.of: dict[int, Any] = {}
        stack: list[Any] = [module]
        while stack:
            node = stack.pop()
            for child in node.children:
                self.of[id(child)] = node
                stack.append(child)

    def get(self, node: Any) -> Any:
        return self.of.get(id(node))


def _last_name(node: Any) -> str | None:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def _runtime_device(node: Any) -> bool:
    """Is ``node`` a device the runtime hands out: the ``.device`` of a tensor's name or attribute
    (``x.device``, ``self.weight.device``), of a call's or an item's result
    (``next(m.parameters()).device``, ``xs[0].device``), its ``.type`` or ``.index``, or ``str()`` of
    one? The ``.device`` of the names in PROGRAM_OWNERS (``args.device``, ``self.device``,
    ``self.cfg.device``, and their ``.type``) is the program's own value: a ``torch.device("cuda")``
    the program made stays CUDA's under the migration, so a test of its type is right as written; so is
    a device the program holds under any other name (``device.type``)."""
    import libcst as cst

    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "str" and node.args:
        return _runtime_device(node.args[0].value)
    if isinstance(node, cst.Attribute) and node.attr.value in ("type", "index"):
        return _runtime_device(node.value)
    if not (isinstance(node, cst.Attribute) and node.attr.value == "device"):
        return False
    owner = node.value
    return isinstance(owner, (cst.Call, cst.Subscript)) or _last_name(owner) not in (PROGRAM_OWNERS | {None})


def _callee(state: Any, call: Any) -> tuple[str, bool]:
    """A call's callee as the reason names it, and whether the runtime path is right there: torch's
    APIs that the migration patches, and the project's own functions and other libraries' (the
    value stays the program's "cuda", as every test of it in the project expects, until it reaches
    torch). Only a torch API the migration does not patch gets 'cuda' wrongly."""
    func = call.func
    qualified = state.resolve_name(func)
    if qualified is not None:
        return qualified, not qualified.startswith("torch.") or qualified in PATCHED_CALLS
    return _last_name(func) or "this call", True


def _judge_device(state: Any, anchor: Any) -> str | None:
    import libcst as cst

    parents = state.__dict__.get("_runtime_parents")
    if parents is None:
        parents = state.__dict__["_runtime_parents"] = Parents(state.module)
    node, parent = anchor, parents.get(anchor)
    if parent is None:  # not a node of the file as written: changed, as the full conversion does
        return WHY_UNKNOWN
    if isinstance(parent, cst.Call) and parent.func is anchor:  # "device defaults to cuda": the call
        callee, patched = _callee(state, parent)
        return None if patched else WHY_DEVICE_DEFAULT.format(callee=callee)
    # through the parts of an expression that still make the same device
    while isinstance(parent, (cst.IfExp, cst.FormattedString, cst.BinaryOperation, cst.Element, cst.List, cst.Tuple)):
        if isinstance(parent, cst.IfExp) and parent.test is node:
            break
        node, parent = parent, parents.get(parent)
    if isinstance(parent, cst.Arg):
        call = parents.get(parent)
        if isinstance(call, cst.Call):
            callee, patched = _callee(state, call)
            if not patched:
                return WHY_UNPATCHED_CALL.format(callee=callee)
            qualified = state.resolve_name(call.func)
            if (
                parent.keyword is not None
                and parent.keyword.value in DEVICE_TYPE_NAMES
                and qualified not in PATCHED_CALLS
            ):
                return WHY_DEVICE_TYPE  # a parameter spelled device_type, whose tests change (below)
            return None
        return None
    if isinstance(parent, cst.ComparisonTarget):
        parent = parents.get(parent)
    if isinstance(parent, cst.Comparison):
        sides = [parent.left, *(t.comparator for t in parent.comparisons)]
        others = [s for s in sides if s is not node]
        if any(_runtime_device(s) for s in others):
            return WHY_DEVICE_TEST
        if any(_last_name(s) in DEVICE_TYPE_NAMES for s in others):
            return WHY_DEVICE_TYPE
        return None  # a test of the program's own string, which the migration leaves "cuda" too
    if isinstance(parent, (cst.MatchCase, cst.MatchValue)):
        return None
    # a value given a name: changed only where it holds autocast's device type
    target = None
    if isinstance(parent, cst.AssignTarget):
        target = parent.target
    elif isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = getattr(parent, "targets", None)
        target = targets[0].target if targets else getattr(parent, "target", None)
    elif isinstance(parent, cst.Param):
        target = parent.name
    if target is not None and _last_name(target) in DEVICE_TYPE_NAMES:
        return WHY_DEVICE_TYPE
    return None


# ----------------------------------------------------------------------------- the filter


def judge(state: Any, anchor: cst.CSTNode, kind: str, rule: Any, api: str, new: str, message: str) -> str | None:
    """None where the runtime migration makes this change by itself (the engine does not make it),
    else why the runtime path needs it. ``state``: the engine's State (its module, its name
    resolution)."""
    if kind == "rename":
        old, target = _rename_names(rule, api, new)
        if covered_name(old, target):
            return None
        return WHY_RENAME.format(old=old)
    if kind == "method":
        if rule is not None and rule["old_name"].rsplit(".", 1)[-1] in TWIN_MEMBERS:
            return None
        return WHY_OTHER
    if kind == "import":
        pairs = _import_pairs(message)
        if pairs and all(covered_name(old, new_name) for old, new_name in pairs):
            return None
        return WHY_OTHER
    if kind == "args" and "hccl" in new and (rule is None or rule.get("func_name") in BACKEND_CALLS):
        # the process group's "nccl" (a value, or an argument of init_process_group): rewritten, and
        # the "cuda" of "cpu:gloo,cuda:nccl" by the releases that rewrite it too
        release = state.rules.torch_npu
        if not added_in("backend string cuda", release) and "cuda" in state.module.code_for_node(anchor):
            return WHY_BACKEND_CUDA.format(release=release, since=ADDED["backend string cuda"])
        return None
    if kind == "device":
        return _judge_device(state, anchor)
    if kind == "env":
        return WHY_ENV.format(new=new or "the NPU variable")
    return WHY_OTHER


def with_reason(message: str, reason: str) -> str:
    return f"{message}; {RUNTIME_PATH}{reason}"


def explain(records: Iterable[Record]) -> list[Record]:
    """The records of a file the engine did not convert (a shell script, a requirements file, a
    configuration, a Dockerfile): each change says why the runtime path needs it."""
    out = []
    for record in records:
        if record.is_change and RUNTIME_PATH not in record.message and record.code != "TP109":
            reason = WHY_BY_CODE.get(record.code, "the runtime migration does not see this file")
            record = replace(record, message=with_reason(record.message, reason))
        out.append(record)
    return out


__all__ = ["FULL", "MODES", "RUNTIME", "ModeError", "check", "covered_name", "explain", "judge"]
