"""Emulation of the NPU software stack (torch_npu) on the CPU or a CUDA GPU, for `transplant emulate`.

It runs a converted script in a process where ``import torch_npu`` gives an emulated torch_npu whose
"npu" device is the backing device. It is the only part of transplant that imports torch (the
user's), and no other command loads it; the converter never imports it.

    cli.py       the command line: checks, the stderr notice, running the script
    devices.py   "npu" as a device name: translation of npu devices for every torch call (the device mode), tensor and
                 module methods, autocast, GradScaler, the hccl backend, DistributedDataParallel
    npu_api.py   the torch_npu.npu namespace (devices, streams, events, memory, seeds, amp)
    properties.py  get_device_properties, get_device_name, mem_get_info: torch_npu's fields and checks
    accelerator.py  torch.accelerator answered as on an NPU host, from the emulated torch_npu.npu
    extras.py    torch_npu.profiler, torch_npu.optim, torch_npu.contrib, torch_npu.utils
    identity.py  --device-identity: "npu" as a Python backend, NPU tensors computed on the backing device
    composites.py  --device-identity: composites that pick their body by device type (LSTM, GRU, their
                 cells, attention) as the backing runs them; record_stream
    collectives.py  --device-identity: the emulated hccl's collectives (and DDP) on NPU tensors
    generators.py  --device-identity: torch.Generator("npu") as torch_npu makes it, the backing's numbers
    npus.py      the emulated NPUs under device identity: how many, which is selected, tensors on npu:i
    entries.py   --device-identity without --strict: no device mode; its jobs done at a few entry points
    memory.py    --device-identity on the CPU: memory statistics that count live NPU tensors as torch_npu does
    builds.py    CUDA-only extension builds (load_inline with cuda_sources, ...) fail naming the build
    compiling.py torch.compile runs eagerly (torch's disable=True), counted in the summary
    summary.py   what the run sent to the NPU, printed on stderr at the end (-q: not)
    strict.py    --strict: CUDA uses from the project's own files become errors naming file and line
    coverage.py  names torch_npu has that the emulator does not emulate, and why
    operators.py torch_npu's own operators (npu_*): importable, refused by name when used
    fallbacks.py TORCH_NPU_FALLBACK_CPU_DISABLE=1: the CPU fallbacks Ascend's sources name raise, as on an NPU
    shim/        the importable ``torch_npu`` package; on sys.path only in emulated processes

Settings travel in environment variables (so processes the script starts are emulated alike):
TRANSPLANT_EMULATE_BACKING (cpu|cuda), TRANSPLANT_EMULATE_STRICT (1 = strict),
TRANSPLANT_EMULATE_DEVICE_IDENTITY (0 = --no-device-identity; identity is the default), TRANSPLANT_EMULATE_QUIET (1 = -q),
TRANSPLANT_EMULATE_NPUS (how many NPUs, default 8), TRANSPLANT_EMULATE_TORCH_NPU (the torch_npu release
whose runtime migration --transfer-to-npu applies: --torch-npu), TRANSPLANT_EMULATE_PACKAGE (the folder
of this transplant package: a child run by another Python, one transplant is not installed in, loads it
from there).
"""

BACKING_ENV = "TRANSPLANT_EMULATE_BACKING"
STRICT_ENV = "TRANSPLANT_EMULATE_STRICT"
IDENTITY_ENV = "TRANSPLANT_EMULATE_DEVICE_IDENTITY"
QUIET_ENV = "TRANSPLANT_EMULATE_QUIET"
NPUS_ENV = "TRANSPLANT_EMULATE_NPUS"
PACKAGE_ENV = "TRANSPLANT_EMULATE_PACKAGE"  # (spelled out in shim/torch_npu, which cannot import this)
RELEASE_ENV = "TRANSPLANT_EMULATE_TORCH_NPU"
BACKINGS = ("cpu", "cuda")


class EmulationError(RuntimeError):
    """A use the emulator refuses: a CUDA use under --strict, or a torch_npu name it does not emulate."""
