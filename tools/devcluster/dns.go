package devcluster

import (
	"context"
	"fmt"
	"net/http"
)

func (c *Config) corefilePath() string { return c.path("coredns", "Corefile") }

// corefile serves the Kubernetes DNS spec for cluster.local from the API
// server (Services, headless Services' endpoints with their
// <hostname>.<subdomain> records, and pod A records checked against real
// pods) and forwards every other name to the host's resolvers. Everything
// binds to 127.0.0.1; the process node relays its pods' queries here.
func (c *Config) corefile() string {
	kubeconfig := c.componentKubeconfig("coredns")
	return fmt.Sprintf(`%[1]s:%[2]d in-addr.arpa:%[2]d ip6.arpa:%[2]d {
    bind 127.0.0.1
    errors
    ready 127.0.0.1:%[3]d
    kubernetes %[1]s in-addr.arpa ip6.arpa {
        kubeconfig %[4]s %[5]s
        pods verified
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    forward . /etc/resolv.conf
}
.:%[2]d {
    bind 127.0.0.1
    errors
    forward . /etc/resolv.conf
    cache 30
}
`, ClusterDomain, c.Ports.DNS, c.Ports.DNSReady, kubeconfig, ContextName)
}

func (c *Config) dnsComponent(bin string) component {
	return component{
		name:   "coredns",
		bin:    bin,
		args:   []string{"-conf", c.corefilePath()},
		addr:   fmt.Sprintf("127.0.0.1:%d (dns), :%d (ready)", c.Ports.DNS, c.Ports.DNSReady),
		listen: []listenAddr{udp(c.Ports.DNS), tcp(c.Ports.DNS), tcp(c.Ports.DNSReady)},
		// /ready answers 200 once the kubernetes plugin has synced its caches.
		ready: httpOK(fmt.Sprintf("http://127.0.0.1:%d/ready", c.Ports.DNSReady)),
	}
}

// httpOK checks that a URL answers 200 (TLS is not verified: the
// components' health endpoints use self-signed serving certificates).
func httpOK(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := insecureHTTP.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}
