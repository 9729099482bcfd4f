#!/usr/bin/env bash
# Installs the Debian packages the local cluster and the examples need:
# python3 with Debian's torch (CPU), iproute2, procps (the tests find pods'
# host processes), util-linux (nsenter, for kubectl exec on the process
# node), tmux (the CLI's e2e tests drive muster in a real terminal), and
# OpenMPI, mpi4py and an SSH server for the MPI example (the process node's
# pods run the host's binaries: the host is their image).
# Does nothing when they are already there. Where Debian's torch cannot start
# torchrun on the host's Python, it also installs hack/torch-compat.
set -euo pipefail
need=()
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v pgrep >/dev/null 2>&1 || need+=(procps)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
/usr/bin/python3 -c 'import mpi4py' >/dev/null 2>&1 || need+=(python3-mpi4py)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
# sshd's privilege-separation directory, which its service would make at
# boot; the MPI example's workers run sshd directly.
privsep() { [ -d /run/sshd ] || { [ -x /usr/sbin/sshd ] && mkdir -p -m 0755 /run/sshd; } || true; }
# Debian's torch 1.13 cannot start torchrun on Python 3.11: it parses its
# own --redirects and --tee defaults into None and the elastic agent dies
# (hack/torch-compat/muster_torch_compat.py says why). The pods run the
# host's Python, so where the host's torch has that bug the fix is installed
# beside it, in the local site-packages, and taken out again once torch no
# longer needs it.
torch_compat() {
  local src dir
  src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/torch-compat
  /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || return 0
  dir=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if cmp -s "$src/muster_torch_compat.py" "$dir/muster_torch_compat.py" &&
    cmp -s "$src/muster-torch-compat.pth" "$dir/muster-torch-compat.pth"; then
    return 0
  fi
  # Whether torch's own parsing works, with any earlier copy of the fix
  # left out.
  if /usr/bin/python3 -c '
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__ != "muster_torch_compat"]
from torch.distributed.elastic.multiprocessing.api import Std
sys.exit(Std.from_str("0") is None or Std.from_str("3") is None)'; then
    rm -f "$dir/muster_torch_compat.py" "$dir/muster-torch-compat.pth"
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to install the fix for torch's torchrun into $dir" >&2
    exit 1
  fi
  mkdir -p "$dir"
  install -m 0644 "$src/muster_torch_compat.py" "$src/muster-torch-compat.pth" "$dir/"
  /usr/bin/python3 -c '
from torch.distributed.elastic.multiprocessing.api import Std
assert Std.from_str("0") is not None and Std.from_str("3") is not None' || {
    echo "install-deps: torchrun still cannot parse its default --redirects with $dir/muster_torch_compat.py installed" >&2
    exit 1
  }
  echo ">> installed $dir/muster_torch_compat.py: torchrun of Debian's torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') starts on Python 3.11" >&2
}
if [ ${#need[@]} -eq 0 ]; then privsep; torch_compat; exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install: ${need[*]}" >&2
  exit 1
fi
echo ">> installing ${need[*]} (apt; python3-torch is large, a few minutes on a cold machine)" >&2
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
# Quiet when it works; when apt fails, its own output says why.
log=$(mktemp)
# Installing openssh-server must not start a host sshd listening on every
# address: Debian's policy-rc.d hook says no service may start (one that is
# already there is left as it is).
policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\n# installed by muster install-deps for the length of one apt run\nexit 101\n' >"$policy"
  chmod 0755 "$policy"
fi
trap 'rm -f "$log" $policy' EXIT
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install-deps: apt could not install ${need[*]} (its output is above)" >&2
  exit 1
fi
privsep
echo ">> installed ${need[*]} in $(( $(date +%s) - start ))s" >&2
torch_compat
