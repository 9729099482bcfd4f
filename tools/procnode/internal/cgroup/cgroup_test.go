package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestLimitsFor(t *testing.T) {
	res := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	cases := map[string]struct {
		req, lim corev1.ResourceList
		want     Limits
	}{
		"nothing asked: no limit, the least weight": {want: Limits{CPUShares: 2}},
		"limits":                       {lim: res("cpu", "1500m", "memory", "64Mi"), want: Limits{CPUQuota: 150000, CPUShares: 1536, Memory: 64 << 20}},
		"a request weighs, no quota":   {req: res("cpu", "250m"), want: Limits{CPUShares: 256}},
		"a tiny limit still gets 1 ms": {lim: res("cpu", "1m"), want: Limits{CPUQuota: 1000, CPUShares: 2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &corev1.Container{Resources: corev1.ResourceRequirements{Requests: tc.req, Limits: tc.lim}}
			if got := LimitsFor(c); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{2: 1, 1024: 39, 262144: 10000} {
		if got := weight(shares); got != want {
			t.Errorf("weight(%d) = %d, want %d", shares, got, want)
		}
	}
}

// fakeRoot lays out the files a cgroup filesystem of the version has.
func fakeRoot(t *testing.T, v Version) string {
	root := t.TempDir()
	touch := func(p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	switch v {
	case V2:
		touch(filepath.Join(root, "cgroup.controllers"))
	case V1:
		touch(filepath.Join(root, "cpu", "cpu.shares"))
		touch(filepath.Join(root, "memory", "memory.limit_in_bytes"))
	}
	return root
}

func read(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCreateV2(t *testing.T) {
	root := fakeRoot(t, V2)
	m := Detect(root, "node")
	if m.Version() != V2 {
		t.Fatalf("version %s", m.Version())
	}
	g, err := m.Create("pod/c-0", Limits{CPUQuota: 50000, CPUShares: 512, Memory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "node", "pod", "c-0")
	if len(g.Dirs) != 1 || g.Dirs[0] != dir {
		t.Fatalf("dirs %v", g.Dirs)
	}
	for file, want := range map[string]string{"cpu.max": "50000 100000", "memory.max": "1048576", "cpu.weight": "20"} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	// Every ancestor delegates cpu and memory, the root included.
	for _, d := range []string{root, filepath.Join(root, "node"), filepath.Join(root, "node", "pod")} {
		if got := read(t, filepath.Join(d, "cgroup.subtree_control")); got != "+cpu +memory" {
			t.Errorf("%s delegates %q", d, got)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !g.OOMKilled() {
		t.Error("oom_kill 1 is an OOM kill")
	}
}

func TestCreateV1(t *testing.T) {
	root := fakeRoot(t, V1)
	m := Detect(root, "node")
	if m.Version() != V1 {
		t.Fatalf("version %s", m.Version())
	}
	g, err := m.Create("pod/c-0", Limits{CPUShares: 2})
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := filepath.Join(root, "cpu", "node", "pod", "c-0"), filepath.Join(root, "memory", "node", "pod", "c-0")
	if len(g.Dirs) != 2 || g.Dirs[0] != cpu || g.Dirs[1] != mem {
		t.Fatalf("dirs %v", g.Dirs)
	}
	for file, want := range map[string]string{"cpu.cfs_quota_us": "-1", "cpu.shares": "2", "cpu.cfs_period_us": "100000"} {
		if got := read(t, filepath.Join(cpu, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(mem, "memory.limit_in_bytes")); err == nil {
		t.Error("no memory limit asked, none set")
	}
	if g.OOMKilled() {
		t.Error("no OOM counted yet")
	}
	if err := os.WriteFile(filepath.Join(mem, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !g.OOMKilled() {
		t.Error("oom_kill 2 is an OOM kill")
	}
}

func TestDetectNone(t *testing.T) {
	if v := Detect(t.TempDir(), "node").Version(); v != None {
		t.Errorf("an empty folder is %s", v)
	}
}
