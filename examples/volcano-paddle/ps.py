"""A small parameter-server trainer for click-through-rate style data.

It plays the part of Paddle's CTR demo and reads exactly the variables
Paddle's parameter-server mode reads, so the job's wiring is what a Paddle
program would see:

  TRAINING_ROLE                  PSERVER or TRAINER
  PADDLE_PSERVERS_IP_PORT_LIST   every pserver's host:port, in order
  PADDLE_PORT                    the port a pserver listens on
  POD_IP                         a pserver's own host; POD_IP:PADDLE_PORT is
                                 looked up in the list to find its shard
  PADDLE_TRAINERS_NUM            how many trainers push each step
  PADDLE_TRAINER_ID              a trainer's index, which seeds its data

The model is logistic regression over DIM features. Each pserver holds one
shard of the weights. Training is synchronous: in every step each trainer
pulls all shards, computes the gradient of its own batch, and pushes each
shard's slice to its pserver; a pserver applies the averaged gradient once
every trainer has pushed, and only then serves the next step's weights.
Everything travels over plain TCP.

Trainer 0 reports its step, loss and accuracy to Muster (examples/progress,
on PYTHONPATH: the helper reports where PADDLE_TRAINER_ID is 0). A trainer
exits 0 once its loss fell, 1 otherwise. A pserver serves until it is
stopped: the job completes when every trainer has succeeded.
"""

import os
import socket
import socketserver
import struct
import sys
import threading
import time

import numpy as np

import muster_progress

DIM = 64
STEPS = int(os.environ.get("STEPS", "100"))
# A pause per step, to watch (or disturb) a run that is otherwise over in
# a second.
STEP_SECONDS = float(os.environ.get("STEP_SECONDS", "0"))
BATCH = 256
LR = 0.5
CONNECT_SECONDS = 120

# A message is an opcode, a step and a payload of float32 values.
HEADER = struct.Struct("!cII")


def send(sock, op, step, values=None):
    payload = b"" if values is None else np.asarray(values, dtype="<f4").tobytes()
    sock.sendall(HEADER.pack(op, step, len(payload)) + payload)


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed the connection")
        buf += chunk
    return bytes(buf)


def recv(sock):
    op, step, size = HEADER.unpack(recv_exact(sock, HEADER.size))
    values = np.frombuffer(recv_exact(sock, size), dtype="<f4") if size else None
    return op, step, values


def pserver_list():
    return os.environ["PADDLE_PSERVERS_IP_PORT_LIST"].split(",")


def shards():
    """The feature range each pserver holds, in list order."""
    bounds = np.linspace(0, DIM, len(pserver_list()) + 1).astype(int)
    return list(zip(bounds[:-1], bounds[1:]))


class Shard:
    """One pserver's weights and the barrier of the current step."""

    def __init__(self, size, trainers):
        self.weights = np.zeros(size, dtype=np.float32)
        self.trainers = trainers
        self.version = 0
        self.pending = np.zeros(size, dtype=np.float32)
        self.pushed = 0
        self.cond = threading.Condition()

    def get(self, step):
        with self.cond:
            self.cond.wait_for(lambda: self.version >= step)
            return self.weights.copy()

    def push(self, step, grad):
        with self.cond:
            self.cond.wait_for(lambda: self.version >= step)
            self.pending += grad
            self.pushed += 1
            if self.pushed == self.trainers:
                self.weights -= LR * self.pending / self.trainers
                self.pending[:] = 0
                self.pushed = 0
                self.version += 1
                self.cond.notify_all()


def run_pserver():
    port = int(os.environ["PADDLE_PORT"])
    me = "%s:%d" % (os.environ["POD_IP"], port)
    endpoints = pserver_list()
    if me not in endpoints:
        sys.exit("POD_IP:PADDLE_PORT %s is not in PADDLE_PSERVERS_IP_PORT_LIST %s" % (me, endpoints))
    index = endpoints.index(me)
    lo, hi = shards()[index]
    shard = Shard(hi - lo, int(os.environ["PADDLE_TRAINERS_NUM"]))

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            try:
                while True:
                    op, step, values = recv(self.request)
                    if op == b"G":
                        send(self.request, b"W", step, shard.get(step))
                    elif op == b"P":
                        shard.push(step, values)
                        send(self.request, b"A", step)
            except ConnectionError:
                pass

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    server = socketserver.ThreadingTCPServer(("", port), Handler)
    server.daemon_threads = True
    print("pserver %d of %d serving features [%d, %d) on %s" % (index, len(endpoints), lo, hi, me), flush=True)
    server.serve_forever()


def connect(endpoint):
    host, port = endpoint.rsplit(":", 1)
    deadline = time.time() + CONNECT_SECONDS
    while True:
        try:
            return socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS)
        except OSError as err:
            # The pserver's name resolves (the wait step saw to that), but
            # it may not listen yet.
            if time.time() > deadline:
                raise SystemExit("cannot reach pserver %s: %s" % (endpoint, err))
            time.sleep(0.5)


def batch(rng, truth):
    x = rng.standard_normal((BATCH, DIM)).astype(np.float32)
    p = 1 / (1 + np.exp(-x @ truth))
    y = (rng.random(BATCH) < p).astype(np.float32)
    return x, y


def run_trainer():
    trainer = int(os.environ["PADDLE_TRAINER_ID"])
    trainers = int(os.environ["PADDLE_TRAINERS_NUM"])
    # Every trainer draws from the same true model, each its own samples.
    truth = np.random.default_rng(0).standard_normal(DIM).astype(np.float32)
    rng = np.random.default_rng(1000 + trainer)
    conns = [connect(e) for e in pserver_list()]
    parts = shards()
    first = last = None
    start = time.monotonic()
    for step in range(STEPS + 1):
        for c in conns:
            send(c, b"G", step)
        weights = np.concatenate([recv(c)[2] for c in conns])
        x, y = batch(rng, truth)
        p = 1 / (1 + np.exp(-x @ weights))
        loss = float(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7)))
        acc = float(np.mean((p > 0.5) == (y > 0.5)))
        first = loss if first is None else first
        last = loss
        rate = BATCH * trainers * step / max(time.monotonic() - start, 1e-6)
        muster_progress.report(step=step, total_steps=STEPS, samples_per_second=rate, loss=loss, accuracy=acc)
        if step % 10 == 0 or step == STEPS:
            print("TRAIN --> trainer: %d of %d batch: %d loss: %.4f accuracy: %.3f" % (trainer, trainers, step, loss, acc), flush=True)
        if step == STEPS:
            break
        grad = x.T @ (p - y) / BATCH
        for c, (lo, hi) in zip(conns, parts):
            send(c, b"P", step, grad[lo:hi])
        for c in conns:
            recv(c)
        time.sleep(STEP_SECONDS)
    for c in conns:
        c.close()
    if last >= first:
        sys.exit("loss did not fall: %.4f -> %.4f" % (first, last))
    print("trainer %d done: loss %.4f -> %.4f" % (trainer, first, last), flush=True)
    muster_progress.done()


if __name__ == "__main__":
    role = os.environ.get("TRAINING_ROLE")
    if role == "PSERVER":
        run_pserver()
    elif role == "TRAINER":
        run_trainer()
    else:
        sys.exit("TRAINING_ROLE is %r, want PSERVER or TRAINER" % role)
