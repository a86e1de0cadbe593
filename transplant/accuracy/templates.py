"""The text accuracy mode writes: msprobe's config file and the code inserted into the entry file.

Plain text, no planning. The names of msprobe's API (``PrecisionDebugger``, ``seed_all`` and its
``mode``/``rm_dropout`` arguments, the config keys ``task``/``level``/``step``/``rank`` and the
``statistics``/``tensor`` sections) are those of mindstudio-probe 26.x (msprobe's
``docs/zh/dump/pytorch_data_dump_instruct.md`` and ``config_json_introduct.md``).
"""

from __future__ import annotations

import json
from typing import Any

CONFIG_FILE = "accuracy_config.json"
DUMP_DIR = "accuracy_dump"
DEBUGGER = "accuracy_debugger"  # the variable that holds the PrecisionDebugger
SEED = 1234
PACKAGE = "mindstudio-probe"
REQUIREMENT = f"{PACKAGE}  # accuracy mode (transplant): msprobe dumps this run's data\n"
# --level as a user says it -> msprobe's level (L0: modules, L1: APIs, mix: both)
LEVELS = {"module": "L0", "api": "L1", "both": "mix"}
DATA = {"statistics": "statistics", "tensors": "tensor"}
DEFAULT_STEPS = (0, 1)
TASKS = ("dump", "overflow")  # accuracy --task: msprobe's comparison dump, or the overflow step's
# torch_npu reads both when it is imported (Ascend/pytorch docs/zh/environment_variable_reference/
# op_execution/TORCH_NPU_FALLBACK_CPU_DISABLE.md and TORCH_NPU_USE_COMPATIBLE_IMPL.md): set before
# any import. FALLBACK_CPU_DISABLE=1: an operator that would run on the CPU raises instead;
# USE_COMPATIBLE_IMPL=1: the APIs computed exactly as upstream PyTorch does (gelu, matmul, ...).
FALLBACK_ENV = "TORCH_NPU_FALLBACK_CPU_DISABLE"
COMPATIBLE_ENV = "TORCH_NPU_USE_COMPATIBLE_IMPL"
WHERE_GLOB = "where_rank*_*.json"  # in the dump folder: where the run computed (templates.where)
RECORDER = "accuracy_where"  # the function that writes it


def config_text(steps: tuple[int, ...] | None, level: str, data: str) -> str:
    """msprobe's config file: which steps (None: all), level and data; every rank; all APIs and modules.
    The overflow step is a statistics dump too (mindstudio-probe 26.x checks it offline)."""
    task = DATA[data]
    config: dict[str, Any] = {
        "task": task,
        "level": LEVELS[level],
        "step": list(steps) if steps is not None else [],
        "rank": [],
        task: {"scope": [], "list": [], "data_mode": ["all"]},
    }
    if task == "statistics":
        config[task]["summary_mode"] = "statistics"
    return json.dumps(config, indent=4) + "\n"


def environment(compatible: bool) -> tuple[list[str], str]:
    """The lines set before the entry file's imports (its own ``import os`` first, whatever the
    file imports later): torch_npu reads them when it is imported."""
    comments = [
        "# accuracy mode (transplant): on the NPU, an operator without an NPU kernel raises instead of",
        "# running on the CPU (set the variable to 0 to allow it); torch_npu reads it on import, the GPU ignores it.",
    ]
    if compatible:
        comments.append("# The APIs are computed as upstream PyTorch computes them (TORCH_NPU_USE_COMPATIBLE_IMPL).")
    code = f'import os\nos.environ.setdefault("{FALLBACK_ENV}", "1")\n'
    if compatible:
        code += f'os.environ.setdefault("{COMPATIBLE_ENV}", "1")\n'
    return comments, code


def where(function: str) -> str:
    """A function run at exit that records where the run computed, in the dump folder, for
    ``transplant compare`` (which refuses a side that ran on the CPU): per device kind (npu, cuda)
    whether memory was allocated on it, whether torch_npu was loaded, transplant emulate's backing."""
    here = "os.path.dirname(os.path.abspath(__file__))"
    return (
        "\n\n@atexit.register\n"
        f"def {function}(folder=os.path.join({here}, {json.dumps(DUMP_DIR)})):\n"
        '    """accuracy mode: where this run computed, for `transplant compare`."""\n'
        '    torch_ = sys.modules.get("torch")\n'
        "    used = {}\n"
        '    for kind in ("cuda", "npu"):\n'  # (no `in ("npu"`: the converter would read a test for NPU)
        "        try:\n"
        "            device = getattr(torch_, kind)\n"
        "            used[kind] = bool(device.is_available() and device.max_memory_allocated() > 0)\n"
        "        except Exception:\n"
        "            used[kind] = False\n"
        "    record = {\n"
        '        "used": used,\n'
        '        "torch_npu": "torch_npu" in sys.modules,\n'
        '        "emulated": os.environ.get("TRANSPLANT_EMULATE_BACKING"),\n'
        f'        "environment": {{k: os.environ.get(k) for k in ("{FALLBACK_ENV}", "{COMPATIBLE_ENV}")}},\n'
        "    }\n"
        '    name = "where_rank%s_%d.json" % (os.environ.get("RANK", ""), os.getpid())\n'
        "    try:\n"
        "        os.makedirs(folder, exist_ok=True)\n"
        '        with open(os.path.join(folder, name), "w") as f:\n'
        "            json.dump(record, f)\n"
        "    except OSError:\n"
        "        pass\n"
    )


def header(debugger: str, config_file: str, import_os: bool = False, recorder: str = "") -> tuple[list[str], str]:
    """The comment lines and the statements inserted after the entry file's imports: determinism
    first, then the debugger."""
    here = "os.path.dirname(os.path.abspath(__file__))"
    comments = [
        f"# accuracy mode (transplant): dumps this run's data for `transplant compare`; needs {PACKAGE}",
        f"# (pip install {PACKAGE}). Seeds fixed, deterministic algorithms, dropout off: the same run on",
        f"# another platform computes the same. Steps, level and data dumped: {config_file} beside this file.",
    ]
    code = (
        ("import os\n" if import_os else "")
        + ("import atexit\nimport json\nimport sys\n" if recorder else "")
        + "from msprobe.pytorch import PrecisionDebugger, seed_all\n"
        "\n"
        f"seed_all(seed={SEED}, mode=True, rm_dropout=True)\n"
        f"{debugger} = PrecisionDebugger(\n"
        f"    config_path=os.path.join({here}, {json.dumps(config_file)}),\n"
        f"    dump_path=os.path.join({here}, {json.dumps(DUMP_DIR)}))\n"
    ) + (where(recorder) if recorder else "")
    return comments, code


def start(debugger: str, model: str) -> str:
    return f"{debugger}.start({model})  # accuracy mode: dump this training step\n"


def stop(debugger: str) -> list[str]:
    return [f"{debugger}.stop()\n", f"{debugger}.step()\n"]


def manual(debugger: str, model: str, why: str) -> list[str]:
    """Comment lines telling the user where to put the calls transplant could not place."""
    return [
        f"# accuracy mode: {why}; around each training step call",
        f"#     {debugger}.start({model})  # first statement of the step",
        f"#     {debugger}.stop(); {debugger}.step()  # last statements of the step",
    ]
