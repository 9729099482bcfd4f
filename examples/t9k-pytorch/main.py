"""ImageNet-style elastic training on a tiny synthetic dataset.

This plays the part of pytorch/elastic's examples/imagenet/main.py, which the
FrameworkController, KubeDL and torchelastic examples all run, without
ImageNet: the images are 3x16x16 tensors drawn around one random prototype
per class (the same on every node, from a fixed seed), and the model is a
small CNN, so an epoch takes seconds on a CPU. What it keeps from the
original is what matters to an elastic job:

* it runs under torchrun (or torchelastic's launcher) and reads RANK,
  WORLD_SIZE, LOCAL_RANK and MASTER_* from it; DDP over gloo;
* every node's LOCAL_RANK 0 saves a checkpoint at the end of each epoch to
  --checkpoint-file (default /tmp/checkpoint.pth.tar, node-local), written
  to a temporary file and renamed, so a reader never sees half of one;
* on every (re)start of the world the ranks gather the epochs of their
  checkpoints, and the rank holding the newest broadcasts its state to all
  the others. No shared file system is needed: a node that joins with an
  empty /tmp gets the state over the network. The epoch that was cut short
  is trained again, at the new world size;
* an epoch is the whole dataset split over the world, so its number of
  batches changes with the world size;
* the log has the original's lines ("Epoch: [e][ b/N]\\tTime ...\\tAcc@1 ...",
  " * Acc@1 ...", "=> ..."), and each progress line ends with the job-wide
  rate, "samples/s=...", which an autoscaler can read.

Besides, rank 0 prints one key=value line per event for tools to follow:
"event=started world=4", "event=resumed epoch=3 world=2 restart=1",
"event=epoch epoch=3 world=2 loss=0.1234 acc1=97.66", "event=finished ...".

--step-seconds adds a pause per batch, standing in for real compute.
"""

import argparse
import io
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

try:
    import muster_progress  # examples/progress: rank 0's progress for `muster get`
except ImportError:  # run outside the example's job
    muster_progress = None


def parse_args():
    p = argparse.ArgumentParser(description="ImageNet-style elastic training on synthetic data")
    p.add_argument("data", nargs="?", default="synthetic",
                   help="accepted for compatibility with the original; the data is always synthetic")
    p.add_argument("--arch", default="tinycnn", help="accepted; the model is always a small CNN")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="per process")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--print-freq", type=int, default=10)
    p.add_argument("--workers", type=int, default=0, help="data loader worker processes")
    p.add_argument("--checkpoint-file", default="/tmp/checkpoint.pth.tar")
    p.add_argument("--step-seconds", type=float, default=0.0)
    p.add_argument("--train-size", type=int, default=2048)
    p.add_argument("--val-size", type=int, default=512)
    p.add_argument("--classes", type=int, default=10)
    return p.parse_args()


def log(*args):
    print(*args, flush=True)


def event(**kv):
    log(" ".join("%s=%s" % (k, v) for k, v in kv.items()))


def synthetic(classes, train_size, val_size):
    g = torch.Generator().manual_seed(0)
    prototypes = torch.randn(classes, 3, 16, 16, generator=g)

    def draw(n):
        y = torch.randint(classes, (n,), generator=g)
        x = prototypes[y] + 1.0 * torch.randn(n, 3, 16, 16, generator=g)
        return TensorDataset(x, y)

    return draw(train_size), draw(val_size)


def model_for(classes):
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, classes))


class Meter:
    def __init__(self, name, fmt):
        self.name, self.fmt = name, fmt
        self.val = self.sum = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)

    def __str__(self):
        return ("{name} {val%s} ({avg%s})" % (self.fmt, self.fmt)).format(name=self.name, val=self.val, avg=self.avg)


def accuracy(output, target, topk=(1, 5)):
    k = min(max(topk), output.size(1))
    _, pred = output.topk(k, 1, True, True)
    correct = pred.t().eq(target.view(1, -1))
    return [correct[:min(t, k)].reshape(-1).float().sum().item() * 100.0 / target.size(0) for t in topk]


def load_local(path):
    if not os.path.exists(path):
        return None
    log("=> loading checkpoint file: %s" % path)
    state = torch.load(path, map_location="cpu")
    log("=> loaded checkpoint file: %s" % path)
    return state


def restore(path, rank, world):
    """Every rank's checkpoint epoch is gathered; the newest is broadcast
    from the rank that has it. Returns the state, or None."""
    state = load_local(path)
    mine = torch.tensor([state["epoch"] if state else -1], dtype=torch.int64)
    epochs = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(epochs, mine)
    epochs = [int(e.item()) for e in epochs]
    max_epoch = max(epochs)
    if max_epoch < 0:
        log("=> no workers have checkpoints, starting from epoch 0")
        return None
    max_rank = epochs.index(max_epoch)
    log("=> using checkpoint from rank: %d, max_epoch: %d" % (max_rank, max_epoch))
    size = torch.zeros(1, dtype=torch.int64)
    blob = None
    if rank == max_rank:
        buf = io.BytesIO()
        torch.save(state, buf)
        blob = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
        size[0] = blob.numel()
    dist.broadcast(size, src=max_rank)
    log("=> checkpoint broadcast size is: %d" % size.item())
    if rank != max_rank:
        blob = torch.empty(int(size.item()), dtype=torch.uint8)
    dist.broadcast(blob, src=max_rank)
    log("=> done broadcasting checkpoint")
    return torch.load(io.BytesIO(blob.numpy().tobytes()), map_location="cpu")


def save(path, state):
    # A name of this process's own, so nodes sharing a volume never write
    # into one another's file; the rename is atomic.
    tmp = "%s.%s.%d.tmp" % (path, socket.gethostname(), os.getpid())
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_epoch(args, ddp, loader, opt, epoch, world):
    batch_time, data_time = Meter("Time", ":6.3f"), Meter("Data", ":6.3f")
    losses, top1, top5 = Meter("Loss", ":.4e"), Meter("Acc@1", ":6.2f"), Meter("Acc@5", ":6.2f")
    ddp.train()
    n = len(loader)
    width = len(str(n))
    end = time.time()
    for i, (x, y) in enumerate(loader):
        data_time.update(time.time() - end)
        out = ddp(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.step_seconds:
            time.sleep(args.step_seconds)
        acc1, acc5 = accuracy(out.detach(), y)
        losses.update(loss.item(), x.size(0))
        top1.update(acc1, x.size(0))
        top5.update(acc5, x.size(0))
        batch_time.update(time.time() - end)
        end = time.time()
        if dist.get_rank() == 0 and (i % args.print_freq == 0 or i == n - 1):
            rate = world * args.batch_size / max(batch_time.avg, 1e-9)
            log("\t".join([
                "Epoch: [%d][%s/%d]" % (epoch, str(i).rjust(width), n),
                str(batch_time), str(data_time), str(losses), str(top1), str(top5),
                "samples/s=%.1f" % rate]))
            if muster_progress:
                muster_progress.report(step=epoch * n + i + 1, total_steps=args.epochs * n, epoch=epoch,
                                       total_epochs=args.epochs, samples_per_second=rate, loss=losses.avg,
                                       acc1=top1.avg)
    return losses.avg


def validate(model, val):
    model.eval()
    with torch.no_grad():
        out = model(val.tensors[0])
        loss = F.cross_entropy(out, val.tensors[1]).item()
        acc1, acc5 = accuracy(out, val.tensors[1])
    return loss, acc1, acc5


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    torch.manual_seed(0)
    log("=> rank %d of %d (local rank %d, restart %s) on %s" % (rank, world, local_rank, restart, socket.gethostname()))

    model = model_for(args.classes)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    start_epoch, best_acc1 = 0, 0.0
    state = restore(args.checkpoint_file, rank, world)
    if state:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start_epoch, best_acc1 = state["epoch"] + 1, state["best_acc1"]
        log("=> done restoring from previous checkpoint")
    log("=> start_epoch: %d, best_acc1: %s" % (start_epoch, best_acc1))
    if rank == 0:
        if state:
            event(event="resumed", epoch=start_epoch, world=world, restart=restart)
        else:
            event(event="started", world=world)

    ddp = DDP(model)
    train, val = synthetic(args.classes, args.train_size, args.val_size)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers)
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        train_loss = train_epoch(args, ddp, loader, opt, epoch, world)
        mean = torch.tensor([train_loss])
        dist.all_reduce(mean)
        _, acc1, acc5 = validate(model, val)
        best_acc1 = max(best_acc1, acc1)
        if rank == 0:
            log(" * Acc@1 %.3f Acc@5 %.3f" % (acc1, acc5))
        if local_rank == 0:
            save(args.checkpoint_file, {"arch": args.arch, "model": model.state_dict(), "optimizer": opt.state_dict(),
                                        "epoch": epoch, "best_acc1": best_acc1})
            log("=> saved checkpoint for epoch %d at %s" % (epoch, args.checkpoint_file))
        if rank == 0:
            event(event="epoch", epoch=epoch, world=world, loss="%.4f" % (mean.item() / world), acc1="%.2f" % acc1)
    if rank == 0:
        event(event="finished", epochs=args.epochs, world=world, acc1="%.2f" % best_acc1)
        if muster_progress:
            muster_progress.report(epoch=args.epochs, total_epochs=args.epochs, acc1=best_acc1)
            muster_progress.done()  # the last report, for status once this pod has ended
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
