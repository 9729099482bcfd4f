package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Every TrainingJob under examples/ is admitted as it is written, by the
// CRD's rules and the webhook: the API they show is the API that runs.
func TestExamplesAreAdmitted(t *testing.T) {
	e := newEnv(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "trainingjob.yaml"))
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	e.g.Expect(files).NotTo(gomega.BeEmpty())
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			g := gomega.NewWithT(t)
			data, err := os.ReadFile(f)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			job := &musterv1.TrainingJob{}
			g.Expect(yaml.UnmarshalStrict(data, job)).To(gomega.Succeed(), "%s uses only fields the API has", f)
			job.Namespace = e.ns
			g.Expect(k8s.Create(e.ctx(), job, client.DryRunAll)).To(gomega.Succeed(), "%s is admitted", f)
		})
	}
}

// The Paddle example's program reads exactly these variables: the wiring
// must give each of them to the roles that read them.
func TestPaddleExampleGetsWhatItsProgramReads(t *testing.T) {
	e := newEnv(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "volcano-paddle", "trainingjob.yaml"))
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	job := &musterv1.TrainingJob{}
	e.g.Expect(yaml.UnmarshalStrict(data, job)).To(gomega.Succeed())
	job.Namespace = e.ns
	// No Volcano scheduler runs here to let its PodGroup in: the wiring is
	// checked without the gang.
	job.Spec.Scheduling = musterv1.Scheduling{}
	e.create(job)
	pserver := e.waitPod("ctr-volcano-pserver-1", "")
	env := envOf(pserver.Spec.Containers[0])
	for _, k := range []string{"TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PORT", "POD_IP", "PADDLE_TRAINERS_NUM"} {
		e.g.Expect(env).To(gomega.HaveKey(k), "pserver")
	}
	e.g.Expect(env["PADDLE_PSERVERS_IP_PORT_LIST"]).To(gomega.ContainSubstring(env["POD_IP"] + ":" + env["PADDLE_PORT"]))
	trainer := e.waitPod("ctr-volcano-trainer-1", "")
	env = envOf(trainer.Spec.Containers[0])
	for _, k := range []string{"TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM"} {
		e.g.Expect(env).To(gomega.HaveKey(k), "trainer")
	}
	e.g.Expect(env).To(gomega.HaveKeyWithValue("PADDLE_TRAINER_ID", "1"))
	e.g.Expect(env).To(gomega.HaveKeyWithValue("STEPS", "100"))
}
