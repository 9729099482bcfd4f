package devcluster

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func testConfig(t *testing.T) *Config {
	t.Helper()
	return &Config{Root: "/repo", Cache: "/cache", StateDir: "/state", Ports: DefaultPorts}
}

// flagValue returns the value of --name=value in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestAPIServerArgsEnableTheWorkloadAPI(t *testing.T) {
	args := testConfig(t).apiServerArgs()
	for name, want := range map[string]string{
		"feature-gates":                    "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true",
		"runtime-config":                   "scheduling.k8s.io/v1alpha2=true",
		"bind-address":                     "127.0.0.1",
		"secure-port":                      "16443",
		"etcd-servers":                     "http://127.0.0.1:16379",
		"service-account-signing-key-file": "/state/pki/sa.key",
		"client-ca-file":                   "/state/pki/ca.crt",
		"authorization-mode":               "RBAC",
	} {
		if got, _ := flagValue(args, name); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
}

func TestEveryComponentListensOnLoopbackOnly(t *testing.T) {
	c := testConfig(t)
	for name, args := range map[string][]string{
		"etcd": c.etcdArgs(), "kube-apiserver": c.apiServerArgs(),
		"kube-controller-manager": c.controllerManagerArgs(), "kube-scheduler": c.schedulerArgs(),
		"kwok": c.kwokComponent("kwok").args, "procnode": c.procNodeArgs(), "registry": c.registryComponent("muster-registry").args,
	} {
		for _, a := range args {
			if strings.Contains(a, "0.0.0.0") || strings.Contains(a, "=:") {
				t.Errorf("%s: %s listens beyond 127.0.0.1", name, a)
			}
		}
	}
	for _, name := range []string{"listen-client-urls", "listen-peer-urls"} {
		if v, _ := flagValue(c.etcdArgs(), name); !strings.HasPrefix(v, "http://127.0.0.1:") {
			t.Errorf("etcd --%s = %q", name, v)
		}
	}
	for _, args := range [][]string{c.controllerManagerArgs(), c.schedulerArgs()} {
		if v, _ := flagValue(args, "bind-address"); v != "127.0.0.1" {
			t.Errorf("--bind-address = %q", v)
		}
	}
}

func TestControllerManagerPublishesServiceAccountCredentials(t *testing.T) {
	args := testConfig(t).controllerManagerArgs()
	for name, want := range map[string]string{
		"service-account-private-key-file": "/state/pki/sa.key",
		"root-ca-file":                     "/state/pki/ca.crt",
		"feature-gates":                    featureGates,
		"leader-elect":                     "false",
	} {
		if got, _ := flagValue(args, name); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
}

func TestSchedulerConfigIsValidYAML(t *testing.T) {
	c := testConfig(t)
	var cfg struct {
		Kind             string
		ClientConnection struct {
			Kubeconfig string
			QPS        float64
		} `json:"clientConnection"`
		LeaderElection struct {
			LeaderElect bool `json:"leaderElect"`
		} `json:"leaderElection"`
	}
	if err := yaml.Unmarshal([]byte(c.schedulerConfig()), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "KubeSchedulerConfiguration" || cfg.ClientConnection.Kubeconfig != "/state/kubeconfigs/kube-scheduler.kubeconfig" ||
		cfg.ClientConnection.QPS != 200 || cfg.LeaderElection.LeaderElect {
		t.Errorf("unexpected scheduler config: %+v", cfg)
	}
	if v, _ := flagValue(c.schedulerArgs(), "config"); v != "/state/kube-scheduler.yaml" {
		t.Errorf("--config = %q", v)
	}
}

func TestProcNodeArgsFollowTheContract(t *testing.T) {
	args := testConfig(t).procNodeArgs()
	want := []string{
		"--kubeconfig=/state/kubeconfigs/procnode.kubeconfig",
		"--node-name=muster-procnode",
		"--state-dir=/state/procnode",
		"--pod-cidr=10.244.0.0/24",
		"--apiserver=127.0.0.1:16443",
		"--dns=127.0.0.1:16053",
		"--listen=127.0.0.1:16250",
		"--registry-mirror=127.0.0.1:16500",
		"--egress-socket=/state/procnode-egress.sock",
	}
	if strings.Join(args, " ") != strings.Join(want, " ") {
		t.Errorf("procnode args:\n got %v\nwant %v", args, want)
	}
}

func TestFailingChecksNamesWhatTheAPIServerWaitsFor(t *testing.T) {
	body := "[+]ping ok\n[-]informer-sync failed: reason withheld\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\nreadyz check failed\n"
	if got := failingChecks(body); got != "waiting for informer-sync, poststarthook/rbac/bootstrap-roles" {
		t.Errorf("got %q", got)
	}
}
