"""Regenerate the data-derived built-in rule files from the fact tables.

Run by a developer when the facts change (it is not used at run or test time):

    python tools/gen_rules.py ../shared/data

It writes rules/device_api.json, rules/device_args.json, rules/npu_support/*.json and
rules/npu_support/torch_npu_public_names.txt. Hand-written rule files (distributed, profiler,
apex, similar, specify_device, env_vars, methods) are not touched.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"

# Rows of cuda_to_npu_api.csv that are real counterparts but not drop-in renames of a reference
# (different calling convention or semantics); they are handled by hand-written rules or reported.
NOT_A_RENAME = {
    "torch.nn.DataParallel",  # needs a process group: reported, or handled by `distributed`
    "torch.backends.cudnn.deterministic",  # attribute -> function: not a rename
    "torch.backends.cudnn.allow_tf32",  # different semantics (hf32)
    "torch.backends.cuda.matmul.allow_tf32",  # different semantics (hf32)
    "torch.cuda.get_stream_from_external",  # function -> class, different arguments
    "torch.cuda.CudaError",  # exception classes of every torch build: nothing fails (EXCEPTION_CLASSES)
    "torch.cuda.DeferredCudaCallError",
}

# Exception classes torch defines in every build (CPU and NPU builds too): naming one fails nowhere;
# an except clause for one never catches on an NPU. (message, suggestion) of their note.
_EXCEPTION_SOURCE = (
    "pytorch/pytorch torch/cuda/__init__.py: class CudaError(RuntimeError) and class "
    "DeferredCudaCallError(Exception) are defined whether or not torch is built with CUDA"
)
EXCEPTION_CLASSES = {
    "torch.cuda.CudaError": (
        "an exception class every torch build defines: naming it fails nowhere, and an except clause "
        "for it never catches on an NPU (torch_npu raises RuntimeError for NPU failures)",
        "nothing to rewrite for the program to run; catch RuntimeError where the handler must also run on an NPU",
    ),
    "torch.cuda.DeferredCudaCallError": (
        "an exception class every torch build defines: naming it fails nowhere, and an except clause "
        "for it never catches on an NPU (only CUDA's lazy initialisation raises it)",
        "nothing to rewrite for the program to run; catch RuntimeError where the handler must also run on an NPU",
    ),
}

# How the rows above are reported instead: (level, message, suggestion). Reporting them also keeps
# a prefix rule (torch.backends.cuda.matmul -> torch_npu.npu.matmul) from half-rewriting them.
NOT_A_RENAME_REPORT = {
    "torch.backends.cudnn.deterministic": (
        "note",
        "has no effect on NPU",
        "call torch.use_deterministic_algorithms(True): torch_npu takes its deterministic mode from it",
    ),
    "torch.backends.cudnn.allow_tf32": (
        "note",
        "has no effect on NPU (there is no TF32)",
        "the closest setting is allow_hf32 of torch_npu.npu.conv (HF32, a different precision)",
    ),
    "torch.backends.cuda.matmul.allow_tf32": (
        "note",
        "has no effect on NPU (there is no TF32)",
        "the closest setting is allow_hf32 of torch_npu.npu.matmul (HF32, a different precision)",
    ),
    "torch.cuda.get_stream_from_external": (
        "error",
        "has no drop-in torch_npu counterpart (different arguments)",
        "wrap the external stream with torch_npu.npu.ExternalStream",
    ),
}

# Rename targets that do not exist in every PyTorch version transplant supports: the first version
# whose torch (or torch_npu release) has them. Checked against torch_npu's release branches
# v2.1.0-7.2.0, v2.6.0-7.3.0, v2.7.1-26.1.0, v2.8.0-26.0.0 and v2.9.0 of Ascend/pytorch
# (torch_npu/npu/__init__.py, memory.py, streams.py, mstx.py), and PyTorch's own history.
_NPU_BRANCHES = "Ascend/pytorch release branches v2.1.0-7.2.0, v2.6.0-7.3.0, v2.7.1-26.1.0, v2.8.0-26.0.0"
SINCE = {
    "torch.OutOfMemoryError": (
        "2.5",
        "torch.OutOfMemoryError: pytorch/pytorch#121702 (the device-generic OOM "
        "class; torch.cuda.OutOfMemoryError is the same class); not in torch 2.1",
    ),
    "torch.AcceleratorError": (
        "2.8",
        "torch.AcceleratorError: pytorch/pytorch#152023, first in torch 2.8 "
        "(torch.cuda.AcceleratorError is the same class)",
    ),
    "torch_npu.npu.ExternalStream": (
        "2.9",
        f"absent from torch_npu/npu/__init__.py of the {_NPU_BRANCHES}; present from v2.9.0",
    ),
    "torch_npu.npu.streams.ExternalStream": (
        "2.9",
        f"absent from torch_npu/npu/streams.py of the {_NPU_BRANCHES}; present from v2.9.0",
    ),
    "torch_npu.npu.ExternalStream.npu_stream": (
        "2.9",
        f"ExternalStream is absent from the {_NPU_BRANCHES}; present from v2.9.0",
    ),
    "torch_npu.npu.npurt": (
        "2.9",
        f"absent from torch_npu/npu/__init__.py of the {_NPU_BRANCHES}; present from v2.9.0",
    ),
    "torch_npu.npu.mstx.annotate": (
        "2.9",
        "absent from torch_npu/npu/mstx.py of v2.8.0-26.0.0 and older; present from v2.9.0",
    ),
    "torch_npu.npu.get_per_process_memory_fraction": (
        "2.7",
        "absent from torch_npu/npu/memory.py of v2.1.0-7.2.0 and v2.6.0-7.3.0; present from v2.7.1",
    ),
    "torch_npu.npu.memory.get_per_process_memory_fraction": (
        "2.7",
        "absent from torch_npu/npu/memory.py of v2.1.0-7.2.0 and v2.6.0-7.3.0; present from v2.7.1",
    ),
}
for _name in (
    "host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "reset_accumulated_host_memory_stats",
    "reset_peak_host_memory_stats",
):
    for _module in ("torch_npu.npu", "torch_npu.npu.memory"):
        SINCE[f"{_module}.{_name}"] = (
            "2.7",
            "absent from torch_npu/npu/memory.py of v2.1.0-7.2.0 and v2.6.0-7.3.0; present from v2.7.1",
        )
RENAME_SOURCE = f"cuda_to_npu_api.csv; the target exists in the {_NPU_BRANCHES} (PyTorch 2.1, 2.6, 2.7, 2.8)"
# Rename targets that are deprecated where a device-generic spelling exists: the first PyTorch
# version whose rule (rules/amp.json) replaces them.
_AMP_DEPRECATED = (
    "2.4",
    "the target is deprecated (a FutureWarning naming torch.amp.custom_fwd/custom_bwd(..., device_type='npu')) "
    "in torch_npu/npu/amp/autocast_mode.py from 26.0 on (v2.8.0-26.0.0, v2.7.1-26.1.0, v2.12.0-26.1.0 of "
    "Ascend/pytorch); torch.amp.custom_fwd/custom_bwd with device_type exist from PyTorch 2.4 "
    "(pytorch/pytorch#126531): rules/amp.json renames to them from 2.4 on",
)
UNTIL = {
    f"torch_npu.npu.amp.{module}{name}": _AMP_DEPRECATED
    for module in ("", "autocast_mode.")
    for name in ("custom_fwd", "custom_bwd")
}


def with_version(rule: dict) -> dict:
    """``rule`` with the source of its target and, where the target is younger than PyTorch 2.1, since."""
    until = UNTIL.get(rule["new_name"])
    if until is not None:
        return {**rule, "until": until[0], "source": f"{RENAME_SOURCE}; {until[1]}"}
    since = SINCE.get(rule["new_name"])
    if since is None:
        return {**rule, "source": RENAME_SOURCE}
    return {**rule, "since": since[0], "source": "cuda_to_npu_api.csv; " + since[1]}


# First positional parameter that carries a device, from torch 2.13's signatures (facts).
POSITIONAL_DEVICE = {
    "torch.device": 0,
    "torch.Generator": 0,
    "torch.Stream": 0,
    "torch.amp.GradScaler": 0,
    "torch.amp.autocast": 0,
    "torch.amp.autocast_mode.autocast": 0,
    "torch.autocast": 0,
    "torch.amp.is_autocast_available": 0,
    "torch.get_autocast_dtype": 0,
    "torch.set_autocast_dtype": 0,
    "torch.is_autocast_enabled": 0,
    "torch.set_autocast_enabled": 0,
    "torch.set_default_device": 0,
    "torch.get_device_module": 0,
    "torch.load": 1,
    "torch.jit.load": 1,
    "torch.hub.load_state_dict_from_url": 2,
    "torch.distributed.device_mesh.init_device_mesh": 0,
    "torch.distributed.init_device_mesh": 0,
    "torch.distributed.device_mesh.DeviceMesh": 0,
    "torch.Tensor.to": 0,
    "torch.nn.Module.to": 0,
    "torch.Tensor.cuda": 0,
    "torch.nn.Module.cuda": 0,
    "torch.Tensor.pin_memory": 0,
    "torch.nn.Module.to_empty": None,
}
# torch.cuda.* and torch.accelerator.* functions take their device first (torch 2.13 signatures),
# except these, whose device comes second, and one that takes it by keyword only.
SECOND_PARAM_DEVICE = {
    "torch.cuda.caching_allocator_alloc",  # (size, device=None, stream=None)
    "torch.cuda.get_stream_from_external",  # (data_ptr, device=None)
    "torch.cuda.random.set_rng_state",  # (new_state, device='cuda')
    "torch.cuda.set_rng_state",  # (new_state, device='cuda')
    "torch.cuda.set_per_process_memory_fraction",  # (fraction, device=None)
    "torch.cuda.use_mem_pool",  # (pool, device=None)
}
KEYWORD_DEVICE = {"torch.cuda.memory._record_memory_history"}
# Device parameters whose default is CUDA (cuda_to_npu_api.csv: "torch 2.13 signature
# GradScaler(device='cuda', ...): the default is 'cuda', so even GradScaler() needs device='npu'").
DEFAULT_CUDA_DEVICE = {"torch.amp.GradScaler"}


def device_position(api: str, args: list[str]) -> int | None:
    if api in POSITIONAL_DEVICE:
        return POSITIONAL_DEVICE[api]
    if api.startswith(("torch.cuda.", "torch.accelerator.")) and args == ["device"] and api not in KEYWORD_DEVICE:
        return 1 if api in SECOND_PARAM_DEVICE else 0
    return None


# Arguments named in device_arg_apis.csv that are not device strings.
NOT_DEVICE_ARGS = {
    "backend",
    "use_cuda",
    "use_device",
    "experimental_config",
    "device_ids",
    "devices",
    "peer_device",
    "device_index",
    "device_id",
}


def load_names(data: Path) -> set[str]:
    return {line.strip() for line in (data / "torch_npu_public_names.txt").read_text().splitlines() if line.strip()}


def name_exists(name: str, names: set[str]) -> bool:
    """A name exists when listed, or when its longest listed prefix is a class (C extension)."""
    if name in names:
        return True
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in names:
            return parts[i - 1][:1].isupper()
    return False


def is_module_level(api: str, rows: dict[str, str]) -> bool:
    """True for torch.cuda.X / torch.cuda.sub.X names; False for members of classes."""
    parts = api.split(".")
    for i in range(2, len(parts)):
        if parts[i - 1][:1].isupper():
            return False
    return True


# classes whose methods are matched on any object (the receiver's type cannot be known statically)
METHOD_CLASSES = ("torch.Tensor.", "torch.nn.Module.")


def main(data_dir: str) -> None:
    data = Path(data_dir)
    names = load_names(data)
    rename: list[dict] = []
    unsupported: list[dict] = []
    with open(data / "cuda_to_npu_api.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    plain = re.compile(r"^[A-Za-z_][\w.]*$")
    for row in rows:
        api, new, exists = row["cuda_api"], row["npu_api"], row["exists_in_torch_npu"]
        if not plain.match(api) or not api.startswith(("torch.cuda", "torch.backends.cud")):
            continue
        if not is_module_level(api, {}):
            # Members of classes follow their class's rename (torch.cuda.Stream -> torch_npu.npu.Stream)
            # except those renamed themselves (Stream.cuda_stream -> npu_stream) or missing on NPU
            # (CUDAGraph.instantiate): those get rules of their own, which win over the class prefix.
            if exists != "yes":
                unsupported.append(
                    {
                        "name": api,
                        "level": "error",
                        "message": "has no torch_npu counterpart; rewrite this code by hand for NPU",
                    }
                )
            elif plain.match(new) and new.rsplit(".", 1)[-1] != api.rsplit(".", 1)[-1] and name_exists(new, names):
                rename.append({"old_name": api, "new_name": new})
            continue
        if api in NOT_A_RENAME:
            if api in EXCEPTION_CLASSES:
                msg, suggestion = EXCEPTION_CLASSES[api]
                unsupported.append(
                    {
                        "name": api,
                        "level": "note",
                        "message": msg,
                        "suggestion": suggestion,
                        "source": _EXCEPTION_SOURCE,
                    }
                )
            if api in NOT_A_RENAME_REPORT:
                level, msg, suggestion = NOT_A_RENAME_REPORT[api]
                unsupported.append({"name": api, "level": level, "message": msg, "suggestion": suggestion})
            continue
        if exists == "yes" and plain.match(new) and (not new.startswith("torch_npu") or name_exists(new, names)):
            rename.append({"old_name": api, "new_name": new})
        else:
            level = "note" if api.startswith("torch.backends.") else "error"
            msg = (
                "has no effect on NPU"
                if level == "note"
                else "has no torch_npu counterpart; rewrite this code by hand for NPU"
            )
            entry = {"name": api, "level": level, "message": msg}
            hint = re.search(r"(?:^|; )(use [^;]+)", row["notes"])
            if hint:  # the fact table's own advice, e.g. "use torch_npu.profiler.profile"
                entry["suggestion"] = hint.group(1).strip()
            unsupported.append(entry)
    rename.sort(key=lambda r: r["old_name"])
    unsupported.sort(key=lambda r: r["name"])
    write(
        RULES / "device_api.json",
        {
            "description": "torch.cuda / torch.backends.cuda APIs and their torch_npu counterparts "
            "(generated by tools/gen_rules.py from cuda_to_npu_api.csv; every target "
            "exists in torch_npu 2.14)",
            "rules": {"FuncNameModifyRule": [with_version(r) for r in rename], "UnsupportedRule": unsupported},
        },
    )

    dev_rules: list[dict] = []
    with open(data / "device_arg_apis.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            api = row["api"]
            args = [a for a in row["arg_names"].split("|") if a and a not in NOT_DEVICE_ARGS]
            if not args:
                continue
            rule: dict = {"func_name": api, "arg_names": args}
            position = device_position(api, args)
            if position is not None:
                rule["arg_idx"] = position
            if api in DEFAULT_CUDA_DEVICE and position == 0:
                rule["default_cuda"] = True
            if api.startswith(METHOD_CLASSES):
                rule["func_name"] = api.rsplit(".", 1)[1]
                rule["on"] = "method"
            dev_rules.append(rule)
    # one rule per method name
    seen: dict[tuple[str, str], dict] = {}
    merged = []
    for rule in dev_rules:
        key = (rule["func_name"], rule.get("on", "name"))
        if key in seen:
            prev = seen[key]
            prev["arg_names"] = sorted(set(prev["arg_names"]) | set(rule["arg_names"]))
            if "arg_idx" in rule:
                prev.setdefault("arg_idx", rule["arg_idx"])
            continue
        seen[key] = rule
        merged.append(rule)
    write(
        RULES / "device_args.json",
        {
            "description": "APIs whose device arguments take 'cuda' device strings (generated by "
            "tools/gen_rules.py from device_arg_apis.csv)",
            "rules": {"DeviceArgRule": merged},
        },
    )

    with open(data / "npu_unsupported_apis.csv", newline="", encoding="utf-8") as fh:
        by_version: dict[str, list[str]] = {}
        for row in csv.DictReader(fh):
            by_version.setdefault(row["torch_version"], []).append(row["api"])
    for version, apis in by_version.items():
        entries = []
        for api in sorted(set(apis)):
            entry = version_entry(api, version)
            if api.startswith(METHOD_CLASSES):
                # Tensors and modules are everywhere in user code and come from no import: their
                # methods are matched on calls to any object (x.to_dense()), as the device-argument
                # rules are. Other classes' members (ScriptModule.register_buffer, ...) share
                # their names with nn.Module methods, so they are matched by qualified name only.
                entry["on"] = "method"
            entries.append(entry)
        write(
            RULES / "npu_support" / f"unsupported_{version}.json",
            {
                "description": f"APIs not supported on NPU with PyTorch {version} (generated by "
                "tools/gen_rules.py from npu_unsupported_apis.csv)",
                "rules": {"UnsupportedRule": entries},
            },
        )
    (RULES / "npu_support" / "torch_npu_public_names.txt").write_text(
        "".join(n + "\n" for n in sorted(names)), encoding="utf-8"
    )


# The per-version lists say only that an API "appears in the reference tool's op_list_V.json": no
# reason, no restricted dtype, argument or backward. For an everyday operator or module (which
# torch_npu runs in general) that is a note to check, not a use to rewrite by hand; for the
# subsystems below (sparse and quantised tensors, compilation, export, distributed internals...)
# it stays a warning. Suggestions are given where a route is known; every name in them is checked
# against torch_npu_public_names.txt by the tests.
EVERYDAY_NAMESPACES = (
    "torch.nn.functional.",
    "torch.nn.utils.",
    "torch.optim.",
    "torch.fft.",
    "torch.linalg.",
    "torch.Tensor.",
)
NOT_EVERYDAY = (
    "sparse",
    "quantiz",
    "mkldnn",
    "dlpack",
    "share_memory",
    "is_shared",
    "qscheme",
    "int_repr",
    "chalf",
    "DataParallel",
    "data_parallel",
    "is_cuda",
    ".smm",
    "sspaddmm",
    "register_module_",
    "cls_to_become",
    "torch.compile",
    "torch.is_",
)
VERSION_SUGGESTIONS = {
    "torch.compile": "compile for the NPU through torch_npu's graph mode (TorchAir): torch.compile(model, "
    "backend=torch_npu.dynamo.torchair.get_npu_backend())",
    "torch.compiler.compile": "compile for the NPU through torch_npu's graph mode (TorchAir): backend="
    "torch_npu.dynamo.torchair.get_npu_backend()",
    "torch.utils.cpp_extension.load": "build the extension with torch_npu.utils.cpp_extension.NpuExtension "
    "(setup.py) and NPU kernels",
}

# What to do about an API of a subsystem the lists name without a reason (the first prefix that
# matches; a warning's suggestion when VERSION_SUGGESTIONS has none), so that no warning leaves the
# user without a next step. FALLBACK_SUGGESTION for the rest.
SUBSYSTEM_SUGGESTIONS = (
    (
        ("torch.nn.DataParallel", "torch.nn.parallel.data_parallel"),
        "use torch.nn.parallel.DistributedDataParallel with one process per NPU and backend='hccl' "
        "(transplant -m distributed sets it up); DataParallel's single-process replication is not supported on NPU",
    ),
    (
        ("torch.distributed.tensor.parallel.",),
        "tensor parallelism over DTensor: run one small multi-NPU step (backend='hccl') against the "
        "single-device result before relying on it; else shard the layers by hand with "
        "torch.distributed collectives (all_reduce / all_gather run on hccl)",
    ),
    (
        ("torch.distributed.optim.DistributedOptimizer",),
        "DistributedOptimizer works through torch.distributed.rpc: train with DistributedDataParallel "
        "or FSDP and a local optimizer on each NPU",
    ),
    (
        ("torch.distributed.fsdp.",),
        "FSDP runs on NPU with backend='hccl'; check this state-dict / parameter helper in one small "
        "multi-NPU run, or use torch.distributed.checkpoint's state-dict APIs",
    ),
    (
        ("torch.distributed.elastic.rendezvous.etcd",),
        "use torchrun's default c10d rendezvous (--rdzv-backend=c10d) in place of etcd",
    ),
    (
        (
            "to_sparse",
            "torch.Tensor.to_sparse",
            "torch.Tensor.sparse_mask",
            "torch.Tensor.smm",
            "torch.Tensor.sspaddmm",
            "torch.sparse",
            "torch.Tensor.to_mkldnn",
        ),
        "keep the tensor dense on the NPU, or do the sparse step on the CPU (.cpu()) and move the result back",
    ),
    (
        ("torch.quantize_per", "torch.ao.", "torch.Tensor.int_repr", "torch.Tensor.qscheme", "torch.Q"),
        "quantised tensors and modules: run the float (bf16 / fp16) model on the NPU, or quantise on the CPU",
    ),
    (
        ("torch.export.", "torch.onnx.", "torch.jit.", "torch.fx.", "torch.utils.mobile_optimizer."),
        "a graph or export tool: export / script / trace on the CPU (it builds a graph, it need not run "
        "on the NPU), then run the result where its runtime is supported; compile for the NPU with "
        "torch.compile(backend=torch_npu.dynamo.torchair.get_npu_backend())",
    ),
    (
        ("torch.func.",),
        "check it in one small run on the NPU against the CPU; torch.autograd.grad / torch.autograd.functional "
        "compute the same derivatives without function transforms",
    ),
    (
        ("torch.profiler.", "torch.autograd.profiler."),
        "profile on the NPU with torch_npu.profiler.profile (NVTX / ITT markers have no NPU counterpart)",
    ),
    (
        ("torch.from_dlpack", "torch.utils.dlpack."),
        "exchange tensors through the CPU (tensor.cpu().numpy(), torch.from_numpy) in place of DLPack",
    ),
)
FALLBACK_SUGGESTION = (
    "run this call once on the NPU with the arguments used here and compare with the CPU; if it fails, "
    "do this step on the CPU (.cpu()) and move the result back to the NPU"
)


# switches and queries of CUDA's kernel choice: reading or setting them does nothing on an NPU (a note)
CUDA_BACKEND_SWITCHES = ("torch.backends.cuda.", "torch.backends.cudnn.")


def subsystem_suggestion(api: str) -> str:
    for prefixes, suggestion in SUBSYSTEM_SUGGESTIONS:
        if api.startswith(prefixes):
            return suggestion
    return FALLBACK_SUGGESTION


# torch.compiler's helpers only steer torch.compile (they do nothing without it): a note that points
# at the NPU's compile route, not a use to rewrite.
COMPILE_HELPERS = "torch.compiler."


def everyday(api: str) -> bool:
    """Is ``api`` an everyday operator, module or optimizer (as opposed to a subsystem)?"""
    if any(word in api for word in NOT_EVERYDAY):
        return False
    parts = api.split(".")
    if api.startswith(EVERYDAY_NAMESPACES):
        return True
    if parts[:2] == ["torch", "nn"] and len(parts) >= 3 and parts[2][:1].isupper():
        return True  # torch.nn.MaxPool2d, torch.nn.MultiheadAttention.forward
    return len(parts) == 2 and parts[0] == "torch" and parts[1][:1].islower()  # torch.cdist


def version_entry(api: str, version: str) -> dict:
    listed = f"op_list_{version.replace('.', '_')}.json"
    source = f"Ascend's reference migration tool (ms_fmk_transplt), resource {listed}: listed, with no reason given"
    if api.startswith(COMPILE_HELPERS) and api not in VERSION_SUGGESTIONS:
        entry = {
            "name": api,
            "level": "note",
            "message": f"listed as not supported on NPU with PyTorch {version} by the reference migration tool "
            f"({listed}), with torch.compile; it only steers torch.compile",
            "suggestion": "nothing to rewrite here; torch.compile itself runs on the NPU through torch_npu's "
            "graph mode (backend=torch_npu.dynamo.torchair.get_npu_backend())",
        }
    elif api.startswith(CUDA_BACKEND_SWITCHES):
        entry = {
            "name": api,
            "level": "note",
            "message": f"listed as not supported on NPU with PyTorch {version} by the reference migration tool "
            f"({listed}): a switch of CUDA's kernels, which has no effect on NPU",
            "suggestion": "nothing to rewrite: torch_npu chooses its own kernels (SDPA runs its fused kernel)",
        }
    elif everyday(api):
        entry = {
            "name": api,
            "level": "note",
            "message": f"listed as not supported on NPU with PyTorch {version} by the reference migration tool "
            f"({listed}), which gives no reason (no dtype, argument or backward named)",
            "suggestion": "nothing to rewrite on this fact alone: an everyday operator; check its results on "
            "the NPU against the CPU once, with the dtypes and arguments used here",
        }
    else:
        entry = {
            "name": api,
            "level": "warning",
            "message": f"not supported on NPU with PyTorch {version} (listed by the reference migration tool "
            f"in {listed}, without a reason)",
        }
        entry["suggestion"] = VERSION_SUGGESTIONS.get(api) or subsystem_suggestion(api)
    entry["source"] = source
    return entry


def write(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", path.relative_to(ROOT))


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Regenerate the data-derived built-in rule files from the fact tables."
    )
    parser.add_argument(
        "data",
        nargs="?",
        type=Path,
        default=ROOT.parent / "shared" / "data",
        help="folder of the fact tables (cuda_to_npu_api.csv, torch_npu_public_names.txt, ...; default: %(default)s)",
    )
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        parser.error(f"{args.data}: no such folder")
    main(str(args.data))
    return 0


if __name__ == "__main__":
    sys.exit(cli())
