"""The single traversal of a file: one libcst transformer made of the handlers of each concern.

Each handler class owns the ``visit_X``/``leave_X`` methods of its concern and no two define the
same one, so libcst's dispatch by node type runs them all in one pass:

* scopes.py      scopes and name resolution (what a dotted name stands for here)
* references.py  renames and findings of dotted names and attributes
* calls.py       argument, device-argument, environment-keyword and method rules of calls
* commands.py    shell commands run from Python (os.system, subprocess), called from calls.py
* values.py      device/backend values by their place (assignments, parameters, dicts)
* device_tests.py  tests of a device/backend value (comparisons, startswith, match, backend maps)
* argv.py        command lines written as lists (``["--device", "cuda"]``)
* device_names.py  collections of accepted device names gain "npu" beside "cuda"
* device_index.py  integer device indices (``device = 0``, ``.to(0)``), which mean the NPU with torch_npu
* members.py     the project's own definitions of renamed members (``def cuda(self)`` in a class)
* redirects.py   assignments to torch.cuda names (another backend's patches): kept, never rewritten
* named_strings.py  strings naming renamed APIs (``@patch("torch.cuda.synchronize")``, getattr pairs)
* target_members.py  members a renamed class's target lacks (``ProfilerActivity.XPU`` stays on torch)
* receivers.py   evidence that the object of ``x.mode()`` is a tensor (else the row is a guess, a note)
* imports.py     each import statement's rewrite plan
* call_keywords.py  keywords a renamed callable's target needs (``torch.amp.custom_fwd(device_type="npu")``)

Handlers meet in ``State`` (state.py): the records, the replacements of nodes, the uses of each
import. A new rule kind adds a handler class here, with its matching and its records.
"""

from __future__ import annotations

from .argv import ArgvHandlers
from .call_keywords import CallKeywordHandlers
from .calls import CallHandlers
from .commands import CommandHandlers
from .device_index import DeviceIndexHandlers
from .device_names import DeviceNameHandlers
from .imports import ImportHandlers
from .members import MemberHandlers
from .named_strings import NamedStringHandlers
from .redirects import RedirectHandlers
from .receivers import ReceiverHandlers
from .references import ReferenceHandlers
from .target_members import TargetMemberHandlers
from .scopes import ScopeHandlers
from .device_tests import DeviceTestHandlers


class Converter(
    ScopeHandlers,
    ReferenceHandlers,
    CallHandlers,
    CommandHandlers,
    DeviceTestHandlers,
    ArgvHandlers,
    DeviceIndexHandlers,
    DeviceNameHandlers,
    MemberHandlers,
    RedirectHandlers,
    NamedStringHandlers,
    TargetMemberHandlers,
    ReceiverHandlers,
    ImportHandlers,
    CallKeywordHandlers,
):
    """Applies every rule in one traversal and collects pending records (see the module docstring)."""
