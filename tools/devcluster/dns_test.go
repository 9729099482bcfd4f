package devcluster

import (
	"strings"
	"testing"
)

func TestCorefileServesClusterLocalFromTheAPIServer(t *testing.T) {
	cf := testConfig(t).corefile()
	for _, want := range []string{
		"cluster.local:16053 in-addr.arpa:16053 ip6.arpa:16053 {",
		"kubernetes cluster.local in-addr.arpa ip6.arpa {",
		"kubeconfig /state/kubeconfigs/coredns.kubeconfig muster-dev",
		"pods verified",
		"ready 127.0.0.1:16181",
		".:16053 {",
		"forward . /etc/resolv.conf",
	} {
		if !strings.Contains(cf, want) {
			t.Errorf("Corefile lacks %q:\n%s", want, cf)
		}
	}
	if n := strings.Count(cf, "bind 127.0.0.1"); n != 2 {
		t.Errorf("want both server blocks bound to 127.0.0.1, got %d binds", n)
	}
	if strings.Count(cf, "{") != strings.Count(cf, "}") {
		t.Errorf("unbalanced braces:\n%s", cf)
	}
}
