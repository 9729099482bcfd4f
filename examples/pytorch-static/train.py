"""A small DDP job: every rank fits y = 3x + 1 on its own shard of synthetic
data; gradients are averaged over gloo. Rank 0 prints the loss."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

try:
    import muster_progress  # examples/progress: rank 0's progress for `muster get`
except ImportError:  # run outside the example's job
    muster_progress = None


def main():
    dist.init_process_group("gloo")  # reads MASTER_ADDR/PORT, RANK, WORLD_SIZE
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    x = torch.randn(256, 1)
    y = 3 * x + 1 + 0.01 * torch.randn(256, 1)
    model = DDP(torch.nn.Linear(1, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    epochs = int(os.environ.get("EPOCHS", "20"))
    for epoch in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"epoch={epoch} world={world} loss={loss.item():.4f}", flush=True)
        if muster_progress:
            muster_progress.report(epoch=epoch + 1, total_epochs=epochs, loss=loss.item())
    w, b = model.module.weight.item(), model.module.bias.item()
    if rank == 0:
        print(f"done: w={w:.2f} b={b:.2f}", flush=True)
        if muster_progress:
            muster_progress.done()  # the last report, for status once this pod has ended
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
