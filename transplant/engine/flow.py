"""Device and backend values that reach torch through a variable of any name.

``arg = "cuda:0"`` followed, anywhere in the file, by ``torch.device(arg)``, ``x.to(arg)``,
``device=arg`` or ``map_location=arg`` makes ``arg`` a device variable; ``init_process_group(b)``
or ``backend=b`` makes ``b`` a backend variable. Which names those are is read off the whole
source with a byte search (statements folded out of the skeleton count too: they are where such
uses usually are), before the traversal; the handlers (values.py) then rewrite the literal where the
variable is assigned. A name is a name for the whole file: a variable of the same spelling in
another function counts too, which only matters when it is also assigned a CUDA device literal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = rb"([A-Za-z_][A-Za-z0-9_]*)\s*[,)]"
DEVICE_USE = re.compile(rb"(?:\bdevice\s*\(|\.to\s*\(|\b(?:device|map_location|device_type)\s*=(?!=))\s*" + _NAME)
BACKEND_USE = re.compile(rb"(?:\binit_process_group\s*\(|\bbackend\s*=(?!=))\s*" + _NAME)


@dataclass(frozen=True)
class Flow:
    devices: frozenset[str] = frozenset()
    backends: frozenset[str] = frozenset()


NO_FLOW = Flow()


def flow_of(text: bytes) -> Flow:
    """The names ``text`` (a whole source) passes as a device or as a collective backend."""
    if b"device" not in text and b".to" not in text and b"map_location" not in text and b"backend" not in text \
            and b"init_process_group" not in text:
        return NO_FLOW
    return Flow(frozenset(m.group(1).decode() for m in DEVICE_USE.finditer(text)),
                frozenset(m.group(1).decode() for m in BACKEND_USE.finditer(text)))
