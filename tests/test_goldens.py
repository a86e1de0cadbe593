"""The golden-file helper (tests/goldens.py): it compares, and with the regenerate switch on it writes."""

from __future__ import annotations

import pytest

import goldens


@pytest.fixture
def switch(monkeypatch):
    def set_to(on: bool) -> None:
        monkeypatch.setitem(goldens._switch, "on", on)

    return set_to


def test_a_difference_fails_and_names_the_switch(tmp_path, switch):
    switch(False)
    golden = tmp_path / "a.out.py"
    golden.write_bytes(b"x = 1\n")
    goldens.check_bytes(golden, b"x = 1\n")
    with pytest.raises(AssertionError, match="--update-goldens"):
        goldens.check_bytes(golden, b"x = 2\n")
    with pytest.raises(AssertionError, match="no golden file"):
        goldens.check_bytes(tmp_path / "missing.txt", b"")
    assert golden.read_bytes() == b"x = 1\n"


def test_the_switch_writes_files_and_trees(tmp_path, switch):
    switch(True)
    golden = tmp_path / "g" / "a.tsv"
    goldens.check_text(golden, "new\n")
    assert golden.read_text() == "new\n"
    got, kept = tmp_path / "got", tmp_path / "kept"
    (got / "sub").mkdir(parents=True)
    (got / "sub" / "b.py").write_bytes(b"b\n")
    (got / "report.csv").write_bytes(b"ignored\n")
    kept.mkdir()
    (kept / "stale.py").write_bytes(b"old\n")
    goldens.check_tree(kept, got, ignore={"report.csv"})
    assert goldens.files(kept) == {"sub/b.py"}
    switch(False)
    goldens.check_tree(kept, got, ignore={"report.csv"})
    (got / "extra.py").write_bytes(b"")
    with pytest.raises(AssertionError, match="differ"):
        goldens.check_tree(kept, got, ignore={"report.csv"})


def test_the_environment_variable_turns_it_on():
    assert goldens.from_environment({"TRANSPLANT_UPDATE_GOLDENS": "1"})
    assert not goldens.from_environment({"TRANSPLANT_UPDATE_GOLDENS": "0"}) and not goldens.from_environment({})
