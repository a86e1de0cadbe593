"""transplant: migrate CUDA PyTorch code to Ascend NPU (torch_npu)."""

__version__ = "0.1.0"
