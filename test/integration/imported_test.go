package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// Every TrainingJob `muster import` writes in its golden files is admitted
// by the CRD's schema and CEL rules and by the webhook: an imported job is
// one that can be created.
func TestImportedJobsAreAdmitted(t *testing.T) {
	e := newEnv(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "importer", "testdata", "*", "*.golden.yaml"))
	e.g.Expect(err).NotTo(gomega.HaveOccurred())
	e.g.Expect(files).NotTo(gomega.BeEmpty())
	for _, f := range files {
		data, err := os.ReadFile(f)
		e.g.Expect(err).NotTo(gomega.HaveOccurred())
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 1; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			e.g.Expect(err).NotTo(gomega.HaveOccurred())
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			name := fmt.Sprintf("%s/%s/%d", filepath.Base(filepath.Dir(f)), filepath.Base(f), i)
			t.Run(name, func(t *testing.T) {
				g := gomega.NewWithT(t)
				job := &musterv1.TrainingJob{}
				g.Expect(yaml.UnmarshalStrict(doc, job)).To(gomega.Succeed(), "%s uses only fields the API has", name)
				job.Namespace = e.ns
				g.Expect(k8s.Create(e.ctx(), job, client.DryRunAll)).To(gomega.Succeed(), "%s is admitted", name)
			})
		}
	}
}
