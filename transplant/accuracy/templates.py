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


def config_text(steps: tuple[int, ...] | None, level: str, data: str) -> str:
    """msprobe's config file: which steps (None: all), level and data; every rank; all APIs and modules."""
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


def header(debugger: str, config_file: str, import_os: bool) -> tuple[list[str], str]:
    """The comment lines and the statements inserted after the entry file's imports: determinism
    first, then the debugger."""
    here = "os.path.dirname(os.path.abspath(__file__))"
    comments = [
        f"# accuracy mode (transplant): dumps this run's data for `transplant compare`; needs {PACKAGE}",
        f"# (pip install {PACKAGE}). Seeds fixed, deterministic algorithms, dropout off: the same run on",
        f"# another platform computes the same. Steps, level and data dumped: {config_file} beside this file.",
    ]
    code = (
        ("import os\n" if import_os else "") + "from msprobe.pytorch import PrecisionDebugger, seed_all\n"
        "\n"
        f"seed_all(seed={SEED}, mode=True, rm_dropout=True)\n"
        f"{debugger} = PrecisionDebugger(\n"
        f"    config_path=os.path.join({here}, {json.dumps(config_file)}),\n"
        f"    dump_path=os.path.join({here}, {json.dumps(DUMP_DIR)}))\n"
    )
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
