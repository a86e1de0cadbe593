"""Deterministic synthetic repositories shaped like real PyTorch projects.

About 15% of the Python files use CUDA APIs, about 35% import torch without touching CUDA, the rest
are plain Python; each Python file has about 200 lines. A tenth of the files are not Python:
READMEs, YAML/JSON configs, requirements, shell scripts (some exporting CUDA_VISIBLE_DEVICES) and
the odd notebook. The same (files, seed) always gives the same bytes.

Used by bench/bench.py and by tests/test_parallel.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

CUDA_SHARE = 0.15
TORCH_SHARE = 0.35
OTHER_SHARE = 0.10  # of all files: not Python

_WORDS = (
    "data",
    "batch",
    "item",
    "value",
    "count",
    "total",
    "index",
    "result",
    "buffer",
    "record",
    "config",
    "state",
    "token",
    "frame",
    "weight",
    "score",
    "path",
    "name",
    "size",
    "step",
)


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}"


def _plain_function(rng: random.Random, i: int) -> list[str]:
    a, b, c = _ident(rng), _ident(rng), _ident(rng)
    body = [
        f"def {a}_{i}({b}, {c}=None):",
        f'    """Return the {b.replace("_", " ")} grouped by {c.replace("_", " ")}."""',
        "    out = {}",
        f"    for k, v in enumerate({b} or []):",
        f"        key = str(k % {rng.randint(2, 9)})",
        "        out.setdefault(key, []).append(v)",
        f"    if {c} is not None:",
        f"        out = {{k: v for k, v in out.items() if k in {c}}}",
        "    total = sum(len(v) for v in out.values())",
        f'    logger.debug("%s: %d items", "{a}", total)',
        "    return out",
        "",
        "",
    ]
    if rng.random() < 0.5:
        body[-3:-3] = [
            "    try:",
            "        ratio = total / max(1, len(out))",
            "    except ZeroDivisionError:",
            "        ratio = 0.0",
            "    assert ratio >= 0, ratio",
        ]
    return body


def _plain_class(rng: random.Random, i: int) -> list[str]:
    name = "".join(w.capitalize() for w in _ident(rng).split("_")) + str(i)
    f1, f2 = _ident(rng), _ident(rng)
    return [
        f"class {name}:",
        f'    """Keeps {f1.replace("_", " ")} and {f2.replace("_", " ")} together."""',
        "",
        f"    def __init__(self, {f1}, {f2}=0):",
        f"        self.{f1} = {f1}",
        f"        self.{f2} = {f2}",
        "        self._cache = {}",
        "",
        "    def __repr__(self):",
        f'        return f"{name}({{self.{f1}!r}}, {{self.{f2}!r}})"',
        "",
        "    def update(self, **kwargs):",
        "        for key, value in kwargs.items():",
        "            if not hasattr(self, key):",
        '                raise AttributeError(f"unknown field {key}")',
        "            setattr(self, key, value)",
        "        self._cache.clear()",
        "        return self",
        "",
        "",
    ]


def _torch_function(rng: random.Random, i: int) -> list[str]:
    a = _ident(rng)
    # an API that torch_npu reports as unsupported: in a few training loops only
    clip = (
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
        if rng.random() < 0.03
        else "        torch.nn.init.zeros_(model.fc2.bias)"
    )
    width = rng.choice((64, 128, 256, 512))
    return [
        f"class Block{i}(nn.Module):",
        f"    def __init__(self, dim={width}, dropout={rng.choice((0.0, 0.1, 0.2))}):",
        "        super().__init__()",
        "        self.norm = nn.LayerNorm(dim)",
        "        self.fc1 = nn.Linear(dim, dim * 4)",
        "        self.fc2 = nn.Linear(dim * 4, dim)",
        "        self.drop = nn.Dropout(dropout)",
        "",
        "    def forward(self, x):",
        "        h = self.fc1(self.norm(x))",
        "        h = F.gelu(h)",
        "        return x + self.drop(self.fc2(h))",
        "",
        "",
        f"def {a}_{i}(model, batch, optimizer, i=0):",
        "    model.train()",
        "    inputs, target = batch",
        "    logits = model(inputs)",
        "    loss = F.cross_entropy(logits, target)",
        "    optimizer.zero_grad(set_to_none=True)",
        "    loss.backward()",
        "    if i % 2:",
        clip,
        "    optimizer.step()",
        "    with torch.no_grad():",
        "        acc = (logits.argmax(dim=-1) == target).float().mean()",
        "    return loss.item(), acc.item()",
        "",
        "",
    ]


_CUDA_SNIPPETS = [
    [
        "    if torch.cuda.is_available():",
        "        torch.cuda.manual_seed_all(seed)",
        "        torch.cuda.set_device(rank)",
    ],
    ["    model = model.cuda()", "    inputs = inputs.to(device)", "    torch.cuda.synchronize()"],
    [
        '    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        "    tensor = torch.zeros(4, device=device)",
    ],
    ["    with autocast():", "        out = model(inputs.cuda(non_blocking=True))", "    scaler = GradScaler()"],
    ['    dist.init_process_group("nccl", rank=rank, world_size=world)', '    torch.cuda.set_device(f"cuda:{rank}")'],
    [
        "    torch.backends.cudnn.benchmark = True",
        "    peak = torch.cuda.max_memory_allocated()",
        "    torch.cuda.empty_cache()",
    ],
    ['    os.environ["CUDA_VISIBLE_DEVICES"] = str(rank)', '    state = torch.load(path, map_location="cuda:0")'],
    [
        "    stream = torch.cuda.Stream()",
        "    with torch.cuda.stream(stream):",
        "        out = model(inputs)",
        "    stream.synchronize()",
    ],
]


def _cuda_function(rng: random.Random, i: int) -> list[str]:
    a = _ident(rng)
    lines = [f"def {a}_{i}(model, inputs, rank=0, world=1, seed=0, path='ckpt.pt'):"]
    for snippet in rng.sample(_CUDA_SNIPPETS, 2):
        lines += snippet
    lines += ["    return model", "", ""]
    return lines


def python_file(rng: random.Random, flavour: str, lines: int = 200) -> str:
    head = ['"""Synthetic module for the transplant benchmark."""', "import json", "import logging", "import os", ""]
    if flavour in ("torch", "cuda"):
        head += ["import torch", "import torch.nn as nn", "import torch.nn.functional as F"]
    if flavour == "cuda":
        head += ["import torch.distributed as dist", "from torch.cuda.amp import GradScaler, autocast"]
    head += ["", "logger = logging.getLogger(__name__)", "", ""]
    out = list(head)
    i = 0
    makers = [_plain_function, _plain_class]
    if flavour in ("torch", "cuda"):
        makers.append(_torch_function)
    while len(out) < lines:
        if flavour == "cuda" and (i % 4 == 1):
            out += _cuda_function(rng, i)
        else:
            out += rng.choice(makers)(rng, i)
        i += 1
    out += ['if __name__ == "__main__":', "    logging.basicConfig(level=logging.INFO)", ""]
    return "\n".join(out)


def _other_file(rng: random.Random, i: int) -> tuple[str, bytes]:
    kind = rng.choice(("md", "yaml", "json", "txt", "sh", "sh", "ipynb", "png"))
    if kind == "md":
        return f"NOTES_{i}.md", ("# Notes\n\n" + "Train with `python train.py --device cuda`.\n" * 20).encode()
    if kind == "yaml":
        return f"config_{i}.yaml", "".join(f"{_ident(rng)}: {rng.randint(0, 999)}\n" for _ in range(40)).encode()
    if kind == "json":
        return f"meta_{i}.json", json.dumps({_ident(rng): rng.random() for _ in range(30)}, indent=1).encode()
    if kind == "txt":
        return f"requirements_{i}.txt", b"torch>=2.1\nnumpy\ntqdm\n"
    if kind == "sh":
        env = "export CUDA_VISIBLE_DEVICES=0,1\n" if rng.random() < 0.5 else ""
        return f"run_{i}.sh", f'#!/bin/bash\nset -e\n{env}python3 train.py --epochs {rng.randint(1, 9)} "$@"\n'.encode()
    if kind == "ipynb":
        cells: list[dict] = [
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": ["import torch\n", "x = torch.ones(3).cuda()\n" if rng.random() < 0.5 else "x = 1\n"],
            }
        ]
        nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        return f"demo_{i}.ipynb", json.dumps(nb, indent=1).encode()
    return f"figure_{i}.png", bytes(rng.getrandbits(8) for _ in range(2048))


def generate(root: Path, files: int, seed: int = 0) -> dict[str, int]:
    """Write a synthetic repository of ``files`` files below ``root``; return counts by flavour."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    counts = {"cuda": 0, "torch": 0, "plain": 0, "other": 0}
    n_other = round(files * OTHER_SHARE)
    n_py = files - n_other
    flavours = ["cuda"] * round(n_py * CUDA_SHARE) + ["torch"] * round(n_py * TORCH_SHARE)
    flavours += ["plain"] * (n_py - len(flavours)) + ["other"] * n_other
    rng.shuffle(flavours)
    per_dir = 25
    for i in range(files):
        folder = root / f"pkg{i // (per_dir * 8)}" / f"sub{(i // per_dir) % 8}"
        folder.mkdir(parents=True, exist_ok=True)
        file_rng = random.Random(f"{seed}:{i}")
        flavour = flavours[i]
        if flavour != "other":
            text = python_file(file_rng, flavour, lines=file_rng.randint(170, 230))
            (folder / f"mod_{i}.py").write_text(text, encoding="utf-8")
            counts[flavour] += 1
        else:
            name, data = _other_file(file_rng, i)
            (folder / name).write_bytes(data)
            counts["other"] += 1
    return counts
