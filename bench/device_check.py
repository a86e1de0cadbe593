"""One prepared check for a machine with a CUDA GPU: `transplant emulate --backing cuda` computes what
the original CUDA program computes there.

    python3 bench/device_check.py [--backing cuda|cpu] [--out DIR] [--steps N]

It writes a small original CUDA program of its own (a weight-tied character GPT block and an LSTM
language model on synthetic data, seeded, float32, deterministic algorithms), runs it as it is
(`python train.py`: on the GPU), converts it with transplant (`python -m transplant -i ... -o ...`),
runs the conversion under `transplant emulate --backing cuda` and `--backing cuda --strict`, and
compares every printed number. Results go to DIR (default $OUT, else ./device_check_out):
`result.json` and each run's stdout/stderr. Exit status: 0 when every number matches, 1 when some
differ or a run fails, 0 with "skipped" when this machine has no PyTorch or no GPU (it says so; nothing
is installed: the machine may have no network).

`--backing cpu` runs the same flow on the CPU (original on the CPU, conversion under `transplant
emulate`): the tests run it so, since their machine has no GPU. A run takes well under a minute on
a GPU; the budget is five minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROGRAM = '''\
"""A weight-tied GPT block and an LSTM language model, trained a few steps on synthetic text."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
if torch.cuda.is_available():
    torch.cuda.manual_seed_all(0)
torch.use_deterministic_algorithms(True, warn_only=True)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
VOCAB, BLOCK, DIM = 32, 16, 32


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.position = nn.Parameter(torch.zeros(1, BLOCK, DIM))
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # weight tying

    def forward(self, x):
        h = self.embed(x) + self.position[:, : x.shape[1]]
        q, k, v = self.qkv(self.norm(h)).view(x.shape[0], x.shape[1], 3, 4, DIM // 4).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(h.shape)
        return self.head(h + a)


class LSTMLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.rnn = nn.LSTM(DIM, DIM, num_layers=2, batch_first=True)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, x):
        return self.head(self.rnn(self.embed(x))[0])


text = torch.randint(0, VOCAB, (2048,))
for name, model in (("gpt", TinyGPT()), ("lstm", LSTMLM())):
    model = model.to(device)
    print(f"{name} parameters {len(list(model.parameters()))}", flush=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(steps):
        ix = torch.randint(len(text) - BLOCK - 1, (8,))
        x = torch.stack([text[i : i + BLOCK] for i in ix]).to(device)
        y = torch.stack([text[i + 1 : i + BLOCK + 1] for i in ix]).to(device)
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"{name} step {step} loss {loss.item()!r}", flush=True)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    print(f"{name} device {next(model.parameters()).device.type}", flush=True)
'''


def environment() -> dict:
    """What this machine has: Python, PyTorch (if importable, without installing anything), the GPU."""
    found: dict = {"python": platform.python_version(), "platform": platform.platform()}
    probe = (
        "import json, torch\n"
        "info = {'torch': torch.__version__, 'cuda': torch.cuda.is_available(), 'cuda_version': torch.version.cuda}\n"
        "if torch.cuda.is_available():\n"
        "    info['gpu'] = torch.cuda.get_device_name(0)\n"
        "print(json.dumps(info))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if proc.returncode != 0:
        found["torch"] = None
        found["torch_error"] = (proc.stderr.strip().splitlines() or ["?"])[-1]
    else:
        found.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return found


def run(args: list[str], cwd: Path, out: Path, name: str, timeout: int) -> tuple[int, str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    start = time.perf_counter()
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
        status, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        status, stdout, stderr = 124, str(exc.stdout or ""), f"timed out after {timeout}s"
    seconds = time.perf_counter() - start
    (out / f"{name}.stdout").write_text(stdout)
    (out / f"{name}.stderr").write_text(stderr)
    print(f"  {name}: exit {status} in {seconds:.1f}s", flush=True)
    return status, stdout, seconds


def numbers(stdout: str) -> list[str]:
    """The lines that carry the program's results (the device line differs by design: cuda / npu)."""
    return [line for line in stdout.splitlines() if " loss " in line or " parameters " in line]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backing", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "device_check_out"))
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--timeout", type=int, default=240, help="seconds per run")
    parser.add_argument(
        "--converted",
        type=Path,
        help="a conversion of the program made elsewhere (where the converter's libcst is missing)",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    result: dict = {"backing": args.backing, "environment": environment()}
    print("device_check: " + json.dumps(result["environment"]), flush=True)
    env = result["environment"]
    skip = None
    if env.get("torch") is None:
        skip = f"no PyTorch importable here ({env.get('torch_error')}); install torch (e.g. 2.13.0) and rerun"
    elif args.backing == "cuda" and not env.get("cuda"):
        skip = "PyTorch sees no CUDA GPU here: nothing to compare (--backing cpu runs the flow on the CPU)"
    if skip:
        result.update(verdict="skipped", reason=skip)
        (out / "result.json").write_text(json.dumps(result, indent=2))
        print(f"device_check: SKIPPED: {skip}", flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="device-check-") as tmp:
        original = Path(tmp) / "tiedlm"
        original.mkdir()
        (original / "train.py").write_text(PROGRAM)
        steps = [str(args.steps)]
        runs: dict = {}
        status, before, runs["original"] = run(
            [sys.executable, "train.py", *steps], original, out, "original", args.timeout
        )
        convert = [sys.executable, "-m", "transplant", "-q", "-i", str(original), "-o", str(Path(tmp) / "out")]
        converted = Path(tmp) / "out" / "tiedlm_msft"
        if args.converted is not None:  # made on another machine: the same program, converted there
            converted.mkdir(parents=True)
            (converted / "train.py").write_text(args.converted.read_text())
            code, runs["convert"] = 0, 0.0
        else:
            code, _, runs["convert"] = run(convert, Path(tmp), out, "convert", args.timeout)
        if converted.is_dir():
            (out / "converted_train.py").write_text((converted / "train.py").read_text())
        failures = [] if status == 0 else ["original"]
        if code != 0 or not converted.is_dir():
            failures.append("convert")
        compared: dict = {}
        for way, extra in (("emulate", []), ("emulate-strict", ["--strict"])):
            if "convert" in failures:
                break
            emulate = [
                sys.executable,
                "-m",
                "transplant.emulate",
                "--backing",
                args.backing,
                *extra,
                "train.py",
                *steps,
            ]
            code, after, runs[way] = run(emulate, converted, out, way, args.timeout)
            if code != 0:
                failures.append(way)
                continue
            expected, got = numbers(before), numbers(after)
            differ = [f"{a!r} != {b!r}" for a, b in zip(expected, got) if a != b]
            if len(expected) != len(got):
                differ.append(f"{len(expected)} result lines, {len(got)} under {way}")
            compared[way] = {"lines": len(expected), "differ": differ[:20]}
            if differ or not expected:
                failures.append(f"{way} numbers")
        result.update(seconds=runs, compared=compared, failures=failures)
        result["verdict"] = "match" if not failures else "differ"
        (out / "result.json").write_text(json.dumps(result, indent=2))
    if failures:
        print(f"device_check: DIFFER or FAILED: {', '.join(failures)} (see {out})", flush=True)
        return 1
    lines = compared["emulate"]["lines"]
    print(f"device_check: MATCH: {lines} result lines equal, original vs emulate and emulate --strict", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
