package provider

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/tools/procnode/internal/image"
	"github.com/muster-dev/muster/tools/procnode/internal/proc"
	"github.com/muster-dev/muster/tools/procnode/internal/volume"
)

// probeReport is what testdata/imgprobe prints.
type probeReport struct {
	UID, GID                       int
	Cwd                            string
	Env                            map[string]string
	Exists                         map[string]bool
	WriteRoot, WriteData, WriteTmp string
}

// buildProbe builds testdata/imgprobe as a static binary. The node's
// reaper takes every child, so the build is started and waited for through
// it, whichever test started it first.
func buildProbe(t *testing.T) []byte {
	t.Helper()
	if err := proc.InitReaper(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "imgprobe")
	logf, err := os.Create(filepath.Join(dir, "build.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command("go", "build", "-o", out, "./testdata/imgprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := proc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if ws := p.Status(); !ws.Exited() || ws.ExitStatus() != 0 {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("building the probe: %v\n%s", ws, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type tarEntry struct {
	name, body string
	typ        byte
	mode       int64
	uid        int
}

func tarLayer(t *testing.T, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.uid, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// probeImage is a distroless-like image: the probe, a passwd with the
// nonroot user (65532), a file a later layer whites out and a directory it
// makes opaque.
func probeImage(t *testing.T, probe []byte) v1.Image {
	dir := func(n string, mode int64, uid int) tarEntry {
		return tarEntry{name: n, typ: tar.TypeDir, mode: mode, uid: uid}
	}
	base := tarLayer(t,
		dir("bin/", 0o755, 0), dir("etc/", 0o755, 0), dir("opq/", 0o755, 0),
		dir("work/", 0o755, 65532), dir("home/nonroot/", 0o700, 65532),
		tarEntry{name: "bin/imgprobe", body: string(probe), mode: 0o755},
		tarEntry{name: "etc/passwd", body: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		tarEntry{name: "etc/group", body: "root:x:0:\nnonroot:x:65532:\n"},
		tarEntry{name: "image-marker", body: "from the image"},
		tarEntry{name: "gone.txt", body: "whited out by the next layer"},
		tarEntry{name: "opq/old", body: "hidden by the opaque marker"},
	)
	top := tarLayer(t,
		tarEntry{name: ".wh.gone.txt"},
		tarEntry{name: "opq/.wh..wh..opq"},
		tarEntry{name: "opq/new", body: "new"},
	)
	img, err := mutate.AppendLayers(empty.Image, base, top)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{
		Entrypoint: []string{"/bin/imgprobe"}, Cmd: []string{"report"},
		Env:        []string{"PATH=/bin", "IMAGE_VAR=from-image", "OVERRIDE=image"},
		WorkingDir: "/work", User: "65532",
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// requireRoot skips when not root. CI runs the unit tests as root, where
// this test runs; a skip is reported (-v), never a pass.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED, NOT PASSED: needs root (mount namespaces, overlayfs, pivot_root); CI runs it as root")
	}
}

// A container is run from its image through the node's real path: pull
// from the registry mirror, unpack, shim, overlay root, pivot_root.
func TestContainerRunsFromItsImage(t *testing.T) {
	requireRoot(t)
	probe := buildProbe(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	mirror := strings.TrimPrefix(srv.URL, "http://")
	img := probeImage(t, probe)
	ref, _ := name.ParseReference(mirror+"/muster-dev/imgprobe:v1", name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	store, err := image.NewStore(filepath.Join(state, "images"), mirror)
	if err != nil {
		t.Fatal(err)
	}
	shimPath, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{NodeName: "test", StateDir: state, Images: store, ShimPath: shimPath, APIServer: "127.0.0.1:6443", RestartBackoff: time.Second})
	// A file only the host has: the container must not see it. Not one of
	// the checkout's, which may be under /tmp, which a container gets a
	// private one of.
	hostOnly := "/etc/os-release"
	if _, err := os.Stat(hostOnly); err != nil {
		t.Fatalf("the host has no %s to tell its files from the image's: %v", hostOnly, err)
	}

	t.Run("root, user, env and working dir are the image's", func(t *testing.T) {
		r, c := imagePod(t, p, "from-image", corev1.Container{
			Image: "ghcr.io/muster-dev/imgprobe:v1", ImagePullPolicy: corev1.PullIfNotPresent,
			Env: []corev1.EnvVar{{Name: "OVERRIDE", Value: "pod"}, {Name: "HOST_ONLY", Value: hostOnly}},
		})
		superviseAlone(r, c)
		rep := reportFromLog(t, r, c)
		want := map[string]bool{"/image-marker": true, "/bin/imgprobe": true, "/opq/new": true, "/proc/self/status": true,
			"/dev/null": true, "/etc/hosts": true, "/gone.txt": false, "/opq/old": false, hostOnly: false}
		for p, w := range want {
			if rep.Exists[p] != w {
				t.Errorf("%s exists = %v, want %v", p, rep.Exists[p], w)
			}
		}
		if rep.UID != 65532 || rep.GID != 65532 {
			t.Errorf("runs as %d:%d, want the image's user 65532:65532", rep.UID, rep.GID)
		}
		if rep.Cwd != "/work" {
			t.Errorf("working dir %q, want the image's /work", rep.Cwd)
		}
		for k, v := range map[string]string{"PATH": "/bin", "IMAGE_VAR": "from-image", "OVERRIDE": "pod", "HOME": "/home/nonroot", "KUBERNETES_SERVICE_HOST": "127.0.0.1"} {
			if rep.Env[k] != v {
				t.Errorf("%s=%q, want %q", k, rep.Env[k], v)
			}
		}
		if rep.WriteData != "" || rep.WriteTmp != "" {
			t.Errorf("volume and /tmp must be writable: %q, %q", rep.WriteData, rep.WriteTmp)
		}
		r.mu.Lock()
		imageID := c.imageID
		r.mu.Unlock()
		if !strings.HasPrefix(imageID, mirror+"/muster-dev/imgprobe@sha256:") {
			t.Errorf("imageID %q", imageID)
		}
	})

	t.Run("readOnlyRootFilesystem, seen through exec", func(t *testing.T) {
		r, c := imagePod(t, p, "read-only", corev1.Container{
			Image: "ghcr.io/muster-dev/imgprobe:v1", Args: []string{"sleep"},
			Env:             []corev1.EnvVar{{Name: "HOST_ONLY", Value: hostOnly}},
			SecurityContext: &corev1.SecurityContext{RunAsUser: new(int64(0)), ReadOnlyRootFilesystem: new(true)},
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			superviseAlone(r, c)
		}()
		t.Cleanup(func() {
			r.halt.close(time.Now())
			<-done
		})
		waitRunning(t, r, c)
		p.mu.Lock()
		p.pods[key(r.namespace, r.name)] = r
		p.mu.Unlock()
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.RunInContainer(ctx, r.namespace, r.name, "main", []string{"imgprobe", "report"}, attach{&out, &errOut}); err != nil {
			t.Fatalf("exec: %v\n%s", err, errOut.String())
		}
		var rep probeReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("exec output %q: %v", out.String(), err)
		}
		if !strings.Contains(rep.WriteRoot, "read-only file system") {
			t.Errorf("writing to / as root: %q, want EROFS", rep.WriteRoot)
		}
		if rep.WriteData != "" || rep.WriteTmp != "" {
			t.Errorf("the volume and /tmp stay writable: %q, %q", rep.WriteData, rep.WriteTmp)
		}
		if !rep.Exists["/image-marker"] || rep.Exists[hostOnly] || rep.Cwd != "/work" || rep.UID != 0 {
			t.Errorf("exec is not in the container's root: %+v", rep)
		}
	})

	t.Run("the image cache is never written", func(t *testing.T) {
		entries, _ := filepath.Glob(filepath.Join(state, "images", "sha256-*", "rootfs"))
		if len(entries) != 1 {
			t.Fatalf("cache entries %v", entries)
		}
		if _, err := os.Stat(filepath.Join(entries[0], "written-by-container")); err == nil {
			t.Error("a container wrote into the shared image cache")
		}
	})

	t.Run("an image the mirror lacks runs the host's programs", func(t *testing.T) {
		r, c := imagePod(t, p, "host", corev1.Container{
			Image: "ghcr.io/muster-dev/not-in-the-mirror:v1", Command: []string{"sh", "-c", "test -e " + hostOnly},
		})
		superviseAlone(r, c)
		if term := c.state.Terminated; term == nil || term.ExitCode != 0 {
			t.Fatalf("want the host's sh to see the host's file, got %+v", c.state)
		}
	})
}

// imagePod makes a pod run of one container "main" with an emptyDir at
// /data, without an API server (the lowest level a container runs at).
func imagePod(t *testing.T, p *Provider, podName string, c corev1.Container) (*podRun, *ctr) {
	t.Helper()
	c.Name = "main"
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: "ns", UID: types.UID(podName + "-uid")},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{c},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	r := newPodRun(p, pod)
	data := filepath.Join(r.dir, "volumes", "data")
	for _, d := range []string{data, filepath.Join(r.dir, "etc")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(data, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "etc", "hosts"), []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.vols = map[string]volume.Volume{"data": {Name: "data", Kind: volume.KindEmptyDir, HostPath: data}}
	return r, r.mains[0]
}

// reportFromLog reads the probe's report from the container's log.
func reportFromLog(t *testing.T, r *podRun, c *ctr) probeReport {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(r.dir, "logs", "main", "0.log"))
	if term := c.state.Terminated; term == nil || term.ExitCode != 0 {
		t.Fatalf("the container did not complete: %+v\nlog:\n%s", c.state, b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		// CRI format: time, stream, tag, text.
		if f := strings.SplitN(line, " ", 4); len(f) == 4 && f[1] == "stdout" {
			var rep probeReport
			if err := json.Unmarshal([]byte(f[3]), &rep); err != nil {
				t.Fatalf("report %q: %v", f[3], err)
			}
			return rep
		}
	}
	t.Fatalf("no report in the log:\n%s", b)
	return probeReport{}
}

func waitRunning(t *testing.T, r *podRun, c *ctr) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		st := c.state
		r.mu.Unlock()
		if st.Running != nil {
			// Running once the shim started; its command runs once the
			// shim has exec'd it.
			r.mu.Lock()
			pid := c.cur.proc.Pid
			r.mu.Unlock()
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(b)) == "imgprobe" {
				return
			}
		}
		if st.Terminated != nil {
			b, _ := os.ReadFile(filepath.Join(r.dir, "logs", "main", "0.log"))
			t.Fatalf("the container ended: %+v\n%s", st, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the container did not start")
}

// attach gives exec plain output streams.
type attach struct{ out, err *bytes.Buffer }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (a attach) Stdin() io.Reader            { return nil }
func (a attach) Stdout() io.WriteCloser      { return nopCloser{a.out} }
func (a attach) Stderr() io.WriteCloser      { return nopCloser{a.err} }
func (a attach) TTY() bool                   { return false }
func (a attach) Resize() <-chan api.TermSize { return nil }
