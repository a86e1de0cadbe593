"""A CUDA-dense Python file shaped like a real training recipe, of about a given number of lines.

    python3 bench/dense.py 24000 > /tmp/dense.py

Real recipes (fine-tuning libraries, diffusion trainers) are not bench/synth.py's small modules with
a few CUDA calls: they are long files of classes whose methods test the device in many spellings
(``torch.cuda.is_available()``, ``device == "cuda"``, ``.startswith("cuda")``, ``is_npu_available()``
in the same chain), nest those tests, guard CUDA-only features (Triton kernels, flash attention,
fused optimizers), keep collections of device names (``choices=["cpu", "cuda", "npu"]``) and
import inside functions. Every part of the conversion runs on such a file: the analyses of code
that already handles NPU, the guards, the device families, the placement of imports. The file is
built from numbered copies of one block (so that no two classes share a name) and is deterministic;
about half of each block is code no rule touches (collation, a schedule, summaries, a parser of
overrides), as in real recipes, so the skeleton's folding has its usual share of work.
"""

from __future__ import annotations

import sys

HEADER = '''"""A generated training recipe (bench/dense.py)."""
import argparse
import os
import math

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.cuda.amp import GradScaler

try:
    import triton  # noqa: F401
    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False

DEVICE_CHOICES = ["cpu", "cuda", "npu"]
BACKENDS = {"cuda": "nccl", "npu": "hccl", "cpu": "gloo"}


def is_npu_available():
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        return False
    return torch.npu.is_available()


'''

BLOCK = '''class Recipe{i}(nn.Module):
    """Block {i}: a model, its device choice and its training step."""

    def __init__(self, args, hidden={h}):
        super().__init__()
        self.args = args
        self.proj = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.use_fused = torch.cuda.is_available() and HAS_TRITON
        self.device_name = args.device if args.device in DEVICE_CHOICES else "cpu"

    def pick_device(self):
        if is_npu_available():
            device = torch.device("npu:0")
        elif torch.cuda.is_available():
            device = torch.device("cuda", {r})
            torch.cuda.set_device(device)
        else:
            device = torch.device("cpu")
        return device

    def backend(self, device):
        if device.type == "cuda":
            if dist.is_available() and not dist.is_initialized():
                dist.init_process_group("nccl")
            return BACKENDS["cuda"]
        elif device.type == "npu":
            return BACKENDS["npu"]
        return "gloo"

    def forward(self, x):
        if x.is_cuda:
            if self.use_fused and x.dtype == torch.float16:
                from torch.cuda.amp import autocast

                with autocast():
                    y = self.proj(x)
            else:
                y = self.proj(x)
        else:
            y = self.proj(x)
        return self.norm(y)

    def step(self, batch, optimizer, scaler=None):
        device = self.args.device
        if device.startswith("cuda"):
            batch = {{k: v.cuda(non_blocking=True) for k, v in batch.items()}}
        elif device == "npu":
            batch = {{k: v.to("npu") for k, v in batch.items()}}
        scaler = scaler or GradScaler(enabled=device == "cuda")
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = self.forward(batch["x"]).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return loss.item()

    def memory(self):
        if torch.cuda.is_available():
            free, total = torch.cuda.mem_get_info()
            peak = torch.cuda.max_memory_allocated() / 2**20
            torch.cuda.reset_peak_memory_stats()
            return {{"free": free, "total": total, "peak": peak}}
        return {{}}

    def save(self, path):
        import json

        state = {{k: v.detach().cpu() for k, v in self.state_dict().items()}}
        torch.save(state, path)
        with open(path + ".json", "w") as fh:
            json.dump({{"block": {i}, "device": self.device_name}}, fh)


def collate_{i}(samples, pad_id=0, max_len=512):
    """Pad a list of token lists to one length (no device in sight, as most of a recipe)."""
    longest = min(max(len(s) for s in samples), max_len)
    ids, mask = [], []
    for sample in samples:
        sample = sample[:longest]
        padding = longest - len(sample)
        ids.append(sample + [pad_id] * padding)
        mask.append([1] * len(sample) + [0] * padding)
    return {{"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask)}}


class Schedule{i}:
    """A warm-up then cosine learning-rate schedule."""

    def __init__(self, base_lr, warmup={w}, total=10000, floor=0.0):
        self.base_lr = base_lr
        self.warmup = warmup
        self.total = total
        self.floor = floor
        self.history = []

    def __call__(self, step):
        if step < self.warmup:
            lr = self.base_lr * (step + 1) / self.warmup
        else:
            progress = (step - self.warmup) / max(1, self.total - self.warmup)
            lr = self.floor + 0.5 * (self.base_lr - self.floor) * (1 + math.cos(math.pi * progress))
        self.history.append(lr)
        return lr

    def state_dict(self):
        return {{"base_lr": self.base_lr, "warmup": self.warmup, "total": self.total, "floor": self.floor}}

    def load_state_dict(self, state):
        for key in ("base_lr", "warmup", "total", "floor"):
            setattr(self, key, state[key])


def summarize_{i}(records, keys=("loss", "lr", "tokens")):
    """Mean, minimum and maximum of each key over a list of dicts."""
    out = {{}}
    for key in keys:
        values = [r[key] for r in records if key in r]
        if not values:
            continue
        out[key] = {{
            "mean": sum(values) / len(values),
            "min": min(values),
            "max": max(values),
            "count": len(values),
        }}
    lines = [f"{{k}}: {{v['mean']:.4f}} ({{v['min']:.4f}}..{{v['max']:.4f}}, n={{v['count']}})" for k, v in out.items()]
    return out, "\\n".join(lines)


def parse_overrides_{i}(pairs):
    """key=value pairs from the command line into a nested dict."""
    config = {{}}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"expected key=value, got {{pair!r}}")
        key, value = pair.split("=", 1)
        node = config
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {{}})
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                continue
        node[leaf] = value
    return config


def train_{i}(args):
    model = Recipe{i}(args)
    device = model.pick_device()
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=torch.cuda.is_available())
    if args.seed is not None:
        torch.manual_seed(args.seed)
        torch.cuda.manual_seed_all(args.seed)
    for epoch in range(args.epochs):
        batch = {{"x": torch.randn(4, {h}, device=device)}}
        loss = model.step(batch, optimizer)
        if epoch % 10 == 0 and (not dist.is_initialized() or dist.get_rank() == 0):
            print(f"block {i} epoch {{epoch}} loss {{loss:.4f}} on {{device}}")
    torch.cuda.empty_cache()
    return model


'''

FOOTER = """def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda", choices=DEVICE_CHOICES)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    for train in TRAINERS:
        train(args)


if __name__ == "__main__":
    main()
"""


def dense_file(lines: int) -> str:
    """The text of a dense file of about ``lines`` lines (at least one block)."""
    block_lines = BLOCK.count("\n")
    count = max(1, (lines - HEADER.count("\n") - FOOTER.count("\n") - 2) // block_lines)
    blocks = [BLOCK.format(i=i, h=64 + 8 * (i % 16), r=i % 8, w=100 + i % 50) for i in range(count)]
    trainers = "TRAINERS = [" + ", ".join(f"train_{i}" for i in range(count)) + "]\n\n\n"
    return HEADER + "".join(blocks) + trainers + FOOTER


if __name__ == "__main__":
    sys.stdout.write(dense_file(int(sys.argv[1]) if len(sys.argv) > 1 else 8000))
