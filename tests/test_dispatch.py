"""engine/dispatch.py: the handler lookups kept per class make the calls libcst's own dispatch makes."""

from __future__ import annotations

import inspect

import libcst as cst

from transplant.engine import state
from transplant.engine.dispatch import Dispatch
from transplant.engine.transformer import Converter

SOURCE = """
import torch
def f(x, y=1):
    if x.is_cuda:
        return x.cuda()
    return [torch.ones(2), y]
class A:
    def g(self):
        pass
"""


class _Recording:
    """visit/leave handlers of node types and of child attributes, each recording its call; one
    visit answers False (its children are skipped) and one leave replaces its node."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    def visit_FunctionDef(self, node):
        self.calls.append(("visit_FunctionDef", node.name.value))

    def visit_ClassDef(self, node):
        self.calls.append(("visit_ClassDef", node.name.value))
        return False  # the method inside is not visited

    def leave_Name(self, original_node, updated_node):
        self.calls.append(("leave_Name", original_node.value))
        return updated_node.with_changes(value="npu") if original_node.value == "cuda" else updated_node

    def visit_Call_func(self, node):
        self.calls.append(("visit_Call_func", cst.Module([]).code_for_node(node.func)))

    def leave_Call_args(self, node):
        self.calls.append(("leave_Call_args", str(len(node.args))))

    def visit_Param(self, node):
        self.calls.append(("visit_Param", node.name.value))
        return True


class Plain(_Recording, cst.CSTTransformer):
    pass


class Fast(_Recording, Dispatch):
    pass


class FastChild(Fast):
    """A subclass's handler that its parent lacks: its own table, the parent's unchanged."""

    def visit_Return(self, node):
        self.calls.append(("visit_Return", ""))


def _run(transformer):
    module = cst.parse_module(SOURCE)
    return module.visit(transformer).code, transformer.calls


def test_the_same_calls_in_the_same_order_and_the_same_result():
    plain, fast = _run(Plain()), _run(Fast())
    assert fast == plain
    code, calls = fast
    assert "x.npu()" in code and ("visit_ClassDef", "A") in calls
    assert ("visit_FunctionDef", "g") not in calls  # under the visit that answered False
    assert ("visit_Call_func", "x.cuda") in calls and ("leave_Call_args", "1") in calls
    assert _run(Fast()) == plain  # a second instance reads the tables the first one filled


def test_a_subclass_keeps_its_own_table():
    assert _run(Fast()) == _run(Plain())  # fills Fast's tables first
    _code, calls = _run(FastChild())
    assert calls.count(("visit_Return", "")) == 2
    assert ("visit_Return", "") not in _run(Fast())[1]


def _handler_classes() -> list[type]:
    found, todo = [], [state.State]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_the_engines_handlers_are_plain_functions_of_their_classes():
    # what makes the tables exact: no static or class methods, no properties, no handler set on an instance
    classes = _handler_classes()
    assert Converter in classes and len(classes) > 10
    for cls in classes:
        for name, value in vars(cls).items():
            if name.startswith(("visit_", "leave_")):
                assert inspect.isfunction(value), f"{cls.__name__}.{name}"
    module = cst.parse_module(SOURCE)
    from transplant.engine.bindings import analyse_imports
    from transplant.rules import load_ruleset

    rules = load_ruleset()
    conv = Converter(module, rules, analyse_imports(module, rules), set())
    assert not [name for name in vars(conv) if name.startswith(("visit_", "leave_"))]
