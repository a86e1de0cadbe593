"""Rule files: schema validation, one-line errors naming file and JSON path, rule semantics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, cached_ruleset
from transplant import cli
from transplant.engine import convert
from transplant.rules import RuleError, load_ruleset, read_rule_file
from transplant.formats.shell import convert_shell

# rules/project/ holds facts about project files (packages, config keys, images), not rules
BUILTIN = sorted(
    p for p in (REPO / "rules").rglob("*.json") if p.name != "schema.json" and p.parent.name not in ("project", "docs")
)


def write(tmp_path: Path, data, name: str = "user.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1), encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(RuleError) as info:
        read_rule_file(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:"), message
    return message


@pytest.mark.parametrize("path", BUILTIN, ids=[str(p.relative_to(REPO / "rules")) for p in BUILTIN])
def test_builtin_rule_file_validates(path: Path):
    data = read_rule_file(path)
    assert data["rules"], f"{path.name} has no rules"
    assert data.get("description"), f"{path.name} does not say where its rules come from"


def test_all_builtin_rules_load_for_every_version_and_option():
    for version in ("2.1", "2.6", "2.7", "2.8"):
        rs = load_ruleset(specify_device=True, similar=True, pytorch_version=version)
        assert "torch.cuda.synchronize" in rs.rename_q
        assert rs.unsupported_q


@pytest.mark.parametrize(
    "entry,path,text",
    [
        (
            {"func_name": "mylib.setup", "arg_idx": "x", "arg_new": "1"},
            "rules.ArgsModifyRule[0].arg_idx",
            "'x' is not of type 'integer'",
        ),
        (
            {"func_name": "mylib.setup", "arg_idx": -1, "arg_new": "1"},
            "rules.ArgsModifyRule[0].arg_idx",
            "-1 is less than the minimum of 0",
        ),
        ({"func_name": "mylib.setup", "arg_new": "1"}, "rules.ArgsModifyRule[0]", "needs arg_idx or an argument name"),
        (
            {"func_name": "mylib..setup", "arg_idx": 0, "arg_new": "1"},
            "rules.ArgsModifyRule[0].func_name",
            "'mylib..setup' is not a valid Python name",
        ),
        (
            {"func_name": "mylib.setup", "arg_idx": 0, "arg_new": "1", "on": "everywhere"},
            "rules.ArgsModifyRule[0].on",
            "'everywhere' is not one of",
        ),
        (
            {"func_name": "mylib.setup", "arg_idx": 0, "arg_new": "1", "argnew": "2"},
            "rules.ArgsModifyRule[0]",
            "unknown key(s) ('argnew' was unexpected)",
        ),
    ],
)
def test_schema_errors_name_file_and_json_path(tmp_path, entry, path, text):
    rule_file = write(tmp_path, {"rules": {"ArgsModifyRule": [entry]}})
    message = error_of(rule_file)
    assert message.startswith(f"{rule_file}: {path}: "), message
    assert text in message


def test_error_points_at_the_failing_entry(tmp_path):
    good = {"old_name": "a.b", "new_name": "a.c"}
    rule_file = write(tmp_path, {"rules": {"FuncNameModifyRule": [good, good, {"old_name": "a.d"}]}})
    message = error_of(rule_file)
    assert message == f"{rule_file}: rules.FuncNameModifyRule[2]: 'new_name' is a required property"


def test_invalid_option_value_is_reported_at_the_option(tmp_path):
    rule_file = write(
        tmp_path, {"rules": {"FuncNameModifyRule": [{"old_name": "a.b", "new_name": "a.c", "option": "fast"}]}}
    )
    message = error_of(rule_file)
    assert message.startswith(f"{rule_file}: rules.FuncNameModifyRule[0].option: 'fast' is not one of")


def test_bad_json_gives_file_line_and_column(tmp_path):
    rule_file = write(tmp_path, '{\n  "rules": {\n    "FuncNameModifyRule": [,]\n  }\n}\n')
    message = error_of(rule_file)
    assert message.startswith(f"{rule_file}:3:28: not valid JSON: ")


def test_unknown_rule_kind(tmp_path):
    rule_file = write(tmp_path, {"rules": {"FuncNameModifyRules": []}})
    message = error_of(rule_file)
    assert message.startswith(f"{rule_file}: rules: unknown rule kind 'FuncNameModifyRules'")
    assert "FuncNameModifyRule," in message  # the known kinds are listed


def test_missing_rules_key_and_wrong_top_level(tmp_path):
    assert "'rules' is a required property" in error_of(write(tmp_path, {"rule": {}}))
    assert "is not of type 'object'" in error_of(write(tmp_path, [], "list.json"))


@pytest.mark.parametrize(
    "kind,entry,path",
    [
        ("FuncNameModifyRule", {"old_name": "mylib.class", "new_name": "mylib.klass"}, "old_name"),
        ("FuncNameModifyRule", {"old_name": "mylib.a", "new_name": "None.b"}, "new_name"),
        ("ArgsModifyRule", {"func_name": "f", "arg_name": "lambda", "arg_new": "1"}, "arg_name"),
        ("ModuleNameModifyRule", {"old_name": "a", "new_name": "b", "parent_module": "x.import"}, "parent_module"),
    ],
)
def test_python_keywords_are_not_names(tmp_path, kind, entry, path):
    message = error_of(write(tmp_path, {"rules": {kind: [entry]}}))
    assert f"rules.{kind}[0].{path}: " in message
    assert "keyword" in message


@pytest.mark.parametrize(
    "key,value", [("arg_new", "os.environ.get("), ("arg_new", "1 +"), ("arg_old", "'a' 'b"), ("arg_new", "x = 1")]
)
def test_arg_expressions_must_be_python(tmp_path, key, value):
    entry = {"func_name": "mylib.setup", "arg_idx": 0, "arg_new": "'npu'", key: value}
    message = error_of(write(tmp_path, {"rules": {"ArgsModifyRule": [entry]}}))
    assert message == f"{tmp_path / 'user.json'}: rules.ArgsModifyRule[0].{key}: {value!r} is not a Python expression"


def test_env_var_names_are_checked(tmp_path):
    message = error_of(write(tmp_path, {"rules": {"EnvVarModifyRule": [{"old_name": "cuda_home", "new_name": "X"}]}}))
    assert "rules.EnvVarModifyRule[0].old_name: 'cuda_home' is not an environment variable name" in message


def test_unreadable_rule_files(tmp_path):
    with pytest.raises(RuleError, match="rule file not found"):
        load_ruleset([tmp_path / "missing.json"])
    with pytest.raises(RuleError, match="is a directory"):
        load_ruleset([tmp_path])
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"description": "\xe9", "rules": {}}')
    with pytest.raises(RuleError, match="not UTF-8"):
        load_ruleset([latin])
    with pytest.raises(RuleError, match="unknown PyTorch version"):
        load_ruleset(pytorch_version="1.0")


def test_cli_refuses_bad_rules_before_writing_anything(tmp_path, capsys):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "a.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    rule_file = write(tmp_path, {"rules": {"ArgsModifyRule": [{"func_name": "f", "arg_idx": "x", "arg_new": "1"}]}})
    out = tmp_path / "out"
    code = cli.main(["-i", str(project), "-o", str(out), "-r", str(rule_file), "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert f"{rule_file}: rules.ArgsModifyRule[0].arg_idx: 'x' is not of type 'integer'" in err
    assert not out.exists()


# ---- semantics of user rules


def convert_with(tmp_path: Path, rules: dict, source: str) -> str:
    rs = load_ruleset([write(tmp_path, {"rules": rules})])
    conv = convert(source.encode(), rs)
    return (conv.new or source.encode()).decode()


def test_user_rules_win_over_builtin_ones(tmp_path):
    out = convert_with(
        tmp_path,
        {
            "FuncNameModifyRule": [
                {"old_name": "torch.cuda.synchronize", "new_name": "torch_npu.npu.synchronize_device"}
            ]
        },
        "import torch\ntorch.cuda.synchronize()\n",
    )
    assert out == "import torch\nimport torch_npu\ntorch_npu.npu.synchronize_device()\n"


def test_user_unsupported_rule_reports_without_change(tmp_path):
    rs = load_ruleset(
        [
            write(
                tmp_path,
                {
                    "rules": {
                        "UnsupportedRule": [
                            {
                                "name": "mylib.cuda_only",
                                "level": "error",
                                "message": "rewrite by hand",
                                "suggestion": "use mylib.npu",
                            }
                        ]
                    }
                },
            )
        ]
    )
    conv = convert(b"import mylib as m\nm.cuda_only(1)\n", rs)
    assert conv.new is None
    [finding] = conv.findings
    assert (finding.line, finding.col, finding.code, finding.level) == (2, 1, "TP201", "error")
    assert finding.suggestion == "use mylib.npu"
    assert "rewrite by hand" in finding.message


def test_user_rule_for_another_library_adds_no_torch_npu(tmp_path):
    out = convert_with(
        tmp_path,
        {"FuncNameModifyRule": [{"old_name": "mylib.cuda_kernel", "new_name": "mylib.npu_kernel"}]},
        "import mylib\nmylib.cuda_kernel()\n",
    )
    assert out == "import mylib\nmylib.npu_kernel()\n"


def test_args_rule_with_arg_old_only_changes_that_value(tmp_path):
    rules = {
        "ArgsModifyRule": [
            {"func_name": "mylib.run", "arg_idx": 1, "arg_name": "mode", "arg_old": "'gpu'", "arg_new": "'npu'"}
        ]
    }
    src = "import mylib\nmylib.run(1, 'gpu')\nmylib.run(1, mode=\"gpu\")\nmylib.run(1, 'cpu')\nmylib.run(1, x if c else 'gpu')\n"
    out = convert_with(tmp_path, rules, src)
    assert (
        out
        == "import mylib\nmylib.run(1, 'npu')\nmylib.run(1, mode=\"npu\")\nmylib.run(1, 'cpu')\nmylib.run(1, x if c else 'npu')\n"
    )


def test_args_rule_new_arg_name_and_imports(tmp_path):
    rules = {
        "ArgsModifyRule": [
            {
                "func_name": "mylib.init",
                "arg_name": "gpu_id",
                "new_arg_name": "device_id",
                "arg_new": "int(os.environ['DEVICE_ID'])",
                "imports": ["os"],
            }
        ]
    }
    out = convert_with(tmp_path, rules, "import mylib\nmylib.init(gpu_id=3)\n")
    assert out == "import os\nimport mylib\nmylib.init(device_id=int(os.environ['DEVICE_ID']))\n"


def test_unsupported_method_and_attribute_rules(tmp_path):
    rs = load_ruleset(
        [
            write(
                tmp_path,
                {
                    "rules": {
                        "UnsupportedRule": [
                            {"name": "mylib.Device.gpu_sync", "on": "method", "message": "no NPU sync"},
                            {"name": "mylib.Device.gpu_handle", "on": "attribute", "message": "no NPU handle"},
                        ]
                    }
                },
            )
        ]
    )
    src = (
        b"d.gpu_sync()\n"  # 1: a call: reported
        b"f = d.gpu_sync\n"  # 2: a method not called: not reported
        b"h = d.gpu_handle\n"  # 3: an attribute, anywhere
        b"make().gpu_handle.close()\n"  # 4: on any object
        b"gpu_handle = 1\n"
    )  # 5: a plain name: not reported
    conv = convert(src, rs)
    assert conv.new is None
    assert [(r.line, r.api) for r in conv.findings] == [
        (1, "mylib.Device.gpu_sync"),
        (3, "mylib.Device.gpu_handle"),
        (4, "mylib.Device.gpu_handle"),
    ]
    assert "matched by the name .gpu_handle: applies if the object is a Device" in conv.findings[1].message
    assert rs.may_match(b"h = d.gpu_handle\n") and not rs.may_match(b"f = d.gpu_sync\n")


def test_method_and_attribute_rules(tmp_path):
    rules = {
        "FuncNameModifyRule": [
            {"old_name": "to_gpu", "new_name": "to_npu", "on": "method"},
            {"old_name": "gpu_count", "new_name": "npu_count", "on": "attribute"},
        ]
    }
    out = convert_with(tmp_path, rules, "a.to_gpu()\nb = a.to_gpu\nc = a.b.gpu_count\nto_gpu()\n")
    assert out == "a.to_npu()\nb = a.to_gpu\nc = a.b.npu_count\nto_gpu()\n"


def test_rule_options_are_off_by_default():
    plain = cached_ruleset()
    both = cached_ruleset(specify_device=True, similar=True)
    assert "torch.nn.SyncBatchNorm" not in plain.rename_q and "torch.nn.SyncBatchNorm" in both.rename_q
    assert not any(r.get("option") for rules in plain.args_q.values() for r in rules)
    assert any(r.get("option") == "specify_device" for rules in both.args_q.values() for r in rules)


# ---- how built-in rules combine


def findings_of(source: str, pytorch_version: str = "2.8"):
    return convert(source.encode(), cached_ruleset(pytorch_version=pytorch_version)).findings


def test_no_counterpart_error_wins_over_the_version_warning():
    # emit_nvtx is both in profiler.json (error, with advice) and in the per-version lists (warning)
    for version in ("2.1", "2.8"):
        [finding] = findings_of(
            "import torch\nwith torch.autograd.profiler.emit_nvtx():\n    pass\n", pytorch_version=version
        )
        assert (finding.code, finding.level) == ("TP201", "error")
        assert finding.suggestion == "use torch_npu.npu.mstx"


def test_settings_with_other_semantics_are_notes_with_advice_and_not_half_renamed():
    source = "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.deterministic = True\n"
    conv = convert(source.encode(), cached_ruleset())
    assert conv.new is None  # torch.backends.cuda.matmul alone would be renamed: not its allow_tf32
    assert [(f.line, f.code, f.level) for f in conv.findings] == [(2, "TP203", "note"), (3, "TP203", "note")]
    assert "allow_hf32" in conv.findings[0].suggestion
    assert "use_deterministic_algorithms" in conv.findings[1].suggestion


def test_unsupported_list_depends_on_the_pytorch_version():
    rs = {v: cached_ruleset(pytorch_version=v) for v in ("2.1", "2.8")}
    only_21 = set(rs["2.1"].unsupported_q) - set(rs["2.8"].unsupported_q)
    assert only_21, "the 2.1 list has APIs the 2.8 list does not"
    api = sorted(only_21)[0]
    source = f"import {api.split('.')[0]}\n{api}\n"
    assert [f.code for f in convert(source.encode(), rs["2.1"]).findings] == ["TP202"]
    assert all(f.api != api for f in convert(source.encode(), rs["2.8"]).findings)


def test_rule_message_reaches_the_change_records(tmp_path):
    rs = load_ruleset(
        [
            write(
                tmp_path,
                {
                    "rules": {
                        "FuncNameModifyRule": [
                            {
                                "old_name": "mylib.fused_op",
                                "new_name": "mylib.npu_fused_op",
                                "message": "tolerances differ",
                            }
                        ]
                    }
                },
            )
        ]
    )
    conv = convert(b"import mylib\nfrom mylib import fused_op\nmylib.fused_op(1)\n", rs)
    assert [(c.line, c.message.endswith("(tolerances differ)")) for c in conv.changes] == [(2, True), (3, True)]


def test_device_argument_that_defaults_to_cuda(tmp_path):
    rule = {"func_name": "mylib.Accelerator", "arg_idx": 0, "arg_names": ["device"], "default_cuda": True}
    out = convert_with(
        tmp_path,
        {"DeviceArgRule": [rule]},
        "import mylib\na = mylib.Accelerator()\nb = mylib.Accelerator(seed=1)\n"
        "c = mylib.Accelerator(device='cpu')\nd = mylib.Accelerator('cuda:1')\ne = mylib.Accelerator(*xs)\n",
    )
    assert out == (
        'import torch_npu\nimport mylib\na = mylib.Accelerator("npu")\nb = mylib.Accelerator("npu", seed=1)\n'
        "c = mylib.Accelerator(device='cpu')\nd = mylib.Accelerator('npu:1')\ne = mylib.Accelerator(*xs)\n"
    )
    bad = write(tmp_path, {"rules": {"DeviceArgRule": [{**rule, "default_cuda": "yes"}]}}, "bad.json")
    assert "rules.DeviceArgRule[0].default_cuda: 'yes' is not of type 'boolean'" in error_of(bad)


def test_skip_file_comment_counts_anywhere_in_the_first_30_lines():
    # the same rule for Python files and shell scripts, however long those lines are
    long_lines = b"".join(b"# " + b"x" * 300 + b"\n" for _ in range(19))
    python = long_lines + b"# transplant: skip-file\nimport torch\ntorch.cuda.synchronize()\n"
    rules = cached_ruleset()
    assert convert(python, rules).new is None
    shell = long_lines + b"# transplant: skip-file\nexport CUDA_VISIBLE_DEVICES=0\n"
    assert convert_shell(shell, rules).new is None
    late = b"\n" * 30 + b"# transplant: skip-file\nimport torch\ntorch.cuda.synchronize()\n"
    assert convert(late, rules).new is not None


def test_environment_variables_without_counterpart_are_reported_in_shell_scripts():
    # NCCL_SOCKET_IFNAME has an HCCL name; NCCL_DEBUG (by the NCCL_* prefix rule) has none: reported
    # where code sets or reads it, never in a comment, never inside a longer name; nothing rewritten
    # that has no new name
    rules = cached_ruleset()
    script = (
        b"export NCCL_SOCKET_IFNAME=eth0 NCCL_DEBUG=INFO\n"
        b"# NCCL_IB_DISABLE=1 would turn InfiniBand off\n"
        b"echo ${MY_NCCL_DEBUG} $NCCL_P2P_DISABLE  # NCCL_DEBUG\n"
    )
    conv = convert_shell(script, rules)
    assert conv.new == script.replace(b"NCCL_SOCKET_IFNAME", b"HCCL_SOCKET_IFNAME")
    assert [(r.line, r.col, r.code, r.level, r.api) for r in conv.records] == [
        (1, 8, "TP105", "fix", "NCCL_SOCKET_IFNAME"),
        (1, 32, "TP203", "note", "NCCL_DEBUG"),
        (3, 24, "TP203", "note", "NCCL_P2P_DISABLE"),
    ]
    assert "HCCL_" in conv.records[1].suggestion
    only_reported = convert_shell(b"export NCCL_DEBUG=WARN\n", rules)
    assert only_reported.new is None and [r.api for r in only_reported.records] == ["NCCL_DEBUG"]


def test_environment_prefix_rules_report_only(tmp_path):
    ok = write(tmp_path, {"rules": {"EnvVarModifyRule": [{"old_name": "MYLIB_*", "level": "warning"}]}})
    rules = load_ruleset([ok])
    assert rules.env_rule("MYLIB_X")["level"] == "warning" and rules.env_rule("MYLIB_") is None
    bad = write(tmp_path, {"rules": {"EnvVarModifyRule": [{"old_name": "MYLIB_*", "new_name": "X"}]}}, "bad.json")
    assert "a prefix (NAME*) is reported, not renamed" in error_of(bad)


def test_device_and_backend_values_in_shell_commands():
    # a command-line value overrides the converted default: options and variables named like a
    # device or backend change, whatever their spelling; other names, values and comments do not
    rules = cached_ruleset()
    script = (
        b"python train.py --device cuda:1 --dist-backend nccl --batch 8\n"
        b"python eval.py --device=cuda --dist_backend='nccl' trainer.device=cuda\n"
        b'DEVICE="cuda" BACKEND=nccl bash run.sh\n'
        b"python x.py --backend gloo --device 0 --name cuda --device cudnn --device cuda_x\n"
        b"python x.py --no-cuda --num-devices cuda  # --device cuda\n"
        b"echo cuda nccl device=gpu\n"
    )
    conv = convert_shell(script, rules)
    assert conv.new.splitlines() == [
        b"python train.py --device npu:1 --dist-backend hccl --batch 8",
        b"python eval.py --device=npu --dist_backend='hccl' trainer.device=npu",
        b'DEVICE="npu" BACKEND=hccl bash run.sh',
        *script.splitlines()[3:],
    ]
    assert [(r.line, r.col, r.code, r.old, r.new) for r in conv.records] == [
        (1, 26, "TP104", "cuda:1", "npu:1"),
        (1, 48, "TP103", "nccl", "hccl"),
        (2, 25, "TP104", "cuda", "npu"),
        (2, 46, "TP103", "nccl", "hccl"),
        (2, 67, "TP104", "cuda", "npu"),
        (3, 9, "TP104", "cuda", "npu"),
        (3, 23, "TP103", "nccl", "hccl"),
    ]
    assert convert_shell(conv.new, rules).new is None  # idempotent
