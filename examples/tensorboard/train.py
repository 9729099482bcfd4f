"""A stand-in for training that logs a loss curve for TensorBoard.

Each task writes its own run folder, runs/<role>-<index>, on the shared
volume: TensorBoard event files through torch's SummaryWriter when the
tensorboard package is installed, else a CSV of the same scalars.
"""
import argparse
import math
import os
import random
import time

try:
    import muster_progress  # examples/progress: the job's progress for `muster get`
except ImportError:
    muster_progress = None

parser = argparse.ArgumentParser()
parser.add_argument("--logdir", default="/logs/runs")
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--step-seconds", type=float, default=0.25)
args = parser.parse_args()

run = "%s-%s" % (os.environ["MUSTER_ROLE_NAME"], os.environ["MUSTER_TASK_INDEX"])
folder = os.path.join(args.logdir, run)
os.makedirs(folder, exist_ok=True)

try:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(folder)

    def log(step, loss):
        writer.add_scalar("loss", loss, step)
        writer.flush()

    form = "TensorBoard event files"
except ImportError:
    csv = open(os.path.join(folder, "scalars.csv"), "a", buffering=1)
    csv.write("step,tag,value\n")

    def log(step, loss):
        csv.write("%d,loss,%.5f\n" % (step, loss))

    form = "scalars.csv (no tensorboard package here)"

print("%s: logging %d steps to %s as %s" % (run, args.steps, folder, form), flush=True)
rng = random.Random(int(os.environ["MUSTER_TASK_INDEX"]))
for step in range(args.steps):
    loss = 2.0 * math.exp(-step / 10.0) + 0.05 * rng.random()
    log(step, loss)
    if muster_progress:
        # The trainers are independent: each serves its own report and the
        # operator shows the first by name that answers, trainer-0's.
        muster_progress.report(step=step + 1, total_steps=args.steps, loss=loss)
    time.sleep(args.step_seconds)
print("%s: done, final loss %.3f" % (run, loss), flush=True)
if muster_progress:
    muster_progress.done()  # the last report, for status once this pod has ended
