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
