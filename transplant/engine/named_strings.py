"""Names of renamed APIs inside strings: ``@patch("torch.cuda.synchronize")``, ``getattr(torch.cuda, "empty_cache")``.

A test that patches ``"torch.cuda.synchronize"`` intercepts nothing once the code under test calls
``torch_npu.npu.synchronize``; ``importlib.import_module("torch.cuda.amp")`` and
``monkeypatch.setattr("torch.cuda.is_available", ...)`` are the same. So a string is converted
with the API it names:

* a string whose whole value is the dotted name of an API a rule renames becomes the new dotted
  name (``"torch.cuda.synchronize"`` -> ``"torch_npu.npu.synchronize"``) where a dotted name is
  looked up: the first argument (or ``target=``/``name=``) of the callees in NAME_TAKERS (patch,
  monkeypatch.setattr, import_module...), and a constant assigned to a variable (``SYNC = "..."``,
  later ``patch(SYNC)``); one that names a torch.cuda API no rule knows, or one not supported on
  NPU, is reported like a reference. The same name printed or logged is a message, and stays;
* the same name reached through a module that imports torch (``patch("pkg.utils.torch.cuda.device_count")``
  patches torch.cuda.device_count itself) becomes the new name alone (``"torch_npu.npu.device_count"``);
* an attribute given by name next to its object (``getattr``, ``hasattr``, ``mock.patch.object``,
  ``monkeypatch.setattr`` / ``delattr``, ``mocker.patch.object``) moves with the object:
  ``getattr(torch.cuda, "empty_cache")`` -> ``getattr(torch_npu.npu, "empty_cache")``. When the object
  cannot be resolved but is spelled like CUDA (``cuda_mod``), the pair is reported, not changed.

The builtins ``setattr``/``delattr`` on torch.cuda are patches (redirects.py), not names to move.
Prose (``"torch.cuda.synchronize is slow"``) is no dotted name and stays. Moving a string adds no
``import torch_npu``: patch and import_module import what they name themselves.

Owns ``visit_Call_args`` (the object-and-name pairs); values.py's ``leave_SimpleString`` hands every
string it leaves unchanged to ``_named_string``; references.py skips the objects (``owned``).
"""

from __future__ import annotations

import re

import libcst as cst

from .cst_util import dotted_parts, make_dotted, replace_string, string_value
from . import namespace
from ..rules import Rule
from .state import State

DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
# calls naming an attribute of their first argument by a string: the last part of the callee ->
# whether the callee must be a method (monkeypatch.setattr) rather than the builtin (setattr: a patch)
PAIR_CALLS = {"getattr": False, "hasattr": False, "object": True, "setattr": True, "delattr": True}
# callees whose first argument (or target=/name=) is a dotted name they look up: mock.patch, mocker.patch,
# monkeypatch.setattr/delattr("a.b.c", ...), importlib.import_module, pkgutil.resolve_name, pydoc.locate...
NAME_TAKERS = frozenset(
    {
        "patch",
        "setattr",
        "delattr",
        "import_module",
        "__import__",
        "resolve_name",
        "find_spec",
        "import_string",
        "locate",
        "import_from_string",
        "spy",
    }
)
CUDA_SPELLED = re.compile(r"cuda", re.IGNORECASE)
# a torch.cuda API named through a module that imports torch: "pkg.utils.torch.cuda.device_count"
THROUGH_MODULE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\.(torch\.cuda\.[A-Za-z_][\w.]*)$")


class NamedStringHandlers(State):
    """Strings that name renamed APIs, alone or as an attribute of a named object."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pair_strings: dict[int, str | None] = {}  # string node -> its new value (None: reported, kept)
        self.name_strings: set[int] = set()  # strings in a place that takes a dotted name (NAME_TAKERS, constants)
        self._roots = _roots(self.rules)

    def visit_Assign_value(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.SimpleString):  # SYNC = "torch.cuda.synchronize", for patch(SYNC)
            self.name_strings.add(id(node.value))

    def visit_Call_args(self, node: cst.Call) -> None:
        func = node.func
        last = (
            func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        )
        if last in NAME_TAKERS:
            for arg in node.args[:1] if node.args and node.args[0].keyword is None else ():
                self.name_strings.add(id(arg.value))
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value in ("target", "name"):
                    self.name_strings.add(id(arg.value))
        if last not in PAIR_CALLS or len(node.args) < 2 or PAIR_CALLS[last] != isinstance(func, cst.Attribute):
            return
        if last == "object" and not (
            isinstance(func, cst.Attribute) and (dotted_parts(func.value) or [""])[-1] == "patch"
        ):
            return  # only patch.object(obj, "name")
        obj, name_arg = node.args[0], node.args[1]
        if obj.keyword is not None or obj.star or name_arg.keyword is not None or name_arg.star:
            return
        attr = string_value(name_arg.value)
        if attr is None or not attr.isidentifier():
            return
        parts = dotted_parts(obj.value)
        qualified = self.qualified(parts) if parts is not None else None
        if qualified is None or parts is None:
            self._unknown_object(obj.value, name_arg.value, attr)
            return
        full = f"{qualified}.{attr}"
        found = self.rules.new_name(full)
        if found is not None and found[0] != full:
            new_parent, new_attr = found[0].rsplit(".", 1)
            spelled = self._spell(parts[0], new_parent)
            if self.record(
                obj.value,
                "rename",
                f"{full} -> {found[0]} (the attribute named by a string moves with its object)",
                found[1],
                api=full,
                new=f"{spelled}, {new_attr!r}",
            ):
                self.owned.add(id(obj.value))
                if self._code(obj.value) != spelled:
                    self.replacements[id(obj.value)] = make_dotted(spelled)
                    if not spelled.startswith(parts[0] + ".") and spelled != parts[0]:
                        self.touched.add(parts[0])
                        self._need_root(found[0])
                    else:
                        self.uses[parts[0]] = self.uses.get(parts[0], 0) + 1
                else:
                    self.uses[parts[0]] = self.uses.get(parts[0], 0) + 1
                self.pair_strings[id(name_arg.value)] = new_attr if new_attr != attr else None
                if (caveat := self.rules.unsupported_q.get(full)) is not None:
                    self._finding(name_arg.value, full, caveat)
        elif namespace.unknown(self.rules, full) or (full in self.rules.unsupported_q and namespace.in_namespace(full)):
            self.owned.add(id(obj.value))
            self.uses[parts[0]] = self.uses.get(parts[0], 0) + 1
            self.pair_strings[id(name_arg.value)] = None
            self._report_name(name_arg.value, full)

    def _unknown_object(self, obj: cst.BaseExpression, anchor: cst.CSTNode, attr: str) -> None:
        """``patch.object(cuda_mod, "synchronize")``: the object is not known here; when it is spelled
        like CUDA and the name is a renamed torch.cuda API, say what it would need."""
        full = f"{namespace.NAMESPACE}.{attr}"
        found = self.rules.new_name(full)
        if found is None or not CUDA_SPELLED.search(self._code(obj)):
            return
        self.pair_strings[id(anchor)] = None
        self.record(
            anchor,
            "note",
            f"{attr!r} names an attribute of {self._code(obj)}, which is not known here: if "
            f"it is {namespace.NAMESPACE}, the converted code calls {found[0]} instead; name that",
            found[1],
            api=full,
            level="note",
        )

    def _report_name(self, anchor: cst.CSTNode, full: str) -> None:
        rule = self.rules.unsupported_q.get(full)
        if rule is not None:
            self._finding(anchor, full, rule)
        else:
            self._no_counterpart(anchor, full)

    def _named_string(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        """``updated`` with the API name it holds moved to its new name (see the module docstring)."""
        if id(original) in self.pair_strings:
            new_attr = self.pair_strings[id(original)]
            old = string_value(original)
            return replace_string(updated, old, new_attr) if new_attr is not None and old is not None else updated
        if id(original) not in self.name_strings:
            return updated
        raw = original.value
        if "." not in raw or len(raw) > 160:
            return updated
        head = raw[len(original.prefix) + len(original.quote) :].split(".", 1)[0]
        if head not in self._roots and ".torch.cuda." not in raw:
            return updated
        value = string_value(original)
        if value is None or DOTTED.match(value) is None:
            return updated
        if head not in self._roots:
            return self._through_module(original, updated, value)
        found = self.rules.new_name(value)
        if found is not None and found[0] != value:
            return self._renamed(original, updated, value, value, found, "a string naming the renamed API")
        if namespace.unknown(self.rules, value) or (
            value in self.rules.unsupported_q and namespace.in_namespace(value)
        ):
            self._report_name(original, value)
        return updated

    def _through_module(self, original: cst.SimpleString, updated: cst.SimpleString, value: str) -> cst.SimpleString:
        """``patch("pkg.utils.torch.cuda.device_count")``: the torch module reached through a module
        that imports it is torch itself, so the patch replaces torch.cuda.device_count for everyone;
        the converted code calls torch_npu.npu.device_count, which the string then names directly."""
        match = THROUGH_MODULE.search(value)
        if match is None:
            return updated
        api = value[match.start(1) :]
        found = self.rules.new_name(api)
        if found is None or found[0] == api or not found[0].startswith("torch"):
            return updated
        why = f"a string naming the renamed API {api} through the module {value[: match.start(1) - 1]}, which imports torch: the same object"
        return self._renamed(original, updated, value, api, found, why)

    def _renamed(
        self,
        original: cst.SimpleString,
        updated: cst.SimpleString,
        value: str,
        api: str,
        found: tuple[str, Rule],
        why: str,
    ) -> cst.SimpleString:
        """``updated`` naming ``found``'s new name in place of ``value``, recorded as a rename of ``api``."""
        if self.record(
            original, "rename", f"{value} -> {found[0]} ({why})", found[1], api=api, new=found[0], needs_npu=False
        ):
            return replace_string(updated, value, found[0])
        return updated


def _roots(rules) -> frozenset[str]:
    """The first parts of the names the rules rename (``torch``, ``apex``), computed once per rule set."""
    roots = rules.__dict__.get("_named_string_roots")
    if roots is None:
        roots = frozenset(name.split(".", 1)[0] for table in (rules.rename_q, rules.module_q) for name in table)
        rules.__dict__["_named_string_roots"] = roots = roots | {namespace.NAMESPACE.split(".")[0]}
    return roots
