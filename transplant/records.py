"""What a conversion reports: records, their codes, and the skip comments. Plain data, imported by
every output path without loading the parser."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Stable codes, listed in docs/reports.md.
CODES = {
    "rename": "TP101",
    "method": "TP102",
    "args": "TP103",
    "device": "TP104",
    "env": "TP105",
    "import": "TP106",
    "command": "TP107",
    "no_counterpart": "TP201",
    "unsupported": "TP202",
    "note": "TP203",
    "custom_op": "TP204",
    "cuda_build": "TP205",
    "library": "TP206",
    "project_file": "TP207",
    "guard": "TP240",  # a device test kept as CUDA: it chooses CUDA-only code (guards/)
    "tool_flag": "TP241",  # a CUDA flag kept: it chooses a CUDA-only tool (onnxruntime's CUDA provider, ...)
    "probe": "TP242",  # a CUDA capability probe (device properties' CUDA fields, torch.version.cuda/hip, GPU names)
    "capability": "TP243",  # torch.cuda.get_device_capability() read as a number: kept as the CUDA query
    "dist_setup": "TP301",  # distributed mode: process-group set-up, its call, the imports it needs
    "dist_sampler": "TP302",  # DistributedSampler for a DataLoader
    "dist_epoch": "TP303",  # sampler.set_epoch(epoch) in an epoch loop
    "dist_ddp": "TP304",  # DistributedDataParallel wrap, unwrapping for load_state_dict
    "dist_rank0": "TP305",  # torch.save / print on rank 0 only
    "dist_device": "TP306",  # set_device for a single process only; fixed device indices
    "syntax": "TP900",
}
OPERATION = {
    "rename": "API rename",
    "method": "method rename",
    "args": "argument change",
    "device": "device string",
    "env": "environment variable",
    "import": "import",
    "command": "shell command",
    **{kind: "distributed" for kind in ("dist_setup", "dist_sampler", "dist_epoch", "dist_ddp", "dist_rank0",
                                        "dist_device")},
}

SKIP_LINE = re.compile(rb"#\s*transplant:\s*skip\b(?!-)")
SKIP_FILE = re.compile(rb"#\s*transplant:\s*skip-file\b")


def skips_file(data: bytes) -> bool:
    """Is there a ``# transplant: skip-file`` comment in the first 30 lines of ``data``?"""
    return b"transplant:" in data and any(SKIP_FILE.search(line) for line in data.splitlines()[:30])


@dataclass
class Record:
    """A change made (level ``fix``) or a finding left for the user (error/warning/note)."""

    line: int
    col: int  # 1-based
    end_line: int
    end_col: int
    code: str
    level: str
    operation: str
    message: str
    rule: str
    api: str = ""
    old: str = ""
    new: str = ""
    suggestion: str = ""

    @property
    def is_change(self) -> bool:
        return self.level == "fix"


class Recorded:
    """The changes and the findings among an object's ``records``."""

    records: list[Record]

    @property
    def changes(self) -> list[Record]:
        return [r for r in self.records if r.is_change]

    @property
    def findings(self) -> list[Record]:
        return [r for r in self.records if not r.is_change]


@dataclass
class Conversion(Recorded):
    """Result of converting one source text."""

    new: bytes | None  # None when nothing changed
    records: list[Record] = field(default_factory=list)


class SourceError(Exception):
    """The source could not be parsed; message is one line with the position."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


def not_converted_record(reason: str, line: int = 1, col: int = 1, level: str = "error") -> Record:
    """The record (TP900) of a file, or a notebook cell, left as it is because it could not be
    converted."""
    return Record(line, col, line, col, CODES["syntax"], level, "parse", f"not converted: {reason}", "builtin")


def internal_error(exc: BaseException) -> str:
    """How a bug of transplant's own is reported (one line; ``--debug`` shows the traceback)."""
    return f"internal error: {type(exc).__name__}: {exc} (run with --debug for details)"


def needs_hand_rewrite(finding: Record) -> bool:
    """Is this finding (a Record, or a Diagnostic made from one) a use of an API the user must
    rewrite by hand? Errors and warnings are; notes and "could not be parsed" are not."""
    return finding.level in ("error", "warning") and finding.code != CODES["syntax"]


__all__ = ["CODES", "OPERATION", "SKIP_FILE", "SKIP_LINE", "Conversion", "Record", "Recorded", "SourceError",
           "internal_error", "needs_hand_rewrite", "not_converted_record", "skips_file"]
