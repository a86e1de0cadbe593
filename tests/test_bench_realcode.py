"""bench/realcode.py and bench/dense.py run (on tiny input: no timing is asserted here)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from dense import dense_file  # noqa: E402


def test_dense_file_is_python_of_about_the_size_asked():
    for lines in (200, 1000, 3000):
        text = dense_file(lines)
        ast.parse(text)
        assert abs(text.count("\n") - lines) < 120
    assert dense_file(1000) == dense_file(1000)  # deterministic


def test_dense_file_reaches_the_analyses():
    """It tests NPU and CUDA in one chain, keeps collections naming npu, and imports in functions."""
    text = dense_file(300)
    assert "if is_npu_available():" in text and 'elif device == "npu":' in text
    assert '["cpu", "cuda", "npu"]' in text and "        import json" in text
    assert 'device.startswith("cuda")' in text and "HAS_TRITON" in text


def test_realcode_runs_on_tiny_input():
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "realcode.py"), "--old", "HEAD", "--rounds", "1"]
        + ["--parts", "dense", "phases", "--sizes", "120", "240"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "growth of CPU per line" in done.stdout
    assert "x floor" in done.stdout
