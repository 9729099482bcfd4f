package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// tfPeer is a TensorFlow-style task that speaks only what TF_CONFIG says:
// every member serves "type:index" on its own address from the cluster;
// the chief dials every other member at its listed address and checks that
// each answers as the task at that place in the list.
const tfPeer = `
import json, os, socket, sys, time
tf = json.loads(os.environ["TF_CONFIG"])
me = tf["task"]
addr = tf["cluster"][me["type"]][me["index"]]
if me["type"] != "chief":
    srv = socket.create_server(("", int(addr.rsplit(":", 1)[1])))
    while True:
        conn, _ = srv.accept()
        conn.sendall(f"{me['type']}:{me['index']}".encode())
        conn.close()
peers = 0
for typ, hosts in tf["cluster"].items():
    for i, host in enumerate(hosts):
        if typ == "chief":
            continue
        h, p = host.rsplit(":", 1)
        for attempt in range(120):
            try:
                with socket.create_connection((h, int(p)), timeout=2) as c:
                    got = c.recv(64).decode()
                break
            except OSError:
                time.sleep(0.5)
        else:
            sys.exit(f"{typ} {i} at {host} never answered")
        if got != f"{typ}:{i}":
            sys.exit(f"{host} answered {got}, want {typ}:{i}")
        peers += 1
print(f"chief talked to {peers} peers", flush=True)
`

// TF_CONFIG wires a TensorFlow job: the chief reaches the parameter
// server and every worker at the addresses it names, each in its place,
// and the chief's success ends the job.
func TestTensorFlowTasksReachEachOtherThroughTFConfig(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	job := testutil.MakeJob("tf", ns).Runtime(musterv1.Runtime{TensorFlow: &musterv1.TensorFlowRuntime{}}).
		Role("ps", 1).Template(python(tfPeer)).
		Role("worker", 2).Template(python(tfPeer)).
		Role("chief", 1).Template(python(tfPeer)).Obj()
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())

	got := framework.WaitJob(g, c, ns, "tf", jobTimeout, framework.PhaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Restarts.Total).To(gomega.BeZero())
	raw, err := cs.CoreV1().Pods(ns).GetLogs("tf-chief-0", &corev1.PodLogOptions{Container: "main"}).Do(context.Background()).Raw()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(strings.TrimSpace(string(raw))).To(gomega.Equal("chief talked to 3 peers"))
}
