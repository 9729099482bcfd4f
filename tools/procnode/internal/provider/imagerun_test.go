package provider

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/image"
	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
)

// Kubernetes' rules: command replaces Entrypoint (and drops Cmd), args
// replace Cmd; $(VAR) expands in the pod's strings only.
func TestImageArgv(t *testing.T) {
	ep, cmd := []string{"/entry", "$(X)"}, []string{"serve", "--port=80"}
	env := []podenv.Var{{Name: "X", Value: "x"}}
	cases := map[string]struct {
		command, args, want []string
	}{
		"neither: the image's":        {want: []string{"/entry", "$(X)", "serve", "--port=80"}},
		"args replace Cmd":            {args: []string{"run", "$(X)"}, want: []string{"/entry", "$(X)", "run", "x"}},
		"command drops Cmd":           {command: []string{"/bin/sh"}, want: []string{"/bin/sh"}},
		"command and args":            {command: []string{"/bin/sh", "-c"}, args: []string{"echo $(X)"}, want: []string{"/bin/sh", "-c", "echo x"}},
		"command, image has no entry": {command: []string{"tool"}, want: []string{"tool"}},
	}
	for name, tc := range cases {
		got := imageArgv(&corev1.Container{Command: tc.command, Args: tc.args}, env, ep, cmd)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	if got := imageArgv(&corev1.Container{}, env, nil, []string{"/cmd-only"}); !reflect.DeepEqual(got, []string{"/cmd-only"}) {
		t.Errorf("Cmd alone: %q", got)
	}
}

func TestImageEnv(t *testing.T) {
	env := imageEnv(
		[]podenv.Var{{Name: "OVERRIDE", Value: "pod"}, {Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}},
		[]string{"PATH=/opt/bin:/bin", "OVERRIDE=image", "IMAGE_ONLY=1", "EMPTY="},
		"/home/app", "pod-0", false)
	want := []string{"PATH=/opt/bin:/bin", "OVERRIDE=pod", "IMAGE_ONLY=1", "EMPTY=", "KUBERNETES_SERVICE_HOST=127.0.0.1", "HOME=/home/app", "HOSTNAME=pod-0"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("got  %q\nwant %q", env, want)
	}
	// No PATH in the image: the usual default, never the node's.
	env = imageEnv(nil, nil, "/", "p", false)
	if env[0] != "PATH="+defaultPath {
		t.Errorf("default PATH: %q", env)
	}
}

func testImageRoot(t *testing.T, user string) *image.Image {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532::/home/nonroot:/sbin/nologin\n",
		"etc/group":  "root:x:0:\nnonroot:x:65532:\ntools:x:300:nonroot\n",
	}
	for p, body := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &image.Image{Rootfs: root, Config: v1.Config{User: user, WorkingDir: "/app", Entrypoint: []string{"/app/run"}}}
}

func TestImageRunConfigUser(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	yes := true
	pod := func(psc *corev1.PodSecurityContext, sc *corev1.SecurityContext) (*corev1.Pod, *corev1.Container) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
			Spec: corev1.PodSpec{SecurityContext: psc, Containers: []corev1.Container{{Name: "c", SecurityContext: sc}}}}
		return p, &p.Spec.Containers[0]
	}
	cases := map[string]struct {
		user     string
		psc      *corev1.PodSecurityContext
		sc       *corev1.SecurityContext
		uid, gid int64
		groups   []int64
		errHas   string
	}{
		"the image's numeric user":          {user: "65532", uid: 65532, gid: 65532, groups: []int64{300}},
		"the image's user by name":          {user: "nonroot", uid: 65532, gid: 65532, groups: []int64{300}},
		"no user: root":                     {uid: 0, gid: 0},
		"runAsUser wins":                    {user: "nonroot", sc: &corev1.SecurityContext{RunAsUser: i64(1234)}, uid: 1234, gid: 0},
		"pod runAsUser and runAsGroup":      {user: "nonroot", psc: &corev1.PodSecurityContext{RunAsUser: i64(7), RunAsGroup: i64(8)}, uid: 7, gid: 8},
		"runAsGroup with the image's user":  {user: "65532", sc: &corev1.SecurityContext{RunAsGroup: i64(9)}, uid: 65532, gid: 9, groups: []int64{300}},
		"supplementalGroups":                {user: "65532", psc: &corev1.PodSecurityContext{SupplementalGroups: []int64{40}}, uid: 65532, gid: 65532, groups: []int64{300, 40}},
		"unknown user name":                 {user: "ghost", errHas: "unable to find user ghost"},
		"runAsNonRoot, image root":          {psc: &corev1.PodSecurityContext{RunAsNonRoot: &yes}, errHas: "image will run as root"},
		"runAsNonRoot, runAsUser 0":         {user: "65532", sc: &corev1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: i64(0)}, errHas: "runAsUser breaks non-root policy"},
		"runAsNonRoot, name":                {user: "nonroot", sc: &corev1.SecurityContext{RunAsNonRoot: &yes}, errHas: "non-numeric user (nonroot)"},
		"runAsNonRoot, numeric non-root":    {user: "65532:65532", sc: &corev1.SecurityContext{RunAsNonRoot: &yes}, uid: 65532, gid: 65532, groups: []int64{300}},
		"runAsNonRoot, runAsUser over root": {psc: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: i64(1000)}, uid: 1000, gid: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, c := pod(tc.psc, tc.sc)
			rc, err := imageRunConfig(p, c, nil, testImageRoot(t, tc.user))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("want an error with %q, got %v", tc.errHas, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *rc.uid != tc.uid || *rc.gid != tc.gid || !reflect.DeepEqual(rc.groups, tc.groups) {
				t.Errorf("uid %d gid %d groups %v; want %d %d %v", *rc.uid, *rc.gid, rc.groups, tc.uid, tc.gid, tc.groups)
			}
		})
	}
}

func TestImageRunConfigWorkingDir(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	img := testImageRoot(t, "65532")
	rc, err := imageRunConfig(p, &p.Spec.Containers[0], nil, img)
	if err != nil || rc.workingDir != "/app" || rc.argv[0] != "/app/run" {
		t.Fatalf("the image's working dir and entrypoint: %+v, %v", rc, err)
	}
	if !strings.Contains(strings.Join(rc.env, " "), "HOME=/home/nonroot") {
		t.Errorf("HOME from the image's passwd: %v", rc.env)
	}
	p.Spec.Containers[0].WorkingDir = "/mine"
	if rc, _ := imageRunConfig(p, &p.Spec.Containers[0], nil, img); rc.workingDir != "/mine" {
		t.Errorf("the container's working dir wins: %q", rc.workingDir)
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for ref, want := range map[string]corev1.PullPolicy{
		"busybox": corev1.PullAlways, "busybox:latest": corev1.PullAlways, "127.0.0.1:5000/x": corev1.PullAlways,
		"busybox:1.36": corev1.PullIfNotPresent, "127.0.0.1:5000/x:v1": corev1.PullIfNotPresent,
		"x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": corev1.PullIfNotPresent,
	} {
		if got := defaultPullPolicy(ref); got != want {
			t.Errorf("%s: %s, want %s", ref, got, want)
		}
	}
}
