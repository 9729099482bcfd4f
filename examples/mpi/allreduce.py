"""Sums every rank's number with MPI's allreduce and checks the result.

Each rank contributes rank + 1, so with n ranks every rank must end up with
n * (n + 1) / 2. It exits 1 on any other answer.
"""

import socket
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = comm.allreduce(rank + 1, op=MPI.SUM)
want = size * (size + 1) // 2
print("rank %d of %d on %s: allreduce %d, want %d" % (rank, size, socket.gethostname(), total, want), flush=True)
if total != want:
    sys.exit(1)
