"""The run's settings, as plain data (no I/O here)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .rules import DEFAULT_PYTORCH_VERSION


@dataclass(frozen=True)
class RuleOptions:
    """Everything needed to build the same RuleSet in any process."""

    user_rules: tuple[Path, ...] = ()
    specify_device: bool = False
    similar: bool = False
    pytorch_version: str = DEFAULT_PYTORCH_VERSION
    torch_npu: str | None = None  # the torch_npu release; None: the newest that ships pytorch_version
    mode: str = "full"  # "runtime": leave to torch_npu's runtime migration what it patches (runtime_mode.py)


@dataclass(frozen=True)
class Config:
    input: Path
    output: Path
    rule_options: RuleOptions = field(default_factory=RuleOptions)
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    force: bool = False
    prefilter: bool = True
    progress: bool = True
    suffix: str = "_msft"
    # distributed mode (issue 3): entry file and model variable
    distributed_main: Path | None = None
    distributed_target: str = "model"
    debug: bool = False  # an internal error ends the run with a traceback instead of skipping the file
    strict_exit: bool = False  # exit 1 when a file could not be converted or there is nothing to convert
