package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// examples/mpi restarts in place: run for 100 rounds with both roles
// restarting on failure and restartMode InPlace, a worker killed in the
// middle (its sshd and the ranks it serves) restarts the whole gang where
// it stands. Every pod keeps its UID, the launcher waits for the workers'
// sshd again and its mpirun starts over, all 100 rounds, and the job
// succeeds. Rank 0 reported its rounds from worker-0 on the way (the
// operator reads every 30 s; the rounds take 50).
func TestMPIExampleRestartsInPlace(t *testing.T) {
	hostCPU.exclusive(t)
	g := gomega.NewWithT(t)
	needMPI(g)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	bins, _, err := cluster.BinaryPaths()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	kubectl := func(stdin []byte, args ...string) []byte {
		cmd := exec.Command(bins.Kubectl(), append([]string{"--kubeconfig", cluster.Kubeconfig(), "-n", ns}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl %v: %s", args, out)
		return out
	}
	const rounds = 100
	var docs [][]byte
	for _, doc := range strings.Split(string(kubectl(nil, "kustomize", filepath.Join(cluster.Root, "examples", "mpi"))), "\n---\n") {
		if !strings.Contains(doc, "kind: TrainingJob") {
			docs = append(docs, []byte(doc))
			continue
		}
		var job musterv1.TrainingJob
		g.Expect(yaml.Unmarshal([]byte(doc), &job)).To(gomega.Succeed())
		job.Spec.FailurePolicy.RestartMode = musterv1.RestartModeInPlace
		job.Spec.FailurePolicy.BackoffLimit = new(int32(3))
		for i := range job.Spec.Roles {
			r := &job.Spec.Roles[i]
			r.RestartPolicy, r.RestartScope = musterv1.RestartPolicyOnFailure, musterv1.RestartScopeJob
			if r.Name != "launcher" {
				continue
			}
			main := &r.Template.Spec.Containers[0]
			main.Env = append(main.Env, corev1.EnvVar{Name: "ROUNDS", Value: strconv.Itoa(rounds)})
			main.Command = append(main.Command[:5:5], append([]string{"-x", "ROUNDS"}, main.Command[5:]...)...)
			g.Expect(main.Command[:7]).To(gomega.Equal([]string{"mpirun", "-n", "3", "-x", "PATH", "-x", "ROUNDS"}))
		}
		raw, err := yaml.Marshal(&job)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		docs = append(docs, raw)
	}
	kubectl(bytes.Join(docs, []byte("\n---\n")), "apply", "--server-side", "-f", "-")

	launcherLog := func() string { out, _ := framework.PodLog(cs, ns, "allreduce-launcher-0", "mpirun"); return out }
	g.Eventually(launcherLog, jobTimeout, 500*time.Millisecond).Should(gomega.ContainSubstring(fmt.Sprintf("(round 5 of %d)", rounds)))
	before := map[string]corev1.Pod{}
	var pods corev1.PodList
	g.Expect(c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{musterv1.LabelJobName: "allreduce"})).To(gomega.Succeed())
	for _, p := range pods.Items {
		before[p.Name] = p
	}
	g.Expect(before).To(gomega.HaveLen(4))

	// A lost worker: its sshd and every process under it (the session
	// that serves mpirun, and the rank it runs) die at once, as they would
	// with their container. sshd rewrites its own command line and
	// environment, so worker-1's is found from its rank: the one process
	// of this run (ROUNDS, passed on by mpirun) that is rank 1, whose
	// topmost sshd ancestor is the worker's sshd.
	sshd := 0
	g.Eventually(func() error {
		rank := testutil.ProcessWith("OMPI_COMM_WORLD_RANK=1", "ROUNDS="+strconv.Itoa(rounds))
		if rank == 0 {
			return fmt.Errorf("no rank 1 of this run yet")
		}
		sshd = testutil.TopmostAncestor(rank, "sshd")
		if sshd == 0 {
			return fmt.Errorf("rank 1 (%d) runs under no sshd", rank)
		}
		return nil
	}, time.Minute, 200*time.Millisecond).Should(gomega.Succeed())
	for _, pid := range append(testutil.Descendants(sshd), sshd) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}

	// Every pod restarts in place into the next attempt: same UID, the
	// attempt's label, running. Checked while they run: the workers are
	// stopped once the launcher has decided.
	g.Eventually(func(g gomega.Gomega) {
		var job musterv1.TrainingJob
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "allreduce"}, &job)).To(gomega.Succeed())
		g.Expect(job.Status.Attempt).To(gomega.BeNumerically(">=", 1), "the gang restarted")
		for name, was := range before {
			var p corev1.Pod
			g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p)).To(gomega.Succeed())
			g.Expect(p.UID).To(gomega.Equal(was.UID), "%s must not be re-created", name)
			g.Expect(p.Labels).To(gomega.HaveKeyWithValue(musterv1.LabelJobAttempt, strconv.Itoa(int(job.Status.Attempt))))
			g.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodRunning))
		}
	}, jobTimeout, 200*time.Millisecond).Should(gomega.Succeed())

	got := framework.WaitJob(g, c, ns, "allreduce", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.BeElementOf(musterv1.PhaseSucceeded, musterv1.PhaseFailed), "status: %+v", j.Status)
	})
	g.Expect(got.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded), "status: %+v\nthe launcher's log:\n%s", got.Status, launcherLog())
	g.Expect(got.Status.Attempts).NotTo(gomega.BeEmpty())
	first := got.Status.Attempts[0]
	g.Expect(first.PodRestarts).NotTo(gomega.BeNil())
	g.Expect(first.PodRestarts.InPlace).To(gomega.Equal(int32(4)), "all four pods went on in place")
	// The launcher's log is its last run's: mpirun started over and ran
	// every round on the three workers.
	out := launcherLog()
	g.Expect(strings.Count(out, fmt.Sprintf("(round %d of %d)", rounds, rounds))).To(gomega.Equal(3), "the launcher's log:\n%s", out)
	g.Expect(out).To(gomega.ContainSubstring(fmt.Sprintf("(round 1 of %d)", rounds)))
	// Rank 0's reports reached status through mpirun's -x: from worker-0,
	// where the hostfile put it.
	g.Expect(got.Status.Progress).NotTo(gomega.BeNil(), "rank 0's reports")
	g.Expect(got.Status.Progress.Reporter).To(gomega.Equal("allreduce-worker-0"))
	g.Expect(got.Status.Progress.TotalSteps).To(gomega.HaveValue(gomega.Equal(int64(rounds))), "progress %+v", got.Status.Progress)
}
