"""The engine's single traversal is made of handler classes, one per concern; libcst dispatches a
node to the one method of its name, so two handlers defining the same method would hide one."""

from __future__ import annotations

from transplant.engine import transformer
from transplant.engine.state import State


def test_no_two_handlers_define_the_same_visit_or_leave_method():
    owners: dict[str, list[str]] = {}
    handlers = [
        cls
        for cls in transformer.Converter.__mro__
        if issubclass(cls, State) and cls not in (transformer.Converter, State)
    ]
    assert len(handlers) >= 5
    for cls in handlers:
        for name in vars(cls):
            if name.startswith(("visit_", "leave_")):
                owners.setdefault(name, []).append(cls.__name__)
    shared = {name: classes for name, classes in owners.items() if len(classes) > 1}
    assert shared == {}


def test_each_engine_module_says_what_it_owns_and_stays_readable():
    from pathlib import Path

    for path in sorted(Path(transformer.__file__).parent.glob("*.py")):
        text = path.read_text()
        assert text.startswith('"""'), path.name
        assert text.count("\n") <= 400, path.name
