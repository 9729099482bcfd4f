package pvc

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
		if got := ours(pvc); got != c.want {
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
