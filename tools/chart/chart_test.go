// Package chart tests the Helm chart in charts/muster against the
// kustomize manifests in config/, which controller-gen generates from the
// code's RBAC markers: the chart must install the same CRD and the same
// rules, and in namespaced mode no cluster-wide rule on a namespaced
// resource. It is a module of its own so that Helm's libraries stay out of
// the operator's go.mod.
package chart

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	root      = "../.."
	chartDir  = root + "/charts/muster"
	namespace = "muster-system"
	// goldenRBAC is the namespaced install's RBAC, which the integration
	// test test/integration/namespaced_test.go grants the operator.
	goldenRBAC = root + "/test/integration/testdata/namespaced-rbac.yaml"
)

// The watched namespaces of the namespaced renders and of goldenRBAC.
var watched = []string{"muster-team-a", "muster-team-b"}

// clusterScoped are the cluster-scoped resources the operator's rules
// name. A rule on any other resource is on a namespaced one.
var clusterScoped = map[string]bool{
	"admissionregistration.k8s.io/validatingwebhookconfigurations": true,
	"apiextensions.k8s.io/customresourcedefinitions":               true,
	"authentication.k8s.io/tokenreviews":                           true,
	"authorization.k8s.io/subjectaccessreviews":                    true,
	"kueue.x-k8s.io/resourceflavors":                               true,
	"scheduling.k8s.io/priorityclasses":                            true,
	// The restart mode Auto reads the nodes.
	"/nodes": true,
}

// The optional parts: the folder of their kustomize component, and the
// values that enable them.
var optional = []struct {
	name, dir string
	values    map[string]any
}{
	{"native", "config/gang/native", map[string]any{"gang": map[string]any{"native": map[string]any{"enabled": true}}}},
	{"coscheduling", "config/gang/coscheduling", map[string]any{"gang": map[string]any{"coscheduling": map[string]any{"enabled": true}}}},
	{"volcano", "config/gang/volcano", map[string]any{"gang": map[string]any{"volcano": map[string]any{"enabled": true}}}},
	{"kueue", "config/queue/kueue", map[string]any{"kueue": map[string]any{"enabled": true}}},
}

func everything(namespaces ...string) map[string]any {
	v := map[string]any{}
	for _, o := range optional {
		v = merge(v, o.values)
	}
	if len(namespaces) > 0 {
		v["watchNamespaces"] = toAny(namespaces)
	}
	return v
}

func TestChartVersionIsTheProjects(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION\s*:=\s*(\S+)\s*$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile sets no VERSION")
	}
	ch := load(t)
	if ch.Metadata.Version != string(m[1]) || ch.Metadata.AppVersion != "v"+string(m[1]) {
		t.Errorf("Chart.yaml has version %s and appVersion %s; the Makefile's VERSION %s wants %s and v%s",
			ch.Metadata.Version, ch.Metadata.AppVersion, m[1], m[1], m[1])
	}
}

// TestLint is `helm lint`, with the default values and the others the
// tests render.
func TestLint(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults":   nil,
		"everything": everything(),
		"namespaced": everything(watched...),
		"monitoring": monitoring(),
	} {
		t.Run(name, func(t *testing.T) {
			l := lint.All(chartDir, vals, namespace, false)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Error(m)
				} else {
					t.Log(m)
				}
			}
		})
	}
}

// TestCRDIsGenerated: the chart's crds/ is config/crd as `make manifests`
// renders it there: the generated CRD with v1alpha1 not served (config/crd's
// patch), since Helm installs crds/ as it is and so without the conversion
// webhook that serving v1alpha1 needs.
func TestCRDIsGenerated(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "config/crd/bases/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
			if v := v.(map[string]any); v["name"] == "v1alpha1" {
				v["served"] = false
			}
		}
		want["muster/crds/"+filepath.Base(f)] = crd
	}
	got := map[string]map[string]any{}
	for _, c := range load(t).CRDObjects() {
		var crd map[string]any
		if err := yaml.Unmarshal(c.File.Data, &crd); err != nil {
			t.Fatal(err)
		}
		got[c.Filename] = crd
	}
	if !reflect.DeepEqual(keys(got), keys(want)) {
		t.Fatalf("the chart's CRDs are %v, config/crd/bases has %v: run make manifests", keys(got), keys(want))
	}
	for name := range want {
		if !reflect.DeepEqual(got[name], want[name]) {
			t.Errorf("%s differs from config/crd: run make manifests", name)
		}
	}
}

// TestDefaultsInstallConfigProduction: with its default values the chart
// installs the objects config/production does, with the same rules,
// bindings, webhooks and Services, and a Deployment with its flags.
func TestDefaultsInstallConfigProduction(t *testing.T) {
	got := render(t, nil)
	want := readConfig(t,
		"config/rbac/role.yaml", "config/rbac/role_binding.yaml", "config/rbac/service_account.yaml",
		"config/rbac/leader_election_role.yaml", "config/rbac/metrics_reader_role.yaml",
		"config/manager/manager.yaml", "config/manager/pdb.yaml", "config/manager/lease.yaml", "config/manager/metrics_service.yaml",
		"config/webhook/webhooks.yaml", "config/webhook/service.yaml", "config/webhook/secret.yaml",
		"config/admission/pod_labels.yaml")
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		t.Fatalf("the chart renders\n  %s\nconfig/production has\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	for _, w := range want {
		g := find(got, w.id())
		compareObjects(t, g, w)
	}
	dep := find(got, "Deployment muster-system/muster-operator")
	spec := deployment(t, dep)
	if spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", spec.Replicas)
	}
	c := spec.Template.Spec.Containers[0]
	if want := "ghcr.io/muster-dev/muster-operator:" + load(t).Metadata.AppVersion; c.Image != want {
		t.Errorf("image %s, want %s", c.Image, want)
	}
	// Both install the image of this version, never a moving tag.
	if configured := deployment(t, find(want, "Deployment muster-system/muster-operator")).Template.Spec.Containers[0].Image; configured != c.Image {
		t.Errorf("config/manager installs %s, the chart %s", configured, c.Image)
	}
	wantArgs := deployment(t, find(want, "Deployment muster-system/muster-operator")).Template.Spec.Containers[0].Args
	wantArgs = append(wantArgs, patchedArgs(t, "config/webhook/kustomization.yaml")...)
	for _, a := range wantArgs {
		if !slices.Contains(c.Args, a) {
			t.Errorf("the operator's args %v lack %s", c.Args, a)
		}
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--namespaces") || strings.HasPrefix(a, "--gang-backend-enable") || a == "--kueue-enable" {
			t.Errorf("by default the operator gets no %s", a)
		}
	}
	if w := deployment(t, find(want, "Deployment muster-system/muster-operator")).Template.Spec.TopologySpreadConstraints; !reflect.DeepEqual(spec.Template.Spec.TopologySpreadConstraints, w) {
		t.Errorf("the replicas spread as %+v; config/manager spreads them as %+v", spec.Template.Spec.TopologySpreadConstraints, w)
	}
	if len(c.VolumeMounts) != 1 || len(spec.Template.Spec.Volumes) != 1 || spec.Template.Spec.Volumes[0].Secret.SecretName != "muster-webhook-cert" {
		t.Errorf("the webhook's certificate Secret is not mounted: %+v %+v", c.VolumeMounts, spec.Template.Spec.Volumes)
	}
}

// TestOptionalPartsAddTheirComponents: enabling a gang backend or Kueue
// adds exactly the objects and rules of its kustomize component, and its
// flag.
func TestOptionalPartsAddTheirComponents(t *testing.T) {
	base := render(t, nil)
	for _, o := range optional {
		t.Run(o.name, func(t *testing.T) {
			got := render(t, o.values)
			var added []object
			for _, g := range got {
				if find(base, g.id()) == nil {
					added = append(added, g)
				}
			}
			want := readConfig(t, o.dir+"/rbac.yaml")
			if g, w := ids(added), ids(want); !slices.Equal(g, w) {
				t.Fatalf("enabling %s adds\n  %s\n%s has\n  %s", o.name, strings.Join(g, "\n  "), o.dir, strings.Join(w, "\n  "))
			}
			for _, w := range want {
				compareObjects(t, find(added, w.id()), w)
			}
			args := deployment(t, find(got, "Deployment muster-system/muster-operator")).Template.Spec.Containers[0].Args
			for _, a := range patchedArgs(t, o.dir+"/kustomization.yaml") {
				if !slices.Contains(args, a) {
					t.Errorf("the operator's args %v lack %s", args, a)
				}
			}
		})
	}
}

// TestNamespacedInstall: with watchNamespaces the operator watches those
// namespaces, holds its rules on namespaced resources through a Role in
// each, and keeps only rules on cluster-scoped resources cluster-wide. The
// union is what the kustomize manifests grant. It also writes (with
// -update) or checks goldenRBAC.
func TestNamespacedInstall(t *testing.T) {
	got := render(t, everything(watched...))

	// What config/ grants the operator cluster-wide, split by scope.
	var all []object
	all = append(all, readConfig(t, "config/rbac/role.yaml")...)
	for _, o := range optional {
		all = append(all, readConfig(t, o.dir+"/rbac.yaml")...)
	}
	wantNamespaced, wantCluster := permSet{}, permSet{}
	for _, o := range all {
		if o.Kind != "ClusterRole" {
			continue
		}
		for p := range perms(t, o) {
			if p.clusterScoped() {
				wantCluster[p] = true
			} else {
				wantNamespaced[p] = true
			}
		}
	}

	// What the chart grants the operator's ServiceAccount, by namespace
	// ("" is cluster-wide).
	granted := map[string]permSet{}
	for _, b := range got {
		if b.Kind != "ClusterRoleBinding" && b.Kind != "RoleBinding" {
			continue
		}
		var rb rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
		unmarshal(t, b, &rb)
		if !slices.Contains(rb.Subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: "muster-operator", Namespace: namespace}) {
			continue
		}
		ns := rb.Namespace
		role := find(got, fmt.Sprintf("%s %s", rb.RoleRef.Kind, join(map[bool]string{true: ns}[rb.RoleRef.Kind == "Role"], rb.RoleRef.Name)))
		if role == nil {
			t.Fatalf("%s binds %s %s, which the chart does not install", b.id(), rb.RoleRef.Kind, rb.RoleRef.Name)
		}
		if granted[ns] == nil {
			granted[ns] = permSet{}
		}
		for p := range perms(t, *role) {
			granted[ns][p] = true
		}
	}
	// One rule on a namespaced resource is cluster-wide on purpose: the
	// release of the tracking finalizer, so that deleting a watched
	// namespace whose Role goes first cannot hang; an admission policy
	// bounds it to that release.
	release := perm{group: "", resource: "pods", verb: "patch"}
	if !granted[""][release] {
		t.Errorf("no cluster-wide %s: a watched namespace's deletion can hang on its pods", release)
	}
	if find(got, "ValidatingAdmissionPolicy muster-operator-pod-writes") == nil {
		t.Errorf("the cluster-wide %s is not bounded by the policy muster-operator-pod-writes", release)
	}
	delete(granted[""], release)
	for p := range granted[""] {
		if !p.clusterScoped() {
			t.Errorf("a cluster-wide rule on the namespaced resource %s", p)
		}
	}
	diff(t, "cluster-wide", granted[""], wantCluster)
	for _, ns := range watched {
		diff(t, "in "+ns, granted[ns], wantNamespaced)
	}
	for ns := range granted {
		if ns != "" && ns != namespace && !slices.Contains(watched, ns) {
			t.Errorf("rules in %s, which is not watched", ns)
		}
	}
	// The operator's own namespace keeps the certificate Secret's and
	// leader election's Roles, whether watched or not.
	for _, name := range []string{"muster-operator", "muster-leader-election"} {
		if find(got, "Role "+namespace+"/"+name) == nil {
			t.Errorf("no Role %s in %s", name, namespace)
		}
	}

	args := deployment(t, find(got, "Deployment muster-system/muster-operator")).Template.Spec.Containers[0].Args
	if want := "--namespaces=" + strings.Join(watched, ","); !slices.Contains(args, want) {
		t.Errorf("the operator's args %v lack %s", args, want)
	}
	if id := "ValidatingWebhookConfiguration muster-validating-webhook"; !strings.Contains(string(find(got, id).raw), "kubernetes.io/metadata.name") {
		t.Errorf("%s admits jobs of every namespace", id)
	}

	checkGolden(t, got)
}

// checkGolden writes the RBAC objects of the namespaced render to
// goldenRBAC with -update, or checks it holds them.
func checkGolden(t *testing.T, got []object) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# Generated by tools/chart (make test-chart UPDATE=1): the RBAC the chart installs\n" +
		"# with every gang backend, Kueue and watchNamespaces [" + strings.Join(watched, ", ") + "],\n" +
		"# and the admission policy that bounds its cluster-wide pod release,\n" +
		"# chart labels left out. test/integration grants it to the operator.\n")
	for _, o := range got {
		switch {
		case slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.Kind):
		case strings.HasPrefix(o.Kind, "ValidatingAdmissionPolicy") && strings.HasSuffix(o.id(), " muster-operator-pod-writes"):
			// The policy that bounds the cluster-wide release rule.
		default:
			continue
		}
		var m map[string]any
		unmarshal(t, o, &m)
		delete(m["metadata"].(map[string]any), "labels")
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	if *update {
		if err := os.WriteFile(goldenRBAC, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(goldenRBAC)
	if err != nil || !bytes.Equal(have, b.Bytes()) {
		t.Errorf("%s is out of date: run make test-chart UPDATE=1", goldenRBAC)
	}
}

// TestValuesAreChecked: a default gang backend that is not enabled, or a
// watched namespace that is no name, fails the install.
func TestValuesAreChecked(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"default backend not enabled": {"gang": map[string]any{"default": "Volcano"}},
		"unknown default backend":     {"gang": map[string]any{"default": "Slurm"}},
		"bad namespace":               {"watchNamespaces": []any{"Team A"}},
		"webhook URL not https":       {"webhook": map[string]any{"url": "http://localhost:9443"}},
		"webhook URL with a path":     {"webhook": map[string]any{"url": "https://localhost:9443/hook"}},
		"unknown restart mode":        {"restart": map[string]any{"defaultMode": "Sometimes"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := renderErr(t, vals); err == nil {
				t.Error("rendered")
			}
		})
	}
	got := render(t, map[string]any{"gang": map[string]any{"default": "Volcano", "volcano": map[string]any{"enabled": true}},
		"image": map[string]any{"tag": "v9.9.9"}, "replicas": 1})
	spec := deployment(t, find(got, "Deployment muster-system/muster-operator"))
	if c := spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--default-gang-backend=Volcano") || c.Image != "ghcr.io/muster-dev/muster-operator:v9.9.9" || spec.Replicas != 1 {
		t.Errorf("values not applied: replicas %d, image %s, args %v", spec.Replicas, c.Image, c.Args)
	}
}

// TestOnlyAutoReadsNodes: the default restart mode Auto, the chart's
// default, follows the nodes and is granted to read them; InPlace and
// Recreate need no rule on them. Each passes its flag.
func TestOnlyAutoReadsNodes(t *testing.T) {
	nodes := perm{group: "", resource: "nodes", verb: "watch"}
	for mode, want := range map[string]bool{"": true, "Auto": true, "InPlace": false, "Recreate": false} {
		t.Run(mode, func(t *testing.T) {
			var vals map[string]any
			if mode != "" {
				vals = map[string]any{"restart": map[string]any{"defaultMode": mode}}
			}
			got := render(t, vals)
			if got := perms(t, *find(got, "ClusterRole muster-operator"))[nodes]; got != want {
				t.Errorf("%s granted: %v, want %v", nodes, got, want)
			}
			flag := "--default-restart-mode=" + map[bool]string{true: mode, false: "Auto"}[mode != ""]
			if args := deployment(t, find(got, "Deployment muster-system/muster-operator")).Template.Spec.Containers[0].Args; !slices.Contains(args, flag) {
				t.Errorf("the operator's args %v lack %s", args, flag)
			}
		})
	}
}

// TestWebhookByURL: with webhook.url the webhook configurations call the
// operator by URL, its certificate names the URL's host and, with
// webhook.hostPort, the node forwards that port: what config/dev does for
// the local cluster, whose API server reaches no Service. The install test
// (test/install) installs the chart so.
func TestWebhookByURL(t *testing.T) {
	got := render(t, map[string]any{"webhook": map[string]any{"url": "https://localhost:9443/", "hostPort": 9443}})
	dev, err := os.ReadFile(filepath.Join(root, "config/dev/kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	o := find(got, "ValidatingWebhookConfiguration muster-validating-webhook")
	if o == nil {
		t.Fatal("no validating webhook")
	}
	var w struct {
		Webhooks []struct {
			ClientConfig map[string]any `json:"clientConfig"`
		} `json:"webhooks"`
	}
	unmarshal(t, *o, &w)
	url := "https://localhost:9443/validate-muster-dev-v1beta1-trainingjob"
	if cc := w.Webhooks[0].ClientConfig; len(cc) != 1 || cc["url"] != url {
		t.Errorf("webhook clientConfig %v, want url %s only", cc, url)
	}
	if !strings.Contains(string(dev), `url: "`+url+`"`) {
		t.Errorf("config/dev does not call %s", url)
	}
	if find(got, "MutatingWebhookConfiguration muster-mutating-webhook") != nil {
		t.Error("a mutating webhook: every default is the schema's, and each call would cost every create")
	}

	c := deployment(t, find(got, "Deployment muster-system/muster-operator")).Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--webhook-host-names=localhost") {
		t.Errorf("the operator's args %v lack --webhook-host-names=localhost", c.Args)
	}
	port := false
	for _, p := range c.Ports {
		port = port || p.Name == "webhook" && p.ContainerPort == 9443 && p.HostPort == 9443
	}
	if !port {
		t.Errorf("the webhook port is not a hostPort: %+v", c.Ports)
	}
	for _, a := range deployment(t, find(render(t, nil), "Deployment muster-system/muster-operator")).Template.Spec.Containers[0].Args {
		if strings.HasPrefix(a, "--webhook-host-names") {
			t.Errorf("by default the operator gets no %s", a)
		}
	}
}

// --- rendering and reading

type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	raw []byte
}

func (o object) id() string {
	return o.Kind + " " + join(o.Metadata.Namespace, o.Metadata.Name)
}

func join(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func load(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func render(t *testing.T, vals map[string]any) []object {
	t.Helper()
	objs, err := renderErr(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// renderErr is `helm template -n muster-system muster charts/muster`.
func renderErr(t *testing.T, vals map[string]any) ([]object, error) {
	t.Helper()
	ch := load(t)
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "muster", Namespace: namespace, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	var objs []object
	for _, name := range keys(files) {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		objs = append(objs, parse(t, name, []byte(files[name]))...)
	}
	return objs, nil
}

func readConfig(t *testing.T, paths ...string) []object {
	t.Helper()
	var objs []object
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, parse(t, p, b)...)
	}
	return objs
}

func parse(t *testing.T, name string, b []byte) []object {
	t.Helper()
	var objs []object
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o.Kind == "" {
			continue // comments only
		}
		o.raw = []byte(doc)
		objs = append(objs, o)
	}
	return objs
}

func ids(objs []object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.id())
	}
	sort.Strings(out)
	return out
}

func find(objs []object, id string) *object {
	for i := range objs {
		if objs[i].id() == id {
			return &objs[i]
		}
	}
	return nil
}

func unmarshal(t *testing.T, o object, into any) {
	t.Helper()
	if err := yaml.Unmarshal(o.raw, into); err != nil {
		t.Fatalf("%s: %v", o.id(), err)
	}
}

type deploymentSpec struct {
	Replicas int `json:"replicas"`
	Template struct {
		Spec struct {
			Containers []struct {
				Image        string   `json:"image"`
				Args         []string `json:"args"`
				VolumeMounts []any    `json:"volumeMounts"`
				Ports        []struct {
					Name          string `json:"name"`
					ContainerPort int    `json:"containerPort"`
					HostPort      int    `json:"hostPort"`
				} `json:"ports"`
			} `json:"containers"`
			Volumes []struct {
				Secret struct {
					SecretName string `json:"secretName"`
				} `json:"secret"`
			} `json:"volumes"`
			TopologySpreadConstraints []any `json:"topologySpreadConstraints"`
		} `json:"spec"`
	} `json:"template"`
}

func deployment(t *testing.T, o *object) deploymentSpec {
	t.Helper()
	if o == nil {
		t.Fatal("no Deployment")
	}
	var d struct {
		Spec deploymentSpec `json:"spec"`
	}
	unmarshal(t, *o, &d)
	return d.Spec
}

// patchedArgs are the operator flags a kustomization's JSON patches add.
func patchedArgs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Patches []struct {
			Path  string `json:"path"`
			Patch string `json:"patch"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, p := range k.Patches {
		text := p.Patch
		if p.Path != "" {
			pb, err := os.ReadFile(filepath.Join(root, filepath.Dir(path), p.Path))
			if err != nil {
				t.Fatal(err)
			}
			text = string(pb)
		}
		var ops []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}
		if yaml.Unmarshal([]byte(text), &ops) != nil {
			continue // a strategic merge patch
		}
		for _, op := range ops {
			if op.Path == "/spec/template/spec/containers/0/args/-" {
				args = append(args, fmt.Sprint(op.Value))
			}
		}
	}
	if len(args) == 0 {
		t.Fatalf("%s adds no operator flag", path)
	}
	return args
}

// compareObjects checks what matters of an object the chart renders
// against config/'s: rules as permissions, bindings' role and subjects,
// webhooks and Service specs as they are.
func compareObjects(t *testing.T, got *object, want object) {
	t.Helper()
	if got == nil {
		t.Errorf("the chart does not render %s", want.id())
		return
	}
	switch want.Kind {
	case "ClusterRole", "Role":
		diff(t, want.id(), perms(t, *got), perms(t, want))
	case "ClusterRoleBinding", "RoleBinding":
		var g, w rbacv1.RoleBinding
		unmarshal(t, *got, &g)
		unmarshal(t, want, &w)
		if !reflect.DeepEqual(g.RoleRef, w.RoleRef) || !reflect.DeepEqual(g.Subjects, w.Subjects) {
			t.Errorf("%s binds %v to %v, want %v to %v", want.id(), g.RoleRef, g.Subjects, w.RoleRef, w.Subjects)
		}
	case "ValidatingWebhookConfiguration":
		sameField(t, *got, want, "webhooks")
	case "Service", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		sameField(t, *got, want, "spec")
	}
}

func sameField(t *testing.T, got, want object, field string) {
	t.Helper()
	var g, w map[string]any
	unmarshal(t, got, &g)
	unmarshal(t, want, &w)
	if !reflect.DeepEqual(g[field], w[field]) {
		gb, _ := yaml.Marshal(g[field])
		wb, _ := yaml.Marshal(w[field])
		t.Errorf("%s: the chart's %s\n%s\nconfig/'s\n%s", want.id(), field, gb, wb)
	}
}

// --- permissions

// perm is one verb on one resource (or resource name, or URL): rules
// compare as sets of these, however they are grouped.
type perm struct {
	group, resource, name, verb, url string
}

func (p perm) clusterScoped() bool {
	return p.url != "" || clusterScoped[p.group+"/"+strings.Split(p.resource, "/")[0]]
}

func (p perm) String() string {
	if p.url != "" {
		return p.verb + " " + p.url
	}
	s := p.verb + " " + p.resource
	if p.group != "" {
		s += "." + p.group
	}
	if p.name != "" {
		s += " named " + p.name
	}
	return s
}

type permSet map[perm]bool

func perms(t *testing.T, o object) permSet {
	t.Helper()
	var r rbacv1.ClusterRole // a Role has the same rules
	unmarshal(t, o, &r)
	set := permSet{}
	for _, rule := range r.Rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				set[perm{verb: verb, url: url}] = true
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					if len(rule.ResourceNames) == 0 {
						set[perm{group: g, resource: res, verb: verb}] = true
					}
					for _, n := range rule.ResourceNames {
						set[perm{group: g, resource: res, name: n, verb: verb}] = true
					}
				}
			}
		}
	}
	return set
}

func diff(t *testing.T, what string, got, want permSet) {
	t.Helper()
	var missing, extra []string
	for p := range want {
		if !got[p] {
			missing = append(missing, p.String())
		}
	}
	for p := range got {
		if !want[p] {
			extra = append(extra, p.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("%s: the chart lacks %s", what, strings.Join(missing, "; "))
	}
	if len(extra) > 0 {
		t.Errorf("%s: the chart adds %s", what, strings.Join(extra, "; "))
	}
}

// --- small helpers

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if am, ok := out[k].(map[string]any); ok {
			if bm, ok := v.(map[string]any); ok {
				out[k] = merge(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
