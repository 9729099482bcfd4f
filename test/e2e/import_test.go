package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/test/framework"
)

// Programs that read only what a Kubeflow operator gave their pods, and
// prove it by talking to each other through it.
const (
	// jaxPeer: process 0 listens on COORDINATOR_PORT and hears every other
	// process's PROCESS_ID at COORDINATOR_ADDRESS.
	jaxPeer = `
import os, socket, sys, time
me, n = int(os.environ["PROCESS_ID"]), int(os.environ["NUM_PROCESSES"])
port = int(os.environ["COORDINATOR_PORT"])
if me == 0:
    srv = socket.create_server(("", port))
    heard = set()
    while len(heard) < n - 1:
        conn, _ = srv.accept()
        heard.add(int(conn.recv(16).decode()))
        conn.close()
    if heard != set(range(1, n)):
        sys.exit(f"heard {sorted(heard)}")
    print(f"coordinator heard {len(heard)} of {n - 1}", flush=True)
    sys.exit(0)
for attempt in range(240):
    try:
        with socket.create_connection((os.environ["COORDINATOR_ADDRESS"], port), timeout=2) as c:
            c.sendall(str(me).encode())
        break
    except OSError:
        time.sleep(0.5)
else:
    sys.exit("the coordinator never answered")
`
	// xgboostPeer: the master (RANK 0) listens on MASTER_PORT and hears
	// every other rank at MASTER_ADDR; every WORKER_ADDRS name resolves
	// while the workers still run (they wait for the master's word), as
	// soon as the endpoint controllers publish it.
	xgboostPeer = `
import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
port = int(os.environ["MASTER_PORT"])
workers = os.environ["WORKER_ADDRS"].split(",")
if len(workers) != world - 1 or os.environ["WORKER_PORT"] != "9991":
    sys.exit(f"WORKER_ADDRS {workers}, WORKER_PORT {os.environ['WORKER_PORT']}")
if rank == 0:
    srv = socket.create_server(("", port))
    conns = []
    while len(conns) < world - 1:
        conn, _ = srv.accept()
        conns.append((conn, int(conn.recv(16).decode())))
    # A name resolves once the endpoint controllers have published its pod.
    for w in workers:
        for attempt in range(120):
            try:
                socket.gethostbyname(w)
                break
            except OSError:
                time.sleep(0.5)
        else:
            sys.exit(f"{w} never resolved")
    heard = sorted(r for _, r in conns)
    for conn, _ in conns:
        conn.sendall(b"ok")
        conn.close()
    print(f"master heard ranks {heard} of {world}", flush=True)
    sys.exit(0 if heard == list(range(1, world)) else 1)
for attempt in range(240):
    try:
        with socket.create_connection((os.environ["MASTER_ADDR"], port), timeout=2) as c:
            c.sendall(str(rank).encode())
            c.settimeout(120)
            if c.recv(16) != b"ok":
                sys.exit("the master did not answer ok")
        break
    except OSError:
        time.sleep(0.5)
else:
    sys.exit("the master never answered")
`
	// paddlePeer: the launcher whose PADDLE_MASTER host is its own address
	// serves the master, as paddle.distributed.launch decides; every other
	// node reports its role there (PADDLE_SERVER_NUM or
	// PADDLE_TRAINER_NUM) and prints what the master heard once it has
	// heard PADDLE_NNODES - 1 of them.
	paddlePeer = `
import os, socket, sys, time
host, port = os.environ["PADDLE_MASTER"].rsplit(":", 1)
port, nodes = int(port), int(os.environ["PADDLE_NNODES"])
if os.environ.get("PADDLE_SERVER_NUM") == "1":
    role = "server"
elif os.environ.get("PADDLE_TRAINER_NUM") == "1":
    role = "trainer"
else:
    sys.exit("neither PADDLE_SERVER_NUM nor PADDLE_TRAINER_NUM is 1")
if host == socket.gethostbyname(socket.gethostname()):
    srv = socket.create_server((host, port))
    conns = []
    while len(conns) < nodes - 1:
        conn, _ = srv.accept()
        conns.append((conn, conn.recv(64).decode()))
    heard = ",".join(sorted(r for _, r in conns))
    for conn, _ in conns:
        conn.sendall(f"{os.environ['PADDLE_JOB_ID']} master ({role}) heard {len(conns)} of {nodes - 1}: {heard}".encode())
        conn.close()
    sys.exit(0)
for attempt in range(240):
    try:
        with socket.create_connection((host, port), timeout=2) as c:
            c.sendall(role.encode())
            c.settimeout(120)
            print(c.recv(256).decode(), flush=True)
        break
    except OSError:
        time.sleep(0.5)
else:
    sys.exit("the master never answered")
`
	// mpiLauncher is an MPIJob's launcher container: mpirun runs MPI_SUM
	// on two ranks.
	mpiLauncher = `{name: launcher, image: IMAGE, command: [mpirun, -n, "2", -x, PATH, python3, -c, MPI_SUM], ` +
		`env: [{name: OMPI_ALLOW_RUN_AS_ROOT, value: "1"}, {name: OMPI_ALLOW_RUN_AS_ROOT_CONFIRM, value: "1"}]}`
	// mpiSum: every rank adds rank + 1 with mpi4py's allreduce.
	mpiSum = `from mpi4py import MPI
c = MPI.COMM_WORLD
total = c.allreduce(c.Get_rank() + 1)
want = c.Get_size() * (c.Get_size() + 1) // 2
print("rank %d of %d: allreduce %d, want %d" % (c.Get_rank(), c.Get_size(), total, want), flush=True)
assert total == want
`
)

// Kubeflow manifests as users write them, one per kind muster import
// converts to a runtime, each running a program above.
var kubeflowJobs = []struct {
	kind, name string
	manifest   string
	mpi        bool   // needs the host's OpenMPI and sshd
	pod, line  string // a pod of the job and a line it prints
}{
	{kind: "TFJob", name: "tf-import", pod: "tf-import-chief-0", line: "chief talked to 3 peers", manifest: `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf-import}
spec:
  tfReplicaSpecs:
    Chief:
      template:
        spec:
          containers:
          - {name: tensorflow, image: IMAGE, command: [python3, -c, TF_PEER], ports: [{name: tfjob-port, containerPort: 2223}]}
    PS:
      template:
        spec:
          containers:
          - {name: tensorflow, image: IMAGE, command: [python3, -c, TF_PEER], ports: [{name: tfjob-port, containerPort: 2223}]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: tensorflow, image: IMAGE, command: [python3, -c, TF_PEER], ports: [{name: tfjob-port, containerPort: 2223}]}
`},
	{kind: "JAXJob", name: "jax-import", pod: "jax-import-worker-0", line: "coordinator heard 2 of 2", manifest: `
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jax-import}
spec:
  jaxReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - {name: jax, image: IMAGE, command: [python3, -c, JAX_PEER], ports: [{name: jaxjob-port, containerPort: 6667}]}
`},
	{kind: "XGBoostJob", name: "xgb-import", pod: "xgb-import-master-0", line: "master heard ranks [1, 2] of 3", manifest: `
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: xgb-import}
spec:
  xgbReplicaSpecs:
    Master:
      template:
        spec:
          containers:
          - {name: xgboost, image: IMAGE, command: [python3, -c, XGB_PEER], ports: [{name: xgboostjob-port, containerPort: 9991}]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: xgboost, image: IMAGE, command: [python3, -c, XGB_PEER], ports: [{name: xgboostjob-port, containerPort: 9991}]}
`},
	{kind: "PaddleJob", name: "paddle-import", pod: "paddle-import-worker-1", line: "paddle-import master (server) heard 2 of 2: trainer,trainer", manifest: `
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: paddle-import}
spec:
  paddleReplicaSpecs:
    Master:
      template:
        spec:
          containers:
          - {name: paddle, image: IMAGE, command: [python3, -c, PADDLE_PEER], ports: [{name: master, containerPort: 37777}]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: paddle, image: IMAGE, command: [python3, -c, PADDLE_PEER]}
`},
	{kind: "MPIJob v2beta1", name: "mpi2-import", mpi: true, pod: "mpi2-import-launcher-0", line: "allreduce 3, want 3", manifest: `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi2-import}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - MPI_LAUNCHER
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: worker, image: IMAGE, command: [/usr/sbin/sshd, -D, -e, -o, StrictModes=no]}
`},
	{kind: "MPIJob v1", name: "mpi1-import", mpi: true, pod: "mpi1-import-launcher-0", line: "allreduce 3, want 3", manifest: `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: mpi1-import}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - MPI_LAUNCHER
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: mpi, image: IMAGE}
`},
}

// Every Kubeflow kind muster import converts to a runtime runs to
// completion once imported: the program of each reads only the variables
// its Kubeflow operator set (TF_CONFIG; COORDINATOR_*, NUM_PROCESSES and
// PROCESS_ID; MASTER_*, RANK, WORLD_SIZE and WORKER_*; PADDLE_MASTER and
// the node counts; mpirun's hostfile and SSH), and proves them by reaching
// its peers. The MPIJob v1's workers
// have no command, as v1 allowed: they run sshd.
func TestImportedKubeflowJobsRun(t *testing.T) {
	hostCPU.shared(t)
	quote := func(program string) string { return fmt.Sprintf("%q", program) }
	for _, k := range kubeflowJobs {
		t.Run(strings.ReplaceAll(k.kind, " ", "-"), func(t *testing.T) {
			t.Parallel()
			g := gomega.NewWithT(t)
			if k.mpi {
				needMPI(g)
			}
			ns := cluster.Namespace(t, g)
			manifest := strings.NewReplacer("IMAGE", image, "TF_PEER", quote(tfPeer), "JAX_PEER", quote(jaxPeer),
				"XGB_PEER", quote(xgboostPeer), "PADDLE_PEER", quote(paddlePeer), "MPI_SUM", quote(mpiSum)).
				Replace(strings.ReplaceAll(k.manifest, "MPI_LAUNCHER", mpiLauncher))
			cmd := exec.Command(muster(t), "import", "-f", "-", "--apply", "-n", ns)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig())
			cmd.Stdin = strings.NewReader(manifest)
			out, err := cmd.CombinedOutput()
			g.Expect(err).NotTo(gomega.HaveOccurred(), "muster import: %s", out)

			got := framework.WaitJob(g, cluster.Client, ns, k.name, jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
				g.Expect(j.Status.Phase).To(gomega.BeElementOf(musterv1.PhaseSucceeded, musterv1.PhaseFailed), "status: %+v", j.Status)
			})
			raw, err := cs.CoreV1().Pods(ns).GetLogs(k.pod, &corev1.PodLogOptions{}).Do(context.Background()).Raw()
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(got.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded), "status: %+v\n%s's log:\n%s", got.Status, k.pod, raw)
			g.Expect(string(raw)).To(gomega.ContainSubstring(k.line))
			g.Expect(got.Status.Restarts.Total).To(gomega.BeZero(), "nothing failed on the way")
		})
	}
}
