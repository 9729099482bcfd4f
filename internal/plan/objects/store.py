# The rendezvous store of an elastic job: a c10d TCPStore server and nothing
# else. Every torchrun agent connects to it as a client, so no worker's loss
# takes the rendezvous state with it.
import os, time
from torch.distributed import TCPStore
port = int(os.environ["MUSTER_STORE_PORT"])
store = TCPStore("0.0.0.0", port, is_master=True, wait_for_workers=False)
print(f"rendezvous store listening on :{port}", flush=True)
while True:
    time.sleep(3600)
