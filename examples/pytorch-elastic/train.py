"""Elastic training under torchrun: an MLP fits synthetic regression data
with DDP over gloo. Rank 0 saves a checkpoint at the end of every epoch to
CKPT_DIR (a volume every pod shares); every (re)start of the world resumes
from it. World size, epoch and loss are printed as key=value lines that
`muster` and the demo read."""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

try:
    import muster_progress  # examples/progress: rank 0's progress for `muster get`
except ImportError:  # run outside the example's job
    muster_progress = None

EPOCHS = int(os.environ.get("EPOCHS", "24"))
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0.05"))  # stands in for real compute
CKPT = os.path.join(os.environ.get("CKPT_DIR", "/tmp"), "checkpoint.pt")


def log(**kv):
    print(" ".join(f"{k}={v}" for k, v in kv.items()), flush=True)


def data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 16, generator=g)
    w = torch.randn(16, 1, generator=g)
    return TensorDataset(x, x @ w + 0.1 * torch.randn(2048, 1, generator=g))


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = 0
    if os.path.exists(CKPT):
        state = torch.load(CKPT)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"] + 1
        if rank == 0:
            log(event="resumed", epoch=start, world=world, restart=restart)
    elif rank == 0:
        log(event="started", world=world)
    ddp = DDP(model)
    dataset = data()
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    steps = len(loader)
    for epoch in range(start, EPOCHS):
        sampler.set_epoch(epoch)
        total, n = 0.0, 0
        began = time.monotonic()
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x), y)
            loss.backward()
            opt.step()
            total, n = total + loss.item(), n + 1
            time.sleep(STEP_SECONDS)
            if muster_progress:
                rate = n * len(x) * world / max(time.monotonic() - began, 1e-6)
                muster_progress.report(step=epoch * steps + n, total_steps=EPOCHS * steps, epoch=epoch,
                                       total_epochs=EPOCHS, samples_per_second=rate, loss=loss.item())
        mean = torch.tensor([total / n])
        dist.all_reduce(mean)
        if rank == 0:
            tmp = CKPT + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, tmp)
            os.replace(tmp, CKPT)  # a reader never sees half a checkpoint
            log(event="epoch", epoch=epoch, world=world, loss=f"{mean.item() / world:.4f}")
        dist.barrier()
    if rank == 0:
        log(event="finished", epochs=EPOCHS, world=world)
        if muster_progress:
            muster_progress.report(step=EPOCHS * steps, total_steps=EPOCHS * steps, epoch=EPOCHS,
                                   total_epochs=EPOCHS)
            muster_progress.done()  # the last report, for status once this pod has ended
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
