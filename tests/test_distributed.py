"""Distributed mode: `transplant -i P -o O distributed -m P/train.py [-t model]`."""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from goldens import check_bytes
from transplant import distributed
from transplant.cli import main as cli_main
from transplant.distributed import HELPERS, LAUNCH_SCRIPT, convert_source, launch_script
from transplant.engine import parse

FIXTURES = Path(__file__).parent / "fixtures" / "distributed"

# case -> (input given to -i, entry file relative to the input, -t, entry file relative to the result)
CASES = {
    "single": ("input/train.py", "", "model", "train.py"),  # -i is the file itself
    "multifile": ("input/proj", "train.py", "model", "train.py"),
    "trainer": ("input/proj", "train.py", "model", "train.py"),  # self.model found for -t model
    "script": ("input/proj", "run.py", "net", "run.py"),
    "branches": ("input/proj", "main.py", "model", "main.py"),
    "dataparallel": ("input/proj", "train.py", "model", "train.py"),  # DataParallel, fixed device indices
    "already": ("input/proj", "train.py", "model", "train.py"),  # its own init_process_group, DDP, torchrun
    # PyTorch's DDP tutorial's shape: `device = 0` -> main(device) -> Trainer(gpu_id) -> model.to(gpu_id)
    "tutorial": ("input/proj", "main.py", "model", "main.py"),
}
ALREADY = {"already"}  # distributed already: only the CUDA-specific conversion


def run_cli(args: list[str]) -> int:
    return cli_main(["-q", "-j", "1", *map(str, args)])


def convert_case(case: str, out: Path, source_root: Path | None = None) -> Path:
    given, entry, target, _ = CASES[case]
    src = (source_root or FIXTURES / case) / given
    main = src if not entry else src / entry
    assert run_cli(["-i", src, "-o", out, "distributed", "-m", main, "-t", target]) == 0
    (result,) = [p for p in out.iterdir() if p.name.endswith("_msft_multi")]
    return result


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    return {case: convert_case(case, out / case) for case in CASES}


# --------------------------------------------------------------------------- expected trees


@pytest.mark.parametrize("case", sorted(CASES))
def test_entry_file_and_launch_script_match_expected_bytes(case, results):
    result = results[case]
    entry = CASES[case][3]
    expected = FIXTURES / case / "expected"
    check_bytes(expected / entry, (result / entry).read_bytes())
    check_bytes(expected / LAUNCH_SCRIPT, (result / LAUNCH_SCRIPT).read_bytes())
    assert stat.S_IMODE((result / LAUNCH_SCRIPT).stat().st_mode) == 0o755


@pytest.mark.parametrize("case", sorted(CASES))
def test_result_compiles_and_keeps_other_files(case, results, tmp_path):
    result = results[case]
    entry = CASES[case][3]
    compile((result / entry).read_bytes(), entry, "exec")
    # every other file is what a plain (non-distributed) conversion writes
    given = FIXTURES / case / CASES[case][0]
    assert run_cli(["-i", given, "-o", tmp_path]) == 0
    (plain,) = [p for p in tmp_path.iterdir() if p.name.endswith("_msft")]
    skip = {entry, LAUNCH_SCRIPT, "change_list.csv", "unsupported_op.xlsx", "msFmkTranspltlog.txt"}
    for path in plain.rglob("*"):
        rel = path.relative_to(plain).as_posix()
        if path.is_file() and rel not in skip:
            assert (result / rel).read_bytes() == path.read_bytes(), rel


@pytest.mark.parametrize("case", sorted(set(CASES) - ALREADY))
def test_change_list_has_distributed_rows(case, results):
    result = results[case]
    entry = CASES[case][3]
    with open(result / "change_list.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    dist = [r for r in rows if r["Operation Type"] == "distributed"]
    assert {r["File"] for r in dist} == {entry}
    codes = {r["Code"] for r in dist}
    assert {"TP301", "TP302", "TP303", "TP304", "TP305"} <= codes
    lines = (result / entry).read_text().splitlines()
    for r in dist:  # the line of each row is the line of the result file that shows the change
        line = lines[int(r["Start Line"]) - 1]
        if r["Code"] == "TP302":
            assert "DistributedSampler" in line or "sampler=" in line
        elif r["Code"] == "TP303":
            assert ".set_epoch(" in line
        elif r["Message"].startswith("wrap "):
            assert "is_initialized" in line


def test_multi_file_project_changes_only_the_entry_file(results):
    result = results["multifile"]
    for rel in ("data.py", "models/resnet.py", "models/__init__.py"):
        assert "npu_rank" not in (result / rel).read_text()
    text = (result / "train.py").read_text()
    # two loaders, both sharded, both re-seeded each epoch inside fit()
    assert text.count("DistributedSampler(") == 2
    assert "train_loader.sampler.set_epoch(epoch)" in text and "val_loader.sampler.set_epoch(epoch)" in text
    # the model from build_model() is wrapped once, in main(), after it was moved
    assert text.count("DistributedDataParallel(model") == 1
    log = next(p for p in result.iterdir() if p.name.endswith("msFmkTranspltlog.txt")).read_text()
    # the fixed device follows the process's NPU (and stays NPU 0 for a single process)
    assert "TP306 fixed device 'npu:0' follows this process's NPU" in log
    assert 'torch.device(f"npu:{npu_index(0)}" if torch_npu.npu.is_available() else "cpu")' in text


# --------------------------------------------------------------------------- idempotence


@pytest.mark.parametrize("case", sorted(CASES))
def test_running_on_own_output_changes_nothing(case, results, tmp_path):
    first = results[case]
    given, _entry, target, entry = CASES[case]
    src = first / entry if given.endswith(".py") else first
    if given.endswith(".py"):  # single-file input: convert the result file alone
        single = tmp_path / "in"
        single.mkdir()
        shutil.copy(first / entry, single / entry)
        src = single / entry
    assert (
        run_cli(
            [
                "-i",
                src,
                "-o",
                tmp_path / "again",
                "distributed",
                "-m",
                src if src.is_file() else src / entry,
                "-t",
                target,
            ]
        )
        == 0
    )
    (second,) = list((tmp_path / "again").iterdir())
    assert (second / entry).read_bytes() == (first / entry).read_bytes()
    assert (second / LAUNCH_SCRIPT).read_bytes() == (first / LAUNCH_SCRIPT).read_bytes()


def test_convert_source_is_idempotent_on_expected_files():
    for case, (_given, _entry, target, entry) in CASES.items():
        data = (FIXTURES / case / "expected" / entry).read_bytes()
        assert convert_source(data, target) == data, case


# --------------------------------------------------------------------------- launch script


@pytest.mark.parametrize("case", sorted(CASES))
def test_launch_script_is_valid_bash(case):
    script = FIXTURES / case / "expected" / LAUNCH_SCRIPT
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_launch_script_passes_shellcheck(tmp_path):
    for entry in ("train.py", "src/my app/train.py"):
        script = tmp_path / LAUNCH_SCRIPT
        script.write_text(launch_script(entry))
        proc = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


def fake_python(bin_dir: Path, fail_rank: str | None = None) -> None:
    """A python3 that prints its arguments and launcher variables (and fails on one rank)."""
    bin_dir.mkdir()
    fail = f'[ "$RANK" = "{fail_rank}" ] && exit 3' if fail_rank is not None else ""
    (bin_dir / "python3").write_text(
        textwrap.dedent(f"""\
        #!/usr/bin/env bash
        echo "args=$* cwd=$PWD"
        for v in DEVICE_ID RANK_ID RANK_SIZE RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT \\
                 HCCL_WHITELIST_DISABLE; do
            echo "$v=${{!v}}"
        done
        {fail}
        exit 0
        """)
    )
    (bin_dir / "python3").chmod(0o755)


def run_launcher(root: Path, bin_dir: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", **env}
    return subprocess.run(
        ["bash", str(root / LAUNCH_SCRIPT), "--epochs", "3"],
        capture_output=True,
        text=True,
        env=full,
        cwd="/",
        timeout=300,
    )


def test_launch_script_starts_one_process_per_npu(tmp_path):
    root = tmp_path / "result"
    root.mkdir()
    (root / LAUNCH_SCRIPT).write_text(launch_script("src/train.py"))
    fake_python(tmp_path / "bin")
    proc = run_launcher(root, tmp_path / "bin", NPUS="4, 6", MASTER_PORT="29611")
    assert proc.returncode == 0, proc.stderr
    logs = sorted((root / "logs").iterdir())
    assert [p.name for p in logs] == ["rank_0.log", "rank_1.log"]
    for rank, device in ((0, 4), (1, 6)):
        text = (root / "logs" / f"rank_{rank}.log").read_text()
        assert f"args=src/train.py --epochs 3 cwd={root}" in text
        for line in (
            f"DEVICE_ID={device}",
            f"RANK_ID={rank}",
            "RANK_SIZE=2",
            f"RANK={rank}",
            "WORLD_SIZE=2",
            f"LOCAL_RANK={rank}",
            "MASTER_ADDR=127.0.0.1",
            "MASTER_PORT=29611",
            "HCCL_WHITELIST_DISABLE=1",
        ):
            assert line in text.splitlines(), (rank, line)


def test_launch_script_fails_when_a_process_fails(tmp_path):
    root = tmp_path / "result"
    root.mkdir()
    (root / LAUNCH_SCRIPT).write_text(launch_script("train.py"))
    fake_python(tmp_path / "bin", fail_rank="1")
    proc = run_launcher(root, tmp_path / "bin", NPUS="0,1,2")
    assert proc.returncode == 1
    assert "rank 1 failed" in proc.stderr and "rank 0 failed" not in proc.stderr
    assert len(list((root / "logs").iterdir())) == 3


def test_launch_script_rejects_bad_npu_list(tmp_path):
    root = tmp_path / "result"
    root.mkdir()
    (root / LAUNCH_SCRIPT).write_text(launch_script("train.py"))
    fake_python(tmp_path / "bin")
    proc = run_launcher(root, tmp_path / "bin", NPUS="0,x")
    assert proc.returncode == 2 and "NPUS" in proc.stderr
    assert not (root / "logs").exists()


def test_launch_script_starts_its_share_of_a_multi_machine_job(tmp_path):
    root = tmp_path / "result"
    root.mkdir()
    (root / LAUNCH_SCRIPT).write_text(launch_script("train.py"))
    fake_python(tmp_path / "bin")
    proc = run_launcher(root, tmp_path / "bin", NNODES="2", NODE_RANK="1", NPUS="4,6", MASTER_ADDR="10.0.0.1")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (root / "logs").iterdir()) == ["rank_2.log", "rank_3.log"]
    for local, (rank, device) in enumerate(((2, 4), (3, 6))):
        lines = (root / "logs" / f"rank_{rank}.log").read_text().splitlines()
        for line in (
            f"DEVICE_ID={device}",
            f"RANK_ID={rank}",
            f"RANK={rank}",
            f"LOCAL_RANK={local}",
            "RANK_SIZE=4",
            "WORLD_SIZE=4",
            "LOCAL_WORLD_SIZE=2",
            "MASTER_ADDR=10.0.0.1",
            "MASTER_PORT=29500",
        ):
            assert line in lines, (rank, line)


def test_launch_script_runs_the_interpreter_named_by_PYTHON(tmp_path):
    root = tmp_path / "result"
    root.mkdir()
    (root / LAUNCH_SCRIPT).write_text(launch_script("train.py"))
    fake_python(tmp_path / "bin")
    (tmp_path / "bin" / "python3").rename(tmp_path / "bin" / "mypython")
    proc = run_launcher(root, tmp_path / "bin", NPUS="0", PYTHON=str(tmp_path / "bin" / "mypython"))
    assert proc.returncode == 0, proc.stderr
    assert "RANK_SIZE=1" in (root / "logs" / "rank_0.log").read_text()


@pytest.mark.parametrize(
    "env, complaint",
    [
        ({"NNODES": "2", "NODE_RANK": "2", "MASTER_ADDR": "10.0.0.1"}, "NODE_RANK must be between 0 and NNODES-1"),
        ({"NNODES": "0"}, "NODE_RANK must be between"),
        ({"NNODES": "two"}, "must be numbers"),
        ({"NNODES": "2", "NODE_RANK": "1"}, "MASTER_ADDR must name the machine with NODE_RANK=0"),
    ],
)
def test_launch_script_rejects_bad_machine_settings(tmp_path, env, complaint):
    root = tmp_path / "result"
    root.mkdir()
    (root / LAUNCH_SCRIPT).write_text(launch_script("train.py"))
    fake_python(tmp_path / "bin")
    os_env = {k: v for k, v in os.environ.items() if k != "MASTER_ADDR"}
    proc = subprocess.run(
        ["bash", str(root / LAUNCH_SCRIPT)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os_env, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", **env},
    )
    assert proc.returncode == 2 and complaint in proc.stderr, proc.stderr
    assert not (root / "logs").exists()


# --------------------------------------------------------------------------- the inserted set-up


class FakeDist:
    def __init__(self):
        self.calls = []
        self.initialized = False

    def is_initialized(self):
        return self.initialized

    def init_process_group(self, **kwargs):
        self.calls.append(kwargs)
        self.initialized = True

    def get_rank(self):
        return self.calls[-1]["rank"]

    def get_world_size(self):
        return self.calls[-1]["world_size"]

    def barrier(self):
        self.calls.append("barrier")

    def destroy_process_group(self):
        self.calls.append("destroy")
        self.initialized = False


def helpers_with(env: dict[str, str]):
    dist = FakeDist()
    devices = []
    torch = types.SimpleNamespace(
        distributed=dist,
        nn=types.SimpleNamespace(parallel=types.SimpleNamespace(DistributedDataParallel=type("DDP", (), {}))),
    )
    torch_npu = types.SimpleNamespace(npu=types.SimpleNamespace(set_device=devices.append))
    fake_os = types.SimpleNamespace(environ=dict(env))
    at_exit: list = []
    namespace = {
        "os": fake_os,
        "torch": torch,
        "torch_npu": torch_npu,
        "atexit": types.SimpleNamespace(register=at_exit.append),
        "at_exit": at_exit,
    }
    exec(compile(HELPERS, "helpers", "exec"), namespace)
    namespace["init_distributed_npu"]()
    return namespace, dist, devices, fake_os.environ


def test_setup_leaves_a_single_process_alone():
    for env in ({}, {"RANK_ID": "0", "RANK_SIZE": "1", "DEVICE_ID": "3"}, {"RANK": "0", "WORLD_SIZE": "1"}):
        ns, dist, devices, _ = helpers_with(env)
        assert dist.calls == [] and devices == [] and ns["at_exit"] == []
        assert ns["npu_rank"]() == 0 and ns["npu_world_size"]() == 1


def test_setup_from_the_launch_script_variables():
    ns, dist, devices, environ = helpers_with({"RANK_ID": "1", "RANK_SIZE": "4", "DEVICE_ID": "5", "LOCAL_RANK": "1"})
    assert dist.calls == [{"backend": "hccl", "rank": 1, "world_size": 4}]
    assert devices == [5]  # DEVICE_ID is the NPU, LOCAL_RANK only the process index
    assert environ["MASTER_ADDR"] == "127.0.0.1" and environ["MASTER_PORT"] == "29500"
    assert ns["npu_rank"]() == 1 and ns["npu_world_size"]() == 4
    plain = object()
    assert ns["npu_unwrap"](plain) is plain
    # the group is left when the script ends, by all processes together, once (also when the
    # script has left it itself)
    (leave,) = ns["at_exit"]
    leave()
    leave()
    assert dist.calls[1:] == ["barrier", "destroy"]


def test_index_helper_gives_the_launchers_npu_before_the_setup_runs():
    from transplant.distributed.templates import INDEX_HELPER

    for env, expected in (
        ({}, 2),
        ({"RANK_ID": "1", "RANK_SIZE": "4", "DEVICE_ID": "5"}, 5),
        ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}, 1),
    ):
        namespace = {"os": types.SimpleNamespace(environ=env)}
        exec(compile(HELPERS + INDEX_HELPER, "helpers", "exec"), namespace)
        assert namespace["npu_index"](2) == expected, env


def test_setup_from_torchrun_variables():
    _ns, dist, devices, environ = helpers_with(
        {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "MASTER_ADDR": "10.0.0.2", "MASTER_PORT": "1234"}
    )
    assert dist.calls == [{"backend": "hccl", "rank": 3, "world_size": 8}]
    assert devices == [3]
    assert environ["MASTER_ADDR"] == "10.0.0.2" and environ["MASTER_PORT"] == "1234"


# --------------------------------------------------------------------------- conversion details


def convert(code: str, target: str = "model") -> str:
    return convert_source(textwrap.dedent(code).encode(), target).decode()


LOOP = """
for epoch in range(3):
    for x in {loader}:
        model(x)
"""


def test_dataloader_spellings_are_recognised():
    for imports, call in (
        ("from torch.utils.data import DataLoader as DL", "DL"),
        ("import torch.utils.data", "torch.utils.data.DataLoader"),
        ("import torch.utils.data as tud", "tud.DataLoader"),
        ("from torch.utils import data", "data.DataLoader"),
    ):
        out = convert(
            f"import torch\n{imports}\nmodel = torch.nn.Linear(2, 2)\n"
            f"loader = {call}(ds, batch_size=2, shuffle=True)\n" + LOOP.format(loader="loader")
        )
        assert f"loader = {call}(ds, batch_size=2, sampler=sampler)" in out, imports
        assert "DistributedSampler(\n    ds, num_replicas=npu_world_size(), rank=npu_rank(), shuffle=True)" in out
        assert "    sampler.set_epoch(epoch)\n" in out


FOLLOW = """\
import torch
import torch_npu


class Trainer:
    def __init__(self, model, gpu_id):
        self.gpu_id = gpu_id
        self.model = model.npu(gpu_id)

    def step(self, x):
        return self.model(x.to(self.gpu_id))


def main(device{default}):
    model = torch.nn.Linear(2, 2)
    trainer = Trainer({spelling})
    trainer.step(torch.ones(2))


if __name__ == "__main__":
{main_block}
"""


@pytest.mark.parametrize(
    "spelling", ["model, device", "model, gpu_id=device", "gpu_id=device, model=model"], ids=["pos", "kw", "kw2"]
)
@pytest.mark.parametrize(
    "default, main_block",
    [("", "    device = 0\n    main(device)"), ("", "    main(0)"), ("=0", "    main()"), ("", "    main(device=1)")],
    ids=["variable", "literal", "default", "keyword"],
)
def test_an_index_is_followed_through_calls_and_constructors(spelling, default, main_block):
    out = convert(FOLLOW.format(spelling=spelling, default=default, main_block=main_block))
    assert "self.model = model.npu(npu_index(gpu_id))\n" in out
    assert "return self.model(x.to(npu_index(self.gpu_id)))\n" in out
    assert "def npu_index(index):" in out


@pytest.mark.parametrize(
    "main_block",
    [
        "    main(args.gpu)",  # computed: the script's own choice
        "    main(0)\n    main(args.gpu)",  # one call of two gives a computed index
        "    device = 0\n    device += 1\n    main(device)",  # not a plain assignment
        "    pool.map(main, [0, 1])",  # called where the file cannot see
        "    main(*[0])",
    ],
    ids=["computed", "mixed", "augmented", "callback", "star"],
)
def test_an_index_the_file_cannot_follow_stays(main_block):
    out = convert(FOLLOW.format(spelling="model, device", default="", main_block=main_block))
    assert "self.model = model.npu(gpu_id)\n" in out
    assert "return self.model(x.to(self.gpu_id))\n" in out


def test_an_attribute_set_from_outside_its_class_is_not_followed():
    src = FOLLOW.format(spelling="model, 0", default="", main_block="    main(0)")
    src = src.replace("    trainer.step(", "    trainer.gpu_id = pick()\n    trainer.step(")
    out = convert(src)
    assert "self.model = model.npu(npu_index(gpu_id))\n" in out  # the parameter: only 0
    assert "return self.model(x.to(self.gpu_id))\n" in out  # the attribute: also what pick() gives


def test_a_fixed_index_given_where_the_file_cannot_follow_is_reported():
    src = textwrap.dedent("""\
        import torch
        import torch_npu
        from helpers import build_trainer, report


        def main(device, epochs):
            model = torch.nn.Linear(2, 2).npu(device)
            trainer = build_trainer(model, device)
            trainer.fit(epochs, local_rank=epochs)
            print(device)
            report(epochs)


        if __name__ == "__main__":
            main(0, 3)
        """)
    outcome = distributed.convert_distributed(parse(src.encode()), "model")
    out = outcome.module.code
    assert "model = torch.nn.Linear(2, 2).npu(npu_index(device))\n" in out
    assert "trainer = build_trainer(model, device)\n" in out  # kept, and reported
    found = [r for r in outcome.records if r.level == "warning"]
    assert [(r.line, r.message.split(",")[0]) for r in found] == [
        (
            out.splitlines().index("    trainer = build_trainer(model, device)") + 1,
            "fixed device index device (0) goes to build_trainer",
        ),
        (
            out.splitlines().index("    trainer.fit(epochs, local_rank=epochs)") + 1,
            "fixed device index epochs (3) goes to trainer.fit",
        ),
    ]


def test_a_print_after_a_rank0_save_is_rank0_only():
    out = convert("""\
        import torch
        model = torch.nn.Linear(2, 2)
        for epoch in range(2):
            model(torch.ones(2))
        torch.save(model.state_dict(), "m.pt")
        print("saved m.pt")
        print("done")
        x = 1
        print("after an assignment: every rank")
        """)
    assert out.count("if npu_rank() == 0:\n") == 3
    assert 'if npu_rank() == 0:\n    print("saved m.pt")\nif npu_rank() == 0:\n    print("done")\n' in out
    assert '\nprint("after an assignment: every rank")\n' in out


def test_look_alike_dataloaders_and_existing_samplers_are_left_alone():
    src = textwrap.dedent("""\
        import torch
        import mylib
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(2, 2)
        a = mylib.DataLoader(ds, shuffle=True)
        b = DataLoader(ds, sampler=my_sampler)
        c = DataLoader(ds, batch_sampler=batches)
        """)
    out = convert(src)
    assert out.count("DistributedSampler") == 0
    assert "a = mylib.DataLoader(ds, shuffle=True)\n" in out
    assert "b = DataLoader(ds, sampler=my_sampler)\n" in out and "c = DataLoader(ds, batch_sampler=batches)\n" in out


def test_shuffle_never_stays_beside_the_sampler():
    out = convert("""\
        import torch
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(2, 2)
        plain = DataLoader(ds)
        off = DataLoader(ds, 4, False)
        on = DataLoader(ds, shuffle=True, sampler=None)
        """)
    assert "plain = DataLoader(ds, sampler=plain_sampler)" in out
    assert "off = DataLoader(ds, 4, sampler=off_sampler)" in out
    assert "on = DataLoader(ds, sampler=on_sampler)" in out
    assert out.count("rank=npu_rank(), shuffle=False)") == 2 and out.count("rank=npu_rank(), shuffle=True)") == 1
    loaders = [line for line in out.splitlines() if "DataLoader(" in line]
    assert len(loaders) == 3 and not any("shuffle" in line for line in loaders)


def test_existing_ddp_is_not_wrapped_again():
    src = """\
        import torch
        model = torch.nn.Linear(2, 2)
        model = torch.nn.parallel.DistributedDataParallel(model)
        """
    assert convert(src).count("DistributedDataParallel(model") == 1


def test_epoch_loop_in_a_function_with_the_loader_as_parameter():
    out = convert("""\
        import torch
        from torch.utils.data import DataLoader

        def train_epoch(model, batches):
            for x in batches:
                model(x)

        def fit(model, loader, epochs):
            for epoch in range(epochs):
                train_epoch(model, loader)

        def main():
            model = torch.nn.Linear(2, 2).npu()
            fit(model, DataLoader(ds, shuffle=True), 3)

        if __name__ == "__main__":
            main()
        """)
    assert "        loader.sampler.set_epoch(epoch)\n        train_epoch(model, loader)" in out
    assert "DataLoader(ds, sampler=sampler)" in out
    assert "def main():\n    init_distributed_npu()\n" in out


def test_setup_goes_into_the_main_block_when_it_calls_no_single_function():
    out = convert("""\
        import torch

        def build():
            return torch.nn.Linear(2, 2)

        if __name__ == "__main__":
            model = build()
            torch.save(model, "m.pt")
        """)
    assert 'if __name__ == "__main__":\n    init_distributed_npu()\n    model = build()\n' in out
    assert '    if npu_rank() == 0:\n        torch.save(npu_unwrap(model), "m.pt")\n' in out


def test_names_are_bound_by_the_engines_table():
    """Distributed mode reads imports through the engine's binding table (one table for the whole
    tool). Where the file binds one name two ways, it resolves it as the engine did when it
    converted the same file: a plain ``import a.b`` does not rebind a name bound before, and the
    ``else`` branch of a ``try`` is read before its ``except`` handlers."""
    from transplant.distributed.analysis import Analysis
    from transplant.engine import analyse_imports, parse
    from transplant.rules import RuleSet

    shadowed = textwrap.dedent("""\
        from mylib import torch
        import torch.utils.data
        model = Net()
        loader = torch.utils.data.DataLoader(ds, shuffle=True)
        """)
    branches = textwrap.dedent("""\
        import torch
        try:
            import fastloader
        except ImportError:
            from torch.utils.data import DataLoader
        else:
            from fastloader import DataLoader
        model = torch.nn.Linear(2, 2)
        loader = DataLoader(ds, shuffle=True)
        """)
    for src in (shadowed, branches):
        module = parse(src.encode())
        assert Analysis(module, "model").imports == analyse_imports(module, RuleSet()).original
    # torch stays mylib's torch: its "DataLoader" is a look-alike
    assert "DistributedSampler" not in convert(shadowed)
    # DataLoader is torch's (the handler's binding), as the engine reads it
    assert "loader = DataLoader(ds, sampler=sampler)" in convert(branches)


# --------------------------------------------------------------------------- errors


@pytest.fixture()
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        textwrap.dedent("""\
        import torch
        from torch import nn

        class Net(nn.Module):
            pass

        def main():
            net = Net().cuda()
            head = nn.Linear(3, 3)
            scaler = torch.cuda.amp.GradScaler()
            x = torch.randn(3).cuda()
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
            optimizer.zero_grad()
            optimizer.load_state_dict(state)
            scheduler = build_scheduler(optimizer)
            scheduler.state_dict()
            ema = make_ema(net)
            ema.eval()
        """)
    )
    (root / "notes.txt").write_text("hello\n")
    (root / "pkg").mkdir()
    return root


def check_usage_error(capsys, out: Path, args: list, *needles: str) -> str:
    assert run_cli(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("transplant: error: distributed"), err
    for needle in needles:
        assert needle in err, err
    assert not out.exists() or not any(out.iterdir())
    return err


def test_missing_entry_file(project, tmp_path, capsys):
    out = tmp_path / "out"
    check_usage_error(
        capsys, out, ["-i", project, "-o", out, "distributed", "-m", project / "nope.py"], "nope.py", "does not exist"
    )


def test_entry_file_outside_the_input(project, tmp_path, capsys):
    outside = tmp_path / "other.py"
    outside.write_text("model = 1\n")
    out = tmp_path / "out"
    check_usage_error(capsys, out, ["-i", project, "-o", out, "distributed", "-m", outside], "not inside")


def test_entry_file_that_is_not_python(project, tmp_path, capsys):
    out = tmp_path / "out"
    check_usage_error(
        capsys, out, ["-i", project, "-o", out, "distributed", "-m", project / "notes.txt"], "not a Python (.py) file"
    )
    check_usage_error(
        capsys, out, ["-i", project, "-o", out, "distributed", "-m", project / "pkg"], "not a Python (.py) file"
    )


def test_entry_file_that_does_not_parse(project, tmp_path, capsys):
    (project / "broken.py").write_text("def f(:\n")
    out = tmp_path / "out"
    check_usage_error(
        capsys, out, ["-i", project, "-o", out, "distributed", "-m", project / "broken.py"], "broken.py", "syntax error"
    )


def test_missing_target_lists_candidates(project, tmp_path, capsys):
    out = tmp_path / "out"
    err = check_usage_error(
        capsys,
        out,
        ["-i", project, "-o", out, "distributed", "-m", project / "train.py"],
        "'model' is never assigned in train.py",
        "candidate model variables: net, head, ema",
        "-t",
    )
    # optimizers, schedulers and scalers have state_dict() and zero_grad() too: they are no candidates
    assert "scaler" not in err and "optimizer" not in err and "scheduler" not in err and " x" not in err


def test_missing_target_without_candidates(project, tmp_path, capsys):
    (project / "train.py").write_text("print('hello')\n")
    out = tmp_path / "out"
    check_usage_error(
        capsys,
        out,
        ["-i", project, "-o", out, "distributed", "-m", project / "train.py", "-t", "net"],
        "'net' is never assigned",
        "none found",
    )


def test_entry_relative_to_the_input_folder_and_chosen_target(project, tmp_path):
    out = tmp_path / "out"
    assert run_cli(["-i", project, "-o", out, "distributed", "-m", "train.py", "-t", "net"]) == 0
    text = (out / "proj_msft_multi" / "train.py").read_text()
    assert "    net = Net().npu()\n    if torch.distributed.is_initialized():\n        net = torch.nn.parallel" in text
    assert (out / "proj_msft_multi" / LAUNCH_SCRIPT).exists()


def test_entry_without_engine_changes_gets_a_change_record(tmp_path):
    root = tmp_path / "cpu"
    root.mkdir()
    (root / "train.py").write_text("import torch\nmodel = torch.nn.Linear(1, 1)\n")
    out = tmp_path / "out"
    assert run_cli(["-i", root, "-o", out, "distributed", "-m", root / "train.py"]) == 0
    with open(out / "cpu_msft_multi" / "change_list.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["File"] == "train.py"]
    assert {r["Code"] for r in rows} >= {"TP301", "TP304"}
    text = (out / "cpu_msft_multi" / "train.py").read_text()
    assert text.startswith("import atexit\nimport os\nimport torch\nimport torch_npu\n")


def test_project_launch_script_of_its_own_is_kept(project, tmp_path):
    (project / LAUNCH_SCRIPT).write_text("echo mine\n")
    out = tmp_path / "out"
    assert run_cli(["-i", project, "-o", out, "distributed", "-m", project / "train.py", "-t", "net"]) == 0
    result = out / "proj_msft_multi"
    assert (result / LAUNCH_SCRIPT).read_text() == "echo mine\n"
    assert '"${python[@]}" train.py' in (result / f"transplant_{LAUNCH_SCRIPT}").read_text()


def test_prepare_rejects_entry_through_a_symlink(project, tmp_path):
    link = project / "link.py"
    link.symlink_to(project / "train.py")
    config = types.SimpleNamespace(input=project, distributed_main=link, distributed_target="net")
    with pytest.raises(distributed.UsageError, match="symbolic link"):
        distributed.prepare_distributed(config)


# --------------------------------------------------------------------------- on real PyTorch

NPU_SHIM = FIXTURES / "npu_shim"  # torch_npu for a machine without NPUs: the CPU and gloo stand in
HAS_TORCH = importlib.util.find_spec("torch") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# case -> (arguments for the training script, the file rank 0 saves, whether rank 0 prints per epoch)
TRAINING = {
    "single": (["--epochs", "2"], "net.pt", True),
    "trainer": ([], "regressor.pt", True),
    "branches": (["--epochs", "2", "--wide"], "model.pt", False),
    "dataparallel": (["--epochs", "2"], "model.pt", True),
    "example": (["--epochs", "1"], "model.pt", True),
    "tutorial": (["2", "1"], "snapshot.pt", True),
}  # README's example project, with amp
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mnist_cuda"


@pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch: .ci/run installs the CPU wheel")
@pytest.mark.parametrize("case", sorted(TRAINING))
def test_converted_project_trains_in_two_processes(case, results, tmp_path):
    import torch

    args, saved, prints = TRAINING[case]
    root = tmp_path / case
    if case == "example":
        run_cli(["-i", EXAMPLE, "-o", tmp_path / "converted", "distributed", "-m", EXAMPLE / "train.py"])
        shutil.copytree(tmp_path / "converted" / "mnist_cuda_msft_multi", root, symlinks=True)
    else:
        shutil.copytree(results[case], root, symlinks=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"  # the launch script runs "python3 <entry>": this Python (a link would lose its venv)
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python3.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PYTHONPATH": str(NPU_SHIM),
        "NPUS": "3,5",
        "MASTER_PORT": str(_free_port()),
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        ["bash", str(root / LAUNCH_SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300
    )
    logs = {p.name: p.read_text() for p in sorted((root / "logs").iterdir())}
    assert proc.returncode == 0, (proc.stdout, proc.stderr, logs)
    assert sorted(logs) == ["rank_0.log", "rank_1.log"]
    # the processes left the group with the handler the conversion registers (an exception in an atexit
    # handler is printed but leaves the exit status 0)
    assert not any("Exception ignored" in text or "Traceback" in text for text in logs.values()), logs
    # both processes joined one hccl group, each on the NPU the launch script gave it
    assert "npu shim: process group hccl: rank 0 of 2, NPU 3" in logs["rank_0.log"]
    assert "npu shim: process group hccl: rank 1 of 2, NPU 5" in logs["rank_1.log"]
    # rank 0 alone reports and saves, and saves the model without its DistributedDataParallel wrapper
    assert ("epoch" in logs["rank_0.log"]) == prints and "epoch" not in logs["rank_1.log"]
    state = torch.load(root / saved)
    assert state and not any(key.startswith("module.") for key in state)


def _training_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(NPU_SHIM), "OMP_NUM_THREADS": "1", "PYTHON": sys.executable, **extra}


def _machines(commands: list[tuple[list[str], dict[str, str]]], cwd: Path) -> list[subprocess.CompletedProcess]:
    """Run one command per simulated machine, all at once (they join one process group)."""
    procs = [
        subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for cmd, env in commands
    ]
    done = []
    for cmd, proc in zip(commands, procs):
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            raise
        done.append(subprocess.CompletedProcess(cmd[0], proc.returncode, out, err))
    return done


_SHARD = re.compile(r"npu shim: rank (\d+) of \d+ samples \[([\d, ]*)\]")


def _first_shards(text: str) -> dict[int, list[int]]:
    """rank -> the sample indices its DistributedSampler gave first (the npu shim prints them).

    The report is found wherever it is, not only at the start of a line: under torchrun the ranks
    share one stdout and a rank's own print (text and newline written apart) can precede it."""
    shards: dict[int, list[int]] = {}
    for match in _SHARD.finditer(text):
        shards.setdefault(int(match[1]), [int(i) for i in match[2].split(", ") if i])
    return shards


def test_first_shards_read_from_lines_of_ranks_that_ran_together():
    text = (
        "npu shim: rank 1 of 2 samples [5, 2]\n"
        "epoch 0 loss 0.7npu shim: rank 0 of 2 samples [4, 0]\n\n"  # rank 0 wrote between another's text and newline
        "npu shim: rank 0 of 2 samples [1, 3]\n"
        "npu shim: rank 2 of 3 samples []\n"
    )
    assert _first_shards(text) == {0: [4, 0], 1: [5, 2], 2: []}


def _check_one_group_of_four(shards: dict[int, list[int]], root: Path) -> None:
    import torch

    assert sorted(shards) == [0, 1, 2, 3]
    every = [i for shard in shards.values() for i in shard]
    assert sorted(every) == list(range(64)), shards  # each rank its own quarter of the data
    state = torch.load(root / "model.pt")
    assert state and not any(key.startswith("module.") for key in state)


@pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch: .ci/run installs the CPU wheel")
def test_two_machines_with_the_launch_script(results, tmp_path):
    """Two launches of run_distributed_npu.sh as two machines of two NPUs: one group of 4."""
    root = tmp_path / "job"
    shutil.copytree(results["dataparallel"], root, symlinks=True)
    port = str(_free_port())
    runs = _machines(
        [
            (
                ["bash", str(root / LAUNCH_SCRIPT), "--epochs", "2"],
                _training_env(NNODES="2", NODE_RANK=str(node), NPUS="0,1", MASTER_ADDR="127.0.0.1", MASTER_PORT=port),
            )
            for node in (0, 1)
        ],
        root,
    )
    logs = {p.name: p.read_text() for p in sorted((root / "logs").iterdir())}
    assert all(run.returncode == 0 for run in runs), (runs, logs)
    assert sorted(logs) == ["rank_0.log", "rank_1.log", "rank_2.log", "rank_3.log"]
    for rank in range(4):  # global ranks, each on its machine's NPU (LOCAL_RANK)
        assert f"npu shim: process group hccl: rank {rank} of 4, NPU {rank % 2}" in logs[f"rank_{rank}.log"]
    assert "epoch 1 loss" in logs["rank_0.log"]
    assert not any("epoch" in logs[f"rank_{rank}.log"] for rank in (1, 2, 3))  # global rank 0 alone prints
    _check_one_group_of_four({r: s for name, text in logs.items() for r, s in _first_shards(text).items()}, root)


@pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch: .ci/run installs the CPU wheel")
def test_two_machines_with_torchrun(results, tmp_path):
    """The converted script runs unchanged under torchrun --nnodes 2 --nproc-per-node 2."""
    root = tmp_path / "job"
    shutil.copytree(results["dataparallel"], root, symlinks=True)
    port = str(_free_port())
    runs = _machines(
        [
            (
                [
                    sys.executable,
                    "-m",
                    "torch.distributed.run",
                    "--nnodes",
                    "2",
                    "--node-rank",
                    str(node),
                    "--nproc-per-node",
                    "2",
                    "--master-addr",
                    "127.0.0.1",
                    "--master-port",
                    port,
                    "train.py",
                    "--epochs",
                    "2",
                ],
                _training_env(),
            )
            for node in (0, 1)
        ],
        root,
    )
    assert all(run.returncode == 0 for run in runs), runs
    text = runs[0].stdout + runs[1].stdout
    for rank in range(4):
        assert f"npu shim: process group hccl: rank {rank} of 4, NPU {rank % 2}" in text
    assert text.count("epoch 1 loss") == 1
    _check_one_group_of_four(_first_shards(text), root)


@pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch: .ci/run installs the CPU wheel")
def test_fixed_indices_left_as_they_were_would_fail(results, tmp_path):
    """The stand-in fails a process that moves its data to another NPU: the rewrite of the fixed
    indices is what lets the DataParallel project train."""
    root = tmp_path / "job"
    shutil.copytree(results["dataparallel"], root, symlinks=True)
    entry = root / "train.py"
    entry.write_text(entry.read_text().replace('f"npu:{npu_index(0)}"', '"npu:0"'))
    proc = subprocess.run(
        ["bash", str(root / LAUNCH_SCRIPT), "--epochs", "1"],
        capture_output=True,
        text=True,
        env=_training_env(NPUS="3,5", MASTER_PORT=str(_free_port())),
        timeout=300,
    )
    assert proc.returncode == 1
    assert "npu shim: rank 1 uses NPU 5 but moves data to NPU 0" in (root / "logs" / "rank_1.log").read_text()


@pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch: .ci/run installs the CPU wheel")
def test_index_followed_through_parameters_is_what_puts_each_rank_on_its_npu(results, tmp_path):
    """The tutorial's index, left as it was in the Trainer, puts rank 1's model on NPU 0 (the stand-in
    fails that process, as a real NPU would); followed, each rank moves model and data to its own NPU."""
    root = tmp_path / "job"
    shutil.copytree(results["tutorial"], root, symlinks=True)
    entry = root / "main.py"
    text = entry.read_text()
    assert "model.to(npu_index(gpu_id))" in text and text.count("npu_index(self.gpu_id)") == 2
    entry.write_text(text.replace("npu_index(gpu_id)", "gpu_id"))
    proc = subprocess.run(
        ["bash", str(root / LAUNCH_SCRIPT), "1", "1"],
        capture_output=True,
        text=True,
        env=_training_env(NPUS="3,5", MASTER_PORT=str(_free_port())),
        timeout=300,
    )
    assert proc.returncode == 1
    assert "npu shim: rank 1 uses NPU 5 but moves data to NPU 0" in (root / "logs" / "rank_1.log").read_text()


@pytest.mark.skipif(not HAS_TORCH, reason="needs PyTorch: .ci/run installs the CPU wheel")
def test_already_distributed_script_trains_under_torchrun(results, tmp_path):
    root = tmp_path / "job"
    shutil.copytree(results["already"], root, symlinks=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(_free_port()),
            "train.py",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env=_training_env(),
        timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "npu shim: process group hccl: rank 1 of 2" in proc.stdout  # its own group, on hccl
    assert proc.stdout.count("epoch 1") == 1
