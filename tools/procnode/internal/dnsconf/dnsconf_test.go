package dnsconf

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Namespace: "team"}}
}

func TestResolvConfClusterFirst(t *testing.T) {
	got, ok := ResolvConf(pod())
	want := "nameserver 127.0.0.1\nsearch team.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"
	if !ok || got != want {
		t.Fatalf("got %q (%v), want %q", got, ok, want)
	}
}

func TestResolvConfDNSConfig(t *testing.T) {
	p := pod()
	two := "2"
	p.Spec.DNSConfig = &corev1.PodDNSConfig{
		Nameservers: []string{"10.0.0.10"},
		Searches:    []string{"extra.local", "svc.cluster.local"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}},
	}
	got, _ := ResolvConf(p)
	want := "nameserver 127.0.0.1\nnameserver 10.0.0.10\nsearch team.svc.cluster.local svc.cluster.local cluster.local extra.local\noptions ndots:2 edns0\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	p.Spec.DNSPolicy = corev1.DNSNone
	got, _ = ResolvConf(p)
	if !strings.HasPrefix(got, "nameserver 10.0.0.10\nsearch extra.local svc.cluster.local\n") {
		t.Fatalf("dnsPolicy None: %q", got)
	}
}

func TestResolvConfHostDefaults(t *testing.T) {
	p := pod()
	p.Spec.DNSPolicy = corev1.DNSDefault
	if _, ok := ResolvConf(p); ok {
		t.Fatal("dnsPolicy Default must keep the host file")
	}
	p.Spec.DNSPolicy = ""
	p.Spec.HostNetwork = true
	if _, ok := ResolvConf(p); ok {
		t.Fatal("hostNetwork with ClusterFirst must keep the host file")
	}
}

func TestHostsAndNames(t *testing.T) {
	p := pod()
	p.Spec.Hostname = "w0"
	p.Spec.Subdomain = "job"
	p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"a", "b"}}}
	h := Hosts(p, "10.244.0.9")
	for _, want := range []string{
		"127.0.0.1\tlocalhost kubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local\n",
		"10.244.0.9\tw0.job.team.svc.cluster.local\tw0\n",
		"10.1.1.1\ta\tb\n",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("hosts file lacks %q:\n%s", want, h)
		}
	}
	long := pod()
	long.Name = strings.Repeat("a", 62) + "-b"
	if got := Hostname(long); got != strings.Repeat("a", 62) {
		t.Errorf("Hostname = %q", got)
	}
}
