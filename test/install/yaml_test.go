package install

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/muster-dev/muster/test/framework"
)

// TestInstallYAML installs the release's install.yaml as its notes say
// (kubectl apply --server-side -f install.yaml): the operator runs from the
// release's image by digest, as non-root; the webhook, reached through its
// Service, refuses an invalid job; a job runs to Succeeded; muster version
// names the operator's version and image. Then it uninstalls as
// docs/install.md says, with a job still running: the jobs first, while
// the operator runs to let their pods go, then install.yaml; everything
// goes, and no pod is left Terminating on the tracking finalizer.
func TestInstallYAML(t *testing.T) {
	g := gomega.NewWithT(t)
	cleanSlate(t, g)
	dir := t.TempDir()
	start := time.Now()
	install := filepath.Join(relDir, "install.yaml")
	apply(g, dir, "-f", install)
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = run(dir, kubectl, "delete", "--ignore-not-found", "--wait", "--timeout=2m", "-f", install)
		}
	})
	waitOperator(t, g, rel.Digest)
	webhookAnswers(g, dir, "v1beta1")
	webhookAnswers(g, dir, "v1alpha1")
	t.Logf("installed, leader elected, webhook answering in %s", time.Since(start).Round(time.Second))

	framework.CreateNamespace(g, cs, jobsNS)
	runExample(g, dir)

	// muster version: the CLI of the release and the operator it runs.
	g.Eventually(func(g gomega.Gomega) {
		out, err := run(dir, cli(), "version")
		g.Expect(err).NotTo(gomega.HaveOccurred(), "muster version: %s", out)
		g.Expect(out).To(gomega.ContainSubstring("Client Version: " + version + " (commit " + rel.Commit[:12]))
		g.Expect(out).To(gomega.ContainSubstring("Operator Version: " + version + " (commit " + rel.Commit[:12]))
		g.Expect(out).To(gomega.ContainSubstring("@" + rel.Digest))
		g.Expect(out).NotTo(gomega.ContainSubstring("Warning"))
	}, time.Minute, time.Second).Should(gomega.Succeed())

	// Uninstall with a job running.
	startSleeper(g, dir)
	uninstall(g, dir, install)
	uninstalled = true
	nothingLeft(g, "kubectl delete -f install.yaml", true)
}

// uninstall is docs/install.md's uninstall: every TrainingJob, while the
// operator still runs to release their pods, then everything install.yaml
// installed. The jobs' deletion is in the foreground, so it returns only
// once their pods are gone too: the garbage collector deletes a gone job's
// pods a moment later, and the operator must still be there to let them go.
func uninstall(g gomega.Gomega, dir, install string) {
	out, err := run(dir, kubectl, "delete", "trainingjobs", "--all", "--all-namespaces", "--cascade=foreground", "--wait", "--timeout=2m")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl delete trainingjobs: %s", out)
	out, err = run(dir, kubectl, "delete", "--wait", "--timeout=3m", "-f", install)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl delete -f: %s", out)
	g.Expect(strings.TrimSpace(out)).NotTo(gomega.BeEmpty())
}
