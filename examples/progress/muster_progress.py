"""Report training progress to Muster, with Python's standard library alone.

    import muster_progress
    muster_progress.report(step=step, total_steps=total, epoch=epoch,
                           samples_per_second=rate, loss=loss, lr=lr)
    ...
    muster_progress.done()   # training finished: leave the last report

The job's spec.progress makes the operator read the report every
intervalSeconds (30 by default) from the pod that serves it: the first call
starts a small HTTP server in a daemon thread on MUSTER_PROGRESS_PORT, which
answers GET /progress with the latest report as JSON. Only global rank 0
reports, so one pod serves: the rank is the first of RANK (torchrun, Muster's
PyTorch runtime), OMPI_COMM_WORLD_RANK (Open MPI), PMI_RANK (MPICH, Intel
MPI) and PADDLE_TRAINER_ID (Paddle) that is set, and a process with none of
them reports. Elsewhere, and outside Muster (no MUSTER_PROGRESS_PORT), report
does nothing. done() leaves the last
report as the container's termination message, where the operator finds it
once the pod has succeeded: a pod that has ended serves nothing, and a job
whose last read came before its last steps still ends at 100%. Nothing here
blocks or raises into the training loop. The JSON format is in docs/progress.md;
any program that serves it is read alike.

With HuggingFace Transformers' Trainer, the callback reports for you:

    trainer = Trainer(..., callbacks=[muster_progress.transformers_callback()])
"""
import http.server
import json
import math
import os
import threading

_lock = threading.Lock()
_latest = None  # the latest report, as bytes
_server = None
_failed = False

# Where launchers put a process's global rank, most common first.
_RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PADDLE_TRAINER_ID")

_FIELDS = ("step", "total_steps", "epoch", "total_epochs", "percent", "samples_per_second")


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def _finite(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _rank_zero():
    for name in _RANK_VARIABLES:
        rank = os.environ.get(name)
        if rank is not None:
            return rank.strip() == "0"
    return True


def report(step=None, total_steps=None, epoch=None, total_epochs=None, percent=None,
           samples_per_second=None, **metrics):
    """Publish the latest progress; metrics are name=value (loss, lr, ...)."""
    global _latest
    port = os.environ.get("MUSTER_PROGRESS_PORT")
    if not port or not _rank_zero():
        return
    body = {}
    for name, value in zip(_FIELDS, (step, total_steps, epoch, total_epochs, percent, samples_per_second)):
        if value is None:
            continue
        if name in ("step", "total_steps", "epoch", "total_epochs"):
            value = _finite(value)
            value = int(value) if value is not None and value >= 0 else None
        else:
            value = _finite(value)
        if value is not None:
            body[_camel(name)] = value
    kept = {k: _finite(v) for k, v in metrics.items() if _finite(v) is not None}
    if kept:
        body["metrics"] = kept
    with _lock:
        _latest = json.dumps(body, allow_nan=False).encode()
    _serve(int(port))


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with _lock:
            data = _latest
        if self.path != "/progress" or data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # the training log is the program's own
        pass


# The kubelet reads at most 4 KiB of a container's termination message.
_TERMINATION_LOG = "/dev/termination-log"
_MAX_MESSAGE = 4096


def done():
    """Leave the latest report as the termination message: call it once,
    when training has finished and the program is about to exit 0."""
    with _lock:
        data = _latest
    if data is None or len(data) > _MAX_MESSAGE:
        return
    try:
        with open(_TERMINATION_LOG, "wb") as f:
            f.write(data)
    except OSError:
        pass


def _serve(port):
    global _server, _failed
    if _server is not None or _failed:
        return
    try:
        _server = http.server.ThreadingHTTPServer(("", port), _Handler)
    except OSError:
        _failed = True  # another process of the pod serves, or the port is taken
        return
    threading.Thread(target=_server.serve_forever, name="muster-progress", daemon=True).start()


# Trainer's log entries that are not metrics of the training itself.
_NOT_METRICS = ("epoch", "step", "total_flos")


def transformers_callback():
    """A transformers.TrainerCallback that reports the Trainer's step, its
    max_steps, the epoch and every number it logs (loss, learning_rate,
    grad_norm, ...; train_samples_per_second as the rate), and calls done()
    when training ends. Transformers is imported only here."""
    from transformers import TrainerCallback

    class MusterProgressCallback(TrainerCallback):
        def __init__(self):
            self._metrics = {}
            self._rate = None

        def _report(self, state):
            report(step=state.global_step, total_steps=state.max_steps or None, epoch=state.epoch,
                   samples_per_second=self._rate, **self._metrics)

        def on_step_end(self, args, state, control, **kwargs):
            self._report(state)

        def on_log(self, args, state, control, logs=None, **kwargs):
            for name, value in (logs or {}).items():
                if name.endswith("samples_per_second"):
                    self._rate = _finite(value)
                elif name not in _NOT_METRICS and _finite(value) is not None:
                    self._metrics[name] = value
            self._report(state)

        def on_train_end(self, args, state, control, **kwargs):
            self._report(state)
            done()

    return MusterProgressCallback()
