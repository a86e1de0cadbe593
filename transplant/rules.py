"""Load, validate and index rule files.

Built-in rules (``rules/*.json``) and user rules (``-r``) share one JSON language, checked by
``rules/schema.json``. Loading produces a :class:`RuleSet`: plain dictionaries keyed by the
names the engine looks up, built once per process.
"""

from __future__ import annotations

import codecs
import json
import keyword
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from . import runtime_mode
from .nesting import nesting_error
from .resources import rules_dir
from .rule_versions import (
    DEFAULT_PYTORCH_VERSION,
    DEFAULT_TORCH_NPU,
    PYTORCH_VERSIONS,
    TORCH_NPU_RELEASES,
    StackError,
    holds,
    kept_rename,
    resolve_stack,
)

if TYPE_CHECKING:  # loaded only to check a user's rule file: most runs have none
    import jsonschema

__all__ = ["DEFAULT_PYTORCH_VERSION", "DEFAULT_TORCH_NPU", "PYTORCH_VERSIONS", "TORCH_NPU_RELEASES"]
AUTOLOAD_SINCE = (2, 5)  # PyTorch loads installed device extensions (torch_npu) on `import torch` since 2.5
# An integer device index (`device = 0`, `device=0`, `.to(0)`): with torch_npu loaded, PyTorch takes it
# for an NPU (engine/device_index.py). Matched as bytes, like the trigger words, so the pre-filter and
# the skeleton keep such a statement.
INDEX_DEVICE = re.compile(
    rb"(?:\b[A-Za-z_]*dev(?:ice)?[ \t]*=(?!=)[ \t]*|\.to[ \t]*\([ \t]*)\d+(?![\w.])"
    rb"(?=[ \t]*(?:[,);#\r\n]|\Z))"
)


class RuleError(Exception):
    """A rule file is unreadable or invalid; the message is one line naming file and place."""


@dataclass(frozen=True)
class Rule:
    """One entry of a rule file, with where it came from."""

    kind: str
    data: dict[str, Any]
    origin: str  # e.g. "device_api.json:FuncNameModifyRule[3]"
    user: bool = False  # from a -r file rather than the built-in rules

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


@dataclass
class RuleSet:
    """Rules indexed for the engine. Keys of the ``*_q`` maps are qualified dotted names."""

    rename_q: dict[str, Rule] = field(default_factory=dict)  # old qualified name -> rule
    module_q: dict[str, Rule] = field(default_factory=dict)  # old module -> rule (prefix)
    rename_bare: dict[str, Rule] = field(default_factory=dict)  # seed-style bare function names
    rename_method: dict[str, Rule] = field(default_factory=dict)  # x.NAME(...)
    rename_attribute: dict[str, Rule] = field(default_factory=dict)  # x.NAME
    args_q: dict[str, list[Rule]] = field(default_factory=dict)
    args_bare: dict[str, list[Rule]] = field(default_factory=dict)
    args_method: dict[str, list[Rule]] = field(default_factory=dict)
    device_q: dict[str, Rule] = field(default_factory=dict)
    device_method: dict[str, Rule] = field(default_factory=dict)
    unsupported_q: dict[str, Rule] = field(default_factory=dict)
    unsupported_method: dict[str, Rule] = field(default_factory=dict)  # on calls: x.NAME(...)
    unsupported_attribute: dict[str, Rule] = field(default_factory=dict)  # anywhere: x.NAME
    env: dict[str, Rule] = field(default_factory=dict)  # exact names (EnvVarModifyRule)
    env_prefixes: dict[str, Rule] = field(default_factory=dict)  # "NCCL_" for "NCCL_*": reported only
    commands: dict[str, Rule] = field(default_factory=dict)  # shell commands (ShellCommandRule)
    library_q: dict[str, Rule] = field(default_factory=dict)  # CUDA-only library module -> rule (prefix)
    triggers: tuple[bytes, ...] = ()  # any one of these (as bytes anywhere) may let a rule match
    # command words no other rule has: they may let a rule match only where a command can end
    # (not before a word character, ".", "+" or "-": shellcommands.py), not inside ``use_vllm_engine``
    command_triggers: tuple[bytes, ...] = ()
    calls: tuple[bytes, ...] = ()  # method names that trigger as calls only (see _call_pattern)
    # qualified rule names: anchor word -> the other words that must also occur as identifiers
    requires: dict[bytes, tuple[frozenset[bytes], ...]] = field(default_factory=dict)
    # the same for one statement (inert_words): without the libraries whose uses the engine does not
    # report one by one (reported_by project, per_use false), which a statement that only uses them
    # cannot make a rule's business (their imports, where they are reported, are never folded)
    statement_requires: dict[bytes, tuple[frozenset[bytes], ...]] = field(default_factory=dict)
    index_devices: bool = False  # report integer device indices (built-in behaviour: engine/device_index.py)
    autoload: bool = True  # the chosen PyTorch loads torch_npu by itself (AUTOLOAD_SINCE)
    pytorch_version: str = DEFAULT_PYTORCH_VERSION  # the stack the rules were chosen for
    torch_npu: str = DEFAULT_TORCH_NPU
    mode: str = (
        "full"  # the conversion's mode: "runtime" leaves to torch_npu's migration what it patches (runtime_mode.py)
    )

    # The pre-filter's patterns are built when first searched with: a source with a trigger word
    # never needs the others, and compiling them all is a tenth of a small run's start.
    @cached_property
    def trigger_words(self) -> tuple[bytes, ...]:
        """The trigger words that contain no other one: a source holds some trigger word exactly when
        it holds one of these (``is_cuda`` is found through ``cuda``). Searched with ``in``, which is
        several times faster than one alternation of them all."""
        kept: list[bytes] = []
        for word in sorted(set(self.triggers), key=lambda w: (len(w), w)):
            if not any(k in word for k in kept):
                kept.append(word)
        return tuple(kept)

    @cached_property
    def command_res(self) -> tuple[tuple[bytes, "re.Pattern[bytes]"], ...]:
        return tuple((w, re.compile(re.escape(w) + COMMAND_END)) for w in self.command_triggers)

    @cached_property
    def trigger_re(self) -> "re.Pattern[bytes]":
        """One pattern of all the trigger and command words: faster than ``in`` for each on a text of a
        few hundred bytes (a statement: inert_words), slower on a file."""
        commands = [re.escape(w) + COMMAND_END for w in self.command_triggers]
        return re.compile(b"|".join(filter(None, [_alternatives(self.triggers), *commands])) or b"(?!)")

    def has_trigger(self, data: bytes) -> bool:
        """Does a trigger word, or a command word where a command can end, occur in ``data``?"""
        if len(data) < SHORT_TEXT:
            return self.trigger_re.search(data) is not None
        return any(w in data for w in self.trigger_words) or any(
            w in data and p.search(data) is not None for w, p in self.command_res
        )

    @cached_property
    def library_words(self) -> tuple[tuple[bytes, tuple[bytes, ...]], ...]:
        """The library rules' modules as the words a source that uses one spells: each first name part
        with the last parts of its modules (``nvidia`` -> ``dali``, ...; a one-part module's last
        part is its first). guards/markers.py searches each first part once."""
        lasts: dict[bytes, set[bytes]] = {}
        for module in self.library_q:
            parts = module.split(".")
            lasts.setdefault(parts[0].encode(), set()).add(parts[-1].encode())
        return tuple((first, tuple(sorted(rest))) for first, rest in sorted(lasts.items()))

    def env_rule(self, name: str) -> Rule | None:
        """The rule for environment variable ``name``: its exact rule, else the longest prefix rule."""
        rule = self.env.get(name)
        if rule is not None:
            return rule
        prefix = max((p for p in self.env_prefixes if name.startswith(p) and len(name) > len(p)), key=len, default=None)
        return self.env_prefixes[prefix] if prefix is not None else None

    def new_name(self, qualified: str) -> tuple[str, Rule] | None:
        """The new qualified name for ``qualified`` (exact rule, else module prefix rule)."""
        rule = self.rename_q.get(qualified)
        if rule is not None:
            return rule["new_name"], rule
        parts = qualified.split(".")
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            rule = self.module_q.get(prefix)
            if rule is not None:
                new_prefix = module_new_name(rule)
                return ".".join([new_prefix, *parts[i:]]), rule
        return None

    def library_of(self, qualified: str) -> Rule | None:
        """The LibraryRule of the longest library module ``qualified`` is in, if any (None for a name
        the rule lists as portable)."""
        if not self.library_q:
            return None
        parts = qualified.split(".")
        for i in range(len(parts), 0, -1):
            rule = self.library_q.get(".".join(parts[:i]))
            if rule is not None:
                # an op the library also builds for NPU (DeepSpeedCPUAdam) is no CUDA use
                portable = rule.get("portable", ())
                if any(qualified == p or qualified.startswith(p + ".") for p in portable):
                    return None
                return rule
        return None

    def known_modules(self) -> frozenset[str]:
        """Every dotted prefix of a name some rule matches by qualified name ("torch.cuda.amp" for
        "torch.cuda.amp.GradScaler"): modules whose members the rules know."""
        known = self.__dict__.get("_known_modules")
        if known is None:
            names = {*self.rename_q, *self.module_q, *self.unsupported_q, *self.args_q, *self.device_q}
            known = frozenset(n.rsplit(".", i)[0] for n in names for i in range(1, n.count(".") + 1))
            self.__dict__["_known_modules"] = known
        return known

    def may_match(self, data: bytes) -> bool:
        """Cheap byte-level pre-filter: can any rule possibly match in ``data``?

        False only when no rule can change or report anything in ``data`` (see ``_triggers``):
        no trigger word occurs anywhere, no qualified rule name has all its parts spelled as
        identifiers, and nothing could spell a word without its bytes (string escapes, a
        non-UTF-8 source encoding).
        """
        last = self.__dict__.get("_last_match")
        if last is not None and last[0] is data:  # (asked again for the same file: the pre-check, then the
            return last[1]  # conversion)
        found = self._may_match(data)
        self.__dict__["_last_match"] = (data, found)
        return found

    def _may_match(self, data: bytes) -> bool:
        if self._triggered(data) or may_hide_words(data):
            return True
        if not self.requires:
            return False
        words = words_of(data.removeprefix(codecs.BOM_UTF8))
        if b"\\" in data:  # in a notebook's JSON "\ncudnn" is one word: read it also with "\n" as a break
            words.update(words_of(_ESCAPED_BREAK.sub(b" ", data)))
        return self._requires_met(words)

    def _triggered(self, data: bytes) -> bool:
        """Does a trigger word, or a call-only name called, occur in ``data``?"""
        return (
            self.has_trigger(data)
            or self._has_call(data)
            or self.index_devices
            and INDEX_DEVICE.search(data) is not None
        )

    def _has_call(self, data: bytes) -> bool:
        """Does one of the call-only names occur in ``data`` as a whole identifier called? Only the
        names ``data`` holds are searched for, in one pattern made for them (one alternation of all
        the names tries each of them at every letter that starts one)."""
        if not self.calls:
            return False
        present = self.calls if len(data) < SHORT_TEXT else tuple(name for name in self.calls if name in data)
        if not present:
            return False
        patterns: dict[tuple[bytes, ...], re.Pattern[bytes]] = self.__dict__.setdefault("_call_res", {})
        pattern = patterns.get(present)
        if pattern is None:
            pattern = patterns[present] = _call_pattern(present)
        m = pattern.search(data)
        while m is not None:
            i = m.start()
            if i == 0 or data[i - 1] not in _IDENT_BYTES or (i > 1 and data[i - 2] == 0x5C and data[i - 1] in b"nrt"):
                return True  # (after an escaped line break, as in a notebook's JSON, a word starts)
            m = pattern.search(data, i + 1)
        return False

    def _requires_met(
        self, words: set[bytes], requires: dict[bytes, tuple[frozenset[bytes], ...]] | None = None
    ) -> bool:
        requires = self.requires if requires is None else requires
        for anchor in words.intersection(requires):
            if any(rest <= words for rest in requires[anchor]):
                return True
        return False

    def inert_words(self, text: bytes, aliases: dict[bytes, frozenset[bytes]]) -> frozenset[bytes] | None:
        """The identifier words of ``text``, one statement of a file, when no rule can match in it;
        None when one may. ``aliases`` maps the file's import-bound names to the parts of the
        qualified names they stand for. The caller has checked the file's encoding
        (foreign_encoding) and ``text`` for escapes (escapes_words).
        """
        if self._triggered(text):
            return None
        words = words_of(text.removeprefix(codecs.BOM_UTF8))
        expanded = set(words)
        for name in words.intersection(aliases):
            parts = aliases[name]
            if any(self.has_trigger(p) for p in parts):
                return None  # e.g. "nccl" bound by "import torch.cuda.nccl as nccl"
            expanded |= parts
        return None if self._requires_met(expanded, self.statement_requires) else frozenset(words)


# Escapes that can spell an ASCII letter, digit, "_", ":" or "+-./" (of command names: nvidia-smi) in a
# string literal (Python or JSON): \x63 \x2d \u0063 \U00000063 \N{...} \143, and a backslash-newline
# inside a word ("cu\<newline>da", also as it appears in a notebook's JSON).
_ESCAPE = re.compile(rb"\\(?:x[3-7]|x2[b-fB-F]|u00[3-7]|u002[b-fB-F]|U0000|N\{|[0-7]{2,3}|[\r\n]|\\\\[nr])")
_ESCAPED_BREAK = re.compile(rb"\\[nrt]")
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)
_ASCII_SUPERSETS = frozenset({b"utf-8", b"utf8", b"utf_8", b"ascii", b"us-ascii"})
_IDENT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_IDENT_BYTES = _IDENT | frozenset(range(0x80, 0x100))  # what continues a word (see words_of)
# below this many bytes, one pattern of all the words a pre-check looks for is searched; above, each word
# with ``in`` (the pattern tries its words at every byte that starts one of them)
SHORT_TEXT = 512
# every byte that is not part of a word becomes a blank
_BREAKS = bytes(c if c in _IDENT_BYTES else 0x20 for c in range(256))


def words_of(data: bytes) -> set[bytes]:
    """The identifier-like runs of ``data``: letters, digits, "_" and non-ASCII bytes (which belong to
    words, as in Python identifiers). (One ``translate`` and ``split``: 1.5x faster than a regular
    expression's ``findall``.)"""
    return set(data.translate(_BREAKS).split())


def may_hide_words(data: bytes) -> bool:
    """Could ``data`` spell a trigger word without containing its bytes?"""
    return foreign_encoding(data) or escapes_words(data)


def foreign_encoding(data: bytes) -> bool:
    """Is ``data`` (a whole source) in an encoding that is not a superset of ASCII?"""
    if data.startswith((b"\xfe\xff", b"\xff\xfe", b"\x00\x00\xfe\xff")):  # UTF-16/32 byte order marks
        return True
    if b"coding" in data[:400]:
        head = b"\n".join(data.split(b"\n", 2)[:2])
        m = _CODING.search(head)
        if m is not None and m.group(1).lower().replace(b"_", b"-") not in _ASCII_SUPERSETS:
            return True
    return False


def escapes_words(data: bytes) -> bool:
    """Could an escape sequence in ``data`` spell a word character without its byte?"""
    if b"\\" not in data:
        return False
    for m in _ESCAPE.finditer(data):
        if data[m.start() + 1] not in b"\r\n\\":
            return True
        if m.start() > 0 and data[m.start() - 1] in _IDENT:  # a word continued on the next line
            return True
    return False


def module_new_name(rule: Rule) -> str:
    return f"{rule['parent_module']}.{rule['new_name']}"


def module_old_name(rule: Rule) -> str:
    return f"{rule['parent_module']}.{rule['old_name']}"


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads((rules_dir() / "schema.json").read_text(encoding="utf-8"))


def _json_path(error: jsonschema.ValidationError) -> str:
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def read_rule_file(path: Path, *, validate: bool = True) -> dict[str, Any]:
    """Read and schema-check one rule file; raise RuleError with a one-line message.

    ``validate=False`` is for the shipped built-in files only: the test suite validates each of
    them, and skipping the schema check saves about 90 ms on every run (editors, pre-commit).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is fine
    except FileNotFoundError:
        raise RuleError(f"{path}: rule file not found") from None
    except IsADirectoryError:
        raise RuleError(f"{path}: is a directory, not a rule file") from None
    except UnicodeDecodeError as exc:
        raise RuleError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise RuleError(f"{path}: not a rule file: JSON nested too deeply") from None
    if not validate:
        return data
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        err = _best_error(errors)
        raise RuleError(f"{path}: {_json_path(err)}: {_describe(err)}")
    _check_python(path, data)
    return data


def _best_error(errors: list[jsonschema.ValidationError]) -> jsonschema.ValidationError:
    # A key whose value is invalid also makes it "unevaluated"; report the value, not the key.
    import jsonschema.exceptions

    specific = [e for e in errors if e.validator != "unevaluatedProperties"] or errors
    best = jsonschema.exceptions.best_match(specific)
    return best if best is not None else specific[0]


def _describe(err: jsonschema.ValidationError) -> str:
    if err.validator == "additionalProperties" and err.absolute_path and list(err.absolute_path)[-1] == "rules":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return f"unknown rule kind {', '.join(map(repr, extra))} (known: {', '.join(err.schema['properties'])})"
    if err.validator == "unevaluatedProperties":
        return err.message.replace("Unevaluated properties are not allowed", "unknown key(s)")
    if err.validator == "pattern":
        if err.validator_value.startswith("^[A-Z_]"):
            return f"{err.instance!r} is not an environment variable name (A-Z, 0-9 and _)"
        return f"{err.instance!r} is not a valid Python name"
    if err.validator == "anyOf" and "required" in str(err.schema):
        return "needs arg_idx or an argument name"
    if err.validator == "not" and err.validator_value == {"required": ["new_name"]}:
        return "a prefix (NAME*) is reported, not renamed: it cannot have a new_name"
    return err.message


def _check_python(path: Path, data: dict[str, Any]) -> None:
    """Checks the schema cannot express: keywords as names, expressions that do not parse."""
    from .codecache import compiled_dataclasses

    with compiled_dataclasses():  # libcst's first import in this process, as the engine's would be
        import libcst as cst

    for kind, entries in data.get("rules", {}).items():
        for i, entry in enumerate(entries):
            where = f"{path}: rules.{kind}[{i}]"
            for key in ("old_name", "new_name", "func_name", "name", "parent_module", "arg_name", "new_arg_name"):
                value = entry.get(key)
                if isinstance(value, str) and any(keyword.iskeyword(p) for p in value.split(".")):
                    raise RuleError(f"{where}.{key}: {value!r} is not a valid Python name (keyword)")
            for key in ("arg_new", "arg_old"):
                if key in entry:
                    if nesting_error(entry[key].encode()):  # would crash libcst's parser
                        raise RuleError(f"{where}.{key}: expression nested too deeply")
                    try:
                        cst.parse_expression(entry[key])
                    except (cst.ParserSyntaxError, RecursionError):
                        raise RuleError(f"{where}.{key}: {entry[key]!r} is not a Python expression") from None


def builtin_rule_files(pytorch_version: str) -> list[Path]:
    base = rules_dir()
    files = sorted(p for p in base.glob("*.json") if p.name != "schema.json")
    files.append(base / "npu_support" / f"unsupported_{pytorch_version}.json")
    return files


def load_ruleset(
    user_rules: Iterable[Path] = (),
    *,
    specify_device: bool = False,
    similar: bool = False,
    pytorch_version: str | None = DEFAULT_PYTORCH_VERSION,
    torch_npu: str | None = None,
    builtin: bool = True,
    mode: str = "full",
) -> RuleSet:
    """Load built-in and user rules into one RuleSet for PyTorch ``pytorch_version`` with the
    torch_npu release ``torch_npu`` (None: the newest that ships the version; a version of None
    with a release: the one that release recommends). User rules win
    over built-in ones. ``mode``: "full" or "runtime" (runtime_mode.py)."""
    try:
        pytorch_version, release = resolve_stack(pytorch_version, torch_npu)
    except StackError as exc:
        raise RuleError(str(exc)) from None
    try:
        runtime_mode.check(mode, release)
    except runtime_mode.ModeError as exc:
        raise RuleError(str(exc)) from None
    options = {"specify_device": specify_device, "similar": similar}
    builtin_files = builtin_rule_files(pytorch_version) if builtin else []
    files = builtin_files + [Path(p) for p in user_rules]
    rs = RuleSet(pytorch_version=pytorch_version, torch_npu=release, mode=mode)
    kept: list[Rule] = []
    for number, path in enumerate(files):
        user = number >= len(builtin_files)  # shipped files are validated by the tests, not here
        data = read_rule_file(path, validate=user)
        for kind, entries in data["rules"].items():
            for i, entry in enumerate(entries):
                if entry.get("option") and not options[entry["option"]]:
                    continue
                origin = f"{path.name}:{kind}[{i}]"
                if not holds(entry, pytorch_version, release):
                    found = kept_rename(kind, entry, pytorch_version)
                    if found is not None:
                        kept.append(Rule("UnsupportedRule", found, origin, user=user))
                    continue
                _index(rs, Rule(kind, entry, origin, user=user))
    for rule in kept:  # reported only where no other rule renames the name for this stack
        if rule["name"] not in rs.rename_q:
            _index(rs, rule)
    _add_new_name_aliases(rs)
    rs.triggers, rs.command_triggers, rs.calls, rs.requires, rs.statement_requires = _triggers(rs)
    rs.index_devices = builtin
    rs.autoload = tuple(int(part) for part in pytorch_version.split(".")) >= AUTOLOAD_SINCE
    return rs


_SEVERITY = {"note": 0, "warning": 1, "error": 2}


def _index(rs: RuleSet, rule: Rule) -> None:
    on = rule.get("on", "name")
    kind = rule.kind
    if kind == "FuncNameModifyRule":
        old = rule["old_name"]
        if on == "method":
            rs.rename_method[old.rsplit(".", 1)[-1]] = rule
        elif on == "attribute":
            rs.rename_attribute[old.rsplit(".", 1)[-1]] = rule
        elif "." in old:
            rs.rename_q[old] = rule
        else:
            rs.rename_bare[old] = rule
    elif kind == "ModuleNameModifyRule":
        rs.module_q[module_old_name(rule)] = rule
    elif kind == "ArgsModifyRule":
        name = rule["func_name"]
        if on == "method":
            rs.args_method.setdefault(name.rsplit(".", 1)[-1], []).append(rule)
        elif "." in name:
            rs.args_q.setdefault(name, []).append(rule)
        else:
            rs.args_bare.setdefault(name, []).append(rule)
    elif kind == "DeviceArgRule":
        name = rule["func_name"]
        if on == "method" or "." not in name:
            rs.device_method[name.rsplit(".", 1)[-1]] = rule
        else:
            rs.device_q[name] = rule
    elif kind == "UnsupportedRule":
        member = rule["name"].rsplit(".", 1)[-1]
        table, key = (
            (rs.unsupported_method, member)
            if on == "method"
            else (rs.unsupported_attribute, member)
            if on == "attribute"
            else (rs.unsupported_q, rule["name"])
        )
        previous = table.get(key)
        # A built-in "no counterpart" error or hand-written warning (with its message and suggestion)
        # is more specific than the generic per-version "unsupported" warning loaded after it; user
        # rules always win.
        severity = _SEVERITY[rule.get("level", "warning")]
        before = _SEVERITY[previous.get("level", "warning")] if previous is not None else 0
        generic = version_listed(rule) and not version_listed(previous)
        if previous is None or rule.user or severity > before or (severity == before and not generic):
            table[key] = rule
    elif kind == "EnvVarModifyRule":
        if rule["old_name"].endswith("*"):
            rs.env_prefixes[rule["old_name"][:-1]] = rule
        else:
            rs.env[rule["old_name"]] = rule
    elif kind == "ShellCommandRule":
        rs.commands[rule["old_name"]] = rule
    elif kind == "LibraryRule":
        rs.library_q[rule["module"]] = rule


def version_listed(rule: Rule | None) -> bool:
    """Is ``rule`` one of the generated per-version lists (rules/npu_support/unsupported_V.json)?"""
    return rule is not None and rule.origin.startswith("unsupported_")


def _add_new_name_aliases(rs: RuleSet) -> None:
    """Argument rules keyed by an old name also apply once the name itself was renamed.

    ``torch.cuda.set_device(x)`` and its rewrite ``torch_npu.npu.set_device(x)`` are the same
    function; indexing both keeps argument rules idempotent and order-independent.
    """
    tables: tuple[dict[str, Any], ...] = (rs.args_q, rs.device_q)
    for table in tables:
        for name in list(table):
            found = rs.new_name(name)
            if found and found[0] not in table:
                table[found[0]] = table[name]


def _alternatives(words: Iterable[bytes]) -> bytes:
    """A regular expression for any of ``words`` (longest first); b"" for none."""
    return b"|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w)))


# The engine rewrites CUDA device strings ("cuda", "cuda:0", f"cuda:{i}", ...) wherever they are
# devices, with or without a rule naming the function (engine.DEVICE_STR and friends).
DEVICE_WORD = "cuda"
BACKEND_WORD = "nccl"  # engine: variables, parameters and argparse defaults named *backend*


def _call_pattern(calls: Iterable[bytes]) -> "re.Pattern[bytes]":
    """``calls`` (one or more) as the name of a call: the name, then only blanks, comments or line
    continuations before the "(" (an escaped newline, as in a notebook's JSON, counts as a blank).
    That the name starts a word is checked by RuleSet._has_call: a look-behind here makes the search
    5x slower."""
    return re.compile(b"(?:" + _alternatives(calls) + rb")(?:[ \t\r\n\f]|\\[nrt]?|#[^\r\n]*)*\(")


# what follows a command word where shellcommands.py takes it for a command: no word character, ".",
# "+" or "-" (its pattern's look-ahead; bytes patterns, so \w is ASCII there as here)
COMMAND_END = rb"(?![\w.+-])"


def _triggers(
    rs: RuleSet,
) -> tuple[
    tuple[bytes, ...],
    tuple[bytes, ...],
    tuple[bytes, ...],
    dict[bytes, tuple[frozenset[bytes], ...]],
    dict[bytes, tuple[frozenset[bytes], ...]],
]:
    """What must occur in a source for any rule to change or report something there.

    Returns (words, commands, calls, requires). A rule can match in a file only if one of ``words``
    occurs in it as bytes, one of ``commands`` (command words that are no other rule's word) as bytes
    that no word character, ".", "+" or "-" follows, or one of ``calls`` as the name of a call (``x.to_dense(``: unsupported-API
    rules on methods, which the engine checks on calls only), or if for some qualified name all
    of its dotted parts occur in it as identifiers (``requires``: one part, the anchor, -> the
    sets of the other parts that go with it).

    Why this is sound: the engine resolves ``a.b.c`` through the file's imports, so a qualified
    name matches only where each of its parts is spelled as an identifier, either in the
    reference or in the import that binds its prefix (``import torch.cuda as tc``). Bare, method
    and attribute names, environment variables and shell commands (in a shell line, or in a string
    Python runs: engine/commands.py) are matched as they are spelled. Device-
    argument rules and generic device keywords act only on strings containing ``cuda``, backend
    values (``backend = "nccl"``) only on ``nccl``. String
    values spelled with escapes are the one way to match without the bytes; may_match checks
    for those separately.
    """
    words: set[str] = {DEVICE_WORD, BACKEND_WORD}
    for table in (
        rs.rename_bare,
        rs.rename_method,
        rs.rename_attribute,
        rs.args_bare,
        rs.args_method,
        rs.env,
        rs.env_prefixes,
    ):
        words.update(table)
    words.update(rs.unsupported_attribute)
    # a command runs only where shellcommands.py's pattern finds it, which is never before a word
    # character, ".", "+" or "-": "vllm" in "use_vllm_engine" or "vllm.LLM" runs nothing
    commands = set(rs.commands) - words
    calls = set(rs.unsupported_method)
    needs: dict[bytes, set[frozenset[bytes]]] = {}
    statement_needs: dict[bytes, set[frozenset[bytes]]] = {}
    # device-argument rules whose device defaults to CUDA act on calls without any "cuda" string
    default_cuda = {name for name, rule in rs.device_q.items() if rule.get("default_cuda")}
    others = {*rs.rename_q, *rs.module_q, *rs.unsupported_q, *rs.args_q, *default_cuda}
    for name in others | set(rs.library_q):
        parts = name.split(".")
        if any(w in p for p in parts for w in words):
            continue  # implied: one of its parts contains a word that is searched anyway
        # anchor: the longest part (rarely the root, which is usually "torch")
        anchor = max(parts[1:] or parts, key=lambda p: (len(p), p))
        rest = frozenset(p.encode() for p in parts if p != anchor)
        needs.setdefault(anchor.encode(), set()).add(rest)
        if name in others or not _reported_at_import(rs.library_q[name]):
            statement_needs.setdefault(anchor.encode(), set()).add(rest)
    return (
        tuple(sorted(w.encode() for w in words)),
        tuple(sorted(c.encode() for c in commands)),
        tuple(sorted(c.encode() for c in calls)),
        {anchor: tuple(sorted(rests, key=sorted)) for anchor, rests in needs.items()},
        {anchor: tuple(sorted(rests, key=sorted)) for anchor, rests in statement_needs.items()},
    )


def _reported_at_import(rule: Rule) -> bool:
    """Does the engine leave the uses of this library unreported (the project scan reports it, or its
    import stands for the file's uses)? A statement that only uses it is then no rule's business."""
    return rule.get("reported_by") == "project" or rule.get("per_use") is False
