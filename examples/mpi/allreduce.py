"""Sums every rank's number with MPI's allreduce and checks the result.

Each rank contributes rank + 1, so with n ranks every rank must end up with
n * (n + 1) / 2. It exits 1 on any other answer. ROUNDS (default 1) repeats
the allreduce that many times, half a second apart: a run long enough to
lose a worker in the middle of. Rank 0 reports each round to Muster
(examples/progress: the helper takes the rank from OMPI_COMM_WORLD_RANK; the
launcher's mpirun passes the port and PYTHONPATH on with -x).
"""

import os
import socket
import sys
import time

import muster_progress
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
want = size * (size + 1) // 2
rounds = int(os.environ.get("ROUNDS", "1"))
for r in range(1, rounds + 1):
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    print("rank %d of %d on %s: allreduce %d, want %d (round %d of %d)"
          % (rank, size, socket.gethostname(), total, want, r, rounds), flush=True)
    if total != want:
        sys.exit(1)
    muster_progress.report(step=r, total_steps=rounds)
    if r < rounds:
        time.sleep(0.5)
muster_progress.done()
