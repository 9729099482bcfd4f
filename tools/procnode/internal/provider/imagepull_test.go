package provider

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/image"
)

// A mirror that cannot be reached leaves the container waiting, as the
// kubelet reports a failed pull (ErrImagePull, then ImagePullBackOff), and
// never runs the host's programs instead.
func TestUnreachableMirrorIsAPullError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	_ = l.Close()
	state := t.TempDir()
	store, err := image.NewStore(filepath.Join(state, "images"), dead)
	if err != nil {
		t.Fatal(err)
	}
	// No shim: a start would fail loudly (StartError), not wait.
	p := New(Config{StateDir: state, Images: store, ShimPath: "/nonexistent", RestartBackoff: 2 * time.Second})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "ghcr.io/muster-dev/app:v1", Command: []string{"true"}}}}}
	r := newPodRun(p, pod)
	c := r.mains[0]
	done := make(chan struct{})
	go func() {
		defer close(done)
		superviseAlone(r, c)
	}()
	defer func() {
		r.halt.close(time.Now())
		<-done
	}()
	seen := map[string]string{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && (seen["ErrImagePull"] == "" || seen["ImagePullBackOff"] == "") {
		s := r.snapshot().Status.ContainerStatuses[0]
		if s.State.Waiting != nil {
			seen[s.State.Waiting.Reason] = s.State.Waiting.Message
		}
		if s.State.Running != nil || s.State.Terminated != nil || s.RestartCount != 0 {
			t.Fatalf("the container must wait for its image, got %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
		if msg := seen[reason]; !strings.Contains(msg, `"ghcr.io/muster-dev/app:v1"`) || !strings.Contains(msg, dead) {
			t.Errorf("%s: message %q must name the image and the failure", reason, msg)
		}
	}
}
