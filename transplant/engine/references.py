"""References to rule names: ``torch.cuda.synchronize``, ``tc.Stream``, ``x.is_cuda``.

Owns renames of dotted names resolved through the bindings (FuncNameModifyRule and
ModuleNameModifyRule, by qualified name), attribute renames on any object (``on: attribute``),
and the findings for unsupported names and members. Every reference it sees counts as a use of
its import (``uses``), and a reference rewritten away from its import marks it ``touched``: the
import pruner relies on both. Calls are calls.py's.
"""

from __future__ import annotations

import libcst as cst

from ..rules import Rule, version_listed
from .cst_util import chain_nodes, dotted_parts, make_dotted
from . import namespace
from .state import State


class ReferenceHandlers(State):
    """Renames and findings of dotted names and attributes."""

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if id(node) in self.in_chain:
            return True
        self.skip_names.add(id(node.attr))
        parts = dotted_parts(node)
        if parts is not None:
            # the whole dotted chain is resolved here, once; its inner nodes are only rebuilt
            for inner in chain_nodes(node)[:-1]:
                self.in_chain.add(id(inner))
                if isinstance(inner, cst.Attribute):
                    self.skip_names.add(id(inner.attr))
            self._chain(node, parts)
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self.skip_names or id(node) in self.in_chain:
            return
        self._chain(node, [node.value])

    def _chain(self, node: cst.BaseExpression, parts: list[str]) -> None:
        root = parts[0]
        if id(node) in self.owned:  # a patch (redirects.py), the object of a named attribute (named_strings.py)
            return
        qualified = self.qualified(parts)
        if qualified is None:
            if len(parts) > 1:
                self._attribute_rule(node, parts)
            return
        base_len = len(self.b.original[root].split("."))
        q_parts = qualified.split(".")
        nodes = chain_nodes(node)
        for k in range(len(q_parts), base_len - 1, -1):
            old = ".".join(q_parts[:k])
            found = self.rules.new_name(old)
            if found is not None:
                new, rule = found
                if "members" in rule.data and self._absent_member(nodes, root, q_parts, k, base_len, rule):
                    return  # ProfilerActivity.XPU: torch_npu's enum has no XPU (target_members.py)
                target = nodes[k - base_len]
                if "call_keywords" in rule.data and k == len(q_parts) and id(node) not in self.stores:
                    if id(node) not in self.callees:  # passed on or stored: kept as it is, and said
                        self._keywords_unknown(node, rule)
                        self.uses[root] = self.uses.get(root, 0) + 1
                        return
                    self.keyword_refs[id(node)] = rule  # its call or decorator gets the keywords (call_keywords.py)
                replacement = self._spell(root, new)
                if self._code(target) != replacement:
                    if self.record(target, "rename", f"{old} -> {new}", rule, api=old, new=replacement):
                        self.replacements[id(target)] = make_dotted(replacement)
                        caveat = self.rules.unsupported_q.get(old)
                        if caveat is not None:  # the counterpart exists but does not behave the same
                            self._finding(target, old, caveat)
                        if not replacement.startswith(root + ".") and replacement != root:
                            self.touched.add(root)
                            self._need_root(new)
                            return
                self.uses[root] = self.uses.get(root, 0) + 1
                return
            unsupported = self.rules.unsupported_q.get(old)
            if unsupported is not None:
                self._finding(nodes[k - base_len], old, unsupported)
                break
        else:
            if qualified == namespace.NAMESPACE and id(node) in self.device_modules:
                self._device_module(node, root)
                return
            if id(node) not in self.stores and (
                qualified == namespace.NAMESPACE or namespace.unknown(self.rules, qualified)
            ):
                # a torch.cuda name no rule knows: said, never passed over in silence
                self._no_counterpart(node, qualified)
            elif (library := self.rules.library_of(qualified)) is not None:
                self._library_finding(node, qualified, library)
            elif len(parts) > 1:  # net.is_cuda with net imported: the attribute rule still applies
                self._attribute_rule(node, parts)
        self.uses[root] = self.uses.get(root, 0) + 1

    def _device_module(self, node: cst.BaseExpression, root: str) -> None:
        """``torch.xpu if xpu else torch.cuda``: the module of the accelerator at hand, chosen beside
        another one, is torch_npu.npu on an NPU (same functions; the expression's users call those)."""
        new = self._spell(root, namespace.COUNTERPART)
        message = (
            f"{namespace.NAMESPACE} -> {namespace.COUNTERPART} (the device module {self.device_modules[id(node)]})"
        )
        if self.record(node, "rename", message, None, api=namespace.NAMESPACE, new=new):
            self.replacements[id(node)] = make_dotted(new)
            self.touched.add(root)
            self._need_root(namespace.COUNTERPART)
        self.uses[root] = self.uses.get(root, 0) + 1

    def _spell(self, root: str, new: str) -> str:
        """Spell a new qualified name, through the root's rewritten import when possible."""
        bound = self.b.rewritten.get(root) or self.b.original.get(root)
        if bound is not None and (new == bound or new.startswith(bound + ".")):
            return root + new[len(bound) :]
        return new

    def _need_root(self, new: str) -> None:
        top = new.split(".")[0]
        if top != "torch_npu" and self.b.original.get(top) != top:
            self.needs_imports.add(top)

    def _attribute_rule(self, node: cst.BaseExpression, parts: list[str]) -> None:
        if not isinstance(node, cst.Attribute):
            return
        rule = self.rules.rename_attribute.get(parts[-1])
        if rule is not None:
            new = rule["new_name"].rsplit(".", 1)[-1]
            if self.record(node.attr, "method", f".{parts[-1]} -> .{new}", rule, api=parts[-1], new=new):
                self.replacements[id(node.attr)] = cst.Name(new)
        else:
            self._unsupported_attribute(node)

    def _unsupported_attribute(self, node: cst.Attribute) -> None:
        rule = self.rules.unsupported_attribute.get(node.attr.value)
        if rule is not None:
            self._member_finding(node.attr, rule, f".{node.attr.value}")

    def _member_finding(self, anchor: cst.CSTNode, rule: Rule, spelled: str) -> None:
        """A finding for an unsupported member matched by its name alone (``spelled``, e.g.
        ``.to_dense()``), on any object: the message says so when the rule names a class member."""
        self._finding(anchor, rule["name"], rule, matched=spelled if "." in rule["name"] else "")

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        new = self.replacements.get(id(original_node))
        if new is not None:
            return new
        if dotted_parts(original_node) is None:
            # attribute of a non-name expression: x().is_cuda
            rule = self.rules.rename_attribute.get(original_node.attr.value)
            if rule is not None:
                new_attr = rule["new_name"].rsplit(".", 1)[-1]
                if self.record(
                    original_node.attr,
                    "method",
                    f".{original_node.attr.value} -> .{new_attr}",
                    rule,
                    api=original_node.attr.value,
                    new=new_attr,
                ):
                    return updated_node.with_changes(attr=cst.Name(new_attr))
            else:
                self._unsupported_attribute(original_node)
        return updated_node

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.replacements.get(id(original_node), updated_node)

    def _finding(self, anchor: cst.CSTNode, api: str, rule: Rule, *, matched: str = "") -> None:
        level = rule.get("level", "warning")
        # a per-version list's note is still a version-support finding (TP202), not a setting (TP203)
        kind = (
            "unsupported"
            if version_listed(rule)
            else {"error": "no_counterpart", "warning": "unsupported", "note": "note"}[level]
        )
        message = f"{api}: {rule.get('message', 'not supported on NPU')}"
        if matched:
            message += f" (matched by the name {matched}: applies if the object is a {api.rsplit('.', 2)[-2]})"
        self.record(anchor, kind, message, rule, api=api, level=level)
