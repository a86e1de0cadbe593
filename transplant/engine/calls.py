"""Calls: argument rules, device arguments, environment keywords, method renames.

Owns ``leave_Call``: ArgsModifyRule (by qualified name, bare name or method), DeviceArgRule
(positional or keyword device arguments, ``default_cuda``), argparse defaults and choices,
``CUDA_*`` keywords of environment dicts, method renames (``x.cuda()``) and unsupported methods,
and bare (seed-style) call renames; calls that run shell commands go to commands.py. The order
inside ``leave_Call`` matters: a method rename blocks a bare rename, a name rename (references.py)
blocks method matching.
"""

from __future__ import annotations

import re
from typing import Sequence

import libcst as cst

from ..rules import Rule
from .commands import RUNNERS
from .cst_util import code_of, dotted_parts, is_constant, make_dotted, string_value
from .literals import (
    BACKEND_NAME,
    DEVICE_NAME,
    GENERIC_DEVICE_KEYWORDS,
    is_device_template,
    replace_literal,
    rewrite_backend_expr,
    rewrite_device_expr,
)
from .device_tests import PREFIX_METHODS
from .multi_backend import neutral_default
from .passed_options import passed_as_is
from .state import State

# lookups whose last argument is the default for a key: name -> index of the key
LOOKUPS = {"getattr": 1, "get": 0, "getenv": 0, "setdefault": 0, "pop": 0}


class CallHandlers(State):
    """Rules applied to calls."""

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = original_node.func
        if is_device_template(original_node):  # "cuda:{}".format(i)
            return self._template(original_node, updated_node)
        qualified = self.resolve_name(func)
        # x.cuda() is a method call also when x comes from an import ("from models import net"),
        # unless a name rule rewrote the callee (torch.cuda.synchronize)
        method = (
            func.attr.value
            if isinstance(func, cst.Attribute) and (qualified is None or id(func) not in self.replacements)
            else None
        )
        bare = None
        parts = dotted_parts(func)
        if parts is not None:
            bare = parts[-1]
        args = list(updated_node.args)
        changed = False

        rules_for_args: list[Rule] = []
        if qualified is not None:
            rules_for_args += self.rules.args_q.get(qualified, [])
            renamed = self.rules.new_name(qualified)
            if renamed is not None and renamed[0] != qualified:
                rules_for_args += [r for r in self.rules.args_q.get(renamed[0], []) if r not in rules_for_args]
        if bare is not None:
            rules_for_args += self.rules.args_bare.get(bare, [])
        if method is not None:
            rules_for_args += self.rules.args_method.get(method, [])
        for rule in rules_for_args:
            changed |= self._apply_args_rule(rule, original_node, args)
        if self.keyword_refs:
            changed |= self._call_keywords(original_node, args)  # call_keywords.py

        device_rule = None
        if qualified is not None:
            device_rule = self.rules.device_q.get(qualified)
        if device_rule is None and method is not None:
            device_rule = self.rules.device_method.get(method)
        library = self.rules.library_of(qualified) if qualified is not None and self.rules.library_q else None
        if library is None or not library.get("own_device"):  # a simulator's "cuda:0" is its own GPU: kept
            changed |= self._device_args(original_node, args, device_rule, bare)
        if qualified == "functools.partial":  # partial(autocast, "cuda", enabled=False): as the direct call
            changed |= self._partial_device_args(original_node, args)
        if self.rules.env or self.rules.env_prefixes:
            changed |= self._env_keywords(original_node, args)
        if self.rules.commands and qualified in RUNNERS:  # os.system("nvidia-smi"), subprocess.run([...])
            changed |= self._shell_command(original_node, qualified, args)
        if bare in LOOKUPS:
            changed |= self._lookup_default(original_node, args, bare)
        if method in PREFIX_METHODS:
            changed |= self._device_prefix_test(original_node, args)  # device_tests.py

        new_func = updated_node.func
        method_rule = self.rules.rename_method.get(method) if method is not None else None
        if method_rule is not None and method is not None and isinstance(func, cst.Attribute):
            new = method_rule["new_name"].rsplit(".", 1)[-1]
            if self.record(func.attr, "method", f".{method}() -> .{new}()", method_rule, api=method, new=new):
                new_func = new_func.with_changes(attr=cst.Name(new))
                changed = True
        elif (
            method is not None
            and isinstance(func, cst.Attribute)
            and method in self.rules.unsupported_method
            and (qualified is None or qualified == self.rules.unsupported_method[method]["name"])
        ):
            # "torch.Tensor.to_dense" matched as x.to_dense(): a guess unless the receiver is evidently
            # a tensor. A call through an import (torch.unique_consecutive, statistics.mode) is a function.
            self._method_finding(func, self.rules.unsupported_method[method], qualified)  # receivers.py
        # A bare (seed-style) name matches the last name of a call: f(...), x.f(...), mod.f(...).
        # A plain f(...) whose f an import binds is left alone: renaming the call alone would break it.
        last = (
            func.attr.value if isinstance(func, cst.Attribute) else (func.value if isinstance(func, cst.Name) else None)
        )
        if (
            method_rule is None
            and last is not None
            and last in self.rules.rename_bare
            and id(func) not in self.replacements
            and (isinstance(func, cst.Attribute) or qualified is None)
        ):
            rule = self.rules.rename_bare[last]
            new = rule["new_name"]
            anchor = func.attr if isinstance(func, cst.Attribute) else func
            if self.record(anchor, "rename", f"{last} -> {new}", rule, api=last, new=new):
                if isinstance(new_func, cst.Name):
                    new_func = make_dotted(new)
                    if "." in new:
                        self._need_root(new)
                else:
                    new_func = new_func.with_changes(attr=cst.Name(new.rsplit(".", 1)[-1]))
                changed = True
        if not changed:
            return updated_node
        return updated_node.with_changes(func=new_func, args=args)

    def _carried(self, value: cst.BaseExpression) -> bool:
        """Is ``value`` a variable whose CUDA literals are rewritten where it is set: one named like a
        device or backend (``args.dist_backend``), or one the file passes as such (flow.py)?"""
        parts = dotted_parts(value)
        if not parts:
            return False
        if DEVICE_NAME.search(parts[-1]) or BACKEND_NAME.search(parts[-1]):
            return True
        return len(parts) == 1 and (parts[0] in self.flow.devices or parts[0] in self.flow.backends)

    def _lookup_default(self, call: cst.Call, args: list[cst.Arg], bare: str) -> bool:
        """The default of a lookup by a key that names a device or backend: ``getattr(args, "device",
        "cuda")``, ``config.get("dist_backend", "nccl")``, ``os.environ.get("DEVICE", "cuda")``."""
        key_at = LOOKUPS[bare]
        if len(args) != key_at + 2 or any(a.keyword is not None or a.star for a in args):
            return False
        key = string_value(args[key_at].value)
        if key is None:
            return False
        new = self._named_value(key, args[key_at + 1].value, call.args[key_at + 1].value)
        if new is None:
            return False
        args[key_at + 1] = args[key_at + 1].with_changes(value=new)
        return True

    def _env_keywords(self, call: cst.Call, args: list[cst.Arg]) -> bool:
        """``dict(os.environ, CUDA_VISIBLE_DEVICES="0")``, ``os.environ.update(CUDA_...=...)``."""
        changed = False
        for i, arg in enumerate(args):
            rule = self.rules.env_rule(arg.keyword.value) if arg.keyword is not None else None
            if rule is None or arg.keyword is None:
                continue
            anchor = call.args[i].keyword  # (the original's)
            if anchor is None:
                continue
            old = arg.keyword.value
            if rule.get("new_name") is None:
                self._env_finding(anchor, old, rule)  # values.py
                continue
            if self.record(anchor, "env", f"{old} -> {rule['new_name']}", rule, api=old, new=rule["new_name"]):
                args[i] = arg.with_changes(keyword=cst.Name(rule["new_name"]))
                changed = True
        return changed

    def _find_arg(self, args: list[cst.Arg], idx: int | None, names: Sequence[str]) -> int | None:
        positional = 0
        for i, arg in enumerate(args):
            if arg.star:
                if arg.star == "*":
                    positional = -10_000  # positions after *args are unknown
                continue
            if arg.keyword is None:
                if idx is not None and positional == idx:
                    return i
                positional += 1
            elif arg.keyword.value in names:
                return i
        return None

    def _apply_args_rule(self, rule: Rule, call: cst.Call, args: list[cst.Arg]) -> bool:
        names = [rule["arg_name"]] if rule.get("arg_name") else []
        i = self._find_arg(args, rule.get("arg_idx"), names)
        if i is None:
            return False
        arg = args[i]
        original_value = call.args[i].value
        if rule.get("when") == "int" and not _evidently_int(original_value):
            return False  # device_id=device may already be a torch.device: only an index is wrapped
        new_text = rule["arg_new"]
        new_expr = self.expr(new_text)
        if "ARG" in rule.get("placeholders", ()):  # the template names the given value ARG
            filled = new_expr.visit(_Placeholder(arg.value))
            assert isinstance(filled, cst.BaseExpression)  # a Name becomes an expression, never a removal
            new_expr = filled
            new_text = code_of(new_expr)
        if rule.get("arg_old") is not None:
            replaced = replace_literal(arg.value, rule["arg_old"], self.expr(rule["arg_old"]), new_expr)
            if replaced is None and string_value(self.expr(rule["arg_old"])) == "nccl":
                replaced = rewrite_backend_expr(arg.value)  # "cpu:gloo,cuda:nccl"
            if replaced is None:
                if not is_constant(original_value) and not self._carried(original_value):
                    # use_cuda=self._use_cuda: its value is not known here, and no rule sees where it is set
                    name = (
                        arg.keyword.value if arg.keyword else rule.get("arg_name") or f"argument {rule.get('arg_idx')}"
                    )
                    target = f"{rule['new_arg_name']}={new_text}" if rule.get("new_arg_name") else new_text
                    self.record(
                        original_value,
                        "unsupported",
                        f"{rule['func_name']}: {name} is given as an expression, "
                        f"not a constant; where it is {rule['arg_old']}, NPU needs {target} instead",
                        rule,
                        api=rule["func_name"],
                        level="warning",
                        suggestion=f"make sure the expression gives {target} on an NPU (a helper that tests for NPU)",
                    )
                return False
        else:
            if self._code(arg.value).strip() == new_text.strip():
                return False
            replaced = new_expr
            old_value, new_value = string_value(arg.value), string_value(new_expr)
            if old_value is not None and new_value is not None:
                if old_value == new_value:
                    return False  # already the new value, in another quote style
                if isinstance(arg.value, cst.SimpleString) and new_value.isidentifier():
                    # keep the user's prefix and quote style
                    replaced = arg.value.with_changes(
                        value=arg.value.prefix + arg.value.quote + new_value + arg.value.quote
                    )
        new_keyword = rule.get("new_arg_name")
        label = f"{rule['func_name']}: argument {arg.keyword.value if arg.keyword else rule.get('arg_idx')}"
        if new_keyword and arg.keyword is None and i != len(args) - 1:
            # a positional argument followed by others cannot become a keyword: say what to do
            self.record(
                original_value,
                "unsupported",
                f"{label} is given by position before other arguments, so it "
                f"cannot become {new_keyword}={new_text} here; rewrite the call with keywords",
                rule,
                api=rule["func_name"],
                level="warning",
            )
            return False
        if not self.record(
            original_value, "args", f"{label} -> {new_text}", rule, api=rule["func_name"], new=code_of(replaced)
        ):
            return False
        if new_keyword and (arg.keyword is None or arg.keyword.value != new_keyword):
            arg = arg.with_changes(
                keyword=cst.Name(new_keyword),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                ),
            )
        args[i] = arg.with_changes(value=replaced)
        for module in rule.get("imports", []):
            if self.b.original.get(module.split(".")[0]) is None:
                self.needs_imports.add(module)
        return True

    def _partial_device_args(self, call: cst.Call, args: list[cst.Arg]) -> bool:
        """``functools.partial(F, ...)``: the arguments after F are F's, and F's device rule applies
        to them as it does to a direct call of F (its positions shifted by one)."""
        if not call.args or call.args[0].keyword is not None or call.args[0].star:
            return False
        target = self.resolve_name(call.args[0].value)
        rule = self.rules.device_q.get(target) if target is not None else None
        if rule is None or target is None:
            return False
        rest = args[1:]
        if not self._device_args(call.with_changes(args=call.args[1:]), rest, rule, target.rsplit(".", 1)[-1]):
            return False
        args[1:] = rest
        return True

    def _device_args(self, call: cst.Call, args: list[cst.Arg], rule: Rule | None, bare: str | None) -> bool:
        changed = False
        idx = rule.get("arg_idx") if rule is not None else None
        names = set(rule.get("arg_names", [])) if rule is not None else set()
        names |= GENERIC_DEVICE_KEYWORDS
        positional = 0
        given = False  # the call passes the rule's device argument
        for i, arg in enumerate(args):
            target = False
            if arg.keyword is None and not arg.star:
                target = rule is not None and idx is not None and positional == idx
                positional += 1
            elif arg.keyword is not None:
                kw = arg.keyword.value
                target = kw in names or (bare == "add_argument" and kw in ("default", "choices"))
                if not target and BACKEND_NAME.search(kw):
                    # init_dist(backend="nccl"), deepspeed.init_distributed(dist_backend="nccl")
                    new = self._backend_value(arg.value, call.args[i].value)
                    if new is not None:
                        args[i] = arg.with_changes(value=new)
                        changed = True
                    continue
            given = given or (rule is not None and target) or bool(arg.star)
            if bare == "add_argument" and arg.keyword is not None and passed_as_is(self, call, call.args[i].value):
                continue  # the project's scripts pass the same value, kept there: kept here too
            if not target and is_device_template(call.args[i].value):
                rule_here = None  # a computed device string given to any other argument
            elif not target:
                continue
            else:
                rule_here = rule
            new = rewrite_device_expr(arg.value)
            if new is not None and self.record(
                call.args[i].value, "device", "device string cuda -> npu", rule_here, new=code_of(new)
            ):
                args[i] = arg.with_changes(value=new)
                changed = True
            elif new is None and bare == "add_argument" and arg.keyword is not None:
                # parser.add_argument("--dist-backend", default="nccl"): the value reaches
                # init_process_group(backend=...) later
                new = self._backend_value(arg.value, call.args[i].value)
                if new is not None:
                    args[i] = arg.with_changes(value=new)
                    changed = True
        if rule is not None and rule.get("default_cuda") and not given:
            why = self.fallbacks.get(id(call.func), "") or (
                neutral_default(self.neutral_npu) if self.neutral_npu else ""
            )
            if why:  # an older torch's spelling (legacy_calls.py), or a project on several backends
                self._kept_note(call.func, "device defaults to cuda: pass 'npu'", rule["func_name"], why)
            elif idx == 0:  # torch.amp.GradScaler() means GradScaler("cuda"): say "npu"
                if self.record(call.func, "device", "device defaults to cuda: pass 'npu'", rule, new='"npu"'):
                    first = cst.Arg(cst.SimpleString('"npu"'))
                    if args:
                        first = first.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                    args.insert(0, first)
                    changed = True
            elif rule.get("arg_names"):  # a later parameter: passed by keyword, after the others
                keyword = rule["arg_names"][0]
                text = f'{keyword}="npu"'
                if self.record(call.func, "device", f"device defaults to cuda: pass {text}", rule, new=text):
                    added = cst.Arg(
                        cst.SimpleString('"npu"'),
                        keyword=cst.Name(keyword),
                        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
                    )
                    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
                        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                    elif args:  # a trailing comma: the keyword goes after it, and keeps one of its own
                        added = added.with_changes(comma=args[-1].comma)
                        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                    args.append(added)
                    changed = True
        return changed


class _Placeholder(cst.CSTTransformer):
    """Puts the given argument where an ArgsModifyRule template says ARG."""

    def __init__(self, value: cst.BaseExpression) -> None:
        super().__init__()
        self.value = value

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.value if original_node.value == "ARG" else updated_node


_RANK = re.compile(r"(?:^|_)(?:local_)?rank$|^(?:local_rank|LOCAL_RANK|rank|RANK)$")


def _evidently_int(node: cst.BaseExpression) -> bool:
    """An integer literal, int(...), or a name or attribute that names a rank (local_rank,
    args.local_rank): a device index, never a torch.device."""
    if isinstance(node, cst.Integer):
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "int":
        return True
    parts = dotted_parts(node)
    return parts is not None and bool(parts) and _RANK.search(parts[-1]) is not None
