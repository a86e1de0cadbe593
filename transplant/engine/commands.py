"""Shell commands run from Python: ``os.system("nvidia-smi")``, ``subprocess.run(["nvidia-smi", ...])``.

ShellCommandRule (rules/shell_commands.json and the user's ``-r`` files) applied to the command of
the standard library's ways of running a program, found through the file's imports (``import
subprocess as sp``, ``from subprocess import run``): the command is the first argument (or
``args=``/``cmd=``), a string run by a shell, a string naming the program, or an argument list whose
first element is the program. Shell text is matched as shell scripts are (shellcommands.py
``command_uses``), so ``"echo nvidia-smi"`` or a print of ``"run nvidia-smi"`` is no command.

What is rewritten: a literal that is exactly the command (``"nvidia-smi"``, ``["nvidia-smi"]``),
when the rule has a ``new_name`` and the command's output goes where it went before, to the
terminal: ``os.system``, ``subprocess.run/call/check_call/Popen`` without ``stdout=``,
``capture_output=`` or ``**kwargs``. ``"nvidia-smi"`` becomes ``"npu-smi info"`` where a shell
reads it, ``["npu-smi", "info"]`` where it is the program (a list, so the arguments stay
arguments). Everything else is reported (TP207): a command with arguments (the options of
nvidia-smi have no one-to-one counterparts in npu-smi), a command whose output the program reads
(``check_output``, ``getoutput``, ``os.popen``, ``capture_output=True``: npu-smi prints another
format, so the parsing must be ported, which a rename would hide), a command built from pieces
(f-strings, ``+``, ``%``, ``.format``) and commands without a ``new_name`` (``nvcc``).

A variable the file runs as a command (flow.py: ``cmd = "nvidia-smi -L"; os.system(cmd)``) is reported
where it is assigned. Owns ``visit_Assign``; calls.py's ``leave_Call`` hands it the calls it resolves.
"""

from __future__ import annotations

import shlex
from typing import Callable, cast

import libcst as cst

from ..shellcommands import command_uses
from ..rules import Rule
from .state import State

# how each runner takes its command: "shell" text; "args" (a string, with or without shell=True,
# or a list); "argv" (the program as the first argument, its arguments as the next ones).
# The bool: does the program read the command's output (rather than the terminal showing it)?
RUNNERS: dict[str, tuple[str, bool]] = {
    "os.system": ("shell", False),
    "os.popen": ("shell", True),
    "subprocess.getoutput": ("shell", True),
    "subprocess.getstatusoutput": ("shell", True),
    "subprocess.run": ("args", False),
    "subprocess.call": ("args", False),
    "subprocess.check_call": ("args", False),
    "subprocess.Popen": ("args", False),
    "subprocess.check_output": ("args", True),
    "asyncio.create_subprocess_shell": ("shell", False),
    "asyncio.create_subprocess_exec": ("argv", False),
}
# keywords that name the command argument
_COMMAND_KEYWORDS = ("args", "cmd", "command", "program")
# keywords that take the output away from the terminal
_CAPTURE_KEYWORDS = ("stdout", "capture_output")
_HOLE = "\x00"  # stands for a computed piece of a command: no command name spans it, and it is an argument


class CommandHandlers(State):
    """ShellCommandRule in the command argument of calls that run programs."""

    def _shell_command(self, call: cst.Call, qualified: str, args: list[cst.Arg]) -> bool:
        """Report, or rewrite in ``args``, the commands of one call to a runner (see RUNNERS)."""
        form, reads_output = RUNNERS[qualified]
        index = _command_index(call)
        if index is None:
            return False
        node = call.args[index].value
        shell = _shell_flag(call) if form == "args" else form == "shell"
        captured = reads_output or _captures(call, self.resolve_name)
        if isinstance(node, (cst.List, cst.Tuple)) or form == "argv":
            # (a list run by a shell passes its other elements to the shell, not to the command)
            return self._argv_command(call, index, args, node, form, captured or shell is not False, qualified)
        if isinstance(node, cst.Call) and _splits(node, self.resolve_name(node.func)):
            by_shlex = bool(node.args)  # shlex.split(text), else text.split()

            def replace_inside(new: cst.BaseExpression) -> None:
                updated = cast(cst.Call, args[index].value)  # (the converted ``node``)
                if by_shlex:
                    updated = updated.with_changes(args=[updated.args[0].with_changes(value=new), *updated.args[1:]])
                else:
                    updated = updated.with_changes(func=cast(cst.Attribute, updated.func).with_changes(value=new))
                _set_arg(args, index, updated)

            return self._text_command(
                node.args[0].value if by_shlex else cast(cst.Attribute, node.func).value,  # (_splits)
                qualified,
                captured,
                shell=False,
                split=True,
                replace=replace_inside,
            )
        return self._text_command(
            node, qualified, captured, shell=shell, split=False, replace=lambda new: _set_arg(args, index, new)
        )

    def _text_command(
        self, node: cst.BaseExpression, qualified: str, captured: bool, *, shell: bool | None, split: bool, replace
    ) -> bool:
        """A command given as text: shell text, a program name, or a string ``shlex.split`` cuts."""
        text, literal = _text(node)
        if text is None:
            return False
        changed = False
        for name, _start, _end, rest in command_uses(text.encode("utf-8", "surrogatepass"), self.rules):
            rule = self.rules.commands[name]
            exact = literal and not rest and text.strip() == name
            new = rule.get("new_name")
            if exact and new and not captured and shell is not None and (words := _words(new)) is not None:
                new_node: cst.BaseExpression
                if split or shell or " " not in new.strip():
                    new_node = _string_like(node, new)  # a shell's text, shlex.split("npu-smi info")
                else:  # the string names the program: the new command's words become a list
                    new_node = cst.List(
                        [
                            cst.Element(
                                _string_like(node, word), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                            )
                            for word in words[:-1]
                        ]
                        + [cst.Element(_string_like(node, words[-1]))]
                    )
                if self._command_fix(node, name, new, rule, code_of_node=new_node):
                    replace(new_node)
                    changed = True
                continue
            self._command_finding(node, name, rule, qualified, captured and exact and bool(new))
        return changed

    def _argv_command(
        self,
        call: cst.Call,
        index: int,
        args: list[cst.Arg],
        node: cst.BaseExpression,
        form: str,
        captured: bool,
        qualified: str,
    ) -> bool:
        """A command given as its program and arguments: a list or tuple, or (``argv``) the call's
        positional arguments. ``captured``: it is not safe to replace (the program may read the output)."""
        reads_output = captured and (RUNNERS[qualified][1] or _captures(call, self.resolve_name))
        if form == "argv":
            elements = [a.value for a in call.args if a.keyword is None]
            starred = any(a.star for a in call.args)
            node = call.args[index].value
        elif isinstance(node, (cst.List, cst.Tuple)):
            elements = [e.value for e in node.elements]
            starred = any(isinstance(e, cst.StarredElement) for e in node.elements)
            if not elements or starred and isinstance(node.elements[0], cst.StarredElement):
                return False
        else:  # (the caller passes a list or a tuple unless ``form`` is "argv")
            return False
        program, literal = _text(elements[0])
        if program is None:
            return False
        name = program.rsplit("/", 1)[-1]  # /usr/bin/nvidia-smi runs it too
        rule = self.rules.commands.get(name)
        if rule is None or _HOLE in program:
            return False
        new = rule.get("new_name")
        exact = literal and program == name and len(elements) == 1 and not starred
        words = _words(new) if new else None
        if exact and words and not captured and form != "argv" and isinstance(node, (cst.List, cst.Tuple)):
            first = elements[0]
            new_node = node.with_changes(
                elements=[
                    cst.Element(_string_like(first, word), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                    for word in words[:-1]
                ]
                + [cst.Element(_string_like(first, words[-1]))]
            )
            if isinstance(node, cst.Tuple) and len(words) == 1:
                new_node = new_node.with_changes(elements=[new_node.elements[0].with_changes(comma=cst.Comma())])
            if self._command_fix(elements[0], name, new, rule, code_of_node=new_node):
                _set_arg(args, index, new_node)
                return True
            return False
        self._command_finding(elements[0], name, rule, qualified, reads_output and exact and bool(new))
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        """``cmd = "nvidia-smi -L"`` (or a list) where the file runs ``cmd`` (flow.py): reported, not
        rewritten (how the command is run is not known here)."""
        if not self.flow.commands or not self.rules.commands:
            return
        if not any(isinstance(t.target, cst.Name) and t.target.value in self.flow.commands for t in node.targets):
            return
        value = node.value
        if isinstance(value, (cst.List, cst.Tuple)):
            if not value.elements or isinstance(value.elements[0], cst.StarredElement):
                return
            anchor = value.elements[0].value
            program, _ = _text(anchor)
            name = program.rsplit("/", 1)[-1] if program is not None and _HOLE not in program else None
            found = [name] if name in self.rules.commands else []
        else:
            anchor = value
            text, _ = _text(value)
            found = (
                [] if text is None else [n for n, *_ in command_uses(text.encode("utf-8", "surrogatepass"), self.rules)]
            )
        for name in found:
            rule = self.rules.commands[name]
            self.record(
                anchor,
                "project_file",
                f"{name}: {rule.get('message', 'CUDA-only command')}; this variable is run as a command in this file",
                rule,
                api=name,
                level="warning",
                operation="shell command",
            )

    def _command_fix(self, anchor: cst.CSTNode, name: str, new: str, rule: Rule, *, code_of_node: cst.CSTNode) -> bool:
        return self.record(
            anchor,
            "command",
            f"{name} -> {new}",
            rule,
            api=name,
            new=self.module.code_for_node(code_of_node),
            needs_npu=False,
        )

    def _command_finding(self, anchor: cst.CSTNode, name: str, rule: Rule, qualified: str, output_read: bool) -> None:
        why = ""
        if output_read:
            why = (
                f"; {qualified} gives its output to the program, and {rule['new_name']} prints another format: "
                f"port what reads it"
            )
        self.record(
            anchor,
            "project_file",
            f"{name}: {rule.get('message', 'CUDA-only command')}{why}",
            rule,
            api=name,
            level="warning",
            operation="shell command",
        )


def _command_index(call: cst.Call) -> int | None:
    """The index in ``call.args`` of the command: the first positional argument, or a keyword."""
    for i, arg in enumerate(call.args):
        if arg.star:
            return None  # f(*cmd): the command is not spelled here
        if arg.keyword is None:
            return i
        if arg.keyword.value in _COMMAND_KEYWORDS:
            return i
    return None


def _shell_flag(call: cst.Call) -> bool | None:
    """``shell=`` of a subprocess call: True, False (also when absent), None when not a constant or
    when more than one positional argument is given (shell is the ninth of Popen's)."""
    if sum(1 for a in call.args if a.keyword is None) > 1 or any(a.star for a in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "shell":
            value = arg.value
            if isinstance(value, cst.Name) and value.value in ("True", "False"):
                return value.value == "True"
            return None
    return False


def _captures(call: cst.Call, resolve: Callable[[cst.BaseExpression], str | None]) -> bool:
    """Does the call give the output to the program (``stdout=PIPE``, ``capture_output=True``, a file),
    or might it (``**kwargs``)? ``stdout=None`` and ``stdout=subprocess.DEVNULL`` do not."""
    for arg in call.args:
        if arg.star == "**":
            return True
        if arg.keyword is not None and arg.keyword.value in _CAPTURE_KEYWORDS:
            value = arg.value
            if not (
                isinstance(value, cst.Name)
                and value.value in ("None", "False")
                or resolve(value) == "subprocess.DEVNULL"
            ):
                return True
    return False


def _splits(node: cst.Call, qualified: str | None) -> bool:
    """``shlex.split("...")`` or ``"...".split()``: a command string cut into its words."""
    if qualified == "shlex.split":
        return bool(node.args) and node.args[0].keyword is None
    func = node.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "split"
        and not node.args
        and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
    )


def _text(node: cst.BaseExpression) -> tuple[str | None, bool]:
    """(the text of a command expression, is it one plain string literal). Computed pieces are
    ``_HOLE``; None when the expression is not built from strings at all (a variable, a call)."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # malformed escapes
            return None, False
        if isinstance(value, bytes):
            return value.decode("latin-1"), False
        return value, True
    if isinstance(node, cst.ConcatenatedString):
        left, _ = _text(node.left)
        right, _ = _text(node.right)
        return (left or _HOLE) + _HOLE + (right or _HOLE), False
    if isinstance(node, cst.FormattedString):
        return "".join(p.value if isinstance(p, cst.FormattedStringText) else _HOLE for p in node.parts), False
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Modulo)):
        left, _ = _text(node.left)
        if left is None:
            return None, False
        if isinstance(node.operator, cst.Modulo):
            return left, False
        right, _ = _text(node.right)
        return left + _HOLE + (right or _HOLE), False
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "format"
        and isinstance(node.func.value, (cst.SimpleString, cst.ConcatenatedString))
    ):
        text, _ = _text(node.func.value)
        return text, False
    return None, False


def _string_like(model: cst.BaseExpression, value: str) -> cst.SimpleString:
    """A string literal of ``value`` in the quote style of ``model`` (a string literal, or "\"")."""
    quote: str = model.quote if isinstance(model, cst.SimpleString) else '"'
    if len(quote) == 3:
        quote = quote[0]
    if quote in value or "\\" in value or not value.isprintable():
        return cst.SimpleString(repr(value))  # (a user's new_name with quotes or escapes)
    prefix = model.prefix.lower().replace("b", "").replace("r", "") if isinstance(model, cst.SimpleString) else ""
    return cst.SimpleString(prefix + quote + value + quote)


def _words(command: str) -> list[str] | None:
    """The words of a rule's ``new_name`` as a program and its arguments (None: not a command line)."""
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes
        return None
    return words or None


def _set_arg(args: list[cst.Arg], index: int, value: cst.BaseExpression) -> None:
    args[index] = args[index].with_changes(value=value)
