"""``run_distributed_npu.sh``: the launch script written beside the converted entry file.

Text only: which variables the processes get and how they are started. It must not know anything
about the entry file beyond its path.
"""

from __future__ import annotations

import shlex

LAUNCH_SCRIPT = "run_distributed_npu.sh"


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

