// Package dnsconf renders the /etc/resolv.conf, /etc/hosts and hostname a pod
// sees. Inside a pod network namespace the cluster DNS is reached through a
// forwarder on 127.0.0.1:53, so the nameserver is always the loopback address.
package dnsconf

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ClusterDomain is the DNS domain of the cluster.
const ClusterDomain = "cluster.local"

// APINames are the in-cluster names of the API server; /etc/hosts maps them
// to the pod's loopback forwarder.
var APINames = []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + ClusterDomain}

// Hostname returns the pod's hostname: spec.hostname, else the pod name cut
// to a valid DNS label.
func Hostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

// FQDN returns hostname.subdomain.namespace.svc.cluster.local when the pod
// has a subdomain (the name a headless Service gives it), else "".
func FQDN(pod *corev1.Pod) string {
	if pod.Spec.Subdomain == "" {
		return ""
	}
	return fmt.Sprintf("%s.%s.%s.svc.%s", Hostname(pod), pod.Spec.Subdomain, pod.Namespace, ClusterDomain)
}

// ResolvConf returns the resolv.conf for the pod, or ok=false when the pod
// should keep the host's file (dnsPolicy Default, or host networking
// without ClusterFirstWithHostNet, where no in-pod forwarder exists).
func ResolvConf(pod *corev1.Pod) (content string, ok bool) {
	var servers, search []string
	opts := map[string]string{}
	var optOrder []string
	addOpt := func(name, value string) {
		if _, seen := opts[name]; !seen {
			optOrder = append(optOrder, name)
		}
		opts[name] = value
	}
	switch pod.Spec.DNSPolicy {
	case corev1.DNSDefault:
		return "", false
	case corev1.DNSNone:
	case corev1.DNSClusterFirstWithHostNet:
		servers = []string{"127.0.0.1"}
		search = clusterSearch(pod.Namespace)
		addOpt("ndots", "5")
	default: // ClusterFirst
		if pod.Spec.HostNetwork {
			return "", false
		}
		servers = []string{"127.0.0.1"}
		search = clusterSearch(pod.Namespace)
		addOpt("ndots", "5")
	}
	if c := pod.Spec.DNSConfig; c != nil {
		servers = appendUnique(servers, c.Nameservers...)
		search = appendUnique(search, c.Searches...)
		for _, o := range c.Options {
			v := ""
			if o.Value != nil {
				v = *o.Value
			}
			addOpt(o.Name, v)
		}
	}
	if len(servers) > 3 {
		servers = servers[:3]
	}
	if len(search) > 32 {
		search = search[:32]
	}
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(search) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(search, " "))
	}
	if len(optOrder) > 0 {
		parts := make([]string, 0, len(optOrder))
		for _, n := range optOrder {
			if opts[n] != "" {
				parts = append(parts, n+":"+opts[n])
			} else {
				parts = append(parts, n)
			}
		}
		fmt.Fprintf(&b, "options %s\n", strings.Join(parts, " "))
	}
	return b.String(), true
}

func clusterSearch(ns string) []string {
	return []string{ns + ".svc." + ClusterDomain, "svc." + ClusterDomain, ClusterDomain}
}

func appendUnique(list []string, more ...string) []string {
	for _, m := range more {
		dup := false
		for _, l := range list {
			dup = dup || l == m
		}
		if !dup {
			list = append(list, m)
		}
	}
	return list
}

// Hosts returns the pod's /etc/hosts. The API server's in-cluster names
// point at 127.0.0.1, where the node forwards to the real API server.
func Hosts(pod *corev1.Pod, podIP string) string {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file (muster process node).\n")
	fmt.Fprintf(&b, "127.0.0.1\tlocalhost %s\n", strings.Join(APINames, " "))
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	if podIP != "" {
		if fq := FQDN(pod); fq != "" {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", podIP, fq, Hostname(pod))
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", podIP, Hostname(pod))
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.String()
}
