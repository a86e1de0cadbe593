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
* the target model is wrapped in DistributedDataParallel once it is on its device;
* ``torch.save`` of the model saves the unwrapped model on rank 0 only; per-epoch ``print`` calls
  and hard-coded ``set_device`` calls are limited to rank 0 / to a single process.

Everything else keeps its bytes, and converting the result again changes nothing.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import libcst as cst

from .engine import (Record, SourceError, code_of, dotted_parts, import_asname, import_module_name,
                     is_docstring_stmt, is_future_import, node_positions, parse, target_names)
from .filetypes import FileResult
from .runner import RunSummary, UsageError, report_name

LAUNCH_SCRIPT = "run_distributed_npu.sh"
OPERATION = "distributed"
RULE = "distributed"
CODES = {
    "setup": "TP301",  # process-group set-up: helper functions, their call, imports they need
    "sampler": "TP302",  # DistributedSampler for a DataLoader
    "epoch": "TP303",  # sampler.set_epoch(epoch) in an epoch loop
    "ddp": "TP304",  # DistributedDataParallel wrap, unwrapping for load_state_dict
    "rank0": "TP305",  # torch.save / print on rank 0 only
    "device": "TP306",  # hard-coded set_device only for a single process
}

SETUP_FUNCTION = "init_distributed_npu"
HELPER_NAMES = ("_npu_launch_env", SETUP_FUNCTION, "_npu_leave_group", "npu_rank", "npu_world_size", "npu_unwrap")
HELPERS = '''\
def _npu_launch_env():
    """Rank, world size and NPU of this process as given by run_distributed_npu.sh (RANK_ID,
    RANK_SIZE, DEVICE_ID) or torchrun (RANK, WORLD_SIZE, LOCAL_RANK); None for a single process."""
    env = os.environ
    if "RANK_ID" in env:
        rank, world_size, device = env["RANK_ID"], env.get("RANK_SIZE", "1"), env.get("DEVICE_ID", env["RANK_ID"])
    else:
        rank, world_size, device = env.get("RANK", "0"), env.get("WORLD_SIZE", "1"), env.get("LOCAL_RANK", "0")
    if int(world_size) <= 1:
        return None
    return int(rank), int(world_size), int(device)


def init_distributed_npu():
    """Select this process's NPU and join the hccl process group; a single process is left alone."""
    launch = _npu_launch_env()
    if launch is None or torch.distributed.is_initialized():
        return
    rank, world_size, device = launch
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    torch_npu.npu.set_device(device)
    torch.distributed.init_process_group(backend="hccl", rank=rank, world_size=world_size)
    atexit.register(_npu_leave_group)


def _npu_leave_group():
    """Leave the process group when the script ends, all processes together (unless the script
    has left it already)."""
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def npu_rank():
    """Rank of this process (0 when not distributed)."""
    return torch.distributed.get_rank() if torch.distributed.is_initialized() else 0


def npu_world_size():
    """Number of training processes (1 when not distributed)."""
    return torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1


def npu_unwrap(model):
    """The model inside a DistributedDataParallel wrapper, or the model itself."""
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
'''

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
DDP_NAMES = frozenset({"torch.nn.parallel.DistributedDataParallel",
                       "torch.nn.parallel.distributed.DistributedDataParallel"})
DIST_SAMPLERS = frozenset({"torch.utils.data.distributed.DistributedSampler",
                           "torch.utils.data.DistributedSampler"})
SET_DEVICE = frozenset({"torch_npu.npu.set_device", "torch.npu.set_device", "torch.cuda.set_device"})
INIT_PG = "torch.distributed.init_process_group"
MOVES = frozenset({"npu", "cuda", "to"})
FIXED_DEVICE = re.compile(r"^(npu|cuda):\d+$")
# methods only modules have (optimizers, schedulers and scalers have state_dict and zero_grad too)
MODULE_ONLY_METHODS = frozenset({"parameters", "named_parameters", "train", "eval", "modules", "children",
                                 "named_modules", "buffers", "named_buffers"})
NOT_MODEL_SUFFIXES = ("Loader", "Dataset", "Sampler", "Parser", "Optimizer", "Scheduler", "Scaler", "Writer",
                      "Logger", "Loss", "Generator", "Tensor", "Path", "Compose", "Meter", "Timer", "LR")
NOT_MODEL_PREFIXES = ("torch.optim", "torch.utils", "argparse", "torch.cuda", "torch_npu", "torch.amp",
                      "torchvision.transforms", "torchvision.datasets", "logging", "pathlib", "collections")
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda)


# --------------------------------------------------------------------------- entry points


def prepare_distributed(config) -> Callable[[Path, Path, RunSummary], None]:
    """Check ``-m``/``-t`` before anything is written; return the post-processing step of the run.

    Raises UsageError (one line) for an entry file that is missing, outside the input, not a
    ``.py`` file or not parseable, and for a target variable that the entry file never assigns.
    """
    rel, source = resolve_entry(config.input, config.distributed_main)
    target = config.distributed_target
    module = _parse_entry(source, rel)
    try:
        analysis = Analysis(module, target)
    except RecursionError:
        raise UsageError(f"distributed: entry file {rel} is nested too deeply to convert") from None
    if not analysis.target_sites:
        found = analysis.candidates()
        listed = ", ".join(found) if found else "none found"
        raise UsageError(f"distributed: the model variable '{target}' is never assigned in {rel}; "
                         f"candidate model variables: {listed} (choose one with -t)")

    def post_process(base: Path, staging: Path, summary: RunSummary) -> None:
        apply_to_result(staging, summary, rel, target)

    return post_process


def resolve_entry(input_path: Path, main: Path | None) -> tuple[str, bytes]:
    """The entry file's path relative to the input root ("/"-separated) and its bytes."""
    if main is None:
        raise UsageError("distributed: -m/--main is required")
    if not input_path.exists():
        raise UsageError(f"input {input_path} does not exist")
    root = input_path.resolve()
    candidate = main
    if not candidate.exists() and not candidate.is_absolute() and root.is_dir() and (root / main).exists():
        candidate = root / main  # -m given relative to the input folder
    if not candidate.exists() and not candidate.is_symlink():
        raise UsageError(f"distributed: entry file {main} does not exist")
    if candidate.is_symlink():
        raise UsageError(f"distributed: entry file {main} is a symbolic link; give the file it points to")
    if not candidate.is_file() or candidate.suffix != ".py":
        raise UsageError(f"distributed: entry file {main} is not a Python (.py) file")
    resolved = candidate.resolve()
    if root.is_file():
        if resolved != root:
            raise UsageError(f"distributed: entry file {main} is not the input file {input_path}")
        rel = root.name
    else:
        if root not in resolved.parents:
            raise UsageError(f"distributed: entry file {main} is not inside the input folder {input_path}")
        rel = resolved.relative_to(root).as_posix()
    try:
        return rel, resolved.read_bytes()
    except OSError as exc:
        raise UsageError(f"distributed: cannot read entry file {main} ({exc.strerror})") from None


def _parse_entry(source: bytes, rel: str) -> cst.Module:
    try:
        return parse(source)
    except SourceError as exc:
        raise UsageError(f"distributed: entry file {rel} cannot be converted: {exc} (line {exc.line})") from None


def apply_to_result(staging: Path, summary: RunSummary, rel: str, target: str) -> None:
    """Rewrite the converted entry file in ``staging``, record the changes, write the launch script."""
    path = staging / rel
    module = _parse_entry(path.read_bytes(), rel)
    try:
        new_module, records, warnings = convert_distributed(module, target)
    except RecursionError:
        raise UsageError(f"distributed: entry file {rel} is nested too deeply to convert") from None
    for message in warnings:
        summary.warnings.append(f"{rel}: {message}")
    if records:
        path.write_bytes(new_module.bytes)
        result = next((r for r in summary.results if r.path == rel), None)
        if result is None:
            result = FileResult(rel, "python")
            summary.results.append(result)
            summary.results.sort(key=lambda r: r.path)
        result.new = new_module.bytes
        result.skipped = False
        result.records = sorted([*result.records, *records], key=lambda r: (r.line, r.col, r.code))
    script = launch_script(rel).encode()
    name = LAUNCH_SCRIPT
    existing = staging / name
    if (existing.exists() or existing.is_symlink()) and not (existing.is_file() and not existing.is_symlink()
                                                            and existing.read_bytes() == script):
        name = report_name(name, {p.name for p in staging.iterdir()})
        summary.warnings.append(f"the project has its own {LAUNCH_SCRIPT}; the launch script is {name}")
    out = staging / name
    out.write_bytes(script)
    out.chmod(0o755)


def launch_script(entry: str) -> str:
    """run_distributed_npu.sh for the entry file ``entry`` (relative to the result folder)."""
    command = shlex.quote(entry)
    shown = "".join(c if c.isprintable() else "?" for c in entry)  # for comments only
    return f'''#!/usr/bin/env bash
# Data-parallel training on the NPUs of this machine: one process of {shown} per NPU.
# Written by transplant (distributed mode). Run it from anywhere; it works in its own folder:
#     bash {LAUNCH_SCRIPT} [arguments of {shown}]
# Environment: NPUS (NPU ids, default 0,1,2,3,4,5,6,7), MASTER_ADDR (default 127.0.0.1),
# MASTER_PORT (default 29500), LOG_DIR (default logs: one log file per process, rank_<rank>.log).
set -euo pipefail

cd "$(dirname "${{BASH_SOURCE[0]}}")"

NPUS="${{NPUS:-0,1,2,3,4,5,6,7}}"
LOG_DIR="${{LOG_DIR:-logs}}"
export MASTER_ADDR="${{MASTER_ADDR:-127.0.0.1}}"
export MASTER_PORT="${{MASTER_PORT:-29500}}"
export HCCL_WHITELIST_DISABLE=1

IFS=',' read -r -a devices <<< "${{NPUS// /}}"
if [ "${{#devices[@]}}" -eq 0 ]; then
    echo "{LAUNCH_SCRIPT}: NPUS is empty" >&2
    exit 2
fi
for device in "${{devices[@]}}"; do
    case "$device" in
        ''|*[!0-9]*) echo "{LAUNCH_SCRIPT}: NPUS must be a comma-separated list of NPU ids, not '$NPUS'" >&2
                     exit 2 ;;
    esac
done
mkdir -p "$LOG_DIR"

export RANK_SIZE="${{#devices[@]}}"
export WORLD_SIZE="$RANK_SIZE"
export LOCAL_WORLD_SIZE="$RANK_SIZE"

pids=()
trap 'kill "${{pids[@]}}" 2>/dev/null || true; exit 130' INT TERM
for rank in "${{!devices[@]}}"; do
    DEVICE_ID="${{devices[$rank]}}" RANK_ID="$rank" RANK="$rank" LOCAL_RANK="$rank" \\
        python3 {command} "$@" > "$LOG_DIR/rank_$rank.log" 2>&1 &
    pids+=("$!")
    echo "rank $rank on NPU ${{devices[$rank]}}: log $LOG_DIR/rank_$rank.log"
done

status=0
for rank in "${{!pids[@]}}"; do
    if ! wait "${{pids[$rank]}}"; then
        echo "rank $rank failed; see $LOG_DIR/rank_$rank.log" >&2
        status=1
    fi
done
exit "$status"
'''


# --------------------------------------------------------------------------- analysis


def _short(node: cst.CSTNode, limit: int = 60) -> str:
    """The node's code on one line, cut at ``limit`` characters, for messages."""
    text = " ".join(code_of(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _dotted(node: cst.CSTNode) -> str | None:
    parts = dotted_parts(node) if isinstance(node, cst.BaseExpression) else None
    return ".".join(parts) if parts else None


@dataclass
class LoaderInfo:
    distributed: bool  # its sampler is a DistributedSampler
    sampler: str | None = None  # code of a variable holding that sampler
    sampler_key: tuple | None = None  # where that variable lives (see Analysis.key_of)


@dataclass
class Plan:
    """Edits keyed by the id of nodes of the original tree, applied by _Apply in one pass."""

    replace: dict[int, Callable[[cst.CSTNode], cst.CSTNode]] = field(default_factory=dict)
    before: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    after: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    prepend: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    # (code, message, key of the first anchor, key of the last anchor)
    records: list[tuple[str, str, str, str]] = field(default_factory=list)
    anchors: dict[str, cst.CSTNode] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (code, message, anchor key)

    def record(self, kind: str, message: str, start: str, end: str | None = None) -> None:
        self.records.append((CODES[kind], message, start, end or start))


def _anchor_of(stmt: cst.CSTNode) -> cst.CSTNode:
    """A node inside ``stmt`` that keeps its identity when the statement's leading lines change."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return stmt.name
    if isinstance(stmt, (cst.If, cst.While)):
        return stmt.test
    if isinstance(stmt, cst.SimpleStatementLine) and stmt.body:
        return stmt.body[0]
    return stmt


class Analysis:
    """What the entry file contains: imports, scopes, the target model, loaders, epoch loops."""

    def __init__(self, module: cst.Module, target: str) -> None:
        self.module = module
        self.nodes: list[cst.CSTNode] = []
        self.parent: dict[int, cst.CSTNode] = {}
        self.span: dict[int, tuple[int, int]] = {}  # id -> (index of the node, end of its subtree)
        self._index(module)
        self._function_cache: dict[int, cst.FunctionDef | None] = {}
        self._helper_spans = [self.span[id(s)] for s in module.body
                              if isinstance(s, cst.FunctionDef) and s.name.value in HELPER_NAMES]
        self.imports = self._imports()
        self.functions = {s.name.value: s for s in self._block_statements(module) if isinstance(s, cst.FunctionDef)}
        self.classes = {s.name.value: s for s in self._block_statements(module) if isinstance(s, cst.ClassDef)}
        self._locals: dict[int, set[str]] = {}
        parts = target.split(".")
        self.target_parts = parts
        self.target_sites = self._assignments(parts)
        if len(parts) == 1:
            # `-t model` also finds `self.model`: when there is no plain `model`, or when the plain
            # one only goes to the device as `self.x = model.to(device)` (the model a Trainer keeps)
            moved = self._moved_into(parts)
            kept = [t for t in moved if len(t) == 2 and t[0] == "self"]
            if not self.target_sites or (kept and parts not in moved):
                attr = kept[0] if kept else ["self", parts[0]]
                if self._assignments(attr):
                    self.target_parts = attr
                    self.target_sites = self._assignments(attr)
        self.target_code = ".".join(self.target_parts)

    # ---- tree bookkeeping

    def _index(self, module: cst.Module) -> None:
        stack: list[cst.CSTNode] = []
        nodes, parent, span = self.nodes, self.parent, self.span

        class Indexer(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                span[id(node)] = len(nodes)
                nodes.append(node)
                if stack:
                    parent[id(node)] = stack[-1]
                stack.append(node)
                return True

            def on_leave(self, original_node: cst.CSTNode) -> None:
                stack.pop()
                span[id(original_node)] = (span[id(original_node)], len(nodes))

        module.visit(Indexer())

    def subtree(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The nodes below ``node``, in source order."""
        start, end = self.span[id(node)]
        return self.nodes[start + 1:end]

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent.get(id(node))
        while current is not None:
            yield current
            current = self.parent.get(id(current))

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function whose body holds ``node`` (None at module level and in class bodies)."""
        cache = self._function_cache
        path = []
        current = node
        while id(current) not in cache:
            path.append(id(current))
            parent = self.parent.get(id(current))
            if parent is None or isinstance(parent, (cst.ClassDef, cst.FunctionDef)):
                found = parent if isinstance(parent, cst.FunctionDef) else None
                break
            current = parent
        else:
            found = cache[id(current)]
        for key in path:
            cache[key] = found
        return found

    def class_of(self, node: cst.CSTNode) -> cst.ClassDef | None:
        for a in self.ancestors(node):
            if isinstance(a, cst.ClassDef):
                return a
        return None

    def in_helpers(self, node: cst.CSTNode) -> bool:
        """Is ``node`` part of the inserted helper functions?"""
        where = self.span[id(node)][0]
        return any(start <= where < end for start, end in self._helper_spans)

    def statement_of(self, node: cst.CSTNode) -> tuple[cst.BaseStatement, cst.CSTNode] | None:
        """The statement that contains ``node`` and sits in an indented block or the module body."""
        current = node
        for a in self.ancestors(node):
            if isinstance(a, (cst.IndentedBlock, cst.Module)) and isinstance(current, cst.BaseStatement):
                return current, a
            if isinstance(a, cst.SimpleStatementSuite):
                return None
            current = a
        return None

    def within(self, node: cst.CSTNode, top: cst.CSTNode) -> bool:
        """Is ``node`` ``top`` or anywhere below it?"""
        return node is top or any(a is top for a in self.ancestors(node))

    def under(self, node: cst.CSTNode, top: cst.CSTNode) -> bool:
        """Is ``node`` inside ``top`` without crossing a function, class or lambda boundary?"""
        for a in self.ancestors(node):
            if a is top:
                return True
            if isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
        return False

    def in_loop(self, node: cst.CSTNode) -> bool:
        for a in self.ancestors(node):
            if isinstance(a, (cst.For, cst.While)):
                return True
            if isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
        return False

    def guarded_by(self, node: cst.CSTNode, word: str) -> bool:
        """Is ``node`` inside an ``if`` whose condition mentions ``word``?"""
        for a in self.ancestors(node):
            if isinstance(a, cst.If) and word in code_of(a.test):
                return True
            if isinstance(a, (cst.FunctionDef, cst.ClassDef)):
                return False
        return False

    @staticmethod
    def _block_statements(node: cst.CSTNode) -> list[cst.BaseStatement]:
        body = node.body if isinstance(node, cst.Module) else getattr(node, "body", None)
        if isinstance(body, cst.IndentedBlock):
            return list(body.body)
        if isinstance(node, cst.Module):
            return list(node.body)
        return []

    # ---- names

    def _imports(self) -> dict[str, str]:
        names: dict[str, str] = {}
        for node in self.nodes:
            if isinstance(node, cst.Import):
                for alias in node.names:
                    qualified = import_module_name(alias.name)
                    local = import_asname(alias)
                    if local is not None:
                        names[local] = qualified
                    else:
                        root = qualified.split(".")[0]
                        names[root] = root
            elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None:
                if isinstance(node.names, cst.ImportStar):
                    continue
                module = import_module_name(node.module)
                for alias in node.names:
                    name = import_module_name(alias.name)
                    names[import_asname(alias) or name] = f"{module}.{name}"
        return names

    def qual(self, node: cst.BaseExpression) -> str | None:
        parts = dotted_parts(node)
        if not parts or parts[0] not in self.imports:
            return None
        return ".".join([self.imports[parts[0]], *parts[1:]])

    def calls_to(self, names: frozenset[str] | set[str]) -> list[cst.Call]:
        return [n for n in self.nodes if isinstance(n, cst.Call) and self.qual(n.func) in names]

    def imports_plain(self, module: str) -> bool:
        """Is ``module`` bound to its own name at the top level (``import os``)?"""
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Import) and any(
                        alias.asname is None and import_module_name(alias.name).split(".")[0] == module
                        for alias in small.names
                    ):
                        return True
        return False

    def local_names(self, fn: cst.FunctionDef) -> set[str]:
        """Names local to ``fn``: parameters and names it assigns (not those it declares global)."""
        cached = self._locals.get(id(fn))
        if cached is not None:
            return cached
        names = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
        for star in (fn.params.star_arg, fn.params.star_kwarg):
            if isinstance(star, cst.Param):
                names.add(star.name.value)
        declared_global: set[str] = set()
        for node in self.subtree(fn):
            if self.function_of(node) is not fn:
                continue
            if isinstance(node, cst.Global):
                declared_global |= {n.name.value for n in node.names}
            elif isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.AsName)):
                target = node.name if isinstance(node, cst.AsName) else node.target
                names |= target_names(target)
        names -= declared_global
        self._locals[id(fn)] = names
        return names

    def key_of(self, expr: cst.BaseExpression, at: cst.CSTNode) -> tuple | None:
        """Where the variable ``expr`` lives, seen from ``at``: a local or global name, or an
        attribute of ``self`` in a class."""
        if isinstance(expr, cst.Name):
            fn = self.function_of(at)
            if fn is not None and expr.value in self.local_names(fn):
                return ("name", id(fn), expr.value)
            return ("name", id(self.module), expr.value)
        if (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
            cls = self.class_of(at)
            if cls is not None:
                return ("attr", id(cls), expr.attr.value)
        return None

    # ---- the target model

    def is_target(self, node: cst.CSTNode) -> bool:
        return isinstance(node, (cst.Name, cst.Attribute)) and dotted_parts(node) == self.target_parts

    def _assignments(self, parts: list[str]) -> list[cst.CSTNode]:
        sites = []
        for node in self.nodes:
            if self.in_helpers(node):
                continue
            targets: list[cst.BaseExpression] = []
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, cst.AnnAssign) and node.value is not None:
                targets = [node.target]
            for t in targets:
                leaves = [e.value for e in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [t]
                if any(isinstance(leaf, (cst.Name, cst.Attribute)) and dotted_parts(leaf) == parts for leaf in leaves):
                    sites.append(node)
                    break
        return sites

    def _moved_into(self, parts: list[str]) -> list[list[str]]:
        """Where ``parts.npu()``/``.to()``/``.cuda()`` results go: the assigned variables, or
        ``parts`` itself for an in-place move statement."""
        found = []
        for node in self.nodes:
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value in MOVES and dotted_parts(node.func.value) == parts):
                continue
            parent = self.parent.get(id(node))
            if isinstance(parent, cst.Expr):
                found.append(parts)
            elif isinstance(parent, cst.Assign) and parent.value is node:
                found.extend(p for t in parent.targets if (p := dotted_parts(t.target)))
        return found

    def candidates(self) -> list[str]:
        """Variables that look like they hold a model: assigned from a model-like constructor, moved
        to a device outside loops, or used like a module (``.parameters()``, ``.state_dict()``...)."""
        assigned: dict[str, int] = {}
        found: dict[str, int] = {}
        not_models: set[str] = set()  # assigned from an optimizer, a loader, a scaler...
        for i, node in enumerate(self.nodes):
            if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for t in targets:
                    name = _dotted(t)
                    if name is None:
                        continue
                    assigned.setdefault(name, i)
                    if self._model_like(node.value) and not self.in_loop(node):
                        found.setdefault(name, i)
                    elif self._not_model(node.value):
                        not_models.add(name)
        for i, node in enumerate(self.nodes):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                name = _dotted(node.func.value)
                method = node.func.attr.value
                if name is None or name not in assigned or name in not_models:
                    continue
                if method in MODULE_ONLY_METHODS or (method in MOVES and not self.in_loop(node)):
                    found.setdefault(name, assigned[name])
        return [name for name, _ in sorted(found.items(), key=lambda kv: kv[1])][:8]

    def _constructor(self, value: cst.BaseExpression) -> tuple[str, str] | None:
        """(qualified name, last name) of the call that builds ``value``, past device moves."""
        while (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
               and value.func.attr.value in MOVES):
            value = value.func.value
        if not isinstance(value, cst.Call):
            return None
        parts = dotted_parts(value.func)
        if not parts:
            return None
        return self.qual(value.func) or ".".join(parts), parts[-1]

    def _not_model(self, value: cst.BaseExpression) -> bool:
        built = self._constructor(value)
        return built is not None and (built[0].startswith(NOT_MODEL_PREFIXES) or built[1].endswith(NOT_MODEL_SUFFIXES))

    def _model_like(self, value: cst.BaseExpression) -> bool:
        built = self._constructor(value)
        if built is None or self._not_model(value) or built[1] == "DataParallel":
            return False
        qualified, last = built
        return last[:1].isupper() or "model" in last.lower() or ".models." in f".{qualified}"


def _stmt(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code)


def _guard(stmt: cst.BaseStatement, condition: str) -> cst.If:
    """``stmt`` inside ``if condition:``; the comment lines above it stay above the ``if``."""
    shell = cst.parse_statement(f"if {condition}:\n    pass\n")
    assert isinstance(shell, cst.If)
    return shell.with_changes(leading_lines=stmt.leading_lines,
                              body=cst.IndentedBlock([stmt.with_changes(leading_lines=())]))


# --------------------------------------------------------------------------- the conversion


class Converter:
    """Plans every distributed edit of one entry module (see the module docstring)."""

    def __init__(self, module: cst.Module, target: str) -> None:
        self.a = Analysis(module, target)
        self.plan = Plan()
        self.module = module
        self.loaders: dict[tuple, LoaderInfo] = {}
        self.loader_calls: dict[int, LoaderInfo] = {}
        self.edit_sites: list[cst.CSTNode] = []  # statements whose edits need the process group
        self.taken_names = {n.value for n in self.a.nodes if isinstance(n, cst.Name)}
        self.taken_attrs: dict[int, set[str]] = {}
        self._n = 0

    def key(self) -> str:
        self._n += 1
        return f"a{self._n}"

    def unique(self, wanted: str, attr_class: cst.ClassDef | None = None) -> str:
        """``wanted``, or ``wanted2``, ``wanted3``... when the file already uses that name (for
        attributes of ``self``: when the class already uses that attribute)."""
        if attr_class is None:
            taken = self.taken_names
        else:
            taken = self.taken_attrs.setdefault(id(attr_class), {
                n.attr.value for n in self.a.nodes
                if isinstance(n, cst.Attribute) and self.a.class_of(n) is attr_class})
        name, i = wanted, 2
        while name in taken:
            name = f"{wanted}{i}"
            i += 1
        taken.add(name)
        return name

    # ---- driver

    def run(self) -> Plan:
        self.samplers()
        self.propagate_loaders()
        epoch_loops = self.epoch_loops()
        self.ddp()
        self.saves()
        self.prints(epoch_loops)
        self.set_devices()
        self.fixed_devices()
        self.setup()
        return self.plan

    # ---- DataLoader -> DistributedSampler

    def _sampler_expr(self, node: cst.BaseExpression | None) -> bool:
        """Is ``node`` a DistributedSampler (a call, or a variable assigned from one)?"""
        if node is None:
            return False
        if isinstance(node, cst.Call):
            return self.a.qual(node.func) in DIST_SAMPLERS
        if isinstance(node, (cst.Name, cst.Attribute)):
            code = _dotted(node)
            for n in self.a.nodes:
                if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and self.a.qual(n.value.func) in DIST_SAMPLERS:
                    if any(_dotted(t.target) == code for t in n.targets):
                        return True
        return False

    def samplers(self) -> None:
        for call in self.a.calls_to(DATALOADERS):
            if self.a.in_helpers(call):
                continue
            args = list(call.args)
            positional = [a for a in args if a.keyword is None and not a.star]
            keywords = {a.keyword.value: a for a in args if a.keyword is not None}
            sampler_arg = keywords.get("sampler") or (positional[3] if len(positional) > 3 else None)
            has_sampler = sampler_arg is not None and not (
                isinstance(sampler_arg.value, cst.Name) and sampler_arg.value.value == "None")
            owner = self._owner(call)
            stars = [a for a in args if a.star]
            # `**kwargs` may hold shuffle: it goes into the sampler, and False to the loader
            kwargs_arg = stars[0] if len(stars) == 1 and stars[0].star == "**" and "shuffle" not in keywords and (
                dotted_parts(stars[0].value)) else None
            if stars and kwargs_arg is None and not has_sampler:
                self.plan.warnings.append(f"DataLoader with {_short(stars[0])} arguments: no DistributedSampler added")
            if has_sampler or "batch_sampler" in keywords or (stars and kwargs_arg is None):
                info = LoaderInfo(has_sampler and self._sampler_expr(sampler_arg.value))
                if info.distributed and isinstance(sampler_arg.value, (cst.Name, cst.Attribute)):
                    key = self.a.key_of(sampler_arg.value, call)
                    if key is not None:
                        info.sampler, info.sampler_key = code_of(sampler_arg.value), key
                self._register(call, owner, info)
                continue
            dataset = positional[0] if positional else keywords.get("dataset")
            if dataset is None:
                continue
            shuffle = keywords.get("shuffle") or (positional[2] if len(positional) > 2 else None)
            self._add_sampler(call, owner, dataset, shuffle, sampler_arg, kwargs_arg)

    def _owner(self, call: cst.Call) -> cst.BaseExpression | None:
        """The variable a DataLoader call is assigned to (``x = DataLoader(...)``), if any."""
        parent = self.a.parent.get(id(call))
        if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, cst.Name) or (
                    isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                    and target.value.value == "self"):
                return target
        if isinstance(parent, cst.AnnAssign) and parent.value is call and isinstance(parent.target, cst.Name):
            return parent.target
        return None

    def _register(self, call: cst.Call, owner: cst.BaseExpression | None, info: LoaderInfo) -> None:
        self.loader_calls[id(call)] = info
        if owner is not None:
            key = self.a.key_of(owner, call)
            if key is not None:
                self.loaders[key] = info

    def _add_sampler(self, call: cst.Call, owner, dataset: cst.Arg, shuffle: cst.Arg | None,
                     none_sampler: cst.Arg | None, kwargs_arg: cst.Arg | None = None) -> None:
        where = self.a.statement_of(call)
        inline = where is None or any(isinstance(a, COMPREHENSIONS) for a in self._between(call, where[0]))
        simple_dataset = isinstance(dataset.value, (cst.Name, cst.Attribute)) and dotted_parts(dataset.value)
        if inline and not simple_dataset:
            self.plan.warnings.append(
                f"DataLoader over {_short(dataset.value)} is built inside an expression; no DistributedSampler added")
            return
        shuffle_code = code_of(shuffle.value) if shuffle is not None else "False"
        if kwargs_arg is not None:
            shuffle_code = f'{code_of(kwargs_arg.value)}.get("shuffle", False)'
        new_before: list[cst.BaseStatement] = []
        dataset_code = code_of(dataset.value)
        hoisted_dataset: str | None = None
        sampler_key = None
        if not inline:
            stmt, _block = where
            prefix = self._prefix(owner)
            cls = self.a.class_of(call) if isinstance(owner, cst.Attribute) else None
            if not simple_dataset:
                hoisted_dataset = self.unique(f"{prefix}_dataset" if prefix else "dataset", cls)
                dataset_code = f"self.{hoisted_dataset}" if cls is not None else hoisted_dataset
                new_before.append(cst.SimpleStatementLine([cst.Assign(
                    [cst.AssignTarget(cst.parse_expression(dataset_code))], dataset.value)]))
            name = self.unique(f"{prefix}_sampler" if prefix else "sampler", cls)
            sampler_code = f"self.{name}" if cls is not None else name
            sampler_stmt = _stmt(f"{sampler_code} = torch.utils.data.distributed.DistributedSampler(\n"
                                 f"    {dataset_code}, num_replicas=npu_world_size(), rank=npu_rank(), "
                                 f"shuffle={shuffle_code})\n")
            new_before.append(sampler_stmt)
            sampler_expr: cst.BaseExpression = cst.parse_expression(sampler_code)
            if cls is not None:
                sampler_key = ("attr", id(cls), name)
            else:
                sampler_key = ("name", id(self.a.function_of(call) or self.module), name)
            self.plan.before.setdefault(id(stmt), []).extend(new_before)
            self.edit_sites.append(stmt)
            anchor_key = self.key()
            self.plan.anchors[anchor_key] = _anchor_of(sampler_stmt)
            shuffled = f" (shuffle={shuffle_code} moves into the sampler)" if (
                shuffle is not None or kwargs_arg is not None) else ""
            self.plan.record("sampler", f"DistributedSampler {sampler_code} for the DataLoader over "
                                        f"{_short(dataset.value)}{shuffled}", anchor_key)
        else:
            sampler_code = None
            sampler_expr = cst.parse_expression(
                f"torch.utils.data.distributed.DistributedSampler({dataset_code}, num_replicas=npu_world_size(), "
                f"rank=npu_rank(), shuffle={shuffle_code})")
        arg_key = self.key()
        plan = self.plan

        def rewrite(updated: cst.Call) -> cst.Call:
            args = list(updated.args)
            originals = list(call.args)
            sampler_arg = cst.Arg(value=sampler_expr, keyword=cst.Name("sampler"),
                                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                        whitespace_after=cst.SimpleWhitespace("")))
            if hoisted_dataset is not None:
                i = originals.index(dataset)
                args[i] = args[i].with_changes(value=cst.parse_expression(dataset_code))
            if kwargs_arg is not None:
                i = originals.index(kwargs_arg)
                args[i] = args[i].with_changes(
                    value=cst.parse_expression(f'{{**{code_of(kwargs_arg.value)}, "shuffle": False}}'))
            replace_at = originals.index(shuffle) if shuffle is not None else (
                originals.index(none_sampler) if none_sampler is not None else None)
            if replace_at is not None:
                old = args[replace_at]
                new = sampler_arg.with_changes(comma=old.comma, whitespace_after_arg=old.whitespace_after_arg)
                if old.keyword is not None:
                    new = new.with_changes(equal=old.equal)
                args[replace_at] = new
                if shuffle is not None and none_sampler is not None:  # sampler=None given too: drop it
                    drop = originals.index(none_sampler)
                    if drop == len(args) - 1:  # the argument before it becomes the last one
                        args[drop - 1] = args[drop - 1].with_changes(
                            comma=args[drop].comma, whitespace_after_arg=args[drop].whitespace_after_arg)
                        if drop - 1 == replace_at:
                            new = args[drop - 1]
                    del args[drop]
                plan.anchors[arg_key] = new
            else:
                last = args[-1]
                if isinstance(last.comma, cst.Comma):  # trailing comma: keep the layout
                    new = sampler_arg.with_changes(comma=last.comma)
                    if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
                        args[-1] = last.with_changes(comma=args[-2].comma)
                else:  # the space before ")" moves to the new last argument
                    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                                                 whitespace_after_arg=cst.SimpleWhitespace(""))
                    new = sampler_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
                args.append(new)
                plan.anchors[arg_key] = new
            return updated.with_changes(args=args)

        self.plan.replace[id(call)] = rewrite
        if inline:
            self.edit_sites.append(call)
            self.plan.record("sampler", f"DistributedSampler for the DataLoader over {_short(dataset.value)}", arg_key)
        self._register(call, owner, LoaderInfo(True, sampler_code, sampler_key))

    def _between(self, node: cst.CSTNode, top: cst.CSTNode) -> Iterator[cst.CSTNode]:
        for a in self.a.ancestors(node):
            if a is top:
                return
            yield a

    @staticmethod
    def _prefix(owner: cst.BaseExpression | None) -> str:
        if owner is None:
            return ""
        name = owner.value if isinstance(owner, cst.Name) else owner.attr.value
        for suffix in ("_dataloader", "dataloader", "_loader", "loader", "_dl"):
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                return name[: len(name) - len(suffix)].rstrip("_")
            if name.lower() == suffix.lstrip("_"):
                return ""
        return name

    # ---- which variables hold loaders

    def loader_of(self, expr: cst.BaseExpression, at: cst.CSTNode) -> LoaderInfo | None:
        if isinstance(expr, cst.Call) and id(expr) in self.loader_calls:
            return self.loader_calls[id(expr)]
        if isinstance(expr, (cst.Name, cst.Attribute)):
            key = self.a.key_of(expr, at)
            if key is not None:
                return self.loaders.get(key)
        return None

    def _callee(self, call: cst.Call) -> cst.FunctionDef | None:
        func = call.func
        if isinstance(func, cst.Name) and func.value not in self.a.imports:
            caller = self.a.function_of(call)
            if caller is not None and func.value in self.a.local_names(caller):
                return None
            fn = self.a.functions.get(func.value)
            if fn is not None:
                return fn
            cls = self.a.classes.get(func.value)  # a constructor: its __init__
            if cls is not None:
                return next((s for s in self.a._block_statements(cls)
                             if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            cls = self.a.class_of(call)
            if cls is not None:
                for stmt in self.a._block_statements(cls):
                    if isinstance(stmt, cst.FunctionDef) and stmt.name.value == func.attr.value:
                        return stmt
        return None

    def _returns(self, fn: cst.FunctionDef) -> list[LoaderInfo | None]:
        for node in self.a.subtree(fn):
            if isinstance(node, cst.Return) and node.value is not None and self.a.function_of(node) is fn:
                value = node.value
                elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
                infos = [self.loader_of(e, node) for e in elements]
                if any(infos):
                    return infos
        return []

    def _value_infos(self, value: cst.BaseExpression, at: cst.CSTNode) -> list[LoaderInfo | None]:
        """Loader information for the value(s) an expression gives: a call of a function that
        returns loaders, or a variable holding one."""
        if isinstance(value, cst.Call) and id(value) not in self.loader_calls:
            fn = self._callee(value)
            return self._returns(fn) if fn is not None else []
        if isinstance(value, (cst.Name, cst.Attribute)):
            info = self.loader_of(value, at)
            return [info] if info else []
        return []

    def propagate_loaders(self) -> None:
        """Follow loaders through assignments, functions returning them and parameters."""
        for _round in range(4):
            before = len(self.loaders)
            for node in self.a.nodes:
                if isinstance(node, cst.Assign) and len(node.targets) == 1:
                    target = node.targets[0].target
                    leaves = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
                    values = [e.value for e in node.value.elements] if isinstance(
                        node.value, (cst.Tuple, cst.List)) and len(leaves) > 1 else [node.value]
                    if len(values) == 1 and len(leaves) > 1:
                        infos = self._value_infos(values[0], node)
                    elif len(values) == len(leaves):
                        infos = []
                        for v in values:
                            found = self._value_infos(v, node)
                            infos.append(found[0] if len(found) == 1 else None)
                    else:
                        infos = []
                    if len(infos) == len(leaves):
                        for leaf, info in zip(leaves, infos):
                            key = self.a.key_of(leaf, node) if info else None
                            if key is not None:
                                self.loaders.setdefault(key, info if isinstance(node.value, (cst.Name, cst.Attribute))
                                                        else LoaderInfo(info.distributed))
                elif isinstance(node, cst.Call) and (fn := self._callee(node)) is not None:
                    params = [p for p in fn.params.params if not (p.name.value == "self" and self.a.class_of(fn))]
                    by_name = {p.name.value: p for p in (*fn.params.params, *fn.params.kwonly_params)}
                    for i, arg in enumerate(node.args):
                        if arg.star:
                            break
                        info = self.loader_of(arg.value, node)
                        if info is None:
                            continue
                        param = by_name.get(arg.keyword.value) if arg.keyword is not None else (
                            params[i] if i < len(params) else None)
                        if param is not None:
                            self.loaders.setdefault(("name", id(fn), param.name.value), LoaderInfo(info.distributed))
            if len(self.loaders) == before:
                break

    # ---- epoch loops

    def _is_epoch_loop(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, cst.For) or not isinstance(node.target, cst.Name):
            return False
        it = node.iter
        if not isinstance(it, cst.Call):
            return False
        if isinstance(it.func, cst.Name) and it.func.value in ("range", "trange"):
            return True
        return bool(it.args) and isinstance(it.args[0].value, cst.Call) and isinstance(
            it.args[0].value.func, cst.Name) and it.args[0].value.func.value == "range"

    def epoch_loops(self) -> list[cst.For]:
        loops = [n for n in self.a.nodes if self._is_epoch_loop(n) and not self.a.in_helpers(n)]
        found: list[cst.For] = []
        for loop in loops:
            if not isinstance(loop.body, cst.IndentedBlock):
                continue
            refs: list[tuple[str, cst.CSTNode]] = []
            existing = {code_of(n.func.value) for body in self._bodies(loop.body, 0) for n in self.a.subtree(body)
                        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                        and n.func.attr.value == "set_epoch" and self.a.under(n, body)}
            for node, info in self._loader_refs(loop, loop.body, 0):
                receiver = self._receiver(node, info, loop)
                if {receiver, f"{code_of(node)}.sampler", info.sampler} & existing:
                    continue
                if all(r != receiver for r, _ in refs):
                    refs.append((receiver, node))
            if not refs:
                if self._uses_loader(loop):
                    found.append(loop)
                continue
            epoch = loop.target.value
            stmts = []
            for receiver, _node in refs:
                stmt = _stmt(f"{receiver}.set_epoch({epoch})\n")
                stmts.append(stmt)
                k = self.key()
                self.plan.anchors[k] = _anchor_of(stmt)
                self.plan.record("epoch", f"{receiver}.set_epoch({epoch}): a new shuffle order in every epoch", k)
            self.plan.prepend.setdefault(id(loop.body), []).extend(stmts)
            self.edit_sites.append(loop)
            found.append(loop)
        return found

    def _bodies(self, body: cst.CSTNode, depth: int) -> Iterator[cst.CSTNode]:
        """``body`` and the bodies of the functions it calls (three calls deep)."""
        yield body
        if depth < 3:
            for node in self.a.subtree(body):
                if isinstance(node, cst.Call) and self.a.under(node, body):
                    fn = self._callee(node)
                    if fn is not None and fn.body is not body and isinstance(fn.body, cst.IndentedBlock):
                        yield from self._bodies(fn.body, depth + 1)

    def _loader_refs(self, loop: cst.For, body: cst.CSTNode, depth: int) -> Iterator[tuple[cst.CSTNode, LoaderInfo]]:
        """Uses of distributed loaders in ``body`` that belong to ``loop`` (not to an inner epoch
        loop), also inside the functions and methods it calls (loaders of ``self`` or globals)."""
        for node in self.a.subtree(body):
            if not self.a.under(node, body):
                continue
            if depth == 0 and next((a for a in self.a.ancestors(node) if self._is_epoch_loop(a)), None) is not loop:
                continue
            if isinstance(node, cst.Call) and depth < 3:
                fn = self._callee(node)
                if fn is not None and fn.body is not body and isinstance(fn.body, cst.IndentedBlock):
                    yield from self._loader_refs(loop, fn.body, depth + 1)
                continue
            if not isinstance(node, (cst.Name, cst.Attribute)):
                continue
            parent = self.a.parent.get(id(node))
            if isinstance(parent, (cst.AssignTarget, cst.Attribute)) and (
                    not isinstance(parent, cst.Attribute) or parent.value is node):
                continue
            info = self.loader_of(node, node)
            if info is None or not info.distributed:
                continue
            if depth > 0 and self.a.key_of(node, loop) != self.a.key_of(node, node):
                continue  # a local of the called function: not visible in the loop
            yield node, info

    def _uses_loader(self, loop: cst.For) -> bool:
        return any(isinstance(n, (cst.Name, cst.Attribute)) and self.a.under(n, loop.body)
                   and (info := self.loader_of(n, n)) is not None and info.distributed
                   for n in self.a.subtree(loop.body))

    def _receiver(self, ref: cst.CSTNode, info: LoaderInfo, loop: cst.For) -> str:
        """``train_sampler`` when the loader's sampler variable is visible in the loop, else
        ``loader.sampler``."""
        if info.sampler is not None and info.sampler_key is not None:
            kind, owner, _name = info.sampler_key
            here = self.a.class_of(loop) if kind == "attr" else (self.a.function_of(loop) or self.module)
            if here is not None and id(here) == owner:
                return info.sampler
        return f"{code_of(ref)}.sampler"

    # ---- DistributedDataParallel

    def ddp(self) -> None:
        a = self.a
        wrapped = [c for c in a.calls_to(DDP_NAMES) if c.args and a.is_target(c.args[0].value)]
        if wrapped:
            return
        sites = self._ddp_sites()
        if not sites:
            return
        placement = self._placement(sites)
        if placement is None:
            self.plan.warnings.append(f"{a.target_code} is assigned in a one-line block; not wrapped in "
                                      "DistributedDataParallel")
            return
        stmt, _block = placement
        t = a.target_code
        wrap = _stmt(f"if torch.distributed.is_initialized():\n"
                     f"    {t} = torch.nn.parallel.DistributedDataParallel({t}, "
                     f"device_ids=[torch_npu.npu.current_device()])\n")
        k = self.key()
        self.plan.anchors[k] = _anchor_of(wrap)
        ret = self._return_of(stmt)
        if ret is not None and not a.is_target(ret.value):
            # `return model.to(device)`: assign, wrap, then return the wrapped model
            assign = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.parse_expression(t))], ret.value)])
            self.plan.before.setdefault(id(stmt), []).extend([assign, wrap])
            self.plan.replace[id(ret)] = lambda updated: updated.with_changes(value=cst.parse_expression(t))
        elif ret is not None:
            self.plan.before.setdefault(id(stmt), []).append(wrap)
        else:
            self.plan.after.setdefault(id(stmt), []).append(wrap)
        self.edit_sites.append(stmt)
        self.plan.record("ddp", f"wrap {t} in DistributedDataParallel on this process's NPU", k)
        # a DDP-wrapped model takes and gives state dicts with "module." keys: load into the inner
        # model wherever the wrapped one may be seen (after the wrap, or in functions that do not
        # build a model of their own)
        wrap_scope = a.function_of(stmt) or a.module
        order = {id(n): i for i, n in enumerate(a.nodes)}
        building = {id(a.function_of(s) or a.module) for s in a.target_sites}
        for call in a.nodes:
            if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "load_state_dict" and a.is_target(call.func.value)
                    and not a.in_helpers(call)):
                scope = a.function_of(call) or a.module
                if scope is wrap_scope and order[id(call)] < order[id(stmt)] or (
                        scope is not wrap_scope and id(scope) in building):
                    continue
                lk = self.key()

                def unwrap(updated: cst.Call, lk=lk) -> cst.Call:
                    inner = cst.parse_expression(f"npu_unwrap({t})")
                    self.plan.anchors[lk] = inner
                    return updated.with_changes(func=updated.func.with_changes(value=inner))

                self.plan.replace[id(call)] = unwrap
                self.plan.record("ddp", "load_state_dict into the model inside the DistributedDataParallel wrapper", lk)

    def _ddp_sites(self) -> list[cst.CSTNode]:
        """Assignments and device moves of the target in the scope where it is built."""
        a = self.a
        sites = a.target_sites
        if not sites:
            return []
        scopes: list[cst.CSTNode] = []
        for s in sites:
            scope = a.function_of(s) or a.module
            if scope not in scopes:
                scopes.append(scope)
        training = {id(a.function_of(n) or a.module) for n in a.nodes if self._is_epoch_loop(n)}
        main = self._main_function()

        def rank(scope: cst.CSTNode) -> int:
            if isinstance(scope, cst.FunctionDef) and scope.name.value == "__init__":
                return 0
            if id(scope) in training:
                return 1
            if scope is main or scope is a.module:
                return 2
            return 3

        scope = min(scopes, key=lambda s: (rank(s), scopes.index(s)))
        found: list[cst.CSTNode] = []
        for node in a.nodes:
            if (a.function_of(node) or a.module) is not scope or a.in_loop(node):
                continue
            if node in sites:
                found.append(node)
            elif (isinstance(node, cst.Expr) and isinstance(node.value, cst.Call)
                  and isinstance(node.value.func, cst.Attribute) and node.value.func.attr.value in MOVES
                  and a.is_target(node.value.func.value)):
                found.append(node)
            elif isinstance(node, cst.Return) and node.value is not None and any(
                    a.is_target(n) for n in a.subtree(node)):
                found.append(node)
                break
            elif isinstance(node, (cst.For, cst.While)) and found:
                break
        return found

    def _placement(self, sites: list[cst.CSTNode]) -> tuple[cst.BaseStatement, cst.CSTNode] | None:
        """The statement after which the model is complete: in the deepest block holding every site,
        the statement that contains the last one."""
        chains = []
        for site in sites:
            chain = []
            current: cst.CSTNode = site
            for anc in self.a.ancestors(site):
                if isinstance(anc, cst.SimpleStatementSuite):
                    chain = []
                if isinstance(anc, (cst.IndentedBlock, cst.Module)) and isinstance(current, cst.BaseStatement):
                    chain.append((current, anc))
                if isinstance(anc, (cst.FunctionDef, cst.Module)):
                    break
                current = anc
            if not chain:
                return None
            chains.append(list(reversed(chain)))
        depth = 0
        while all(len(c) > depth for c in chains) and all(c[depth][1] is chains[0][depth][1] for c in chains):
            depth += 1
        if depth == 0:
            return None
        return chains[-1][depth - 1]

    @staticmethod
    def _return_of(stmt: cst.BaseStatement) -> cst.Return | None:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return):
            return stmt.body[0] if stmt.body[0].value is not None else None
        return None

    # ---- rank 0 only: saving and per-epoch prints

    def _sole_expr_statement(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        expr = self.a.parent.get(id(call))
        line = self.a.parent.get(id(expr)) if isinstance(expr, cst.Expr) else None
        if (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1
                and isinstance(self.a.parent.get(id(line)), (cst.IndentedBlock, cst.Module))):
            return line
        return None

    def saves(self) -> None:
        a = self.a
        for call in a.calls_to(frozenset({"torch.save"})):
            if not call.args or a.in_helpers(call):
                continue
            obj = call.args[0].value
            refs = self._target_refs(obj)
            if not refs and isinstance(obj, cst.Name):
                # `ckp = model.state_dict()` ... `torch.save(ckp, path)` in the same function
                scope = a.function_of(call)
                for node in a.subtree(scope) if scope is not None else a.nodes:
                    if (isinstance(node, cst.Assign) and a.function_of(node) is scope
                            and any(isinstance(t.target, cst.Name) and t.target.value == obj.value for t in node.targets)
                            and a.span[id(node)][0] < a.span[id(call)][0]):
                        refs = self._target_refs(node.value)
            if not refs:
                continue
            unwrap_refs = [r for r in refs if not self._unwrapped(r)]
            for ref in unwrap_refs:
                k = self.key()

                def unwrap(updated: cst.CSTNode, k=k) -> cst.CSTNode:
                    new = cst.Call(func=cst.Name("npu_unwrap"), args=[cst.Arg(updated)])
                    self.plan.anchors[k] = new
                    return new

                self.plan.replace[id(ref)] = unwrap
                self.plan.record("rank0", f"save the model inside the DistributedDataParallel wrapper: "
                                          f"npu_unwrap({code_of(ref)})", k)
            line = self._sole_expr_statement(call)
            if line is not None and not a.guarded_by(call, "rank"):
                self.plan.record("rank0", "torch.save on rank 0 only", self._guard_line(line, "npu_rank() == 0"))

    def _target_refs(self, expr: cst.BaseExpression) -> list[cst.CSTNode]:
        a = self.a
        return [n for n in [expr, *a.subtree(expr)] if a.is_target(n) and not (
                isinstance(a.parent.get(id(n)), cst.Attribute) and a.parent[id(n)].value is n
                and a.is_target(a.parent[id(n)]))]

    def _guard_line(self, line: cst.SimpleStatementLine, condition: str) -> str:
        """Plan ``if condition:`` around ``line``; the key of the record anchor."""
        k = self.key()
        plan = self.plan

        def guard(updated: cst.SimpleStatementLine) -> cst.If:
            plan.anchors[k] = updated.body[0]
            return _guard(updated, condition)

        plan.replace[id(line)] = self._chain(plan.replace.get(id(line)), guard)
        return k

    def _unwrapped(self, ref: cst.CSTNode) -> bool:
        parent = self.a.parent.get(id(ref))
        if isinstance(parent, cst.Attribute) and parent.value is ref and parent.attr.value == "module":
            return True
        arg = parent if isinstance(parent, cst.Arg) else None
        call = self.a.parent.get(id(arg)) if arg is not None else None
        return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "npu_unwrap"

    def prints(self, loops: list[cst.For]) -> None:
        a = self.a
        for node in a.nodes:
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "print"):
                continue
            if "print" in a.imports or not any(a.under(node, loop.body) for loop in loops):
                continue
            line = self._sole_expr_statement(node)
            if line is None or a.guarded_by(node, "rank"):
                continue
            self.plan.record("rank0", "print the epoch log on rank 0 only", self._guard_line(line, "npu_rank() == 0"))

    def set_devices(self) -> None:
        a = self.a
        for call in a.calls_to(SET_DEVICE):
            if a.in_helpers(call) or a.guarded_by(call, "npu_world_size"):
                continue
            line = self._sole_expr_statement(call)
            if line is None:
                self.plan.warnings.append(f"{code_of(call)} sets one NPU for every process; the launcher's choice "
                                          "is overridden")
                continue
            self.plan.record("device", "set_device only for a single process: when distributed, each process "
                                       "uses the NPU the launcher gave it", self._guard_line(line, "npu_world_size() == 1"))

    def fixed_devices(self) -> None:
        """Report device strings with a fixed index ("npu:0"): every process would use that NPU."""
        a = self.a
        for node in a.nodes:
            if isinstance(node, cst.SimpleString) and not a.in_helpers(node):
                try:
                    value = node.evaluated_value
                except Exception:  # malformed escapes
                    continue
                if isinstance(value, str) and FIXED_DEVICE.match(value):
                    k = self.key()
                    self.plan.replace[id(node)] = self._chain(self.plan.replace.get(id(node)), self._anchoring(k))
                    self.plan.findings.append((CODES["device"], f"fixed device {value!r}: every process would use "
                                               "this NPU; use 'npu' (the NPU the set-up selected for the process)", k))

    # ---- process-group set-up

    def _main_block(self) -> cst.If | None:
        for stmt in self.module.body:
            if isinstance(stmt, cst.If) and isinstance(stmt.test, cst.Comparison):
                code = code_of(stmt.test).replace("'", '"').replace(" ", "")
                if code in ('__name__=="__main__"', '"__main__"==__name__'):
                    return stmt
        return None

    def _main_function(self) -> cst.FunctionDef | None:
        block = self._main_block()
        if block is None or not isinstance(block.body, cst.IndentedBlock):
            return None
        called = []
        for stmt in block.body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else (
                    small.exc if isinstance(small, cst.Raise) else None)
                while isinstance(value, cst.Call) and not (isinstance(value.func, cst.Name)
                                                           and value.func.value in self.a.functions):
                    value = value.args[0].value if len(value.args) == 1 else None
                if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
                    called.append(self.a.functions[value.func.value])
        if len(called) == 1:
            return called[0]
        named = [f for f in called if "main" in f.name.value]
        return named[-1] if named else None

    def setup(self) -> None:
        a = self.a
        plan = self.plan
        if not plan.records:
            return
        has_helpers = SETUP_FUNCTION in a.functions
        module_body = list(self.module.body)
        header_end = 0
        for i, stmt in enumerate(module_body):
            if (i == 0 and is_docstring_stmt(stmt)) or (
                    isinstance(stmt, cst.SimpleStatementLine)
                    and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)):
                header_end = i + 1
                continue
            break
        # imports the helpers and the edits need
        missing = [m for m in ("atexit", "os", "torch", "torch_npu") if not a.imports_plain(m)]
        imports = [i for i, stmt in enumerate(module_body[:header_end])
                   if not is_docstring_stmt(stmt) and not is_future_import(stmt)]
        torch_at = next((i for i in imports if any(
            isinstance(s, cst.Import) and any(import_module_name(al.name).split(".")[0] in ("torch", "torch_npu")
                                              for al in s.names) for s in module_body[i].body)), None)
        for m in missing:
            # os with the first imports, torch_npu after import torch, torch at the end of the imports
            if m in ("atexit", "os"):
                index = imports[0] if imports else header_end
            elif m == "torch_npu" and torch_at is not None:
                index = torch_at + 1
            else:
                index = header_end
            stmt = cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name(m))])])
            self._insert_module(index, [stmt], module_body)
            k = self.key()
            plan.anchors[k] = _anchor_of(stmt)
            plan.record("setup", f"add import {m} (used by the distributed set-up)", k)
        if not has_helpers:
            helpers = list(cst.parse_module(HELPERS).body)
            blank = [cst.EmptyLine(), cst.EmptyLine()]
            helpers[0] = helpers[0].with_changes(leading_lines=blank)
            if header_end < len(module_body):
                nxt = module_body[header_end]
                if len(nxt.leading_lines) < 2 and not any(line.comment for line in nxt.leading_lines):
                    plan.replace[id(nxt)] = self._chain(plan.replace.get(id(nxt)),
                                                        lambda updated: updated.with_changes(leading_lines=blank))
            self._insert_module(header_end, helpers, module_body)
            k1, k2 = self.key(), self.key()
            plan.anchors[k1] = _anchor_of(helpers[0])
            last = helpers[-1]
            plan.anchors[k2] = last.body.body[-1].body[0] if isinstance(last.body, cst.IndentedBlock) else last.name
            plan.record("setup", "add the process-group set-up (hccl, rank and world size from RANK_ID/RANK_SIZE/"
                                 "DEVICE_ID or RANK/WORLD_SIZE/LOCAL_RANK) and rank helpers", k1, k2)
        already_called = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == SETUP_FUNCTION
                             for n in a.nodes if not a.in_helpers(n))
        own_init = [c for c in a.calls_to(frozenset({INIT_PG})) if not a.in_helpers(c)]
        if already_called:
            return
        if own_init:
            plan.warnings.append("the script initialises its own process group; "
                                 f"{SETUP_FUNCTION}() is not called")
            return
        call = _stmt(f"{SETUP_FUNCTION}()\n")
        k = self.key()
        plan.anchors[k] = _anchor_of(call)
        where = self._setup_place()
        if where is None:
            plan.warnings.append(f"no entry point found; call {SETUP_FUNCTION}() before training")
            plan.anchors.pop(k)
            return
        kind, node = where
        if kind == "prepend":
            plan.prepend.setdefault(id(node), []).insert(0, call)
        else:
            plan.before.setdefault(id(node), []).insert(0, call)
        plan.record("setup", f"call {SETUP_FUNCTION}() at the start of the entry point", k)

    def _anchoring(self, key: str) -> Callable[[cst.CSTNode], cst.CSTNode]:
        """A replacement that changes nothing but remembers the node of the new tree."""
        anchors = self.plan.anchors

        def remember(updated: cst.CSTNode) -> cst.CSTNode:
            anchors[key] = updated
            return updated

        return remember

    @staticmethod
    def _chain(first, second):
        if first is None:
            return second
        return lambda updated: second(first(updated))

    def _insert_module(self, index: int, stmts: list[cst.BaseStatement], body: list[cst.BaseStatement]) -> None:
        if index > 0:
            self.plan.after.setdefault(id(body[index - 1]), []).extend(stmts)
        elif body:
            self.plan.before.setdefault(id(body[0]), []).extend(stmts)  # in the order of the calls
        else:
            self.plan.after.setdefault(id(self.module), []).extend(stmts)

    def _setup_place(self) -> tuple[str, cst.CSTNode] | None:
        """Where the set-up call goes: before the first module-level code that needs it, else at the
        start of the ``__main__`` block or of the function it calls."""
        a = self.a
        main_block = self._main_block()
        top_level = [s for s in self.edit_sites if a.function_of(s) is None and a.class_of(s) is None]
        if top_level:
            first = min(top_level, key=lambda s: a.nodes.index(s))
            if main_block is not None and a.within(first, main_block):
                return "prepend", main_block.body
            stmt = next((s for s in self.module.body if s is first or a.within(first, s)), None)
            return ("before", stmt) if stmt is not None else None
        fn = self._main_function()
        if fn is not None and isinstance(fn.body, cst.IndentedBlock):
            return "prepend", fn.body
        if main_block is not None and isinstance(main_block.body, cst.IndentedBlock):
            return "prepend", main_block.body
        for stmt in self.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or is_docstring_stmt(stmt):
                continue
            if isinstance(stmt, cst.SimpleStatementLine) and all(
                    isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                continue
            return "before", stmt
        main = a.functions.get("main")
        if main is not None and isinstance(main.body, cst.IndentedBlock):
            return "prepend", main.body
        return None



class _Apply(cst.CSTTransformer):
    """Applies a Plan: node replacements and statement insertions, keyed by original node ids."""

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):
        updated = super().on_leave(original_node, updated_node)
        fn = self.plan.replace.get(id(original_node))
        if fn is not None:
            updated = fn(updated)
        if isinstance(original_node, (cst.IndentedBlock, cst.Module)):
            updated = self._block(original_node, updated)
        return updated

    def _block(self, original: cst.IndentedBlock | cst.Module, updated: cst.IndentedBlock | cst.Module):
        plan = self.plan
        body: list[cst.BaseStatement] = []
        for orig, new in zip(original.body, updated.body):
            inserted = plan.before.get(id(orig))
            if inserted:
                inserted = list(inserted)
                inserted[0] = inserted[0].with_changes(leading_lines=new.leading_lines)
                new = new.with_changes(leading_lines=())
                body.extend(inserted)
            body.append(new)
            body.extend(plan.after.get(id(orig), ()))
        if isinstance(original, cst.Module):
            body.extend(plan.after.get(id(original), ()))
        prepend = plan.prepend.get(id(original))
        if prepend:
            at = 1 if body and is_docstring_stmt(body[0]) else 0
            body[at:at] = prepend
        if len(body) == len(updated.body) and all(x is y for x, y in zip(body, updated.body)):
            return updated
        return updated.with_changes(body=body)


def convert_distributed(module: cst.Module, target: str) -> tuple[cst.Module, list[Record], list[str]]:
    """Plan and apply the distributed edits of one entry module; records carry result-file lines."""
    converter = Converter(module, target)
    plan = converter.run()
    if not plan.records:
        return module, [], plan.warnings
    new_module = module.visit(_Apply(plan))
    positions = node_positions(new_module, plan.anchors.values())
    records = []
    for code, message, start, end in plan.records:
        first = positions.get(id(plan.anchors.get(start)), (1, 1, 1, 1))
        last = positions.get(id(plan.anchors.get(end)), first)
        records.append(Record(first[0], first[1], last[2], last[3], code, "fix", OPERATION, message, RULE))
    for code, message, key in plan.findings:
        where = positions.get(id(plan.anchors.get(key)), (1, 1, 1, 1))
        records.append(Record(*where, code, "warning", OPERATION, message, RULE,
                              suggestion="use the current NPU ('npu') or torch_npu.npu.current_device()"))
    return new_module, records, plan.warnings


def convert_source(source: bytes, target: str = "model") -> bytes:
    """The distributed form of one (already NPU-converted) entry source; for tests and tools."""
    new_module, _records, _warnings = convert_distributed(parse(source), target)
    return new_module.bytes

