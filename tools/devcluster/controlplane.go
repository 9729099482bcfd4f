package devcluster

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// Feature gates and API versions of the native Workload/gang scheduling API
// (scheduling.k8s.io/v1alpha2 Workload and PodGroup) in Kubernetes 1.36:
// GenericWorkload serves the API (and runs the PodGroup protection
// controller), GangScheduling adds the scheduler's gang plugin, and
// TopologyAwareWorkloadScheduling the PodGroup's topology constraint and
// the scheduler's plugins that place a gang within one domain. All are
// alpha and off by default; the API group version must also be switched on.
const (
	featureGates  = "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true"
	runtimeConfig = "scheduling.k8s.io/v1alpha2=true"
)

func (c *Config) etcdURL(port int) string { return fmt.Sprintf("http://127.0.0.1:%d", port) }

func (c *Config) etcdArgs() []string {
	client, peer := c.etcdURL(c.Ports.EtcdClient), c.etcdURL(c.Ports.EtcdPeer)
	return []string{
		"--name=muster-dev",
		"--data-dir=" + c.path("etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=muster-dev=" + peer,
		"--quota-backend-bytes=4294967296",
		// A throwaway cluster does not need durable writes, and fsync is
		// what makes etcd slow on a busy laptop disk.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
}

func (c *Config) apiServerArgs() []string {
	return []string{
		"--etcd-servers=" + c.etcdURL(c.Ports.EtcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.Ports.APIServer),
		"--tls-cert-file=" + c.pki("apiserver.crt"),
		"--tls-private-key-file=" + c.pki("apiserver.key"),
		"--client-ca-file=" + c.pki("ca.crt"),
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file=" + c.pki("ca.crt"),
		"--requestheader-allowed-names=" + frontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + c.pki("front-proxy-client.key"),
		"--service-account-issuer=https://kubernetes.default.svc." + ClusterDomain,
		"--service-account-key-file=" + c.pki("sa.pub"),
		"--service-account-signing-key-file=" + c.pki("sa.key"),
		"--service-cluster-ip-range=" + ServiceCIDR,
		// logs and exec go to the node's kubelet endpoint (the process node).
		"--kubelet-client-certificate=" + c.pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + c.pki("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// Nothing can route to a loopback advertise address from a pod, and
		// the Endpoints API rejects it; the process node gives pods their
		// own way to the API server.
		"--endpoint-reconciler-type=none",
		// Webhooks behind a Service, and the kubelet API, are reached through
		// the process node's egress proxy, which dials pod addresses from
		// the pod network (this API server has no route to them); a Service
		// resolves to its pods' addresses rather than its cluster IP, which
		// nothing serves (no kube-proxy).
		"--egress-selector-config-file=" + c.egressConfigFile(),
		"--enable-aggregator-routing=true",
		"--allow-privileged=true",
		"--feature-gates=" + featureGates,
		"--runtime-config=" + runtimeConfig,
		"--profiling=" + strconv.FormatBool(c.Profiling),
	}
}

func (c *Config) controllerManagerArgs() []string {
	kc := c.componentKubeconfig("kube-controller-manager")
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.Ports.ControllerManager),
		"--leader-elect=false",
		// Service-account tokens and the kube-root-ca.crt ConfigMap in every
		// namespace: what an in-cluster client (the operator pod) needs.
		"--service-account-private-key-file=" + c.pki("sa.key"),
		"--root-ca-file=" + c.pki("ca.crt"),
		"--use-service-account-credentials=true",
		"--cluster-signing-cert-file=" + c.pki("ca.crt"),
		"--cluster-signing-key-file=" + c.pki("ca.key"),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--allocate-node-cidrs=false",
		// The default 20 QPS would pace Job and GC work on hundreds of fake pods.
		fmt.Sprintf("--kube-api-qps=%d", cmp.Or(c.ControllerManagerQPS, 200)),
		fmt.Sprintf("--kube-api-burst=%d", cmp.Or(c.ControllerManagerBurst, 400)),
		"--feature-gates=" + featureGates,
		"--profiling=false",
	}
}

func (c *Config) schedulerConfigFile() string { return c.path("kube-scheduler.yaml") }

// schedulerConfig raises the scheduler's client rate limits (50 QPS by
// default), which otherwise pace scale tests on fake nodes.
func (c *Config) schedulerConfig() string {
	return strings.Join([]string{
		"apiVersion: kubescheduler.config.k8s.io/v1",
		"kind: KubeSchedulerConfiguration",
		"clientConnection:",
		"  kubeconfig: " + c.componentKubeconfig("kube-scheduler"),
		"  qps: 200",
		"  burst: 400",
		"leaderElection:",
		"  leaderElect: false",
		"",
	}, "\n")
}

func (c *Config) schedulerArgs() []string {
	kc := c.componentKubeconfig("kube-scheduler")
	return []string{
		"--config=" + c.schedulerConfigFile(),
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.Ports.Scheduler),
		"--feature-gates=" + featureGates,
		"--profiling=false",
	}
}
