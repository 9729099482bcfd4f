package devcluster

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/work/main/.cache/dev/kubeconfig": "/work/main/.cache/dev/kubeconfig",
		"/tmp/my dir/kubeconfig":           "'/tmp/my dir/kubeconfig'",
		"/tmp/it's":                        `'/tmp/it'\''s'`,
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
