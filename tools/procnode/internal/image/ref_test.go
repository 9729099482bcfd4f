package image

import "testing"

func TestMirrorRef(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const m = "127.0.0.1:5000"
	cases := map[string]string{
		"ghcr.io/muster-dev/muster-operator:v0.2.0@" + d: m + "/muster-dev/muster-operator@" + d,
		"ghcr.io/muster-dev/muster-operator:v0.2.0":      m + "/muster-dev/muster-operator:v0.2.0",
		"ghcr.io/muster-dev/muster-operator@" + d:        m + "/muster-dev/muster-operator@" + d,
		"pytorch/pytorch:2.5.1-cpu":                      m + "/pytorch/pytorch:2.5.1-cpu",
		"docker.io/pytorch/pytorch:2.5.1-cpu":            m + "/pytorch/pytorch:2.5.1-cpu",
		"busybox":                                        m + "/library/busybox:latest",
		m + "/muster-dev/probe:v1":                       m + "/muster-dev/probe:v1",
		"localhost:5000/a/b/c:t":                         m + "/a/b/c:t",
	}
	for in, want := range cases {
		got, err := MirrorRef(in, m)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got.String() != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
		if got.Context().Scheme() != "http" {
			t.Errorf("%s: the mirror is plain HTTP, got %s", in, got.Context().Scheme())
		}
	}
	if _, err := MirrorRef("Not A Reference", m); err == nil {
		t.Error("an invalid reference must be refused")
	}
}
