package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
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
