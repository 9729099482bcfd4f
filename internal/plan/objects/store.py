# The rendezvous store of an elastic job: a c10d TCPStore server. Every
# torchrun agent connects to it as a client, so no worker's loss takes the
# rendezvous state with it.
#
# It also keeps torch's exit barrier from waiting on the dead. An agent whose
# workers have finished waits (exit_barrier_timeout, 300 s) until every agent
# of its round has written its key under the round's terminal-state prefix. An
# agent that is gone for good (its pod removed by a scale-down as training
# ends, or lost) never writes it, and the job would sit for five minutes with
# nothing training. So once some agent of a round has reached the barrier,
# each member of that round whose heartbeat has not moved for STALE seconds
# (by this store's own clock, so node clocks need not agree) has its keys
# written for it. A live agent keeps heartbeating while it trains or waits, so
# only the dead are ever stood in for.
import base64, os, pickle, threading, time
from datetime import timedelta
from torch.distributed import TCPStore

port = int(os.environ["MUSTER_STORE_PORT"])
run_id = os.environ.get("MUSTER_RDZV_ID", "")
STALE = float(os.environ.get("MUSTER_STORE_STALE_SECONDS", "20"))
POLL = 1.0
BARRIER = "torchelastic/agent/terminal_state"  # torch's _TERMINAL_STATE_SYNC_ID

store = TCPStore("0.0.0.0", port, is_master=True, wait_for_workers=False)
print(f"rendezvous store listening on :{port}", flush=True)


ABSENT = b"muster-absent"


def peek(client, key):
    """A key's value without blocking: None while it is absent. (compare_set
    with an expected value that is never stored reads and creates nothing, the
    way torch's own c10d backend reads; this torch has no check().)"""
    value = client.compare_set(key, ABSENT, ABSENT)
    return None if value == ABSENT else value


def read_state(client, key):
    """The rendezvous state as the c10d backend writes it, or None."""
    raw = peek(client, key)
    if raw is None:
        return None
    try:
        # Importing the module makes the state's classes loadable.
        import torch.distributed.elastic.rendezvous.dynamic_rendezvous  # noqa: F401
        return pickle.loads(base64.b64decode(raw))
    except Exception:
        return None  # the sentinel or a format this torch does not write


class Watch:
    def __init__(self):
        self.rounds = {}  # round -> {rank: node} as the round completed
        self.beats = {}  # node -> (heartbeat value, monotonic time it changed)

    def observe(self, state, now):
        if state.complete and state.round not in self.rounds:
            self.rounds[state.round] = {r: n for n, r in state.participants.items()}
            for old in sorted(self.rounds)[:-4]:
                del self.rounds[old]
        for node, beat in state.last_heartbeats.items():
            seen = self.beats.get(node)
            if seen is None or seen[0] != beat:
                self.beats[node] = (beat, now)
        live = set(state.last_heartbeats)
        for node in [n for n in self.beats if n not in live]:
            del self.beats[node]

    def dead(self, node, now):
        seen = self.beats.get(node)
        return seen is None or now - seen[1] > STALE

    def stand_in(self, client, state, now):
        members = self.rounds.get(state.round)
        if not members:
            return
        prefix = f"torch.rendezvous.{run_id}.{state.round}/{BARRIER}"
        arrived = [r for r in members if peek(client, f"{prefix}{r}") is not None]
        if not arrived:
            return
        for rank, node in members.items():
            if rank in arrived or not self.dead(node, now):
                continue
            client.set(f"{prefix}{rank}", str(rank))
            client.set(f"{prefix}{rank}.FIN", "FIN")
            print(f"exit barrier of round {state.round}: agent {rank} ({node!r}) is gone; "
                  f"released the {len(arrived)} waiting for it", flush=True)


def watch():
    client = TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=30))
    key = "torch.rendezvous." + run_id
    w = Watch()
    while True:
        time.sleep(POLL)
        try:
            state = read_state(client, key)
            if state is not None:
                now = time.monotonic()
                w.observe(state, now)
                w.stand_in(client, state, now)
        except Exception as e:  # never let the watch take the store down
            print(f"exit-barrier watch: {e}", flush=True)


if run_id:
    threading.Thread(target=watch, daemon=True).start()
while True:
    time.sleep(3600)
