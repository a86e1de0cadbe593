import torch
import torch.distributed as dist


def setup(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def to_device(batch, rank):
    return [t.to(f"cuda:{rank}") for t in batch]


def load(path):
    return torch.load(path, map_location="cuda:0")


def cleanup():
    # cuda.nccl has no NPU counterpart: reported, not rewritten
    torch.cuda.nccl.all_reduce([])
    dist.destroy_process_group()
