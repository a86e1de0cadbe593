"""The code distributed mode adds to the entry file: the process-group set-up and rank helpers.

``HELPERS`` is inserted after the imports once, ``INDEX_HELPER`` after it when a fixed device index
was rewritten; their function names are how a second conversion recognises them (``HELPER_NAMES``).
Plain text, no planning.
"""

SETUP_FUNCTION = "init_distributed_npu"
INDEX_FUNCTION = "npu_index"
HELPER_NAMES = (
    "_npu_launch_env",
    SETUP_FUNCTION,
    "_npu_leave_group",
    "npu_rank",
    "npu_world_size",
    "npu_unwrap",
    INDEX_FUNCTION,
)
HELPERS = '''\
def _npu_launch_env():
    """Rank, world size and NPU of this process as given by run_distributed_npu.sh (RANK_ID,
    RANK_SIZE, DEVICE_ID) or torchrun (RANK, WORLD_SIZE, LOCAL_RANK); None for a single process."""
    env = os.environ
    if "RANK_ID" in env:
        rank, world_size, device = env["RANK_ID"], env.get("RANK_SIZE", "1"), env.get("DEVICE_ID", env["RANK_ID"])
    else:
        rank, world_size, device = env.get("RANK", "0"), env.get("WORLD_SIZE", "1"), env.get("LOCAL_RANK", "0")
    if int(world_size) <= 1:
        return None
    return int(rank), int(world_size), int(device)


def init_distributed_npu():
    """Select this process's NPU and join the hccl process group; a single process is left alone."""
    launch = _npu_launch_env()
    if launch is None or torch.distributed.is_initialized():
        return
    rank, world_size, device = launch
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    torch_npu.npu.set_device(device)
    torch.distributed.init_process_group(backend="hccl", rank=rank, world_size=world_size)
    atexit.register(_npu_leave_group)


def _npu_leave_group():
    """Leave the process group when the script ends, all processes together (unless the script
    has left it already)."""
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def npu_rank():
    """Rank of this process (0 when not distributed)."""
    return torch.distributed.get_rank() if torch.distributed.is_initialized() else 0


def npu_world_size():
    """Number of training processes (1 when not distributed)."""
    return torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1


def npu_unwrap(model):
    """The model inside a DistributedDataParallel wrapper, or the model itself."""
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model
'''

# added after HELPERS when the entry file has a fixed device index (passes/indices.py)
INDEX_HELPER = '''\
def npu_index(index):
    """The NPU of this process when distributed (the one init_distributed_npu selects; known before it
    runs, so that module-level devices follow it too), else ``index``."""
    launch = _npu_launch_env()
    return index if launch is None else launch[2]
'''
