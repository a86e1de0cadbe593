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
# Data-parallel training: one process of {shown} per NPU, on one machine or several.
# Written by transplant (distributed mode). Run it from anywhere; it works in its own folder:
#     bash {LAUNCH_SCRIPT} [arguments of {shown}]
# Several machines: run it once on every machine, with the same NNODES, MASTER_ADDR (an address of
# the machine with NODE_RANK=0 that the others can reach) and MASTER_PORT, and NODE_RANK=0..NNODES-1:
#     NNODES=2 NODE_RANK=0 MASTER_ADDR=10.0.0.1 bash {LAUNCH_SCRIPT}    # on the first machine
#     NNODES=2 NODE_RANK=1 MASTER_ADDR=10.0.0.1 bash {LAUNCH_SCRIPT}    # on the second machine
# Every machine runs as many processes as NPUS lists (the same number on every machine).
# Environment: NPUS (NPU ids of this machine, default 0,1,2,3,4,5,6,7), NNODES (machines, default 1),
# NODE_RANK (this machine, default 0), MASTER_ADDR (default 127.0.0.1 on one machine; required on
# several), MASTER_PORT (default 29500), LOG_DIR (default logs: one log file per process,
# rank_<global rank>.log), PYTHON (the interpreter, default python3), TRANSPLANT_EMULATE=1 (run each
# process under `python3 -m transplant.emulate`, with torch_npu emulated on this machine's CPU or GPU).
set -euo pipefail

cd "$(dirname "${{BASH_SOURCE[0]}}")"

PYTHON="${{PYTHON:-python3}}"
NPUS="${{NPUS:-0,1,2,3,4,5,6,7}}"
NNODES="${{NNODES:-1}}"
NODE_RANK="${{NODE_RANK:-0}}"
LOG_DIR="${{LOG_DIR:-logs}}"
case "$NNODES$NODE_RANK" in
    *[!0-9]*) echo "{LAUNCH_SCRIPT}: NNODES and NODE_RANK must be numbers, not '$NNODES' and '$NODE_RANK'" >&2
              exit 2 ;;
esac
if [ "$NNODES" -lt 1 ] || [ "$NODE_RANK" -ge "$NNODES" ]; then
    echo "{LAUNCH_SCRIPT}: NODE_RANK must be between 0 and NNODES-1 (NNODES=$NNODES, NODE_RANK=$NODE_RANK)" >&2
    exit 2
fi
if [ "$NNODES" -gt 1 ] && [ -z "${{MASTER_ADDR:-}}" ]; then
    echo "{LAUNCH_SCRIPT}: MASTER_ADDR must name the machine with NODE_RANK=0 when NNODES > 1" >&2
    exit 2
fi
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

# ranks are global: this machine's processes are NODE_RANK * (processes per machine) + 0, 1, ...
export LOCAL_WORLD_SIZE="${{#devices[@]}}"
export RANK_SIZE="$((NNODES * LOCAL_WORLD_SIZE))"
export WORLD_SIZE="$RANK_SIZE"
export NNODES NODE_RANK
first_rank="$((NODE_RANK * LOCAL_WORLD_SIZE))"

python=("$PYTHON")
if [ "${{TRANSPLANT_EMULATE:-0}}" = 1 ]; then
    python=("$PYTHON" -m transplant.emulate)
fi

pids=()
ranks=()
trap 'kill "${{pids[@]}}" 2>/dev/null || true; exit 130' INT TERM
for local_rank in "${{!devices[@]}}"; do
    rank="$((first_rank + local_rank))"
    DEVICE_ID="${{devices[$local_rank]}}" RANK_ID="$rank" RANK="$rank" LOCAL_RANK="$local_rank" \\
        "${{python[@]}}" {command} "$@" > "$LOG_DIR/rank_$rank.log" 2>&1 &
    pids+=("$!")
    ranks+=("$rank")
    echo "rank $rank on NPU ${{devices[$local_rank]}}: log $LOG_DIR/rank_$rank.log"
done

status=0
for i in "${{!pids[@]}}"; do
    if ! wait "${{pids[$i]}}"; then
        echo "rank ${{ranks[$i]}} failed; see $LOG_DIR/rank_${{ranks[$i]}}.log" >&2
        status=1
    fi
done
exit "$status"
'''
