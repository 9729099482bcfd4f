package install

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/muster-dev/muster/test/framework"
)

// TestHelmInstall installs the release's chart from the OCI registry it was
// pushed to (helm install oci://...), with the chart's defaults: the
// operator runs from the image the chart names by digest, the webhook
// answers through its Service, a job runs to Succeeded. helm uninstall
// removes the operator and everything the chart made but the CRD (Helm
// never deletes what a chart's crds/ installed), and so the jobs stay.
func TestHelmInstall(t *testing.T) {
	g := gomega.NewWithT(t)
	cleanSlate(t, g)
	dir := t.TempDir()
	start := time.Now()
	chart := "oci://" + strings.TrimSuffix(rel.ChartRef, ":"+strings.TrimPrefix(version, "v"))
	out, err := run(dir, helm, "install", "muster", chart, "--version", strings.TrimPrefix(version, "v"), "--plain-http",
		"-n", namespace, "--create-namespace")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "helm install: %s", out)
	g.Expect(out).To(gomega.ContainSubstring("STATUS: deployed"))
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = run(dir, helm, "uninstall", "muster", "-n", namespace, "--wait")
		}
	})
	waitOperator(t, g, rel.Digest)
	webhookAnswers(g, dir, "v1beta1")
	t.Logf("installed from %s, leader elected, webhook answering in %s", chart, time.Since(start).Round(time.Second))

	framework.CreateNamespace(g, cs, jobsNS)
	runExample(g, dir)

	out, err = run(dir, helm, "uninstall", "muster", "-n", namespace, "--wait", "--timeout", "2m")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "helm uninstall: %s", out)
	uninstalled = true
	g.Eventually(func() []string {
		out, _ := run(dir, helm, "list", "-A", "-q")
		return strings.Fields(out)
	}, time.Minute, time.Second).Should(gomega.BeEmpty(), "releases left")
	// The CRD stays, and so do the jobs, with their status.
	out, err = run(dir, kubectl, "get", "crd", "trainingjobs.muster.dev", "-o", "name")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "the CRD is gone after helm uninstall: %s", out)
	g.Expect(jobPhase(dir, jobsNS, "generic")).To(gomega.Equal("Succeeded"))
	nothingLeft(g, "helm uninstall", false)
}
