package devcluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

func TestParseSchedulers(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{nil, nil},
		{[]string{"volcano"}, []string{Volcano}},
		{[]string{"volcano,coscheduling"}, []string{Coscheduling, Volcano}},
		{[]string{" Volcano ", "volcano", "coscheduling,"}, []string{Coscheduling, Volcano}},
		{[]string{""}, nil},
	} {
		got, err := ParseSchedulers(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSchedulers(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseSchedulers([]string{"volcano,slurm"}); err == nil || !strings.Contains(err.Error(), `"slurm"`) {
		t.Errorf("an unknown scheduler is not refused by name: %v", err)
	}
}

// Only what is asked for starts, with its CRDs installed before and its
// readiness (or webhooks) checked after.
func TestExtraSteps(t *testing.T) {
	c := &Config{StateDir: t.TempDir(), Ports: DefaultPorts, Schedulers: []string{Volcano}, Kueue: true}
	b := &Binaries{}
	extraBinaryPaths("/cache/bin", ExtraVersions{SchedulerPlugins: "v0.1.0", SchedulerPluginsKubernetes: "v1.2.3", Volcano: "v1.0.0", VolcanoKubernetes: "v1.2.0", Kueue: "v0.9.0"}, b)
	steps := c.extraSteps(b)
	var names []string
	for _, s := range steps {
		names = append(names, s.comp.name)
	}
	if !slices.Equal(names, extraComponentNames) {
		t.Fatalf("steps %q, want %q (the order down reverses)", names, extraComponentNames)
	}
	byName := map[string]step{}
	for _, s := range steps {
		byName[s.comp.name] = s
	}
	for _, n := range []string{"coscheduling", "coscheduling-controller"} {
		if !byName[n].skip {
			t.Errorf("%s starts though not asked for", n)
		}
	}
	for _, n := range []string{"vc-controller-manager", "vc-scheduler", "kueue"} {
		if byName[n].skip {
			t.Errorf("%s is skipped though asked for", n)
		}
	}
	if byName["vc-controller-manager"].before == nil || byName["vc-scheduler"].after == nil {
		t.Error("volcano's CRDs are not installed first, or its default queue not awaited")
	}
	if byName["kueue"].before == nil || byName["kueue"].after == nil {
		t.Error("kueue's CRDs or webhooks are not installed")
	}
	if got := byName["vc-scheduler"].comp.bin; got != "/cache/bin/volcano-v1.0.0-k8s-v1.2.0/vc-scheduler" {
		t.Errorf("vc-scheduler binary %s: the folder must be keyed by both versions", got)
	}
	if got := byName["coscheduling"].comp.bin; got != "/cache/bin/coscheduling-v0.1.0-k8s-v1.2.3/kube-scheduler-coscheduling" {
		t.Errorf("coscheduling binary %s", got)
	}
}

// Every listener of the optional components is on loopback, on a port of
// its own.
func TestExtraComponentsListenOnLoopbackOnly(t *testing.T) {
	c := &Config{StateDir: "/state", Ports: DefaultPorts}
	for _, comp := range c.extraComponents() {
		if len(comp.listen) == 0 {
			t.Errorf("%s declares no listen address, so a clash is not caught before start", comp.name)
		}
		for _, l := range comp.listen {
			if !strings.HasPrefix(l.addr, "127.0.0.1:") {
				t.Errorf("%s listens on %s", comp.name, l.addr)
			}
		}
		for _, a := range comp.args {
			if strings.Contains(a, "address=") && !strings.Contains(a, "=127.0.0.1") {
				t.Errorf("%s: %s is not on loopback", comp.name, a)
			}
		}
	}
	seen := map[int]string{}
	v := reflect.ValueOf(DefaultPorts)
	for i := range v.NumField() {
		port, name := int(v.Field(i).Int()), v.Type().Field(i).Name
		if other, dup := seen[port]; dup {
			t.Errorf("ports %s and %s are both %d", name, other, port)
		}
		seen[port] = name
	}
}

func TestCoschedulingConfig(t *testing.T) {
	c := &Config{StateDir: "/state", Ports: DefaultPorts}
	var cfg struct {
		Kind             string
		ClientConnection struct{ Kubeconfig string }
		LeaderElection   struct{ LeaderElect *bool }
		Profiles         []struct {
			SchedulerName string
			Plugins       map[string]struct {
				Enabled, Disabled []struct{ Name string }
			}
		}
	}
	if err := yaml.Unmarshal([]byte(c.coschedulingConfig()), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kind != "KubeSchedulerConfiguration" || cfg.ClientConnection.Kubeconfig != "/state/kubeconfigs/coscheduling.kubeconfig" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.LeaderElection.LeaderElect == nil || *cfg.LeaderElection.LeaderElect {
		t.Error("leader election is on: a second instance in another state dir would wait for the first")
	}
	if len(cfg.Profiles) != 1 || cfg.Profiles[0].SchedulerName != CoschedulingSchedulerName {
		t.Fatalf("profiles %+v", cfg.Profiles)
	}
	p := cfg.Profiles[0].Plugins
	if len(p["multiPoint"].Enabled) != 1 || p["multiPoint"].Enabled[0].Name != "Coscheduling" ||
		len(p["queueSort"].Enabled) != 1 || p["queueSort"].Enabled[0].Name != "Coscheduling" ||
		len(p["queueSort"].Disabled) != 1 || p["queueSort"].Disabled[0].Name != "*" {
		t.Errorf("Coscheduling must be the queue sort (alone) and on at every extension point: %+v", p)
	}
}

func TestVolcanoArgs(t *testing.T) {
	c := &Config{StateDir: "/state", Ports: DefaultPorts}
	sched := c.volcanoSchedulerComponent("/bin/vc")
	for _, want := range []string{"--scheduler-conf=/state/vc-scheduler.yaml", "--scheduler-name=volcano", "--leader-elect=false", "--enable-healthz=true", "--healthz-address=127.0.0.1:16261"} {
		if !slices.Contains(sched.args, want) {
			t.Errorf("vc-scheduler args lack %s: %q", want, sched.args)
		}
	}
	ctrl := c.volcanoControllersComponent("/bin/vc")
	if !slices.Contains(ctrl.args, "--controllers=queue-controller,pg-controller") {
		t.Errorf("vc-controller-manager runs more than the queue and PodGroup controllers: %q", ctrl.args)
	}
	var conf struct {
		Actions string
		Tiers   []struct {
			Plugins []struct {
				Name              string
				EnablePreemptable *bool `json:"enablePreemptable"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(volcanoSchedulerConfig()), &conf); err != nil {
		t.Fatal(err)
	}
	if conf.Actions != "allocate, preempt, reclaim, backfill" {
		t.Errorf("actions %q: allocate, then preempt and reclaim, and no enqueue (it keeps a preemptor out of a full cluster)", conf.Actions)
	}
	preemptable := map[string]bool{}
	for _, tier := range conf.Tiers {
		for _, p := range tier.Plugins {
			preemptable[p.Name] = p.EnablePreemptable == nil || *p.EnablePreemptable
		}
	}
	for _, name := range []string{"priority", "gang", "conformance", "predicates", "proportion"} {
		if _, ok := preemptable[name]; !ok {
			t.Errorf("plugin %s missing: %+v", name, conf)
		}
	}
	if preemptable["gang"] || preemptable["drf"] {
		t.Errorf("gang and drf must not choose victims (the gang plugin spares every whole gang): %+v", conf)
	}
}

func TestKueueConfig(t *testing.T) {
	c := &Config{StateDir: "/state", Ports: DefaultPorts}
	var cfg struct {
		APIVersion string `json:"apiVersion"`
		Namespace  string
		Health     struct{ HealthProbeBindAddress string }
		Metrics    struct{ BindAddress string }
		Webhook    struct {
			Host    string
			Port    int
			CertDir string
		}
		LeaderElection         struct{ LeaderElect *bool }
		InternalCertManagement struct {
			Enable                                *bool
			WebhookServiceName, WebhookSecretName string
		}
		FeatureGates map[string]bool
		Integrations struct{ Frameworks, ExternalFrameworks []string }
	}
	if err := yaml.Unmarshal([]byte(c.kueueConfig()), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "config.kueue.x-k8s.io/v1beta2" || cfg.Namespace != kueueNamespace {
		t.Errorf("config %+v", cfg)
	}
	if cfg.Health.HealthProbeBindAddress != "127.0.0.1:16265" || cfg.Metrics.BindAddress != "0" ||
		cfg.Webhook.Host != "127.0.0.1" || cfg.Webhook.Port != 16266 || cfg.Webhook.CertDir != "/state/kueue/certs" {
		t.Errorf("listeners %+v %+v %+v", cfg.Health, cfg.Metrics, cfg.Webhook)
	}
	if on, ok := cfg.FeatureGates["VisibilityOnDemand"]; !ok || on {
		t.Error("the visibility API server (all interfaces) is not off")
	}
	icm := cfg.InternalCertManagement
	if icm.Enable == nil || !*icm.Enable || icm.WebhookServiceName != kueueWebhookService || icm.WebhookSecretName != kueueCertSecret {
		t.Errorf("internal cert management %+v", icm)
	}
	if cfg.LeaderElection.LeaderElect == nil || *cfg.LeaderElection.LeaderElect {
		t.Error("leader election is on")
	}
	if !slices.Contains(cfg.Integrations.Frameworks, "batch/job") {
		t.Errorf("frameworks %q", cfg.Integrations.Frameworks)
	}
	if !slices.Contains(cfg.Integrations.ExternalFrameworks, "TrainingJob.v1beta1.muster.dev") {
		t.Errorf("external frameworks %q: Muster's TrainingJobs are missing", cfg.Integrations.ExternalFrameworks)
	}
}

// The certificate is one Kueue's rotator keeps (valid for its service name
// under its CA's name, beyond its 90-day renewal window) and one the API
// server accepts at https://127.0.0.1.
func TestKueuePKI(t *testing.T) {
	now := time.Now()
	files, err := kueuePKI(now)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(name string) *x509.Certificate {
		b, _ := pem.Decode(files[name])
		if b == nil {
			t.Fatalf("%s is not PEM", name)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	ca, leaf := parse("ca.crt"), parse("tls.crt")
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	at := now.Add(91 * 24 * time.Hour)
	if _, err := ca.Verify(x509.VerifyOptions{DNSName: kueueCAName, Roots: roots, CurrentTime: at}); err != nil {
		t.Errorf("the CA is not valid for %s: %v", kueueCAName, err)
	}
	for _, host := range []string{"kueue-webhook-service.kueue-system.svc", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: at}); err != nil {
			t.Errorf("the serving certificate is not valid for %s: %v", host, err)
		}
	}
	if !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("IP SANs %v", leaf.IPAddresses)
	}
	for _, pair := range [][2]string{{"ca.crt", "ca.key"}, {"tls.crt", "tls.key"}} {
		if _, err := tls.X509KeyPair(files[pair[0]], files[pair[1]]); err != nil {
			t.Errorf("%s and %s: %v", pair[0], pair[1], err)
		}
		b, _ := pem.Decode(files[pair[1]])
		if _, err := x509.ParsePKCS1PrivateKey(b.Bytes); err != nil {
			t.Errorf("%s is not a PKCS#1 RSA key, which the rotator parses: %v", pair[1], err)
		}
	}
}

// A made-up folder in the layout of Kueue's config/components.
func writeKueueFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"crd/kustomization.yaml": `resources:
- bases/a.yaml
- bases/b.yaml
patches:
- path: patches/conv_a.yaml
`,
		"crd/bases/a.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: as.example.com
spec:
  group: example.com
`,
		"crd/bases/b.yaml": `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: bs.example.com
spec:
  group: example.com
`,
		"crd/patches/conv_a.yaml": `# a comment
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: as.example.com
spec:
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {namespace: system, name: webhook-service, path: /convert}
      conversionReviewVersions: [v1]
`,
		"webhook/kustomization.yaml": `resources:
- manifests.yaml
- service.yaml
patches:
- patch: |-
    apiVersion: admissionregistration.k8s.io/v1
    kind: MutatingWebhookConfiguration
    metadata:
      name: mutating-webhook-configuration
    webhooks:
    - name: mpod.example.com
      namespaceSelector:
        matchExpressions:
        - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}
`,
		"webhook/manifests.yaml": `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- name: mpod.example.com
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-pod}
  failurePolicy: Fail
- name: mjob.example.com
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-job}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- name: vpod.example.com
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-pod}
`,
		"webhook/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: webhook-service\n",
	}
	for name, data := range files {
		if err := writeFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestKueueCRDs(t *testing.T) {
	dir := writeKueueFixture(t)
	out, err := kueueCRDs(filepath.Join(dir, "crd"), "https://127.0.0.1:9", []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	docs := decodeDocs(t, out)
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the 2 CRDs:\n%s", len(docs), out)
	}
	conv, _ := nestedMap(docs[0], "spec")["conversion"].(map[string]any)
	cc := nestedMap(nestedMap(conv, "webhook"), "clientConfig")
	if conv["strategy"] != "Webhook" || cc["url"] != "https://127.0.0.1:9/convert" || cc["caBundle"] != base64.StdEncoding.EncodeToString([]byte("CA")) || cc["service"] != nil {
		t.Errorf("conversion of as.example.com: %v", conv)
	}
	if _, has := nestedMap(docs[1], "spec")["conversion"]; has {
		t.Error("bs.example.com got a conversion webhook no patch asked for")
	}
}

func TestKueueWebhooks(t *testing.T) {
	dir := writeKueueFixture(t)
	out, err := kueueWebhooks(filepath.Join(dir, "webhook"), "https://127.0.0.1:9", []byte("CA"))
	if err != nil {
		t.Fatal(err)
	}
	docs := decodeDocs(t, out)
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the 2 configurations (not the Service):\n%s", len(docs), out)
	}
	if nested(docs[0], "metadata", "name") != "kueue-mutating-webhook-configuration" ||
		nested(docs[1], "metadata", "name") != "kueue-validating-webhook-configuration" {
		t.Errorf("names %q, %q: Kueue's rotator looks for kueue-<type>-webhook-configuration",
			nested(docs[0], "metadata", "name"), nested(docs[1], "metadata", "name"))
	}
	hooks := items(docs[0]["webhooks"])
	if len(hooks) != 2 {
		t.Fatalf("webhooks %v", hooks)
	}
	pod, job := hooks[0], hooks[1]
	if cc := pod["clientConfig"].(map[string]any); cc["url"] != "https://127.0.0.1:9/mutate-pod" || cc["service"] != nil || cc["caBundle"] != base64.StdEncoding.EncodeToString([]byte("CA")) {
		t.Errorf("clientConfig %v", cc)
	}
	if pod["namespaceSelector"] == nil || pod["failurePolicy"] != "Fail" {
		t.Errorf("the patch's namespaceSelector is not merged into the pod webhook, or its own fields lost: %v", pod)
	}
	if job["namespaceSelector"] != nil {
		t.Errorf("the patch reached another webhook: %v", job)
	}
}

func decodeDocs(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, part := range splitDocs(data) {
		var d map[string]any
		if err := yaml.Unmarshal(part, &d); err != nil {
			t.Fatal(err)
		}
		if len(d) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func TestTheRepositoryPinsTheOptionalComponents(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ReadExtraVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{
		"scheduler-plugins": v.SchedulerPlugins, "its kubernetes": v.SchedulerPluginsKubernetes,
		"volcano": v.Volcano, "volcano's kubernetes": v.VolcanoKubernetes, "kueue": v.Kueue,
	} {
		if !strings.HasPrefix(got, "v") {
			t.Errorf("%s pinned as %q", name, got)
		}
	}
	cluster, err := ReadClusterVersions(root)
	if err != nil {
		t.Fatal(err)
	}
	if v.SchedulerPluginsKubernetes != cluster.Kubernetes {
		t.Errorf("the coscheduling scheduler is built on Kubernetes %s, the control plane is %s", v.SchedulerPluginsKubernetes, cluster.Kubernetes)
	}
}

func TestRequiredVersionSkipsReplacements(t *testing.T) {
	gomod := "module x\n\nreplace (\n\tk8s.io/kubernetes => k8s.io/kubernetes v1.34.4\n)\n\nrequire k8s.io/kubernetes v1.34.1\n"
	if got := requiredVersion(gomod, "k8s.io/kubernetes"); got != "v1.34.1" {
		t.Errorf("got %q", got)
	}
}

// The operator is installed with the components of the extras the cluster
// runs: the gang schedulers, Kueue, and profiling when it profiles.
func TestInstallKustomizationAddsTheExtrasComponents(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{Root: root, StateDir: t.TempDir(), Schedulers: []string{"coscheduling", "volcano"}, Kueue: true, Profiling: true}
	dir, err := c.installKustomization(testImage)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"config/dev", "config/gang/coscheduling", "config/gang/volcano", "config/queue/kueue", "config/profiling"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("kustomization lacks %s:\n%s", want, b)
		}
	}
}

const testImage = "127.0.0.1:16500/muster-operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// installed is what the kustomization c writes for the operator installs:
// every object, as kubectl would apply them.
func installed(t *testing.T, c *Config) []*resource.Resource {
	t.Helper()
	dir, err := c.installKustomization(testImage)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return rm.Resources()
}

// The operator is installed from the image muster-dev built, by digest,
// with or without extras.
func TestInstallKustomizationInstallsTheBuiltImage(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Config{{Root: root, StateDir: t.TempDir()}, {Root: root, StateDir: t.TempDir(), Kueue: true}} {
		var images []string
		for _, r := range installed(t, c) {
			if r.GetKind() == "Deployment" {
				out, _ := r.AsYAML()
				for _, line := range strings.Split(string(out), "\n") {
					if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
						images = append(images, img)
					}
				}
			}
		}
		if len(images) != 1 || images[0] != testImage {
			t.Errorf("kueue %v: the Deployment runs %v, want only %s", c.Kueue, images, testImage)
		}
	}
}

// Flags given for the operator (the benchmark's -operator-args) reach its
// container's arguments, after its own, with profiling's too.
func TestInstallKustomizationAddsTheOperatorArgs(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	extra := []string{"--status-batch-start", "--concurrent-reconciles=200"}
	for _, r := range installed(t, &Config{Root: root, StateDir: t.TempDir(), Profiling: true, OperatorArgs: extra}) {
		if r.GetKind() != "Deployment" {
			continue
		}
		args, err := r.GetSlice("spec.template.spec.containers[0].args")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range args {
			got = append(got, fmt.Sprint(a))
		}
		if len(got) < 4 || !slices.Equal(got[len(got)-2:], extra) || !slices.Contains(got, "--pprof-bind-address=127.0.0.1:8082") {
			t.Fatalf("the operator's args %v, want its own and profiling's, then %v", got, extra)
		}
		return
	}
	t.Fatal("no Deployment")
}

// A state dir reached through a symbolic link (a cache folder shared by
// several checkouts) still installs this checkout's config: kustomize
// resolves the kustomization's paths from its real folder.
func TestInstallKustomizationBehindASymlink(t *testing.T) {
	root, err := filepath.EvalSymlinks(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	root, _ = filepath.Abs(root)
	tmp := t.TempDir()
	realCache := filepath.Join(tmp, "elsewhere", "deeper", "cache")
	if err := os.MkdirAll(realCache, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "cache")
	if err := os.Symlink(realCache, link); err != nil {
		t.Fatal(err)
	}
	c := &Config{Root: root, StateDir: filepath.Join(link, "state"), Kueue: true}
	dir, err := c.installKustomization(testImage)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "- "); ok && strings.HasSuffix(p, "config/dev") {
			if got := filepath.Join(realDir, p); got != filepath.Join(root, "config", "dev") {
				t.Fatalf("config/dev resolves to %s, want %s's", got, root)
			}
			return
		}
	}
	t.Fatalf("no config/dev in:\n%s", b)
}
