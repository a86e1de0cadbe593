"""What `transplant emulate` costs, as a ratio to the plain CPU run of the same training, measured now.

    python3 bench/emulate_cost.py [--repeat 3] [--steps N] [--kinds readme transformer bigram]

Three workloads, each timed inside the program (the training loop only; start-up is reported apart):
README's example (examples/mnist_cuda's Net, SGD, amp with a GradScaler, a DataLoader), a small
transformer (2 encoder layers, d_model 64, sequences of 16, AdamW, amp) and a character-level bigram
model (an embedding table, batches cut from a text tensor, AdamW: 10 x --steps steps of many tiny
operators, where the emulator's cost per operator shows; `--kinds bigram` runs it alone). Each runs three ways: plain CPU (`python`,
device "cpu"), `transplant emulate` (device "npu"; NPU tensors, the default), and `transplant emulate
--no-device-identity` (tensors of the CPU). The
best of --repeat runs is kept. Prints the seconds and the ratios; the target is at most 3x. It also
checks that the three ways print the same final loss. `--baseline DIR` (another transplant checkout,
e.g. `git archive COMMIT | tar -x -C DIR`) adds a fourth way, `transplant emulate` as that checkout
has it, interleaved with the others, so that an older emulator and this one are timed under the same
load (the target applies to this checkout's ways). `--cpu-time` compares the loops' CPU time (each
workload is one thread: OMP_NUM_THREADS=1), which other jobs on a shared machine disturb less than the
wall time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 3.0
KINDS = ["readme", "transformer", "bigram"]

WORKLOAD = """\
import sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

kind, device, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if device == "npu":
    import torch_npu  # noqa: F401
torch.manual_seed(0)
if kind == "readme":
    from model import Net
    model = Net().to(device)
    data = TensorDataset(torch.randn(256, 1, 28, 28), torch.randint(0, 10, (256,)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    def loss_of(x, y):
        return F.cross_entropy(model(x), y)
elif kind == "bigram":  # a character-level bigram model: many tiny operators per step
    vocab, block, batch = 65, 8, 32
    text = torch.randint(0, vocab, (4096,))
    model = nn.Embedding(vocab, vocab).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    start, cpu = time.perf_counter(), time.process_time()
    for step in range(steps * 10):
        ix = torch.randint(len(text) - block - 1, (batch,))
        x = torch.stack([text[i : i + block] for i in ix]).to(device)
        y = torch.stack([text[i + 1 : i + block + 1] for i in ix]).to(device)
        loss = F.cross_entropy(model(x).view(-1, vocab), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    print(f"loop {time.perf_counter() - start:.4f} cpu {time.process_time() - cpu:.4f} loss {loss.item()!r}")
    sys.exit(0)
else:
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    embed, head = nn.Embedding(64, 64), nn.Linear(64, 64)
    model = nn.ModuleList([embed, encoder, head]).to(device)
    data = TensorDataset(torch.randint(0, 64, (256, 16)), torch.randint(0, 64, (256, 16)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    def loss_of(x, y):
        return F.cross_entropy(head(encoder(embed(x))).flatten(0, 1), y.flatten())
scaler = torch.amp.GradScaler(device)
loader = DataLoader(data, batch_size=32, shuffle=True)
start, cpu, step = time.perf_counter(), time.process_time(), 0
while step < steps:
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = loss_of(x, y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        step += 1
        if step == steps:
            break
print(f"loop {time.perf_counter() - start:.4f} cpu {time.process_time() - cpu:.4f} loss {loss.item()!r}")
"""

WAYS = {
    "cpu": ([], "cpu"),
    "emulate": (["-m", "transplant.emulate", "-q"], "npu"),
    "no-identity": (["-m", "transplant.emulate", "-q", "--no-device-identity"], "npu"),
}


BASELINE = "emulate@baseline"


def run(
    folder: Path, way: str, kind: str, steps: int, baseline: Path | None = None, cpu_time: bool = False
) -> tuple[float, float, str]:
    prefix, device = WAYS["emulate" if way == BASELINE else way]
    root = baseline if way == BASELINE and baseline is not None else REPO
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *prefix, "workload.py", kind, device, str(steps)],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
    )
    total = time.perf_counter() - start
    match = re.search(r"^loop (\S+) cpu (\S+) loss (\S+)$", proc.stdout, re.M)
    if proc.returncode != 0 or match is None:
        raise SystemExit(f"{way} {kind} failed:\n{proc.stderr[-2000:]}")
    wall = float(match.group(1))
    loop = float(match.group(2)) if cpu_time else wall
    return loop, total - wall, match.group(3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS, help="the workloads (default: all)")
    parser.add_argument("--baseline", type=Path, help="another transplant checkout whose emulate is timed too")
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="compare the loops' CPU time (process time) instead of their wall time: on a machine that other "
        "jobs load, the wall time is theirs to decide",
    )
    args = parser.parse_args()
    ways = [*WAYS, BASELINE] if args.baseline else list(WAYS)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "workload.py").write_text(WORKLOAD)
        shutil.copy(REPO / "examples" / "mnist_cuda" / "model.py", folder)
        for kind in args.kinds:
            best: dict[str, tuple[float, float, str]] = {}
            for _ in range(args.repeat):
                for way in ways:  # interleaved, so that a busy machine weighs on every way alike
                    result = run(folder, way, kind, args.steps, args.baseline, args.cpu_time)
                    if way not in best or result[0] < best[way][0]:
                        best[way] = result
            base = best["cpu"][0]
            losses = {way: best[way][2] for way in ways}
            print(
                f"{kind} ({args.steps} steps): "
                + ", ".join(
                    f"{way} {loop:.3f}s (x{loop / base:.2f}; start-up {startup:.1f}s)"
                    for way, (loop, startup, _) in best.items()
                )
                + ("" if len(set(losses.values())) == 1 else f"; LOSSES DIFFER {losses}")
            )
            worst = max(worst, *(best[way][0] / base for way in WAYS))
    print(f"worst ratio x{worst:.2f} (target at most x{TARGET:.0f})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
