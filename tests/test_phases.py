"""TRANSPLANT_PHASE_TIMES=1 prints the CPU time of each phase of a file's conversion (engine/phases.py);
without it nothing is printed. (No time is asserted: only that each phase is named once.)"""

from __future__ import annotations

import os
import subprocess
import sys

SOURCE = """import torch

def helper(values):
    return sum(values)

x = torch.randn(2, device="cuda")
torch.cuda.synchronize()
"""


def _check(tmp_path, env_changes):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    env = {k: v for k, v in os.environ.items() if k != "TRANSPLANT_PHASE_TIMES"}
    env.update(env_changes)
    done = subprocess.run(
        [sys.executable, "-m", "transplant", "-q", "--check", str(path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr  # (the file would change)
    return done.stderr


def test_phase_times_on(tmp_path):
    err = _check(tmp_path, {"TRANSPLANT_PHASE_TIMES": "1"})
    lines = [line for line in err.splitlines() if line.startswith("phase ")]
    names = [line.split(":")[0][len("phase ") :] for line in lines]
    for phase in ("guards", "skeleton", "parse", "regions", "imports", "rewrite", "place", "records", "print"):
        assert names.count(phase) == 1, err
    assert all(line.endswith("calls)") and " s CPU (" in line for line in lines)


def test_phase_times_off(tmp_path):
    assert "phase " not in _check(tmp_path, {})
