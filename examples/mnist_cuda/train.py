"""Train a small MNIST-like classifier on one GPU."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader, TensorDataset

from model import Net


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--epochs", type=int, default=2)
    return parser.parse_args()


def main():
    args = get_args()
    torch.manual_seed(0)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(0)
        torch.cuda.set_device(0)
    device = torch.device(args.device if torch.cuda.is_available() else "cpu")
    data = TensorDataset(torch.randn(256, 1, 28, 28), torch.randint(0, 10, (256,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    model = Net().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = GradScaler()
    for epoch in range(args.epochs):
        for images, target in loader:
            images, target = images.to(device), target.cuda(non_blocking=True)
            with autocast():
                loss = F.cross_entropy(model(images), target)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        torch.cuda.synchronize()
        print(f"epoch {epoch} loss {loss.item():.4f} mem {torch.cuda.max_memory_allocated()}")
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
