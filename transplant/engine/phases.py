"""The CPU time of each phase of a file's conversion, when asked for (TRANSPLANT_PHASE_TIMES=1).

Owns the opt-in timer of driver.py's phases: ``timed(name, function, *args)`` calls the function
and, only when the environment variable ``TRANSPLANT_PHASE_TIMES`` is set (read once, at import),
adds the CPU time it took (``time.process_time``: this process, so a busy machine disturbs it
little) to the phase's total; at exit the totals are written to standard error, one
``phase NAME: SECONDS s CPU (CALLS calls)`` line each, in the order the phases first ran. Off, it
costs one function call per phase. bench/realcode.py prints these lines for the dense file.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

ENABLED = bool(os.environ.get("TRANSPLANT_PHASE_TIMES"))
TOTALS: dict[str, list[float]] = {}  # name -> [seconds, calls]


def timed(name: str, function: Callable[..., T], *args: object, **kwargs: object) -> T:
    if not ENABLED:
        return function(*args, **kwargs)
    start = time.process_time()
    try:
        return function(*args, **kwargs)
    finally:
        total = TOTALS.setdefault(name, [0.0, 0])
        total[0] += time.process_time() - start
        total[1] += 1


def report() -> None:
    for name, (seconds, calls) in TOTALS.items():
        sys.stderr.write(f"phase {name}: {seconds:.3f} s CPU ({int(calls)} calls)\n")


if ENABLED:
    atexit.register(report)
