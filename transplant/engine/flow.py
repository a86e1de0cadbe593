"""Device and backend values that reach torch through a variable of any name.

``arg = "cuda:0"`` followed, anywhere in the file, by ``torch.device(arg)``, ``x.to(arg)``,
``device=arg`` or ``map_location=arg`` makes ``arg`` a device variable; ``init_process_group(b)``
or ``backend=b`` makes ``b`` a backend variable. Which names those are is read off the whole
source with a byte search (statements folded out of the skeleton count too: they are where such
uses usually are), before the traversal; the handlers (values.py) then rewrite the literal where the
variable is assigned. A name is a name for the whole file: a variable of the same spelling in
another function counts too, which only matters when it is also assigned a CUDA device literal.

Commands travel the same way: ``cmd = "nvidia-smi -L"`` followed by ``subprocess.run(cmd)``,
``os.system(cmd)``, ``check_output(cmd.split())`` or ``run(shlex.split(cmd))`` makes ``cmd`` a command
variable, whose assignment commands.py reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = rb"([A-Za-z_][A-Za-z0-9_]*)\s*[,)]"
DEVICE_USE = re.compile(rb"(?:\bdevice\s*\(|\.to\s*\(|\b(?:device|map_location|device_type)\s*=(?!=))\s*" + _NAME)
BACKEND_USE = re.compile(rb"(?:\binit_process_group\s*\(|\bbackend\s*=(?!=))\s*" + _NAME)
# the command argument of the runners of commands.py: first, or args=/cmd=, maybe split into words
_RUNNER = rb"\b(?:system|popen|getoutput|getstatusoutput|run|call|check_call|check_output|Popen|create_subprocess_shell|create_subprocess_exec)"
COMMAND_USE = re.compile(
    _RUNNER + rb"\s*\(\s*(?:(?:args|cmd|command)\s*=\s*)?(?:shlex\s*\.\s*split\s*\(\s*)?"
    rb"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\.\s*split\s*\(\s*\)\s*)?\)?\s*[,)]"
)


@dataclass(frozen=True)
class Flow:
    devices: frozenset[str] = frozenset()
    backends: frozenset[str] = frozenset()
    commands: frozenset[str] = frozenset()  # variables passed as the command of os/subprocess runners


NO_FLOW = Flow()


def flow_of(text: bytes) -> Flow:
    """The names ``text`` (a whole source) passes as a device, as a collective backend or as a command."""
    # every runner is spelled with one of these, in its call or in the import that binds it
    commands = (
        frozenset(m.group(1).decode() for m in COMMAND_USE.finditer(text))
        if (b"subprocess" in text or b"system" in text or b"popen" in text)
        else frozenset()
    )
    if (
        b"device" not in text
        and b".to" not in text
        and b"map_location" not in text
        and b"backend" not in text
        and b"init_process_group" not in text
    ):
        return Flow(commands=commands) if commands else NO_FLOW
    return Flow(
        frozenset(m.group(1).decode() for m in DEVICE_USE.finditer(text)),
        frozenset(m.group(1).decode() for m in BACKEND_USE.finditer(text)),
        commands,
    )
