"""A small DDP job: every rank fits y = 3x + 1 on its own shard of synthetic
data; gradients are averaged over gloo. Rank 0 prints the loss."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")  # reads MASTER_ADDR/PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    x = torch.randn(256, 1)
    y = 3 * x + 1 + 0.01 * torch.randn(256, 1)
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(int(os.environ.get("EPOCHS", "20"))):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"epoch={epoch} world={world} loss={loss.item():.4f}", flush=True)
    w, b = model.module.weight.item(), model.module.bias.item()
    if rank == 0:
        print(f"done: w={w:.2f} b={b:.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
