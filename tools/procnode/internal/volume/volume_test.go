package volume

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
)

type objs map[string]any

func (o objs) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := o["cm/"+ns+"/"+name].(*corev1.ConfigMap); ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (o objs) Secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := o["secret/"+ns+"/"+name].(*corev1.Secret); ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func testPod() *corev1.Pod {
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid1", Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data/", Type: &dirOrCreate}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "shared"}}},
				{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			},
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{
				{Name: "scratch", MountPath: "/scratch"},
				{Name: "cfg", MountPath: "/etc/app/"},
				{Name: "data", MountPath: "/data", SubPathExpr: "$(POD_NAME)/out"},
				{Name: "host", MountPath: "/host", ReadOnly: true},
			}}},
		},
	}
}

func TestPlanAndMounts(t *testing.T) {
	pod := testPod()
	vols, err := Plan(pod, "/state/pods/uid1", "/state")
	if err != nil {
		t.Fatal(err)
	}
	if v := vols["data"]; v.Kind != KindClaim || v.HostPath != "/state/pvc/ns/shared" || v.Claim != "ns/shared" {
		t.Errorf("claim volume = %+v", v)
	}
	if v := vols["eph"]; v.HostPath != "/state/pvc/ns/p-eph" {
		t.Errorf("ephemeral volume = %+v", v)
	}
	if v := vols["host"]; v.HostPath != "/srv/data" || v.HostPathType != corev1.HostPathDirectoryOrCreate {
		t.Errorf("hostPath volume = %+v", v)
	}
	expand := func(s string) string {
		return podenv.Expand(s, podenv.MapLookup(map[string]string{"POD_NAME": "p"}))
	}
	mounts, err := ContainerMounts(&pod.Spec.Containers[0], vols, expand)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Source: "/state/pods/uid1/volumes/scratch", Target: "/scratch"},
		{Source: "/state/pods/uid1/volumes/cfg", Target: "/etc/app", ReadOnly: true},
		{Source: "/state/pvc/ns/shared/p/out", Target: "/data"},
		{Source: "/srv/data", Target: "/host", ReadOnly: true},
	}
	if !reflect.DeepEqual(mounts, want) {
		t.Errorf("mounts:\n got %+v\nwant %+v", mounts, want)
	}

	bad := pod.DeepCopy()
	bad.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "../escape"}}
	if _, err := ContainerMounts(&bad.Spec.Containers[0], vols, expand); err == nil {
		t.Error("subPath with .. must be rejected")
	}
	bad.Spec.Volumes = append(bad.Spec.Volumes, corev1.Volume{Name: "nfs", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{}}})
	if _, err := Plan(bad, "/p", "/s"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unsupported volume: %v", err)
	}
}

func TestFiles(t *testing.T) {
	pod := testPod()
	tru := true
	m := int32(0o600)
	o := objs{
		"cm/ns/cfg":       &corev1.ConfigMap{Data: map[string]string{"a.yaml": "x: 1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}},
		"cm/ns/ca":        &corev1.ConfigMap{Data: map[string]string{"ca.crt": "CERT"}},
		"secret/ns/creds": &corev1.Secret{Data: map[string][]byte{"user": []byte("u"), "pw": []byte("p")}},
	}
	var gotAud string
	src := Source{Pod: pod, Objects: o, Addr: podenv.Addresses{PodIP: "10.0.0.2"},
		Token: func(aud string, exp int64) (string, error) { gotAud = aud; return "TOKEN", nil }}

	files, err := Files(corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}, src)
	if err != nil || len(files) != 3 || files[0].Path != "a.yaml" || files[2].Path != "bin" || files[0].Mode != 0o644 {
		t.Fatalf("configMap files = %+v, %v", files, err)
	}

	files, err = Files(corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "creds", DefaultMode: &m, Items: []corev1.KeyToPath{{Key: "pw", Path: "sub/password"}}}}}, src)
	if err != nil || len(files) != 1 || files[0].Path != "sub/password" || string(files[0].Data) != "p" || files[0].Mode != 0o600 {
		t.Fatalf("secret items = %+v, %v", files, err)
	}

	if _, err := Files(corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "missing"}}}, src); err == nil {
		t.Fatal("missing secret must fail")
	}
	files, err = Files(corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "missing", Optional: &tru}}}, src)
	if err != nil || len(files) != 0 {
		t.Fatalf("optional missing secret = %+v, %v", files, err)
	}

	// The shape the ServiceAccount admission plugin gives every pod.
	exp := int64(3607)
	sa := corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}},
			}}},
		}}}}
	files, err = Files(sa, src)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Path] = string(f.Data)
	}
	want := map[string]string{"token": "TOKEN", "ca.crt": "CERT", "namespace": "ns", "labels": `a="1"`, "ip": "10.0.0.2"}
	if !reflect.DeepEqual(got, want) || gotAud != "" {
		t.Fatalf("projected = %v (audience %q)", got, gotAud)
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFiles(dir, []File{{Path: "a", Data: []byte("1"), Mode: 0o600}, {Path: "d/b", Data: []byte("2"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(dir, []File{{Path: "a", Data: []byte("changed"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "changed" {
		t.Errorf("a = %q", b)
	}
	if st, _ := os.Stat(filepath.Join(dir, "a")); st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v", st.Mode())
	}
	if _, err := os.Stat(filepath.Join(dir, "d/b")); !os.IsNotExist(err) {
		t.Errorf("stale file kept: %v", err)
	}
	if err := WriteFiles(dir, []File{{Path: "../x"}}); err == nil {
		t.Error("escaping path accepted")
	}
}

// WriteAtomic lays files out as the kubelet does: a version directory
// published through the ..data link, top-level names linking into it; a
// new version replaces the old at once, and unchanged files write nothing.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	// A file of the older flat layout is replaced.
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("flat"), 0o644); err != nil {
		t.Fatal(err)
	}
	v1 := []File{{Path: "a", Data: []byte("1"), Mode: 0o600}, {Path: "d/b", Data: []byte("2"), Mode: 0o644}}
	if err := WriteAtomic(dir, v1); err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(first, "..") {
		t.Fatalf("..data = %q, %v", first, err)
	}
	for name, want := range map[string]string{"a": "..data/a", "d": "..data/d"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s links to %q (%v), want %q", name, got, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "b")); string(b) != "2" {
		t.Errorf("d/b = %q", b)
	}
	if st, _ := os.Stat(filepath.Join(dir, "a")); st.Mode().Perm() != 0o600 {
		t.Errorf("mode of a = %v", st.Mode())
	}
	if st, _ := os.Stat(filepath.Join(dir, first)); st.Mode().Perm() != 0o755 {
		t.Errorf("the version directory must be readable by any user: %v", st.Mode())
	}

	if err := WriteAtomic(dir, v1); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != first {
		t.Errorf("unchanged files were written again: %s, was %s", again, first)
	}

	if err := WriteAtomic(dir, []File{{Path: "a", Data: []byte("changed"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	second, _ := os.Readlink(filepath.Join(dir, "..data"))
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); second == first || string(b) != "changed" {
		t.Errorf("a = %q through %s", b, second)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{second, "..data", "a"}; !reflect.DeepEqual(names, want) {
		t.Errorf("entries %q, want %q (old version and d removed)", names, want)
	}
	for _, bad := range []string{"../x", "..data", "..x/y", "/abs"} {
		if err := WriteAtomic(dir, []File{{Path: bad}}); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}
