"""What torch_npu's runtime migration (``torch_npu.contrib.transfer_to_npu``, turned on by
``TORCH_TRANSFER_TO_NPU=1``) patches, as plain data without torch.

Two users read it: the emulation of the migration (emulate/transfer.py, which applies each entry to
the emulated stack) and the conversion's runtime mode (runtime_mode.py, which leaves to the
migration what it patches). Facts from torch_npu's source (``SOURCE``), never its code.
"""

from __future__ import annotations

from .rule_versions import version_key

ENV = "TORCH_TRANSFER_TO_NPU"
SOURCE = (
    "Ascend/pytorch torch_npu/contrib/transfer_to_npu.py (commit 69ada4e; the older 023ee49 lacks the "
    "Generator proxy, default_stream, init_device_mesh, _new_group_with_tag, CUDAGraph and the cuda "
    "entry of the default device-backend map); TORCH_TRANSFER_TO_NPU: torch_npu/_init/core/optional_features.py"
)
# the first torch_npu release that reads TORCH_TRANSFER_TO_NPU (rule_versions.RELEASES)
SINCE_RELEASE = "26.0"
# The releases whose migration is known here, from transfer_to_npu.py on Ascend/pytorch's branches
# v2.10.0-26.0.0 (39b9d521e, 2026-04-13), v2.12.0-26.1.0 (33bda32cd, 2026-06-29) and master for the
# pre-release 26.2 (ee15004fe, 2026-08-13). Every entry of the tables below is in 26.0 (and in the
# older 69ada4e of SOURCE); what a later release adds is in ADDED, with the release.
RELEASES_COVERED = ("26.0", "26.1", "26.2")
ADDED = {
    # init_process_group / _new_group_with_tag: "cuda" -> "npu" in the backend string, beside "nccl" ->
    # "hccl" ("cpu:gloo,cuda:nccl" -> "cpu:gloo,npu:hccl"; commit 5112187ba)
    "backend string cuda": "26.1",
    "torch.cuda.default_generators": "26.1",  # torch_npu.npu.default_generators
    "TypedStorage.is_cuda": "26.1",  # TypedStorage.is_npu
    "tuple device_ids": "26.2",  # DDP/DeviceMesh device_ids given as a tuple (commit 7ac872e8a; a list before)
    "torch.cuda.memory._dump_snapshot": "26.2",  # torch.npu.memory._dump_snapshot (commit 8fba6a1d1)
}
# what the emulation (emulate/transfer.py) does not reproduce, with why
NOT_EMULATED = {
    "torch.cuda.memory._dump_snapshot": "the emulated torch_npu keeps no memory snapshots",
    "apis_config.json": "the wrapping of third-party functions that torch_npu's apis_config.json lists (its data)",
    "dynamo and inductor": "dynamo's disallowed callables, inductor's has_triton and get_gpu_type (dynamo does not run)",
}


def added_in(patch: str, release: str) -> bool:
    """Does the migration of torch_npu ``release`` make the later patch ``patch`` (a key of ADDED)?"""
    return version_key(release) >= version_key(ADDED[patch])


# torch functions whose device arguments the migration rewrites
TORCH_FUNCTIONS = (
    "logspace", "randint", "hann_window", "rand", "full_like", "ones_like", "rand_like", "randperm", "arange",
    "frombuffer", "normal", "_empty_per_channel_affine_quantized", "empty_strided", "empty_like", "scalar_tensor",
    "tril_indices", "bartlett_window", "ones", "sparse_coo_tensor", "randn", "kaiser_window", "tensor",
    "triu_indices", "as_tensor", "zeros", "randint_like", "full", "eye", "_sparse_csr_tensor_unsafe", "empty",
    "_sparse_coo_tensor_unsafe", "blackman_window", "zeros_like", "range", "sparse_csr_tensor", "randn_like",
    "from_file", "_cudnn_init_dropout_state", "_empty_affine_quantized", "linspace", "hamming_window",
    "empty_quantized", "_pin_memory", "autocast", "load", "set_default_device",
)  # fmt: skip
TENSOR_METHODS = (
    "new_empty",
    "new_empty_strided",
    "new_full",
    "new_ones",
    "new_tensor",
    "new_zeros",
    "to",
    "pin_memory",
)
MODULE_METHODS = ("to", "to_empty")
CUDA_FUNCTIONS = (
    "get_device_properties", "get_device_name", "get_device_capability", "list_gpu_processes", "set_device",
    "synchronize", "mem_get_info", "memory_stats", "memory_summary", "memory_allocated", "max_memory_allocated",
    "reset_max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_max_memory_cached",
    "reset_peak_memory_stats", "default_stream",
)  # fmt: skip
DEVICE_KEYWORDS = ("device", "device_type", "map_location", "device_id")
# torch.<left> takes the public names (__all__) of torch_npu.<right>
NAMESPACES = (
    ("cuda", "npu"),
    ("cuda.amp", "npu.amp"),
    ("cuda.random", "npu.random"),
    ("cuda.amp.autocast_mode", "npu.amp.autocast_mode"),
    ("cuda.amp.common", "npu.amp.common"),
    ("cuda.amp.grad_scaler", "npu.amp.grad_scaler"),
)
ORDINAL_METHODS = ("to", "to_empty")  # where a positional int is a device too
# torch.profiler names replaced by torch_npu.profiler's
PROFILER_NAMES = ("profile", "schedule", "tensorboard_trace_handler", "ProfilerAction", "ProfilerActivity")
# other callables whose device arguments (or, for the process group, "nccl") the migration rewrites
OTHER_CALLS = (
    "torch.cuda.device",
    "torch.UntypedStorage",
    "torch.Generator",
    "torch.utils._device.DeviceContext",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.device_mesh.init_device_mesh",
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
)
# Tensor.cuda, Module.cuda and Tensor.is_cuda are their NPU twins
TWIN_MEMBERS = ("cuda", "is_cuda")
