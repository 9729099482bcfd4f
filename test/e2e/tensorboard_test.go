package e2e

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/internal/testutil"
	"github.com/muster-dev/muster/test/framework"
)

// examples/tensorboard on the local cluster (tensorboard-local: Python's
// HTTP server stands in for TensorBoard, which Debian does not package):
// the trainers write their runs to a shared claim, the operator runs the
// TensorBoard on it, and `muster tensorboard` forwards a local port to it
// through the API server and the process node, where the runs are read.
func TestTensorBoardExample(t *testing.T) {
	hostCPU.shared(t)
	g := gomega.NewWithT(t)
	c := cluster.Client
	ns := cluster.Namespace(t, g)
	bins, _, err := cluster.BinaryPaths()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	args := []string{"--kubeconfig", cluster.Kubeconfig(), "-n", ns, "apply", "--server-side", "-k",
		filepath.Join(cluster.Root, "examples", "tensorboard-local")}
	out, err := exec.Command(bins.Kubectl(), args...).CombinedOutput()
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl %v: %s", args, out)

	framework.WaitJob(g, c, ns, "tensorboard-example", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(apimeta.IsStatusConditionTrue(j.Status.Conditions, string(musterv1.ConditionTensorBoardReady))).To(gomega.BeTrue(),
			"conditions %+v", j.Status.Conditions)
	})

	// muster tensorboard on a free local port, as a user runs it.
	cli := exec.Command(muster(t), "tensorboard", "tensorboard-example", "-n", ns, "--port", "0")
	cli.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig())
	stdout, err := cli.StdoutPipe()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var stderr testutil.SyncBuffer
	cli.Stderr = &stderr
	g.Expect(cli.Start()).To(gomega.Succeed())
	stopped := false
	defer func() {
		if !stopped {
			_ = cli.Process.Kill()
			_ = cli.Wait()
		}
	}()
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`^TensorBoard of trainingjob\.muster\.dev/tensorboard-example: (http://127\.0\.0\.1:\d+)$`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	var url string
	g.Eventually(urls, time.Minute).Should(gomega.Receive(&url), func() string { return "muster tensorboard said:\n" + stderr.String() })

	get := func(path string) (string, error) {
		resp, err := http.Get(url + path)
		if err != nil {
			return "", err
		}
		body, err := io.ReadAll(resp.Body)
		return string(body), errors.Join(err, resp.Body.Close())
	}
	// The runs folder of both trainers, as the TensorBoard reads it.
	g.Eventually(get).WithArguments("/").WithTimeout(jobTimeout).WithPolling(500 * time.Millisecond).
		Should(gomega.And(gomega.ContainSubstring("trainer-0/"), gomega.ContainSubstring("trainer-1/")))
	g.Eventually(get).WithArguments("/trainer-1/scalars.csv").WithTimeout(jobTimeout).WithPolling(500 * time.Millisecond).
		Should(gomega.MatchRegexp(`(?m)^step,tag,value\n0,loss,[0-9.]+$`))

	// The job ends; its TensorBoard stays (ttlSecondsAfterFinished: 600)
	// and still serves the finished runs.
	done := framework.WaitJob(g, c, ns, "tensorboard-example", jobTimeout, func(g gomega.Gomega, j *musterv1.TrainingJob) {
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.PhaseSucceeded))
	})
	g.Expect(apimeta.FindStatusCondition(done.Status.Conditions, string(musterv1.ConditionTensorBoardReady)).Status).
		To(gomega.Equal(metav1.ConditionTrue))
	// The trainers' own progress reports: the job ends at 100%.
	g.Expect(done.Status.Progress).NotTo(gomega.BeNil())
	g.Expect(done.Status.Progress.Percent).To(gomega.HaveValue(gomega.Equal(int32(100))), "progress %+v", done.Status.Progress)
	g.Expect(get("/trainer-0/scalars.csv")).To(gomega.ContainSubstring("39,loss,"), "the last of 40 steps")

	g.Expect(cli.Process.Signal(syscall.SIGINT)).To(gomega.Succeed())
	stopped = true
	g.Expect(cli.Wait()).To(gomega.Succeed(), "muster tensorboard stops cleanly on an interrupt: %s", stderr.String())
}
