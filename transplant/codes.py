"""The one table of diagnostic codes: what each stable code (TP1xx changes, TP2xx findings, TP3xx
distributed mode, TP900) means.

Every other place derives from it: ``records.CODES`` and ``records.OPERATION`` (the engine's kind ->
code and change-list operation), the SARIF and language-server rule info (reports/diagnostics.py),
the console's labels, and the tables of docs/reports.md and docs/distributed.md (``readme_table``; tests/test_codes.py holds them to it).
Plain data, imported by every output path: no parser, no I/O.
"""

from __future__ import annotations

from typing import NamedTuple


class Code(NamedTuple):
    code: str  # the stable code, "TP101"
    key: str  # what the converter calls it ("rename"): records.CODES[key] == code
    name: str  # short name (SARIF rule name, console label)
    level: str  # the level its findings usually have (SARIF defaultConfiguration)
    description: str  # one line (SARIF shortDescription)
    help: str  # what README's table says of it (Markdown, one line)
    operation: str = ""  # the change list's "Operation Type" of its changes (codes that change code)


# The distributed mode's codes are one row of README's main table; their own table is in the
# "Distributed mode" section (``readme_table(DISTRIBUTED)``).
DISTRIBUTED_ROW = (
    "TP301-TP306",
    "distributed mode's changes to the entry file (see [distributed.md](distributed.md#codes))",
)

TABLE: tuple[Code, ...] = (
    Code(
        "TP101",
        "rename",
        "api-renamed",
        "warning",
        "API renamed (torch.cuda.X -> torch_npu.npu.X, profiler, apex, user rules)",
        "API renamed (`torch.cuda.X` -> `torch_npu.npu.X`, profiler, apex, user `FuncNameModifyRule`)",
        "API rename",
    ),
    Code(
        "TP102",
        "method",
        "method-renamed",
        "warning",
        "Method or attribute renamed on any object (.cuda() -> .npu())",
        "method or attribute renamed on any object (`.cuda()` -> `.npu()`, `.is_cuda` -> `.is_npu`), and the "
        "project's own definitions of them (`def cuda(self)` in a class)",
        "method rename",
    ),
    Code(
        "TP103",
        "args",
        "argument-changed",
        "warning",
        "Argument changed (nccl -> hccl, use_cuda=True, user ArgsModifyRule)",
        "argument changed (`nccl` -> `hccl`, `use_cuda=True`, `-s`, user `ArgsModifyRule`)",
        "argument change",
    ),
    Code(
        "TP104",
        "device",
        "device-string",
        "warning",
        "Device string cuda -> npu",
        "device string `cuda` -> `npu`",
        "device string",
    ),
    Code(
        "TP105",
        "env",
        "environment-variable",
        "warning",
        "Environment variable renamed (CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES)",
        "environment variable renamed (`CUDA_VISIBLE_DEVICES` -> `ASCEND_RT_VISIBLE_DEVICES`, ...)",
        "environment variable",
    ),
    Code(
        "TP106",
        "import",
        "import",
        "warning",
        "Import rewritten, added (import torch_npu) or removed",
        "import rewritten, added (`import torch_npu`) or removed",
        "import",
    ),
    Code(
        "TP107",
        "command",
        "shell-command",
        "warning",
        "Shell command replaced (nvidia-smi -> npu-smi info)",
        "shell command replaced (`nvidia-smi` -> `npu-smi info`) in a shell script, Dockerfile, notebook or a "
        "Python call that runs it",
        "shell command",
    ),
    Code(
        "TP108",
        "path",
        "npu-path-changed",
        "warning",
        "Rewrite that changes which code an NPU run executes (a device test, a default, a collection of device names)",
        "rewrite that changes which code an NPU run executes: a converted device test (the row names the branch "
        "an NPU run now enters: its lines and what it calls), a converted default (of a parameter, an option, a "
        "field, a lookup), a collection of accepted device names that gains `npu`; the workbook's *NPU paths* "
        "sheet lists them",
        "NPU path",
    ),
    Code(
        "TP109",
        "runtime",
        "runtime-migration-on",
        "warning",
        "torch_npu's runtime migration switched on where a program starts (--mode runtime)",
        "torch_npu's runtime migration switched on (`--mode runtime`): `TORCH_TRANSFER_TO_NPU=1` set before a "
        "program imports anything, or exported by a launch script ([conversion.md](conversion.md#runtime-mode))",
        "runtime migration",
    ),
    Code(
        "TP201",
        "no_counterpart",
        "no-npu-counterpart",
        "error",
        "CUDA API with no NPU counterpart",
        "CUDA API with no NPU counterpart (error)",
    ),
    Code(
        "TP202",
        "unsupported",
        "unsupported-on-npu",
        "warning",
        "API not supported on NPU for the chosen PyTorch version",
        "API not supported on NPU for the chosen PyTorch version (warning; a note for an everyday operator that "
        "only the reference tool's list names)",
    ),
    Code(
        "TP203",
        "note",
        "no-effect-on-npu",
        "note",
        "Setting with no effect on NPU",
        "setting with no effect on NPU (note), also an environment variable only NCCL or CUDA builds read "
        "(`NCCL_DEBUG`, `TORCH_CUDA_ARCH_LIST`); CUDA code kept on purpose (a branch of code that already handles "
        "NPU, a rename the chosen PyTorch version lacks)",
    ),
    Code(
        "TP204",
        "custom_op",
        "custom-operator",
        "error",
        "Custom CUDA/C++ operator: a registration in C++ or a Python call that reaches one",
        "custom CUDA/C++ operator: its registration in a C++ file (warning; a note for C++-only operators), a "
        "Python call that reaches it (error; a warning for C++-only operators), an import of a CUDA extension "
        "the project builds (error)",
    ),
    Code(
        "TP205",
        "cuda_build",
        "cuda-build",
        "warning",
        "CUDA-only build (CUDAExtension, CUDA_HOME, nvcc flags, load with CUDA sources)",
        "CUDA-only build: `CUDAExtension`, `load`/`load_inline` with CUDA sources, a call of any helper given "
        "`.cu` sources or CUDA flags, `CUDA_HOME`, `nvcc` flags (warning; a note for a `CUDA_HOME` the code "
        "tests for None, and its reads under that test)",
    ),
    Code(
        "TP206",
        "library",
        "cuda-library",
        "warning",
        "CUDA-only library (import, use or dependency)",
        "CUDA-only library: an import or a use in Python (level from its rule), a compiled CUDA extension of "
        "another project imported by name (error), a Triton kernel (warning; error with CUDA-only features) and "
        "its import or launch elsewhere (note), a dependency or `pip install` of flash-attn, apex, xformers, ... "
        "(warning); `api` is the library",
    ),
    Code(
        "TP207",
        "project_file",
        "project-file",
        "warning",
        "CUDA setting in a project file (dependency, configuration, Dockerfile, shell command)",
        "CUDA setting in a project file: `torch` without `torch_npu`, a CUDA package index, a `cuda`/`nccl` "
        "configuration value that is not converted (a key named `cuda`, such as a profiler's `cuda: true`, is a "
        "switch the program reads and is not reported), a CUDA base image, an NVIDIA container runtime "
        "variable, a CUDA-only command with options, or run from Python where the program reads its output "
        "(warning)",
    ),
    Code(
        "TP240",
        "guard",
        "cuda-guard-kept",
        "note",
        "Device test kept as CUDA: it chooses CUDA-only code (a kernel, a build, a CUDA-only library)",
        "device test kept as a CUDA test: it chooses CUDA-only code (a build, an extension, Triton, a CUDA-only "
        "library), named with its line (note; a warning for an `assert` or `raise` precondition)",
    ),
    Code(
        "TP241",
        "tool_flag",
        "cuda-tool-flag",
        "warning",
        "CUDA flag kept: it chooses a CUDA-only tool (onnxruntime's CUDA provider, TensorRT, a GPU package)",
        "CUDA test or flag kept: it chooses a CUDA-only tool (onnxruntime's CUDA provider, TensorRT, a GPU "
        "package), with the NPU route (warning)",
    ),
    Code(
        "TP242",
        "probe",
        "capability-probe",
        "warning",
        "CUDA capability probe (device properties' CUDA fields, torch.version.cuda, GPU model names)",
        "CUDA capability probe: CUDA/ROCm fields of device properties (the query kept), `torch.version.cuda`/`hip` "
        "in a test (note), a GPU model name test (warning); a note where the probe's CUDA guard stays",
    ),
    Code(
        "TP243",
        "capability",
        "capability-number",
        "warning",
        "CUDA compute capability read as a number: the CUDA query is kept",
        "`torch.cuda.get_device_capability()` read as a number: kept as the CUDA query (warning: without a CUDA "
        "guard it raises on an NPU host; a note behind its CUDA guard, which an NPU run does not pass)",
    ),
    Code(
        "TP301",
        "dist_setup",
        "distributed-setup",
        "warning",
        "Distributed mode: process-group set-up, its call and the imports it needs",
        "process-group set-up: helper functions, the call, imports they need",
        "distributed",
    ),
    Code(
        "TP302",
        "dist_sampler",
        "distributed-sampler",
        "warning",
        "Distributed mode: DistributedSampler for a DataLoader",
        "`DistributedSampler` for a `DataLoader`",
        "distributed",
    ),
    Code(
        "TP303",
        "dist_epoch",
        "distributed-set-epoch",
        "warning",
        "Distributed mode: set_epoch at the top of an epoch loop",
        "`set_epoch` at the top of an epoch loop",
        "distributed",
    ),
    Code(
        "TP304",
        "dist_ddp",
        "distributed-ddp-wrap",
        "warning",
        "Distributed mode: DistributedDataParallel wrap (in place of DataParallel); load_state_dict into the "
        "inner model",
        "`DistributedDataParallel` wrap; `load_state_dict` into the inner model; `DataParallel` removed",
        "distributed",
    ),
    Code(
        "TP305",
        "dist_rank0",
        "distributed-rank0",
        "warning",
        "Distributed mode: torch.save and epoch print on rank 0 only; the unwrapped model saved",
        "`torch.save` and epoch `print` on rank 0 only; saving the unwrapped model",
        "distributed",
    ),
    Code(
        "TP306",
        "dist_device",
        "distributed-device",
        "warning",
        "Distributed mode: set_device for a single process only; fixed device index follows the process's NPU",
        "`set_device` only for a single process; fixed device index follows the process's NPU (or reported: warning)",
        "distributed",
    ),
    Code("TP900", "syntax", "parse-error", "error", "File could not be parsed", "file could not be parsed"),
)

BY_CODE: dict[str, Code] = {c.code: c for c in TABLE}
BY_KEY: dict[str, Code] = {c.key: c for c in TABLE}

# Named constants for the codes other modules test for by value.
NOT_CONVERTED = BY_KEY["syntax"].code  # TP900: a file, or a notebook cell, left as it is
CUSTOM_OP = BY_KEY["custom_op"].code  # TP204
LIBRARY = BY_KEY["library"].code  # TP206

DISTRIBUTED = tuple(c for c in TABLE if c.key.startswith("dist_"))
MAIN = tuple(c for c in TABLE if c not in DISTRIBUTED)

MAIN_HEADER = ("code", "meaning")
DISTRIBUTED_HEADER = ("code", "change (operation `distributed` in `change_list.csv`; lines refer to the result file)")


def readme_table(which: str = "main") -> str:
    """README's table of codes as Markdown: ``main`` (section "Diagnostic codes"; the distributed
    codes as one row) or ``distributed`` (section "Distributed mode")."""
    if which == "main":
        header = MAIN_HEADER
        rows = [(c.code, c.help) for c in MAIN if c.code < DISTRIBUTED[0].code]
        rows.append(DISTRIBUTED_ROW)
        rows += [(c.code, c.help) for c in MAIN if c.code > DISTRIBUTED[-1].code]
    elif which == "distributed":
        header = DISTRIBUTED_HEADER
        rows = [(c.code, c.help) for c in DISTRIBUTED]
    else:
        raise ValueError(f"unknown table {which!r}")
    lines = [f"| {header[0]} | {header[1]} |", "|---|---|"] + [f"| {code} | {text} |" for code, text in rows]
    return "\n".join(lines) + "\n"


__all__ = ["BY_CODE", "BY_KEY", "CUSTOM_OP", "DISTRIBUTED", "LIBRARY", "NOT_CONVERTED", "TABLE", "Code", "readme_table"]
