package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/test/framework"
)

// Two pods of a headless Service find each other by
// <hostname>.<subdomain>.<ns>.svc.cluster.local, the way a training job's
// workers find their rendezvous, and talk over TCP.
func TestHeadlessServiceDNSAndTCP(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	_, err := cs.CoreV1().Services(ns).Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "workers"},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{"app": "workers"},
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "rdzv", Port: 29400}},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	server := `import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 29400))
s.listen(1)
print("listening", flush=True)
conn, peer = s.accept()
msg = conn.recv(64).decode()
conn.sendall(("pong:" + msg).encode())
conn.close()
print("served", msg, "from", peer[0], flush=True)`
	client := fmt.Sprintf(`import socket, sys, time
name = "rank0.workers.%s.svc.cluster.local"
deadline = time.time() + 60
while True:
    try:
        ip = socket.gethostbyname(name)
        c = socket.create_connection((ip, 29400), timeout=5)
        break
    except OSError as e:
        if time.time() > deadline:
            print("gave up:", e, flush=True)
            sys.exit(1)
        time.sleep(0.5)
c.sendall(b"ping")
print("resolved", name, "to", ip, "reply", c.recv(64).decode(), flush=True)`, ns)

	for _, p := range []struct{ host, script string }{{"rank0", server}, {"rank1", client}} {
		pod := pythonPod(ns, p.host, p.script)
		pod.Labels = map[string]string{"app": "workers"}
		pod.Spec.Hostname, pod.Spec.Subdomain = p.host, "workers"
		createPod(g, pod)
	}
	rank1 := framework.WaitPodPhase(g, cs, ns, "rank1", corev1.PodSucceeded, 2*time.Minute)
	rank0 := framework.WaitPodPhase(g, cs, ns, "rank0", corev1.PodSucceeded, 30*time.Second)
	g.Expect(rank0.Status.PodIP).NotTo(gomega.BeEmpty())

	g.Expect(rank0.Status.PodIP).NotTo(gomega.Equal(rank1.Status.PodIP), "pods share an IP: no network namespaces")
	log, err := framework.PodLog(cs, ns, "rank1", "main")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(log).To(gomega.ContainSubstring(fmt.Sprintf("to %s reply pong:ping", rank0.Status.PodIP)))
	log, err = framework.PodLog(cs, ns, "rank0", "main")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(log).To(gomega.ContainSubstring("served ping from " + rank1.Status.PodIP))
}

// One pod writes into a PersistentVolumeClaim of the process node's
// StorageClass, another pod reads it back.
func TestVolumeSharedThroughAPVC(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	ns := cluster.Namespace(t, g)
	_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("muster-local"),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	withClaim := func(pod *corev1.Pod) *corev1.Pod {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "shared"}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return pod
	}
	createPod(g, withClaim(pythonPod(ns, "writer", `open("/data/checkpoint.txt", "w").write("step=42")`)))
	framework.WaitPodPhase(g, cs, ns, "writer", corev1.PodSucceeded, time.Minute)

	createPod(g, withClaim(pythonPod(ns, "reader", `print("read:", open("/data/checkpoint.txt").read())`)))
	reader := framework.WaitPodPhase(g, cs, ns, "reader", corev1.PodSucceeded, time.Minute)
	log, err := framework.PodLog(cs, ns, "reader", "main")
	g.Expect(err).NotTo(gomega.HaveOccurred(), framework.DescribePod(cs, reader))
	g.Expect(log).To(gomega.ContainSubstring("read: step=42"))

	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "shared", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(pvc.Status.Phase).To(gomega.Equal(corev1.ClaimBound))
}
