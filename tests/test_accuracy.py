"""Accuracy mode (issue 22): two instrumented trees that differ only by the conversion, and
`transplant compare` over their msprobe dumps.

The golden files in tests/fixtures/accuracy/expected are the trees written for the fixture project
(a small classifier with dropout, random data and random initial weights). The end-to-end test
runs the original on the CPU and the converted copy under `transplant emulate --strict`, then
compares their dumps; it needs PyTorch and mindstudio-probe (.ci/run installs both).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from goldens import check_bytes
from transplant.accuracy import compare, dumps, runs
from transplant.accuracy.instrument import instrument
from transplant.cli import main
from transplant.engine import convert

PROJECT = FIXTURES / "accuracy" / "project"
EXPECTED = FIXTURES / "accuracy" / "expected"
START = "accuracy_debugger.start("
CLOSE = ["accuracy_debugger.stop()", "accuracy_debugger.step()"]
ENV_LINE = 'import os\nos.environ.setdefault("TORCH_NPU_FALLBACK_CPU_DISABLE", "1")\n'


def accuracy(
    tmp_path: Path, *extra: str, project: Path = PROJECT, main_file: str = "train.py", quiet: bool = True
) -> tuple[int, Path]:
    out = tmp_path / "out"
    code = main(
        ["-q"] * quiet
        + ["-j", "1", "-i", str(project), "-o", str(out), "accuracy", "-m", str(project / main_file), *extra]
    )
    return code, out


def instrumented(source: str, target: str = "model"):
    return instrument(textwrap.dedent(source).encode(), target)


# ---- the two trees


def test_the_trees_match_the_golden_files(tmp_path):
    code, out = accuracy(tmp_path)
    assert code == 0
    bench, msft = out / "project_accuracy_bench", out / "project_msft_accuracy"
    assert sorted(p.name for p in bench.iterdir()) == ["accuracy_config.json", "requirements.txt", "train.py"]
    for name in ("train.py", "accuracy_config.json", "requirements.txt"):
        check_bytes(EXPECTED / "bench" / name, (bench / name).read_bytes())
        check_bytes(EXPECTED / "msft" / name, (msft / name).read_bytes())
    assert (msft / "change_list.csv").is_file()  # the ordinary reports of a conversion
    # the input is untouched
    assert b"msprobe" not in (PROJECT / "train.py").read_bytes()


def test_the_trees_differ_by_the_conversion_alone(rules):
    """The converted tree's entry file is the conversion of the bench tree's, and the lines the
    conversion changes are the ones it changes in the uninstrumented original."""
    bench = (EXPECTED / "bench" / "train.py").read_bytes()
    msft = (EXPECTED / "msft" / "train.py").read_bytes()
    assert convert(bench, rules).new == msft
    original = (PROJECT / "train.py").read_bytes()

    def changes(before: bytes, after: bytes) -> list[str]:
        return [
            line
            for line in difflib.ndiff(before.decode().splitlines(), after.decode().splitlines())
            if line[:1] in "+-"
        ]

    assert changes(bench, msft) == changes(original, convert(original, rules).new)
    assert changes(original, bench) == changes(
        convert(original, rules).new, msft
    )  # the instrumentation is the same in both


def test_the_instrumentation_does_not_read_as_a_test_for_npu():
    """The converted tree is made from the instrumented copy: code that read as the project's own
    test for NPU would keep the project's CUDA flags as CUDA tests (engine/npu_aware.py)."""
    from transplant.engine.npu_aware import NPU_TEST_BYTES

    done = instrument((FIXTURES / "accuracy" / "ranks" / "train.py").read_bytes())
    assert b"accuracy_where" in done.source and NPU_TEST_BYTES.search(done.source) is None


def test_the_instrumentation_is_where_the_issue_says():
    text = (EXPECTED / "bench" / "train.py").read_text()
    lines = text.splitlines()
    # determinism and the debugger right after the imports, before any code runs
    seed = lines.index("seed_all(seed=1234, mode=True, rm_dropout=True)")
    assert lines.index("from torch.utils.data import DataLoader, TensorDataset") < seed
    assert seed < lines.index("class Classifier(nn.Module):")
    assert '"accuracy_config.json"' in text and '"accuracy_dump"' in text
    # start(model) first and stop()/step() last in the batch loop, not the epoch loop
    loop = lines.index("    for x, y in loader:")
    assert lines[loop + 1].strip().startswith(START + "model)")
    assert [line.strip() for line in lines[loop + 8 : loop + 10]] == CLOSE
    assert text.count(START) == 1


def test_config_holds_the_options(tmp_path):
    code, out = accuracy(tmp_path, "--steps", "3,1", "--level", "api", "--data", "tensors")
    assert code == 0
    for tree in ("project_accuracy_bench", "project_msft_accuracy"):
        config = json.loads((out / tree / "accuracy_config.json").read_text())
        assert config["task"] == "tensor" and config["level"] == "L1" and config["step"] == [1, 3]
        assert config["rank"] == [] and "tensor" in config and "statistics" not in config
    code, out = accuracy(tmp_path / "all", "--steps", "all", "--level", "module")
    config = json.loads((out / "project_accuracy_bench" / "accuracy_config.json").read_text())
    assert code == 0 and config["step"] == [] and config["level"] == "L0" and config["task"] == "statistics"
    assert 'TORCH_NPU_USE_COMPATIBLE_IMPL", "1")' not in (out / "project_msft_accuracy" / "train.py").read_text()


def test_overflow_task_and_compatible_implementations(tmp_path, capsys):
    code, out = accuracy(tmp_path, "--task", "overflow", "--compatible-impl", quiet=False)
    assert code == 0
    config = json.loads((out / "project_msft_accuracy" / "accuracy_config.json").read_text())
    assert (config["task"], config["level"], config["step"]) == ("statistics", "L1", [0, 1])
    assert "transplant compare --task overflow --target project_msft_accuracy/accuracy_dump" in capsys.readouterr().out
    for tree in ("project_accuracy_bench", "project_msft_accuracy"):
        text = (out / tree / "train.py").read_text()
        env = ENV_LINE + 'os.environ.setdefault("TORCH_NPU_USE_COMPATIBLE_IMPL", "1")\n'
        assert env in text and text.index(env) < text.index("import torch")
    code, out = accuracy(tmp_path / "module", "--task", "overflow", "--level", "module")
    config = json.loads((out / "project_msft_accuracy" / "accuracy_config.json").read_text())
    assert code == 0 and config["level"] == "L0"  # --level as given


@pytest.mark.parametrize(
    "args, message",
    [
        (["--steps", "x"], "invalid steps"),
        (["--steps", "-1"], "invalid steps"),
        (["--level", "kernel"], "invalid choice"),
        (["--task", "overflow", "--data", "tensors"], "--task overflow reads statistics"),
    ],
)
def test_bad_options_are_one_line(tmp_path, capsys, args, message):
    code, out = accuracy(tmp_path, *args)
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_existing_result_needs_force(tmp_path, capsys):
    assert accuracy(tmp_path)[0] == 0
    code, out = accuracy(tmp_path)
    assert code == 2 and "already exists" in capsys.readouterr().err
    (out / "project_accuracy_bench" / "stale.txt").write_text("old")
    assert accuracy(tmp_path, project=PROJECT)[0] == 2
    code = main(
        ["-q", "-j", "1", "--force", "-i", str(PROJECT), "-o", str(out), "accuracy", "-m", str(PROJECT / "train.py")]
    )
    assert code == 0 and not (out / "project_accuracy_bench" / "stale.txt").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_missing_entry_file_is_a_usage_error(tmp_path, capsys):
    code, out = accuracy(tmp_path, main_file="nope.py")
    assert code == 2 and "accuracy: entry file" in capsys.readouterr().err and not out.exists()


def test_a_project_file_of_the_same_name_is_kept(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    (project / "accuracy_config.json").write_text("{}\n")
    code, out = accuracy(tmp_path, project=project)
    bench = out / "proj_accuracy_bench"
    assert code == 0 and (bench / "accuracy_config.json").read_text() == "{}\n"
    assert json.loads((bench / "transplant_accuracy_config.json").read_text())["level"] == "mix"
    assert '"transplant_accuracy_config.json"' in (bench / "train.py").read_text()


def test_no_training_loop_writes_comments_and_warns(tmp_path, capsys):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "infer.py").write_text(
        "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nprint(model(torch.ones(2).cuda()))\n"
    )
    code, out = accuracy(tmp_path, project=project, main_file="infer.py", quiet=False)
    assert code == 0
    captured = capsys.readouterr()
    assert "warning: accuracy: infer.py: transplant found no training loop" in captured.err
    assert "accuracy: the original project, instrumented: " in captured.out
    for tree in ("proj_accuracy_bench", "proj_msft_accuracy"):
        text = (out / tree / "infer.py").read_text()
        assert "#     accuracy_debugger.start(model)" in text and "\naccuracy_debugger.start" not in text
        # the comments sit above the model's assignment
        assert text.index("#     accuracy_debugger.start(model)") < text.index("model = torch.nn.Linear")


def test_the_converter_imports_neither_torch_nor_msprobe(tmp_path):
    code = f"""
import sys
from transplant.cli import main
assert main(["-q", "-j", "1", "-i", {str(PROJECT)!r}, "-o", {str(tmp_path / "o")!r}, "accuracy", "-m",
             {str(PROJECT / "train.py")!r}]) == 0
assert main(["compare", "--golden", "nope", "--target", "nope"]) == 2
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "msprobe", "numpy"))
assert not bad, bad
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


# ---- where the calls go


def test_loop_in_the_main_function():
    r = instrumented("""\
        import torch
        def main():
            model = torch.nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(3):
                for batch in range(4):
                    loss = model(torch.ones(2)).sum()
                    loss.backward()
                    opt.step()
        main()
        """)
    text = r.source.decode()
    assert "        for batch in range(4):\n            accuracy_debugger.start(model)" in text
    assert (
        "            opt.step()\n            accuracy_debugger.stop()\n            accuracy_debugger.step()\nmain()\n"
        in text
    )
    assert text.count(START) == 1 and r.loops == [6] and not r.warnings
    assert "import os\n" in text  # the set-up needs it and the file had none


def test_trainer_class_with_self_model_and_a_while_loop():
    r = instrumented("""\
        import os
        import torch as T
        class Trainer:
            def __init__(self):
                self.model = T.nn.Linear(2, 2)
            def fit(self, batches):
                while batches:
                    out = self.model(batches.pop())
                    T.autograd.backward(out.sum())
        """)
    text = r.source.decode()
    assert "        while batches:\n            accuracy_debugger.start(self.model)" in text
    # the environment block imports os itself, before the file's imports (torch_npu reads it on import)
    assert text.count("import os\n") == 2 and text.index(ENV_LINE) < text.index("import torch") and not r.warnings


def test_step_in_a_called_function_and_another_model_name():
    r = instrumented(
        """\
        import torch
        from mymodels import ResNet
        def train_step(net, batch, opt):
            net(batch).sum().backward()
            opt.step()
        net = ResNet()
        for batch in range(5):
            train_step(net, batch, opt)
        """,
        target="net",
    )
    text = r.source.decode()
    assert "for batch in range(5):\n    accuracy_debugger.start(net)" in text
    assert "    train_step(net, batch, opt)\n    accuracy_debugger.stop()\n" in text


def test_model_found_among_candidates_when_t_names_nothing_visible():
    r = instrumented("""\
        import torch
        def train(net, loader, opt):
            net.train()
            for x in loader:
                net(x).sum().backward()
        def main():
            model = torch.nn.Linear(2, 2)
            train(model, [], None)
        """)
    assert "        accuracy_debugger.start(net)" in r.source.decode()


def test_no_visible_model_writes_comments_in_the_loop():
    r = instrumented("""\
        import torch
        def fit(loader, step):
            for x in loader:
                step(x).backward()
        """)
    text = r.source.decode()
    assert "    for x in loader:\n        # accuracy mode: no model variable is visible here" in text
    assert START not in text.replace("#     " + START, "")
    assert r.warnings and "no model variable" in r.warnings[0]


def test_loops_without_backward_are_not_instrumented():
    r = instrumented("""\
        import torch
        model = torch.nn.Linear(2, 2)
        for x in range(3):
            print(model(torch.ones(2)))
            x.backward  # an attribute, not a call
        """)
    assert r.loops == [] and "no training loop" in r.warnings[0]


def test_early_exits_are_reported():
    r = instrumented("""\
        import torch
        model = torch.nn.Linear(2, 2)
        for x in range(3):
            if x == 1:
                continue
            for y in range(2):
                break
            model(torch.ones(2)).sum().backward()
        """)
    assert r.loops == [3]
    assert len(r.warnings) == 1 and r.warnings[0].startswith("line 5: a step that ends at this continue")


def test_instrumenting_twice_changes_nothing():
    first = instrument((PROJECT / "train.py").read_bytes())
    again = instrument(first.source)
    assert again.already and again.source == first.source


def test_a_name_taken_by_the_user_is_not_reused():
    r = instrumented("""\
        import torch
        accuracy_debugger = None
        model = torch.nn.Linear(2, 2)
        for x in range(3):
            model(torch.ones(2)).sum().backward()
        """)
    text = r.source.decode()
    assert "accuracy_debugger2 = PrecisionDebugger(" in text and "accuracy_debugger2.start(model)" in text
    assert "accuracy_debugger = None" in text


def test_docstring_and_future_imports_stay_first():
    r = instrumented('''\
        """Doc."""
        from __future__ import annotations
        import torch
        model = torch.nn.Linear(2, 2)
        ''')
    text = r.source.decode()
    assert text.startswith('"""Doc."""\nfrom __future__ import annotations\n# accuracy mode (transplant): on the NPU')
    assert f"{ENV_LINE}import torch\n\n# accuracy mode (transplant): dumps" in text
    compile(text, "train.py", "exec")


# ---- the dumps


def write_unit(folder: Path, data: dict, stack: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "dump.json").write_text(
        json.dumps({"task": "statistics", "level": "mix", "framework": "pytorch", "data": data})
    )
    (folder / "stack.json").write_text(json.dumps(stack or {}))
    (folder / "construct.json").write_text("{}")
    return folder


def test_layout_pairs_steps_and_ranks(tmp_path):
    for side in ("g", "t"):
        for step in ("step0", "step1", "step10"):
            for rank in ("rank0", "rank1"):
                write_unit(tmp_path / side / step / rank, {})
    write_unit(tmp_path / "g" / "step2" / "rank0", {})
    golden, target = dumps.read_layout(tmp_path / "g"), dumps.read_layout(tmp_path / "t")
    shared, notes = dumps.pair(golden, target)
    assert shared == [(s, r) for s in ("step0", "step1", "step10") for r in ("rank0", "rank1")]
    assert notes == ["golden has step2/rank0 but the target has not: not compared"]


def test_layout_takes_the_newest_of_several_single_process_runs(tmp_path):
    old = write_unit(tmp_path / "d" / "step0" / "proc100", {})
    new = write_unit(tmp_path / "d" / "step0" / "proc99", {})
    os.utime(old / "dump.json", (1, 1))
    dump = dumps.read_layout(tmp_path / "d")
    assert dump.units == {("step0", "proc"): new} and "2 runs dumped here" in dump.notes[0]
    # a single step folder, and a rank folder, are dumps too
    assert dumps.read_layout(tmp_path / "d" / "step0").units == {("", "proc"): new}
    assert dumps.read_layout(new).units == {("", ""): new}
    # two rank folders given as such pair with each other, whatever their names
    other = write_unit(tmp_path / "e" / "step0" / "proc7", {})
    golden, target = dumps.read_layout(new), dumps.read_layout(other)
    assert dumps.pair(golden, target) == ([("", "")], []) and target.units == {("", ""): other}


FRAMES = [
    "File /venv/lib/python3.11/site-packages/torch/nn/modules/linear.py, line 134, in forward, \n return F.linear()",
    "File /home/u/proj/train.py, line 21, in forward, \n return self.fc2(self.drop(x))",
    "File /home/u/proj/train.py, line 40, in main, \n loss = model(x)",
]


def test_source_line_of_an_item_and_of_its_backward(tmp_path):
    unit = write_unit(
        tmp_path / "proj" / "accuracy_dump" / "step0" / "rank0",
        {},
        {
            "0": [["Module.fc1.Linear.forward.0"], FRAMES[1:]],
            "1": [["Functional.linear.0.forward", "Functional.linear.1.forward"], FRAMES],
        },
    )
    line = "/home/u/proj/train.py:21 in forward: return self.fc2(self.drop(x))"
    assert dumps.source_line(unit, "Functional.linear.1.forward.output.0") == line
    assert dumps.source_line(unit, "Functional.linear.1.backward.input.0") == line
    assert dumps.source_line(unit, "Module.fc1.Linear.parameters_grad.0.bias") == line
    assert dumps.source_line(unit, "Functional.linear.10.forward.output.0") is None  # linear.1 is not linear.10
    assert dumps.source_line(unit, "Functional.gelu.0.forward.input.0") is None


def test_first_nan_or_inf_in_execution_order(tmp_path):
    tensor = {"type": "torch.Tensor", "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0}
    unit = write_unit(
        tmp_path / "u",
        {
            "Functional.linear.0.forward": {"input_args": [tensor], "output": [tensor]},
            "Functional.exp.0.forward": {"input_args": [tensor], "output": [dict(tensor, Max=float("inf"))]},
            "Functional.log.0.forward": {"input_args": [tensor], "output": [dict(tensor, Mean=float("nan"))]},
        },
    )
    assert dumps.first_nan_inf(unit) == ("Functional.exp.0.forward", "output.0", "Max", float("inf"))
    clean = write_unit(tmp_path / "c", {"Functional.linear.0.forward": {"output": [tensor]}})
    assert dumps.first_nan_inf(clean) is None


# ---- transplant compare: usage errors


def test_compare_usage_errors(tmp_path, capsys, monkeypatch):
    write_unit(tmp_path / "g" / "step0" / "rank0", {})
    write_unit(tmp_path / "t" / "step1" / "rank0", {})
    (tmp_path / "empty").mkdir()
    cases = [
        (["--golden", str(tmp_path / "nope"), "--target", str(tmp_path / "t")], "no such folder"),
        (["--golden", str(tmp_path / "g"), "--target", str(tmp_path / "empty")], "no msprobe dump"),
        (["--golden", str(tmp_path / "g"), "--target", str(tmp_path / "t")], "share no step and rank"),
        (["--golden", str(tmp_path / "g")], "required: --target"),
    ]
    for args, message in cases:
        assert main(["compare", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    monkeypatch.setattr(runs, "PACKAGE", "mindstudio-probe-not-a-package")
    write_unit(tmp_path / "t" / "step0" / "rank0", {})
    assert main(["compare", "--golden", str(tmp_path / "g"), "--target", str(tmp_path / "t")]) == 2
    assert "msprobe is not installed: pip install" in capsys.readouterr().err


# ---- end to end: original on the CPU, converted under emulate, compared

needs_probe = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("msprobe") is None,
    reason="needs PyTorch and mindstudio-probe: .ci/run installs both",
)


def run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSPLANT_EMULATE")}
    env.update({"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MSPROBE_LOG_LEVEL": "3"})
    return subprocess.run(
        [sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )


def losses(proc: subprocess.CompletedProcess) -> list[str]:
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = re.findall(r"^loss \S+$", proc.stdout, re.M)
    assert len(found) == 4
    return found


@pytest.mark.slow
@needs_probe
def test_end_to_end_the_converted_run_computes_what_the_original_computes(tmp_path):
    assert (
        run(
            [
                "-m",
                "transplant",
                "-q",
                "-j",
                "1",
                "-i",
                PROJECT,
                "-o",
                tmp_path,
                "accuracy",
                "-m",
                PROJECT / "train.py",
            ],
            tmp_path,
        ).returncode
        == 0
    )
    bench, msft = tmp_path / "project_accuracy_bench", tmp_path / "project_msft_accuracy"
    golden_run = run(["train.py"], bench)
    golden = losses(golden_run)
    target_run = run(["-m", "transplant", "emulate", "--strict", "train.py"], msft)
    assert losses(target_run) == golden
    # the guide's order: parameters, then the loss curve (from the programs' own output)
    params = run(["-m", "transplant", "compare", "--task", "params", "--golden", bench / "accuracy_dump",
                  "--target", msft / "accuracy_dump"], tmp_path)  # fmt: skip
    assert params.returncode == 0, params.stdout + params.stderr
    assert "all parameters         golden 4 tensors, 676 values; target 4 tensors, 676 values\n" in params.stdout
    (tmp_path / "golden.log").write_text(golden_run.stdout)
    (tmp_path / "target.log").write_text(target_run.stdout)
    loss = run(["-m", "transplant", "compare", "--task", "loss", "--golden", tmp_path / "golden.log",
                "--target", tmp_path / "target.log", "-o", tmp_path / "loss"], tmp_path)  # fmt: skip
    assert loss.returncode == 0 and "4 common steps, 4 within the tolerance" in loss.stdout, loss.stdout + loss.stderr
    dump = dumps.read_layout(bench / "accuracy_dump")
    assert sorted(dump.units) == [("step0", "proc"), ("step1", "proc")]  # the first two steps, as configured
    # each side recorded where it computed: both on the CPU here (the converted one under emulate)
    [(_, golden_where)] = dumps.where_records(bench / "accuracy_dump")
    [(_, target_where)] = dumps.where_records(msft / "accuracy_dump")
    assert golden_where["used"] == {"npu": False, "cuda": False} and not golden_where["emulated"]
    assert target_where["emulated"] == "cpu" and target_where["torch_npu"] is True
    assert target_where["environment"]["TORCH_NPU_FALLBACK_CPU_DISABLE"] == "1"
    pair = ["--golden", bench / "accuracy_dump", "--target", msft / "accuracy_dump"]
    refused = run(["-m", "transplant", "compare", *pair, "-o", tmp_path / "cmp0"], tmp_path)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
    assert refused.stderr.startswith("transplant compare: error: the golden run computed on the CPU (where_rank_")
    assert "pass --allow-cpu" in refused.stderr and len(refused.stderr.splitlines()) == 1

    same = run(
        [
            "-m",
            "transplant",
            "compare",
            "--golden",
            bench / "accuracy_dump",
            "--target",
            msft / "accuracy_dump",
            "-o",
            tmp_path / "cmp",
            "--format",
            "json",
            "--allow-cpu",
        ],
        tmp_path,
    )
    assert same.returncode == 0, same.stdout + same.stderr
    summary = json.loads(same.stdout)
    assert summary["status"] == "pass" and summary["compared"] > 50
    assert summary["pass"] == summary["compared"] and summary["first"] is None and summary["nan_inf"] is None
    assert len(summary["tables"]) == 2 and all(Path(t).is_file() for t in summary["tables"])

    # one operator's arguments changed on the NPU side: compare names where the runs part
    script = msft / "train.py"
    script.write_text(script.read_text().replace("F.gelu(self.fc1(x))", 'F.gelu(self.fc1(x), approximate="tanh")'))
    shutil.rmtree(msft / "accuracy_dump")
    losses(run(["-m", "transplant", "emulate", "--strict", "train.py"], msft))
    differ = run(
        [
            "-m",
            "transplant",
            "compare",
            "--golden",
            bench / "accuracy_dump",
            "--target",
            msft / "accuracy_dump",
            "-o",
            tmp_path / "cmp2",
            "--allow-cpu",
        ],
        tmp_path,
    )
    assert differ.returncode == 1, differ.stdout + differ.stderr
    text = differ.stdout
    assert re.search(r"^transplant compare: \d+ items in 2 step/rank pairs: \d+ pass, [1-9]\d* warning", text, re.M)
    first = re.search(
        r"^first item that does not pass \(step0/proc\): (?:Functional|Module|Tensor|Torch)\.\S+: "
        r"(warning|error)$",
        text,
        re.M,
    )
    assert first, text
    assert re.search(r"^  called from: train\.py:\d+ in \w+: ", text, re.M), text
    assert "full tables: " in text

    # an operator the golden run does not have (planted: * (1 + 1e-4)): msprobe 26.2 writes its row as
    # pass, compare counts it as unmatched and names it, at the line where the runs part
    script.write_text(
        script.read_text().replace('F.gelu(self.fc1(x), approximate="tanh")', "F.gelu(self.fc1(x)) * (1 + 1e-4)")
    )
    shutil.rmtree(msft / "accuracy_dump")
    losses(run(["-m", "transplant", "emulate", "--strict", "train.py"], msft))
    extra = run(["-m", "transplant", "compare", "--golden", bench / "accuracy_dump", "--target",
                 msft / "accuracy_dump", "-o", tmp_path / "cmp3", "--allow-cpu"], tmp_path)  # fmt: skip
    assert extra.returncode == 1, extra.stdout + extra.stderr
    assert re.search(r"^transplant compare: .*, [1-9]\d* unmatched \(no counterpart on the other side\)$",
                     extra.stdout, re.M), extra.stdout  # fmt: skip
    assert re.search(
        r"^first item with no counterpart in the golden run \(step0/proc\): Tensor\.__mul__\.0\.forward\.\S+, "
        r"called from train\.py:\d+ in forward: return self\.fc2\(self\.drop\(F\.gelu\(self\.fc1\(x\)\) \* \(1 \+ 1e-4\)\)\)$",
        extra.stdout,
        re.M,
    ), extra.stdout


@pytest.mark.slow
@needs_probe
def test_end_to_end_a_planted_fp16_overflow_is_named_with_its_line(tmp_path):
    """accuracy --task overflow, the converted run under emulate, then compare --task overflow (by
    msprobe's overflow_check) and compare itself name the operator and the line."""
    project = FIXTURES / "accuracy" / "overflow"
    made = run(["-m", "transplant", "-q", "-j", "1", "-i", project, "-o", tmp_path, "accuracy", "--task",
                "overflow", "-m", project / "train.py"], tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    bench, msft = tmp_path / "overflow_accuracy_bench", tmp_path / "overflow_msft_accuracy"
    config = json.loads((msft / "accuracy_config.json").read_text())
    assert (config["task"], config["level"]) == ("statistics", "L1")
    for tree, command in ((bench, ["train.py"]), (msft, ["-m", "transplant", "emulate", "--strict", "train.py"])):
        done = run(command, tree)
        assert done.returncode == 0 and "step 1 loss nan" in done.stdout, done.stderr[-3000:]
    line = r"train.py:\d+ in forward: energy = torch\.square\(h\.half\(\) \* 300\.0\)\.float\(\)"
    found = run(["-m", "transplant", "compare", "--task", "overflow", "--target", msft / "accuracy_dump",
                 "-o", tmp_path / "of"], tmp_path)  # fmt: skip
    assert found.returncode == 1, found.stdout + found.stderr
    assert re.search(
        r"^transplant compare: overflow: the target run: first operator that overflows \(step0/proc\): "
        r"Torch\.square\.0\.forward output\.0 \(Max = inf\)\n  called from: " + line + r"\n  found by: msprobe",
        found.stdout,
        re.M,
    ), found.stdout
    compared = run(["-m", "transplant", "compare", "--golden", bench / "accuracy_dump", "--target",
                    msft / "accuracy_dump", "-o", tmp_path / "cmp", "--allow-cpu"], tmp_path)  # fmt: skip
    assert re.search(
        r"^first overflow in the target \(step0/proc\): Torch\.square\.0\.forward output\.0 \(Max = inf\), "
        r"called from " + line + "$",
        compared.stdout,
        re.M,
    ), compared.stdout + compared.stderr


def test_a_distributed_script_is_instrumented_in_its_loop_after_its_set_up():
    """Each rank of a script that runs distributed dumps its own rank folder (msprobe asks the
    process group at start()); the set-up stays before the loop, the model is the wrapped one."""
    r = instrumented("""\
        import os
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        def main():
            dist.init_process_group("nccl")
            model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[int(os.environ["LOCAL_RANK"])])
            for step in range(10):
                model(torch.ones(2).cuda()).sum().backward()
        if __name__ == "__main__":
            main()
        """)
    text = r.source.decode()
    assert "    for step in range(10):\n        accuracy_debugger.start(model)  # accuracy mode" in text
    assert text.index("seed_all(") < text.index("def main():")
    assert text.count("import os\n") == 2 and text.index(ENV_LINE) < text.index("import torch")
    assert r.loops == [8] and not r.warnings


# ---- the guide's steps (issue 37): unmatched rows, both table formats, overflow, loss, parameters

T = {
    "type": "torch.Tensor",
    "dtype": "torch.float16",
    "shape": [2, 2],
    "Max": 1.0,
    "Min": -1.0,
    "Mean": 0.0,
    "Norm": 1.0,
}
HEADER = ["NPU Name", "Bench Name", "Result", "Err_message", "MaxRelativeErr"]


def write_table(path: Path, rows: list[list[str]]) -> Path:
    if path.suffix == ".xlsx":
        from openpyxl import Workbook

        book = Workbook()
        for row in [HEADER, *rows]:
            book.active.append(row)
        book.save(path)
    else:
        import csv

        with open(path, "w", newline="") as f:
            csv.writer(f).writerows([HEADER, *rows])
    return path


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_a_row_without_bench_counterpart_is_unmatched_not_pass(tmp_path, suffix):
    """msprobe 26.2 writes pass for a row whose bench name is N/A; it counts as unmatched, and
    the first such row is named with its line, before the first failing item after it."""
    unit = write_unit(
        tmp_path / "proj" / "accuracy_dump" / "step0" / "rank0",
        {},
        {"0": [["Tensor.__mul__.0.forward"], FRAMES[1:]], "1": [["Functional.linear.1.forward"], FRAMES]},
    )
    table = write_table(
        tmp_path / f"compare_result_1{suffix}",
        [
            ["Functional.linear.0.forward.output.0", "Functional.linear.0.forward.output.0", "pass", "[]", "0"],
            ["Tensor.__mul__.0.forward.output.0", "N/A", "pass", "[]", "N/A"],
            ["Functional.linear.1.forward.output.0", "Functional.linear.1.forward.output.0", "warning", "[]", "0.1"],
        ],
    )
    summary = compare.Summary()
    compare._read_table(summary, ("step0", "rank0"), unit, table)
    assert summary.counts == {"pass": 1, "warning": 1, "error": 0, "unmatched": 1}
    assert summary.unmatched is not None and summary.unmatched.name == "Tensor.__mul__.0.forward.output.0"
    assert summary.unmatched.source == "/home/u/proj/train.py:21 in forward: return self.fc2(self.drop(x))"
    assert summary.first is not None and summary.first.name == "Functional.linear.1.forward.output.0"
    text = compare._text(summary, 1)
    assert "1 unmatched (no counterpart on the other side)" in text
    assert "first item with no counterpart in the golden run (step0/rank0): Tensor.__mul__.0.forward.output.0" in text


def test_both_table_formats_are_found_and_read_alike(tmp_path):
    from transplant.accuracy import tables

    rows = [["a", "a", "pass", "[]", "0"], ["b", "N/A", "pass", "[]", ""]]
    csv_rows = list(tables.rows(write_table(tmp_path / "compare_result_1.csv", rows)))
    xlsx_rows = list(tables.rows(write_table(tmp_path / "compare_result_2.xlsx", rows)))
    assert csv_rows == xlsx_rows == [dict(zip(HEADER, r)) for r in rows]
    assert sorted(p.name for p in tables.found(tmp_path)) == ["compare_result_1.csv", "compare_result_2.xlsx"]


def test_first_overflow_is_the_first_item_that_overflows_from_finite_inputs(tmp_path):
    inf = dict(T, Max=float("inf"))
    unit = write_unit(
        tmp_path / "u",
        {
            "Torch.empty.0.forward": {"input_args": [], "output": [dict(T, Max=float("nan"))]},  # msprobe ignores it
            "Functional.linear.0.forward": {"input_args": [T], "output": [T]},
            "Torch.square.0.forward": {"input_args": [T], "output": [inf]},
            "Functional.relu.0.forward": {"input_args": [inf], "output": [inf]},  # propagated, not the origin
        },
    )
    assert dumps.first_overflow(unit) == ("Torch.square.0.forward", "output.0", "Max", float("inf"))
    assert dumps.first_nan_inf(unit)[0] == "Torch.empty.0.forward"
    propagated = write_unit(tmp_path / "p", {"Functional.relu.0.forward": {"input_args": [inf], "output": [inf]}})
    assert dumps.first_overflow(propagated) is None


def overflow_dump(root: Path, overflow_rank: str | None, step: str = "step0") -> Path:
    for rank in ("rank0", "rank1"):
        bad = rank == overflow_rank
        write_unit(
            root / step / rank,
            {
                "Functional.linear.0.forward": {"input_args": [T], "output": [T]},
                "Torch.square.0.forward": {"input_args": [T], "output": [dict(T, Max=float("inf")) if bad else T]},
            },
            {"0": [["Torch.square.0.forward"], FRAMES[1:]]},
        )
    return root


@pytest.mark.parametrize("use_msprobe", [True, False])
def test_overflow_task_names_the_operator_its_step_rank_and_line(tmp_path, capsys, monkeypatch, use_msprobe):
    if use_msprobe and importlib.util.find_spec("msprobe") is None:
        pytest.skip("needs mindstudio-probe")
    if not use_msprobe:
        monkeypatch.setattr(runs, "PACKAGE", "mindstudio-probe-not-a-package")
    overflow_dump(tmp_path / "t", None, "step0")
    overflow_dump(tmp_path / "t", "rank1", "step1")
    overflow_dump(tmp_path / "g", None, "step0")
    overflow_dump(tmp_path / "g", None, "step1")
    argv = ["compare", "--task", "overflow", "--target", str(tmp_path / "t"), "-o", str(tmp_path / "o")]
    assert main([*argv, "--golden", str(tmp_path / "g")]) == 1
    text = capsys.readouterr().out
    assert (
        "the target run: first operator that overflows (step1/rank1): Torch.square.0.forward output.0 (Max = inf)"
        in text
    ), text
    assert "  called from: /home/u/proj/train.py:21 in forward: return self.fc2(self.drop(x))" in text
    assert ("found by: msprobe overflow_check" if use_msprobe else "found by: transplant's scan") in text
    assert "the golden run: no operator overflows" in text
    assert main(["compare", "--task", "overflow", "--target", str(tmp_path / "g"), "-o", str(tmp_path / "o")]) == 0


def log(path: Path, values: list[float], form: str = "step {i} loss {v}") -> Path:
    path.write_text("".join(f"epoch 0 {form.format(i=i, v=v)} lr 0.1\n" for i, v in enumerate(values)))
    return path


def test_loss_curves_that_agree_pass_with_a_table_and_a_plot(tmp_path, capsys):
    golden = log(tmp_path / "g.log", [2.5, 2.25, 2.0])
    target = log(tmp_path / "t.log", [2.5, 2.2501, 2.0])
    argv = ["compare", "--task", "loss", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "o")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "3 common steps, 3 within the tolerance (0.01 relative), 0 past it" in text
    assert re.search(r"^\s+1\s+2\.25\s+2\.2501\s+0\.0001\s+4\.44e-05\s+ok$", text, re.M), text
    assert "the loss curves agree" in text
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "o" / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main([*argv, "--tolerance", "1e-6", "--format", "json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "fail" and result["first_failing"] == 1


def test_loss_past_the_tolerance_fails_at_its_step(tmp_path, capsys):
    golden = log(tmp_path / "g.log", [2.5, 2.25, 2.0, 1.8])
    target = log(tmp_path / "t.log", [2.5, 2.25, 2.1, float("nan")])
    argv = ["compare", "--task", "loss", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "o")]
    assert main(argv) == 1
    text = capsys.readouterr().out
    assert "2 past it" in text and "first step past the tolerance: 2" in text
    assert re.search(r"^\s+3\s+1\.8\s+nan\s+.*PAST TOLERANCE$", text, re.M), text
    assert main([*argv, "--tolerance", "0.1"]) == 1  # NaN fails whatever the tolerance


def test_loss_pattern_with_a_step_group_and_the_note_without_matplotlib(tmp_path, capsys, monkeypatch):
    golden = log(tmp_path / "g.log", [1.0, 0.5], "iter {i}: lm loss {v:.4E}")
    target = log(tmp_path / "t.log", [1.0, 0.5, 0.25], "iter {i}: lm loss {v:.4E}")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    pattern = r"iter (?P<step>\d+): lm loss (?P<loss>\S+)"
    argv = ["compare", "--task", "loss", "--golden", str(golden), "--target", str(target), "-o", str(tmp_path / "o")]
    assert main([*argv, "--pattern", pattern]) == 0
    text = capsys.readouterr().out
    assert "2 common steps" in text
    assert "note: the target log has 1 step the other has not (from step 2)" in text
    assert "note: no plot: matplotlib is not installed" in text and not (tmp_path / "o" / "loss.png").exists()
    assert main([*argv, "--pattern", "no such (line"]) == 2
    assert main([*argv, "--pattern", "nothing matches this"]) == 2
    err = capsys.readouterr().err
    assert "--pattern 'no such (line'" in err and "no loss matches the pattern" in err


def module(params: dict) -> dict:
    return {"input_args": [T], "output": [T], "parameters": params}


def param(shape: list[int], dtype: str = "torch.float32", grad: bool = True) -> dict:
    return dict(T, shape=shape, dtype=dtype, requires_grad=grad)


def test_params_task_names_a_planted_difference(tmp_path, capsys):
    golden = {
        "Module.fc1.Linear.forward.0": module({"weight": param([32, 16]), "bias": param([32])}),
        "Module.blocks.0.attn.Linear.forward.0": module({"weight": param([8, 8], grad=False)}),
        "Module.fc2.Linear.forward.0": module({"weight": param([4, 32]), "bias": param([4])}),
        "Functional.linear.0.forward": {"input_args": [T], "output": [T]},
    }
    write_unit(tmp_path / "g" / "step0" / "rank0", golden)
    write_unit(tmp_path / "t" / "step0" / "rank0", golden)
    argv = ["compare", "--task", "params", "--golden", str(tmp_path / "g"), "--target", str(tmp_path / "t")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "all parameters         golden 5 tensors, 740 values; target 5 tensors, 740 values\n" in text
    assert "trainable parameters   golden 4 tensors, 676 values" in text
    assert "same names, shapes, dtypes and trainable flags" in text
    planted = dict(golden)
    planted["Module.fc2.Linear.forward.0"] = module({"weight": param([4, 32], "torch.float16")})
    planted["Module.blocks.0.attn.Linear.forward.0"] = module({"weight": param([8, 8])})
    write_unit(tmp_path / "t2" / "step0" / "rank0", planted)
    assert main(argv[:-1] + [str(tmp_path / "t2")]) == 1
    text = capsys.readouterr().out
    assert "fc2.bias: only in the golden run ([4] float32)" in text
    assert "fc2.weight: dtype torch.float32 in the golden run, torch.float16 in the target run" in text
    assert "blocks.0.attn.weight: frozen in the golden run, trainable in the target run" in text
    assert "target 4 tensors, 736 values  DIFFERENT" in text


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@needs_probe
def test_end_to_end_two_ranks_are_compared_rank_by_rank(tmp_path):
    """A DDP script in two torchrun ranks: the original with gloo on the CPU, the converted one under
    `transplant emulate -m torch.distributed.run` (hccl as gloo); each rank dumps and records its own
    folder, and compare pairs them rank by rank (msprobe writing workbooks: --xlsx)."""
    project = FIXTURES / "accuracy" / "ranks"
    made = run(["-m", "transplant", "-q", "-j", "1", "-i", project, "-o", tmp_path, "accuracy", "-m", project / "train.py"], tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr
    bench, msft = tmp_path / "ranks_accuracy_bench", tmp_path / "ranks_msft_accuracy"
    assert 'dist.init_process_group("hccl" if cuda else "gloo")' in (msft / "train.py").read_text()
    torchrun = ["-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port"]
    for tree, launcher in ((bench, []), (msft, ["-m", "transplant", "emulate", "--strict"])):
        done = run([*launcher, *torchrun, str(free_port()), "train.py"], tree)
        assert done.returncode == 0, done.stderr[-3000:]
        assert sorted(re.findall(r"rank (\d) loss", done.stdout)) == ["0", "0", "0", "0", "1", "1", "1", "1"]
        assert sorted(dumps.read_layout(tree / "accuracy_dump").units) == [
            (step, rank) for step in ("step0", "step1") for rank in ("rank0", "rank1")
        ]
        assert sorted(path.name[:11] for path, _ in dumps.where_records(tree / "accuracy_dump")) == [
            "where_rank0",
            "where_rank1",
        ]
    compared = run(["-m", "transplant", "compare", "--golden", bench / "accuracy_dump", "--target",
                    msft / "accuracy_dump", "-o", tmp_path / "cmp", "--allow-cpu", "--format", "json", "--xlsx"], tmp_path)  # fmt: skip
    assert compared.returncode == 0, compared.stdout + compared.stderr
    summary = json.loads(compared.stdout)
    assert summary["status"] == "pass" and summary["compared"] > 100 and summary["pass"] == summary["compared"]
    assert all(t.endswith(".xlsx") for t in summary["tables"])  # msprobe's workbooks, read as its CSV tables are
    assert [Path(t).parent.relative_to(tmp_path / "cmp").as_posix() for t in summary["tables"]] == [
        "step0/rank0",
        "step0/rank1",
        "step1/rank0",
        "step1/rank1",
    ]


def test_the_loop_line_is_the_loop_not_the_comments_above_it():
    r = instrumented("""\
        import torch
        model = torch.nn.Linear(2, 2)

        # the training loop
        # (found on nanoGPT: the line reported was the blank line above these comments)
        for step in range(3):
            model(torch.ones(2)).sum().backward()
        """)
    assert r.loops == [6]


FALLBACK = """\
import os
import sys

if sys.argv[1:] == ["disable"]:
    os.environ.setdefault("TORCH_NPU_FALLBACK_CPU_DISABLE", "1")  # as accuracy mode's entry file does
import torch
import torch_npu

x = torch.tensor([1.0, float("nan"), 3.0]).npu()
y = torch.tensor([2.0, 4.0, float("nan")]).npu()
print("maximum", torch.maximum(x.nan_to_num(), y.nan_to_num()).cpu().tolist())
out = torch.empty_like(x)
torch.fmax(x, y, out=out)  # no NPU kernel: torch_npu runs it on the CPU
print("fmax", out.cpu().tolist())
"""


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")
def test_emulate_refuses_a_cpu_fallback_when_the_variable_forbids_it(tmp_path):
    (tmp_path / "fallback.py").write_text(FALLBACK)
    allowed = run(["-m", "transplant", "emulate", "fallback.py"], tmp_path)
    assert allowed.returncode == 0 and "fmax [2.0, 4.0, 3.0]" in allowed.stdout, allowed.stderr[-2000:]
    refused = run(["-m", "transplant", "emulate", "fallback.py", "disable"], tmp_path)
    assert refused.returncode != 0 and "maximum [2.0, 4.0, 3.0]" in refused.stdout  # other operators run
    assert "fmax [" not in refused.stdout
    assert (
        "RuntimeError: transplant emulate: aten::fmax.out has no NPU kernel in torch_npu, which computes it on "
        "the CPU; TORCH_NPU_FALLBACK_CPU_DISABLE=1 forbids that" in refused.stderr
    ), refused.stderr[-2000:]


def where(folder: Path, name: str, used: dict, emulated=None, fallback="1") -> None:
    record = {"used": used, "torch_npu": True, "emulated": emulated, "environment": {}}
    record["environment"]["TORCH_NPU_FALLBACK_CPU_DISABLE"] = fallback
    (folder / name).write_text(json.dumps(record))


def test_compare_refuses_a_side_whose_record_shows_the_cpu(tmp_path, capsys):
    for side in ("g", "t"):
        write_unit(tmp_path / side / "step0" / "rank0", {})
    where(tmp_path / "g", "where_rank0_1.json", {"npu": False, "cuda": True})
    where(tmp_path / "t", "where_rank0_2.json", {"npu": False, "cuda": False})
    argv = ["compare", "--golden", str(tmp_path / "g"), "--target", str(tmp_path / "t"), "-o", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        "transplant compare: error: the target run computed on the CPU (where_rank0_2.json: no memory was "
        "allocated on an NPU or a GPU); a comparison with it says nothing about the NPU: run it on its device, "
        "or pass --allow-cpu\n"
    )
    # a step or rank folder given as the dump finds the records above it
    assert [p.name for p, _ in dumps.where_records(tmp_path / "t" / "step0" / "rank0")] == ["where_rank0_2.json"]
    assert dumps.cpu_reason({"used": {"npu": True}, "emulated": None}) is None
    assert dumps.cpu_reason({"used": {"npu": True}, "emulated": "cpu"}) == (
        "it ran under transplant emulate (computed on the cpu)"
    )
    assert dumps.fallback_allowed({"used": {"npu": True}, "environment": {"TORCH_NPU_FALLBACK_CPU_DISABLE": "0"}})
    assert not dumps.fallback_allowed({"used": {"npu": True}, "environment": {"TORCH_NPU_FALLBACK_CPU_DISABLE": "1"}})
    notes: list[str] = []
    where(tmp_path / "t", "where_rank0_2.json", {"npu": True, "cuda": False}, fallback=None)
    assert compare._where("target", tmp_path / "t", False, notes) is None
    assert notes == [
        "the target run allowed CPU fallbacks (TORCH_NPU_FALLBACK_CPU_DISABLE was not 1): "
        "some operators may have run on the CPU"
    ]
    assert compare._where("golden", tmp_path / "o", False, notes) is None and notes[-1].startswith("no record")
