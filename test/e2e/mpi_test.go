package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/joblogs"
	"github.com/muster-dev/muster/test/framework"
)

// examples/mpi as a user applies it: three workers run the host's sshd,
// the launcher's mpirun reaches them over SSH with the job's own key pair
// and the hostfile Muster wrote, and mpi4py's allreduce sums one number
// from every rank across the three pods. The launcher decides the job.
func TestMPIAllreduceExample(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	needMPI(g)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	bins, _, err := cluster.BinaryPaths()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// The pods' lines, followed from the start: the launcher's pod may be
	// gone by the time the job has finished.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var all strings.Builder
	go func() {
		_ = joblogs.Follow(ctx, cs, ns, "allreduce", joblogs.Options{Follow: true}, func(l joblogs.Line) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(&all, "[%s] %s\n", l.Pod, l.Text)
		})
	}()
	podLines := func() string {
		mu.Lock()
		defer mu.Unlock()
		return all.String()
	}
	args := []string{"--kubeconfig", cluster.Kubeconfig(), "-n", ns, "apply", "--server-side", "-k", filepath.Join(cluster.Root, "examples", "mpi")}
	out, err := exec.Command(bins.Kubectl(), args...).CombinedOutput()
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl %v: %s", args, out)

	got := framework.WaitJob(g, c, ns, "allreduce", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.BeElementOf(musterv1.PhaseSucceeded, musterv1.PhaseFailed), "status: %+v", j.Status)
	})
	g.Expect(got.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded), "status: %+v\nthe pods' logs:\n%s", got.Status, podLines())
	// The key pair's Secret is named by the API server and recorded in
	// status.
	g.Expect(got.Status.MPI.SSHSecretName).To(gomega.HavePrefix("allreduce-ssh-"))

	// Every rank printed its line through mpirun, each from its own worker.
	line := regexp.MustCompile(`rank (\d) of 3 on (\S+): allreduce (\d+), want 6`)
	g.Eventually(func() int { return len(line.FindAllString(podLines(), -1)) }, time.Minute, 200*time.Millisecond).
		Should(gomega.Equal(3), func() string { return "the pods' logs:\n" + podLines() })
	launcher := podLines()
	var hosts []string
	for _, m := range line.FindAllStringSubmatch(launcher, -1) {
		g.Expect(m[3]).To(gomega.Equal("6"), "the pods' logs:\n%s", launcher)
		hosts = append(hosts, m[2])
	}
	slices.Sort(hosts)
	want := make([]string, 3)
	for i := range want {
		want[i] = fmt.Sprintf("allreduce-worker-%d", i)
	}
	g.Expect(hosts).To(gomega.Equal(want), "one rank on each worker; the pods' logs:\n%s", launcher)

	// The workers' sshd never exits by itself: they are stopped once the
	// launcher has decided.
	for _, name := range want {
		g.Eventually(func() (bool, error) {
			pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && (pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning), err
		}, jobTimeout, 500*time.Millisecond).Should(gomega.BeTrue(), "%s is stopped", name)
	}
}

// needMPI fails the test where the host lacks what the MPI example runs.
func needMPI(g gomega.Gomega) {
	for _, bin := range []string{"/usr/bin/mpirun", "/usr/sbin/sshd", "/run/sshd"} {
		_, err := os.Stat(bin)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "make deps installs OpenMPI, mpi4py and openssh-server")
	}
}
