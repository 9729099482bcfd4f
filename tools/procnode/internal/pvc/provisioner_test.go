package pvc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestOurs(t *testing.T) {
	class := func(s string) *string { return &s }
	cases := map[string]struct {
		sc   *string
		want bool
	}{
		"no class":    {nil, true},
		"empty class": {class(""), true},
		"ours":        {class(ClassName), true},
		"other":       {class("fast-ssd"), false},
	}
	for name, c := range cases {
		pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: c.sc}}
		if got := ours(pvc, nil); got != c.want {
			t.Errorf("%s: ours = %v", name, got)
		}
	}
}

func TestInStateDir(t *testing.T) {
	p := &Provisioner{stateDir: "/state"}
	for path, want := range map[string]bool{
		"/state/pvc/ns/claim":     true,
		"/state/pvc/../etc":       false,
		"/state/pvcx/ns/claim":    false,
		"/state/pods/ns_p_u/data": false,
		"/state/pvc":              false,
	} {
		if got := p.inStateDir(path); got != want {
			t.Errorf("inStateDir(%q) = %v", path, got)
		}
	}
}

// A class of the user's whose provisioner is the node is the node's to
// serve, and its reclaim policy is kept.
func TestClassOfTheUser(t *testing.T) {
	retain := corev1.PersistentVolumeReclaimRetain
	keep := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Provisioner: ProvisionerName, ReclaimPolicy: &retain}
	other := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "ebs"}, Provisioner: "ebs.csi.aws.com"}
	name := "keep"
	claim := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &name}}
	if !ours(claim, keep) || ours(claim, other) {
		t.Error("the node serves the classes it provisions, only")
	}
	if reclaimPolicy(keep) != retain || reclaimPolicy(nil) != corev1.PersistentVolumeReclaimDelete {
		t.Error("reclaim policy: the class's, else Delete")
	}
}

// Releasing a volume whose claim is gone deletes it and its folder, unless
// its class retains data.
func TestReleaseHonoursRetain(t *testing.T) {
	for policy, keeps := range map[corev1.PersistentVolumeReclaimPolicy]bool{
		corev1.PersistentVolumeReclaimRetain: true,
		corev1.PersistentVolumeReclaimDelete: false,
	} {
		t.Run(string(policy), func(t *testing.T) {
			state := t.TempDir()
			dir := filepath.Join(state, "pvc", "ns", "data")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{annReclaim: string(policy)}},
				Spec: corev1.PersistentVolumeSpec{
					PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
					ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "gone"},
				},
			}
			client := fake.NewClientset(pv)
			p := &Provisioner{client: client, stateDir: state, kept: map[string]bool{}}
			p.release(context.Background(), pv, nil)
			_, err := client.CoreV1().PersistentVolumes().Get(context.Background(), "pvc-1", metav1.GetOptions{})
			if (err == nil) != keeps {
				t.Errorf("volume kept: %v, want %v", err == nil, keeps)
			}
			if _, err := os.Stat(dir); (err == nil) != keeps {
				t.Errorf("data kept: %v, want %v", err == nil, keeps)
			}
		})
	}
}
