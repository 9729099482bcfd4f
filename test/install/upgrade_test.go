package install

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/onsi/gomega"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
	"github.com/muster-dev/muster/test/framework"
	"github.com/muster-dev/muster/tools/image"
	"github.com/muster-dev/muster/tools/release"
)

// previous is the release an upgrade starts from: the last commit before
// Muster had an image, a release and version reporting, built here with
// today's image builder from that commit's sources and its own
// config/production. Move it forward to the last tag once one is cut.
const (
	previousCommit  = "fd6653ae4fa24c36ae6e3af44fba01d481d66146"
	previousVersion = "v0.1.0"
)

// acrossJob fails once before the upgrade, waits on /state/go through it,
// fails once more after it, and then succeeds: two restarts, one counted by
// each operator. Its count of attempts is kept in a claim, which outlives
// its pods.
const acrossJob = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: counter}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}
---
apiVersion: muster.dev/v1alpha1
kind: TrainingJob
metadata: {name: across}
spec:
  roles:
  - name: worker
    replicas: 1
    restartPolicy: OnFailure
    template:
      spec:
        containers:
        - name: main
          image: debian:bookworm-slim
          command: [sh, -c]
          args:
          - |
            n=$(( $(cat /state/n 2>/dev/null || echo 0) + 1 )); echo $n > /state/n
            case $n in
              1) exit 3;;
              2) while [ ! -e /state/go ]; do sleep 0.2; done; exit 3;;
            esac
          volumeMounts: [{name: state, mountPath: /state}]
        volumes: [{name: state, persistentVolumeClaim: {claimName: counter}}]
`

// TestUpgrade installs the previous release, starts a job that restarts
// once, upgrades to this release with the job running, lets it restart
// once more under the new operator and succeed: its restarts are counted
// exactly (2), by the operator that saw each. Then it uninstalls.
func TestUpgrade(t *testing.T) {
	g := gomega.NewWithT(t)
	cleanSlate(t, g)
	dir := t.TempDir()

	prevInstall, prevDigest := previousRelease(t, dir)
	apply(g, dir, "-f", prevInstall)
	newInstall := filepath.Join(relDir, "install.yaml")
	t.Cleanup(func() {
		_, _ = run(dir, kubectl, "delete", "--ignore-not-found", "--wait", "--timeout=2m", "-f", newInstall)
	})
	cluster.DumpOnFailure(t, framework.Dump{OperatorLog: true})
	waitOperator(t, g, prevDigest)
	webhookAnswers(g, dir, "v1alpha1")

	framework.CreateNamespace(g, cs, jobsNS)
	f := filepath.Join(dir, "across.yaml")
	g.Expect(os.WriteFile(f, []byte(acrossJob), 0o644)).To(gomega.Succeed())
	apply(g, dir, "-n", jobsNS, "-f", f)
	// One restart counted by the previous operator, and the second
	// attempt running, waiting.
	g.Eventually(func(g gomega.Gomega) {
		j := getJob(g)
		g.Expect(j.Status.Restarts.Total).To(gomega.BeEquivalentTo(1))
		g.Expect(j.Status.Phase).To(gomega.Equal(musterv1.JobPhase("Running")))
		g.Expect(counter()).To(gomega.Equal("2"))
	}, 2*time.Minute, time.Second).Should(gomega.Succeed())

	start := time.Now()
	apply(g, dir, "-f", newInstall)
	waitOperator(t, g, rel.Digest)
	webhookAnswers(g, dir, "v1beta1")
	webhookAnswers(g, dir, "v1alpha1")
	t.Logf("upgraded %s -> %s in %s", previousVersion, version, time.Since(start).Round(time.Second))
	j := getJob(g)
	g.Expect(j.Status.Restarts.Total).To(gomega.BeEquivalentTo(1), "restarts after the upgrade, before the second failure")

	// The second failure, under the new operator, then success.
	g.Expect(os.WriteFile(filepath.Join(claimDir("counter"), "go"), nil, 0o644)).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		g.Expect(getJob(g).Status.Phase).To(gomega.Equal(musterv1.JobPhase("Succeeded")))
	}, 2*time.Minute, time.Second).Should(gomega.Succeed(), func() string {
		job, _ := run(dir, kubectl, "get", "trainingjob", "across", "-n", jobsNS, "-o", "yaml")
		pods, _ := run(dir, kubectl, "get", "pods", "-n", jobsNS, "-o", "wide", "--show-labels")
		return "the job:\n" + job + "\nits pods:\n" + pods + "\nattempts started: " + counter()
	})
	j = getJob(g)
	g.Expect(j.Status.Restarts.Total).To(gomega.BeEquivalentTo(2), "restarts %+v", j.Status.Restarts)
	g.Expect(counter()).To(gomega.Equal("3"), "attempts the job ran")
	// The job, written as v1alpha1, reads as v1beta1 with the scope it had;
	// the new operator moved the stored jobs to v1beta1.
	g.Expect(j.APIVersion).To(gomega.Equal("muster.dev/v1beta1"))
	g.Expect(j.Spec.Roles[0].RestartScope).To(gomega.Equal(musterv1.RestartScopeTask))
	g.Eventually(func() (string, error) {
		return run(dir, kubectl, "get", "crd", "trainingjobs.muster.dev", "-o", "jsonpath={.status.storedVersions}")
	}, time.Minute, time.Second).Should(gomega.Equal(`["v1beta1"]`))

	uninstall(g, dir, newInstall)
	nothingLeft(g, "uninstalling after the upgrade", true)
}

func getJob(g gomega.Gomega) *musterv1.TrainingJob {
	out, err := run("", kubectl, "get", "trainingjob", "across", "-n", jobsNS, "-o", "json")
	g.Expect(err).NotTo(gomega.HaveOccurred(), "kubectl get: %s", out)
	j := &musterv1.TrainingJob{}
	g.Expect(json.Unmarshal([]byte(out), j)).To(gomega.Succeed())
	return j
}

// claimDir is where the process node keeps a claim's files.
func claimDir(claim string) string {
	return filepath.Join(cluster.StateDir, "procnode", "pvc", jobsNS, claim)
}

// counter is how many attempts acrossJob has started.
func counter() string {
	b, _ := os.ReadFile(filepath.Join(claimDir("counter"), "n"))
	return strings.TrimSpace(string(b))
}

// previousRelease builds the previous release's image (this machine's
// platform) from previousCommit's sources and renders its install.yaml,
// pushes the image to the suite's registry and mirrors it. It returns the
// install.yaml and the image's digest.
func previousRelease(t *testing.T, dir string) (string, string) {
	t.Helper()
	src := filepath.Join(dir, "previous")
	if err := exportCommit(cluster.Root, previousCommit, src); err != nil {
		t.Fatal(err)
	}
	_, when, err := release.Commit(cluster.Root, previousCommit)
	if err != nil {
		t.Fatal(err)
	}
	r, err := image.Build(context.Background(), image.Options{
		Root: src, Version: previousVersion, Commit: previousCommit, Time: when,
		Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}}, WorkDir: filepath.Join(dir, "previous-bin"),
	})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := image.Push(registryHost+"/muster/muster-operator:"+previousVersion, r)
	if err != nil {
		t.Fatal(err)
	}
	img := strings.Replace(ref.String(), "@", ":"+previousVersion+"@", 1)
	if err := mirror(img); err != nil {
		t.Fatal(err)
	}
	install, err := release.InstallYAML(src, img, previousVersion)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "install-"+previousVersion+".yaml")
	if err := os.WriteFile(path, install, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ref.DigestStr()
}

// exportCommit writes a commit's tree into dst (git archive), so the
// previous release is built from exactly its sources.
func exportCommit(root, commit, dst string) error {
	cmd := exec.Command("git", "archive", "--format=tar", commit)
	cmd.Dir = root
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(stdout)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dst, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, filepath.Clean(dst)+string(os.PathSeparator)) {
			return fmt.Errorf("git archive: %s leaves the tree", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if err := errors.Join(err, f.Close()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s (a clone without that commit cannot build the previous release): %w: %s", commit, err, stderr.String())
	}
	return nil
}
