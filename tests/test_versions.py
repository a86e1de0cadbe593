"""A rule holds only for the PyTorch versions its ``since``/``until`` name (rule_versions.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from transplant.engine import convert
from transplant.resources import rules_dir
from transplant.rule_versions import version_key
from transplant.rules import PYTORCH_VERSIONS, RuleError, load_ruleset

SOURCE = b"import torch\nimport mylib\n\nmylib.fast_op(1)\ntorch.cuda.synchronize()\n"


def _user(tmp_path: Path, entry: dict) -> Path:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": {"FuncNameModifyRule": [entry]}}))
    return path


@pytest.mark.parametrize("version, renamed", [("2.1", False), ("2.6", True), ("2.8", True)])
def test_since_chooses_by_version(tmp_path, version, renamed):
    path = _user(tmp_path, {"old_name": "mylib.fast_op", "new_name": "mylib.npu_op", "since": "2.6"})
    conv = convert(SOURCE, load_ruleset([path], pytorch_version=version))
    assert (b"mylib.npu_op(1)" in conv.new) is renamed
    assert (b"mylib.fast_op(1)" in conv.new) is not renamed
    kept = [r for r in conv.records if not r.is_change and r.api == "mylib.fast_op"]
    if renamed:
        assert kept == []
    else:  # the kept original is reported with the version that has the new name
        assert len(kept) == 1 and kept[0].line == 4 and "from PyTorch 2.6 on" in kept[0].message


def test_until_ends_a_rule(tmp_path):
    path = _user(tmp_path, {"old_name": "mylib.fast_op", "new_name": "mylib.npu_op", "until": "2.6"})
    assert b"mylib.npu_op(1)" in convert(SOURCE, load_ruleset([path], pytorch_version="2.1")).new
    conv = convert(SOURCE, load_ruleset([path], pytorch_version="2.7"))
    assert b"mylib.fast_op(1)" in conv.new and not [r for r in conv.records if r.api == "mylib.fast_op"]


@pytest.mark.parametrize("version", ["2", "latest", "2.6.0", 2.6])
def test_since_must_be_a_version(tmp_path, version):
    path = _user(tmp_path, {"old_name": "mylib.fast_op", "new_name": "mylib.npu_op", "since": version})
    with pytest.raises(RuleError, match="since"):
        load_ruleset([path])


def _renames():
    for path in sorted(rules_dir().glob("*.json")):
        if path.name == "schema.json":
            continue
        for entry in json.loads(path.read_text())["rules"].get("FuncNameModifyRule", []):
            yield path.name, entry


def test_every_builtin_rename_says_where_its_target_comes_from():
    missing = [(name, e["old_name"]) for name, e in _renames() if not e.get("source")]
    assert missing == []


def test_out_of_memory_error_is_renamed_only_where_torch_has_it():
    rename = {e["old_name"]: e for _, e in _renames()}
    assert rename["torch.cuda.OutOfMemoryError"]["since"] == "2.5"
    src = b"import torch\ntry:\n    pass\nexcept torch.cuda.OutOfMemoryError:\n    pass\n"
    assert convert(src, load_ruleset(pytorch_version="2.1")).new is None
    kept = convert(src, load_ruleset(pytorch_version="2.1")).records
    assert [(r.line, r.level) for r in kept] == [(4, "note")]
    assert b"except torch.OutOfMemoryError:" in convert(src, load_ruleset(pytorch_version="2.6")).new


@pytest.mark.parametrize("since", ["2.5", "2.6", "2.2", "1.0", "99.0"])
def test_a_kept_rename_suggests_only_a_version_the_option_accepts(tmp_path, since):
    """ "choose --pytorch-version 2.5" where 2.5 is refused would send the user to an error."""
    path = _user(tmp_path, {"old_name": "mylib.fast_op", "new_name": "mylib.npu_op", "since": since})
    oldest = min(PYTORCH_VERSIONS, key=version_key)
    records = convert(SOURCE, load_ruleset([path], pytorch_version=oldest)).records
    kept = [r for r in records if not r.is_change and r.api == "mylib.fast_op"]
    if version_key(since) <= version_key(oldest):
        assert kept == []  # the rename holds for every accepted version
        return
    (record,) = kept
    named = re.findall(r"--pytorch-version (\d+(?:\.\d+)*)", record.suggestion or "")
    accepted = [v for v in PYTORCH_VERSIONS if version_key(v) >= version_key(since)]
    if accepted:
        assert named == [min(accepted, key=version_key)]
    else:
        assert named == [] and ", ".join(PYTORCH_VERSIONS) in record.suggestion


# ---- the stack as a pair: PyTorch version + torch_npu release (rule_versions.RELEASES)


def _npu_rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.json"
    path.write_text(
        json.dumps(
            {
                "rules": {
                    "FuncNameModifyRule": [
                        {"old_name": "mylib.fast_op", "new_name": "mylib.old_npu_op", "npu_until": "26.1"},
                        {"old_name": "mylib.fast_op", "new_name": "mylib.new_npu_op", "npu_since": "26.1"},
                    ]
                }
            }
        )
    )
    return path


@pytest.mark.parametrize(
    "version, release, target",
    [
        ("2.9", "26.0", b"mylib.old_npu_op(1)"),
        ("2.9", "26.1", b"mylib.new_npu_op(1)"),
        ("2.9", None, b"mylib.new_npu_op(1)"),  # the newest final release with 2.9 is 26.1
        ("2.8", None, b"mylib.old_npu_op(1)"),  # 26.0 is the newest that ships 2.8
        ("2.13", None, b"mylib.new_npu_op(1)"),  # 2.13: the 26.2 betas only
    ],
)
def test_npu_since_chooses_by_release(tmp_path, version, release, target):
    conv = convert(SOURCE, load_ruleset([_npu_rules(tmp_path)], pytorch_version=version, torch_npu=release))
    assert target in conv.new
    assert not [r for r in conv.records if not r.is_change and r.api == "mylib.fast_op"]  # no kept-rename finding


def test_resolve_stack_defaults_and_pairs():
    from transplant.rule_versions import DEFAULT_PYTORCH_VERSION, DEFAULT_TORCH_NPU, StackError, resolve_stack

    assert (DEFAULT_PYTORCH_VERSION, DEFAULT_TORCH_NPU) == ("2.12", "26.1")
    assert resolve_stack(None, None) == ("2.12", "26.1")
    assert [resolve_stack(v, None)[1] for v in ("2.1", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.13")] == [
        "7.2", "7.3", "26.1", "26.0", "26.1", "26.1", "26.1", "26.1", "26.2"
    ]  # fmt: skip
    assert resolve_stack(None, "26.0") == ("2.10", "26.0")
    with pytest.raises(StackError, match="torch_npu 26.1 does not ship PyTorch 2.8"):
        resolve_stack("2.8", "26.1")
    with pytest.raises(StackError, match="unknown torch_npu release '25.0'"):
        resolve_stack(None, "25.0")


@pytest.mark.parametrize("version", ["2.9", "2.10", "2.11", "2.12", "2.13"])
def test_new_versions_load_torch_npu_support_lists(version):
    rules = load_ruleset(pytorch_version=version)
    assert rules.pytorch_version == version
    rule = rules.unsupported_q["torch.sparse_csr_tensor"]  # ✘ on every product in each list
    assert rule["level"] == "warning" and "Atlas A2, Atlas A3, Ascend 950" in rule["message"]
    assert f"pytorch_2-{version.split('.')[1]}-0" in rule["source"]
    src = b"import torch\nx = torch.sparse_csr_tensor(a, b, c)\n"
    assert [(r.line, r.level) for r in convert(src, rules).records] == [(2, "warning")]


def test_support_list_keeps_products_and_limits():
    from transplant.resources import rules_dir

    facts = json.loads((rules_dir() / "npu_support" / "docs" / "support_2.12.json").read_text(encoding="utf-8"))
    assert len(facts["source"]["commit"]) == 40 and facts["source"]["repository"] == "Ascend/pytorch"
    mkldnn = facts["apis"]["torch.backends.mkldnn.is_available"]
    assert facts["products"].startswith("per API, ✔/✘/- for Atlas A2, Atlas A3, Ascend 950")
    assert mkldnn["products"] == "✔✘✘"
    assert "fp64" in facts["apis"]["torch.abs"]["limits"]  # the limits note, as published
    note = load_ruleset(pytorch_version="2.12").unsupported_q["torch.backends.mkldnn.is_available"]
    assert note["level"] == "note" and note["message"].startswith("not supported on Atlas A3, Ascend 950")


def test_cli_torch_npu_option(tmp_path):
    import subprocess
    import sys

    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "transplant", *a], input=SOURCE, capture_output=True, cwd=tmp_path
    )
    bad = run("--check", "--pytorch-version", "2.8", "--torch-npu", "26.1", "-")
    assert bad.returncode == 2 and b"does not ship PyTorch 2.8" in bad.stderr and b"Traceback" not in bad.stderr
    assert run("--check", "--torch-npu", "26.2", "-").returncode == 1  # torch.cuda.synchronize is converted
    helped = run("--help").stdout.decode()
    assert "--torch-npu" in helped and "PyTorch 2.12 with torch_npu 26.1" in " ".join(helped.split())


# ---- a device that defaults to CUDA only in some versions (issue 31, mechanism 7)

FORK = b"""import torch
import torch.random as trandom
from torch.random import fork_rng as fork


def step(i, kw):
    with torch.random.fork_rng(devices=[i]):
        pass
    with trandom.fork_rng([i], True):
        pass
    with fork(
        devices=[i],
    ):
        pass
    with torch.random.fork_rng():
        pass
    with fork(devices=[i], device_type="cpu"):
        pass
    with fork(**kw):
        pass
    with fork([i], True, "f", "devices", "cpu"):
        pass
"""


def test_fork_rng_gets_the_npu_device_type_in_every_spelling():
    conv = convert(FORK, load_ruleset(pytorch_version="2.8"))
    new = conv.new.decode()
    assert 'torch.random.fork_rng(devices=[i], device_type="npu")' in new
    assert 'trandom.fork_rng([i], True, device_type="npu")' in new
    assert 'fork(\n        devices=[i], device_type="npu",\n    )' in new
    assert 'torch.random.fork_rng(device_type="npu")' in new
    # what already names a device, keyword or fifth argument, or may through **kw, stays
    assert 'fork(devices=[i], device_type="cpu")' in new and "fork(**kw)" in new
    assert 'fork([i], True, "f", "devices", "cpu")' in new
    rows = [r for r in conv.records if r.code == "TP104"]
    assert [r.line for r in rows] == [7, 9, 11, 15]
    assert all("before PyTorch 2.12 it defaults to CUDA" in r.message for r in rows)
    again = convert(conv.new, load_ruleset(pytorch_version="2.8"))
    assert again.new in (None, conv.new) and not [r for r in again.records if r.code == "TP104"]
    compile(conv.new, "converted", "exec")


def test_fork_rng_rule_holds_below_2_12_only():
    from transplant.rule_versions import holds

    data = json.loads((rules_dir() / "torch_misc.json").read_text())
    (entry,) = [e for e in data["rules"]["DeviceArgRule"] if e["func_name"] == "torch.random.fork_rng"]
    assert entry["default_cuda"] and entry["until"] == "2.12"
    assert [holds(entry, v) for v in ("2.1", "2.8", "2.11", "2.12", "2.13")] == [True, True, True, False, False]


def test_default_cuda_keyword_follows_the_version(tmp_path):
    path = tmp_path / "rules.json"
    entry = {
        "func_name": "mylib.fork",
        "arg_idx": 2,
        "arg_names": ["device_type"],
        "default_cuda": True,
        "until": "2.7",
    }
    path.write_text(json.dumps({"rules": {"DeviceArgRule": [entry]}}))
    source = b"import mylib\n\nmylib.fork([0])\n"
    assert b'mylib.fork([0], device_type="npu")' in convert(source, load_ruleset([path], pytorch_version="2.6")).new
    assert convert(source, load_ruleset([path], pytorch_version="2.7")).new in (None, source)
