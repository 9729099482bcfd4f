package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// Volcano's Paddle CTR job (seed 004), as examples/volcano-paddle writes
// it: 2 pservers and 2 trainers gang-scheduled by Volcano, the project's
// own parameter-server program exchanging gradients over TCP with the
// PADDLE_* wiring, completed when the trainers are done.
func TestVolcanoPaddleExampleCompletes(t *testing.T) {
	t.Parallel()
	g := gomega.NewWithT(t)
	c := jobClient(g)
	ns := newNamespace(t, g)
	dir := filepath.Join("..", "..", "examples", "volcano-paddle")
	code, err := os.ReadFile(filepath.Join(dir, "ps.py"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ctr-volcano-code", Namespace: ns}, Data: map[string]string{"ps.py": string(code)}}
	g.Expect(c.Create(context.Background(), cm)).To(gomega.Succeed())
	data, err := os.ReadFile(filepath.Join(dir, "trainingjob.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	job := &musterv1.TrainingJob{}
	g.Expect(yaml.UnmarshalStrict(data, job)).To(gomega.Succeed())
	job.Namespace = ns
	g.Expect(c.Create(context.Background(), job)).To(gomega.Succeed())

	got := waitJob(g, c, ns, "ctr-volcano", phaseIs(musterv1.PhaseSucceeded))
	g.Expect(got.Status.Completion).NotTo(gomega.BeNil())
	g.Expect(got.Status.Completion.Reason).To(gomega.Equal(musterv1.ReasonPolicyCompleted), "completion: %+v", got.Status.Completion)
	g.Expect(got.Status.Scheduling).NotTo(gomega.BeNil())
	g.Expect(got.Status.Scheduling.Backend).To(gomega.Equal(musterv1.GangVolcano))
	// The trainers really trained: the loss fell over the exchanged steps.
	for _, trainer := range []string{"ctr-volcano-trainer-0", "ctr-volcano-trainer-1"} {
		pod := getPod(g, ns, trainer)
		g.Expect(pod.Spec.SchedulerName).To(gomega.Equal("volcano"))
		g.Expect(pod.Spec.NodeName).NotTo(gomega.HavePrefix("kwok-"), "a real pod on a fake node: %s", describe(pod))
		raw, err := cs.CoreV1().Pods(ns).GetLogs(trainer, &corev1.PodLogOptions{Container: "trainer"}).Do(context.Background()).Raw()
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%s", describe(pod))
		out := string(raw)
		var first, last float64
		var n int
		g.Expect(out).To(gomega.ContainSubstring(" done: loss "), "%s's log:\n%s", trainer, out)
		_, err = fmt.Sscanf(out[strings.LastIndex(out, "trainer "):], "trainer %d done: loss %f -> %f", &n, &first, &last)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%s's log:\n%s", trainer, out)
		g.Expect(last).To(gomega.BeNumerically("<", first), "%s's log:\n%s", trainer, out)
	}
}
