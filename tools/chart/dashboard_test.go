package chart

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const dashboardFile = chartDir + "/dashboards/muster.json"

// metricSources are where the metrics the dashboard may use are defined,
// as module (of the operator's go.mod, "" for the operator itself) and
// folder. The test reads their Go source, so a metric renamed or removed
// upstream fails it when go.mod moves to that version.
var metricSources = []struct{ module, dir, why string }{
	// Muster's own (muster_*), registered in internal/controller/metrics.go.
	{"", "internal/controller", "Muster"},
	// controller_runtime_reconcile_*, _active_workers, _max_concurrent_reconciles:
	// registered by the controller package's init.
	{"sigs.k8s.io/controller-runtime", "pkg/internal/controller/metrics", "reconciles"},
	// workqueue_*: registered by its init, the provider of every controller's queue.
	{"sigs.k8s.io/controller-runtime", "pkg/internal/metrics", "work queues"},
	// The subsystem and names the work queue metrics are built from.
	{"sigs.k8s.io/controller-runtime", "pkg/metrics", "rest_client_requests_total, leader_election_*, work queue names"},
	// controller_runtime_webhook_*: the webhook server's.
	{"sigs.k8s.io/controller-runtime", "pkg/webhook/internal/metrics", "webhooks"},
	// certwatcher_*: the metrics and webhook servers' certificate watchers.
	{"sigs.k8s.io/controller-runtime", "pkg/certwatcher/metrics", "certificates"},
	// process_* and go_*: the collectors pkg/internal/controller/metrics
	// registers (NewProcessCollector, NewGoCollector).
	{"github.com/prometheus/client_golang", "prometheus", "process and Go runtime"},
}

// metricKind is what a metric's samples are called: a histogram or
// summary has name_bucket (histograms), name_sum and name_count series,
// not name.
type metricKind int

const (
	plain metricKind = iota
	histogram
	summary
)

// knownMetrics parses metricSources for the metrics they define:
// prometheus.*Opts literals (Namespace, Subsystem and Name joined by _, as
// client_golang does) and NewDesc calls.
func knownMetrics(t *testing.T) map[string]metricKind {
	t.Helper()
	dirs := map[string]string{"": root}
	var modules []string
	for _, s := range metricSources {
		if s.module != "" && !slices.Contains(modules, s.module) {
			modules = append(modules, s.module)
		}
	}
	for m, dir := range moduleDirs(t, modules...) {
		dirs[m] = dir
	}

	fset := token.NewFileSet()
	var files []*ast.File
	for _, s := range metricSources {
		paths, err := filepath.Glob(filepath.Join(dirs[s.module], s.dir, "*.go"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no Go files in %s of %q (%v)", s.dir, s.module, err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}

	// String constants by name, across the files: the work queue's names
	// are constants of another package (metrics.DepthKey).
	consts := map[string]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						consts[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	var str func(e ast.Expr, depth int) (string, bool)
	str = func(e ast.Expr, depth int) (string, bool) {
		if depth > 8 {
			return "", false
		}
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return "", false
			}
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			if v, ok := consts[e.Name]; ok {
				return str(v, depth+1)
			}
		case *ast.SelectorExpr:
			if v, ok := consts[e.Sel.Name]; ok {
				return str(v, depth+1)
			}
		case *ast.BinaryExpr:
			// ns+"process_cpu_seconds_total": the default namespace is empty.
			if e.Op == token.ADD {
				if r, ok := str(e.Y, depth+1); ok {
					if l, ok := str(e.X, depth+1); ok {
						return l + r, true
					}
					return r, true
				}
			}
		}
		return "", false
	}

	found := map[string]metricKind{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				typ := typeName(n.Type)
				if !strings.HasSuffix(typ, "Opts") {
					return true
				}
				kind := plain
				switch typ {
				case "HistogramOpts":
					kind = histogram
				case "SummaryOpts":
					kind = summary
				case "CounterOpts", "GaugeOpts":
				default:
					return true
				}
				parts := map[string]string{}
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key, _ := kv.Key.(*ast.Ident)
					if key == nil || (key.Name != "Namespace" && key.Name != "Subsystem" && key.Name != "Name") {
						continue
					}
					v, ok := str(kv.Value, 0)
					if !ok {
						// Built at run time (the Go collector's runtime
						// metrics): the dashboard cannot rely on it.
						return true
					}
					parts[key.Name] = v
				}
				var name []string
				for _, k := range []string{"Namespace", "Subsystem", "Name"} {
					if parts[k] != "" {
						name = append(name, parts[k])
					}
				}
				if len(name) > 0 {
					found[strings.Join(name, "_")] = kind
				}
			case *ast.CallExpr:
				if typeName(n.Fun) != "NewDesc" || len(n.Args) == 0 {
					return true
				}
				if v, ok := str(n.Args[0], 0); ok && v != "" {
					if _, seen := found[v]; !seen {
						found[v] = plain
					}
				}
			}
			return true
		})
	}
	return found
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// moduleDirs are the folders of the operator's dependencies, at the
// versions its go.mod selects (downloaded if need be).
func moduleDirs(t *testing.T, modules ...string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"mod", "download", "-json"}, modules...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %v: %v\n%s", modules, err, stderr.String())
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m struct{ Path, Dir, Error string }
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m.Error != "" || m.Dir == "" {
			t.Fatalf("go mod download %s: %s", m.Path, m.Error)
		}
		dirs[m.Path] = m.Dir
	}
	for _, m := range modules {
		if dirs[m] == "" {
			t.Fatalf("go mod download gave no folder for %s", m)
		}
	}
	return dirs
}

// --- the dashboard

type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Datasource *struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func readDashboard(t *testing.T) ([]byte, dashboard) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return b, d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// queries are the dashboard's PromQL expressions by where they are: the
// panels' targets, and the template variables' queries.
func queries(t *testing.T, d dashboard) (panelExprs, variableExprs map[string]string) {
	t.Helper()
	panelExprs, variableExprs = map[string]string{}, map[string]string{}
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			panelExprs[p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch q := v.Query.(type) {
		case string:
			variableExprs[v.Name] = q
		case map[string]any:
			s, _ := q["query"].(string)
			variableExprs[v.Name] = s
		}
	}
	return panelExprs, variableExprs
}

// TestDashboardIsValid: the dashboard parses, has the data source,
// namespace and scrape job variables, and every panel queries the
// selected data source.
func TestDashboardIsValid(t *testing.T) {
	_, d := readDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Error("the dashboard has no title or uid")
	}
	if d.SchemaVersion < 39 {
		t.Errorf("schemaVersion %d, want 39 or later", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "datasource" && v.Query != "prometheus" {
			t.Errorf("variable %s chooses %v data sources, want prometheus", v.Name, v.Query)
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s does not query the chosen data source", v.Name)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "namespace": "query", "job": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s is of type %q, want %s", name, vars[name], typ)
		}
	}
	ids := map[int]bool{}
	for _, p := range allPanels(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q has no size", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not query the chosen data source", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q: query %s is empty", p.Title, tg.RefID)
			}
		}
	}
}

// metricRef finds the operator's metric names in PromQL: identifiers with
// one of these prefixes, not part of a longer identifier.
var metricRef = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:$])((?:muster|controller_runtime|workqueue|rest_client|leader_election|certwatcher|process|go)_[a-z0-9_]+)`)

// TestDashboardMetricsExist: every metric the dashboard queries is one the
// operator's code or its libraries define (a histogram only through its
// _bucket, _sum and _count series), every panel selects the chosen
// namespace and scrape job, and every metric of Muster's own is on it.
func TestDashboardMetricsExist(t *testing.T) {
	_, d := readDashboard(t)
	known := knownMetrics(t)
	// The test must have read what the dashboard relies on, or it checks
	// nothing.
	for _, m := range []string{"muster_pod_actions_total", "muster_jobs", "controller_runtime_reconcile_total",
		"workqueue_depth", "rest_client_requests_total", "process_cpu_seconds_total", "go_goroutines"} {
		if _, ok := known[m]; !ok {
			t.Fatalf("the sources define no %s: the test reads them wrong (%d found)", m, len(known))
		}
	}
	if known["controller_runtime_reconcile_time_seconds"] != histogram {
		t.Fatal("controller_runtime_reconcile_time_seconds is not read as a histogram")
	}

	panelExprs, variableExprs := queries(t, d)
	used := map[string]bool{}
	check := func(where, expr string, scoped bool) {
		refs := metricRef.FindAllStringSubmatchIndex(expr, -1)
		if len(refs) == 0 {
			t.Errorf("%s: %q queries none of the operator's metrics", where, expr)
		}
		for _, r := range refs {
			name := expr[r[2]:r[3]]
			base := name
			if k, ok := known[name]; ok {
				if k != plain {
					t.Errorf("%s: %s is a histogram or summary: query its _bucket, _sum or _count", where, name)
				}
			} else {
				found := false
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					b, ok := strings.CutSuffix(name, suffix)
					if !ok {
						continue
					}
					if k, ok := known[b]; ok && (k == histogram || (k == summary && suffix != "_bucket")) {
						found, base = true, b
					}
				}
				if !found {
					t.Errorf("%s: no metric %s in the operator's code or libraries", where, name)
				}
			}
			used[base] = true
			if !scoped {
				continue
			}
			sel := expr[r[3]:]
			end := strings.Index(sel, "}")
			if !strings.HasPrefix(sel, "{") || end < 0 {
				t.Errorf("%s: %s has no label selector", where, name)
				continue
			}
			for _, want := range []string{`namespace="$namespace"`, `job="$job"`} {
				if !strings.Contains(sel[:end], want) {
					t.Errorf("%s: %s does not select %s", where, name, want)
				}
			}
		}
	}
	for where, expr := range panelExprs {
		check("panel "+where, expr, true)
	}
	for where, expr := range variableExprs {
		check("variable "+where, expr, false)
	}
	for name := range known {
		if strings.HasPrefix(name, "muster_") && !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
}

// TestGrafanaDashboardConfigMap: grafana.dashboard.enabled renders the
// dashboard, as it is in the chart, into a ConfigMap the Grafana sidecar
// loads; by default there is none.
func TestGrafanaDashboardConfigMap(t *testing.T) {
	const id = "ConfigMap muster-system/muster-grafana-dashboard"
	for _, o := range render(t, nil) {
		if o.Kind == "ConfigMap" {
			t.Errorf("by default the chart renders %s", o.id())
		}
	}
	raw, _ := readDashboard(t)
	enabled := map[string]any{"grafana": map[string]any{"dashboard": map[string]any{"enabled": true}}}
	got := render(t, enabled)
	o := find(got, id)
	if o == nil {
		t.Fatalf("no %s in %v", id, ids(got))
	}
	var cm struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	unmarshal(t, *o, &cm)
	if cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Errorf("labels %v lack grafana_dashboard: \"1\"", cm.Metadata.Labels)
	}
	if len(cm.Data) != 1 || cm.Data["muster.json"] != strings.TrimSpace(string(raw)) {
		t.Errorf("the ConfigMap's data is not %s: keys %v", dashboardFile, keys(cm.Data))
	}
	var a, b any
	if err := json.Unmarshal([]byte(cm.Data["muster.json"]), &a); err != nil {
		t.Fatalf("muster.json in the ConfigMap: %v", err)
	}
	if err := json.Unmarshal(raw, &b); err != nil || !jsonEqual(a, b) {
		t.Error("the ConfigMap's dashboard differs from the chart's")
	}

	// The sidecar's label, and the namespace it searches, are the user's.
	got = render(t, merge(enabled, map[string]any{"grafana": map[string]any{"dashboard": map[string]any{
		"namespace": "monitoring", "labels": map[string]any{"dashboards": "muster"}}}}))
	o = find(got, "ConfigMap monitoring/muster-grafana-dashboard")
	if o == nil {
		t.Fatalf("no ConfigMap in monitoring: %v", ids(got))
	}
	unmarshal(t, *o, &cm)
	if cm.Metadata.Labels["dashboards"] != "muster" {
		t.Errorf("labels %v lack dashboards: muster", cm.Metadata.Labels)
	}
}

func jsonEqual(a, b any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

// TestServiceMonitor: metrics.serviceMonitor.enabled renders a
// ServiceMonitor that scrapes exactly the metrics Service over HTTPS with
// the scraper's token; it needs the metrics endpoint.
func TestServiceMonitor(t *testing.T) {
	for _, o := range render(t, nil) {
		if o.Kind == "ServiceMonitor" {
			t.Errorf("by default the chart renders %s", o.id())
		}
	}
	sm := map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{
		"enabled": true, "interval": "30s", "labels": map[string]any{"release": "kube-prometheus-stack"}}}}
	got := render(t, sm)
	o := find(got, "ServiceMonitor muster-system/muster-operator")
	if o == nil {
		t.Fatalf("no ServiceMonitor in %v", ids(got))
	}
	var mon struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct {
				Port            string `json:"port"`
				Scheme          string `json:"scheme"`
				Path            string `json:"path"`
				Interval        string `json:"interval"`
				BearerTokenFile string `json:"bearerTokenFile"`
				TLSConfig       struct {
					InsecureSkipVerify bool   `json:"insecureSkipVerify"`
					ServerName         string `json:"serverName"`
					CA                 struct {
						Secret struct {
							Name string `json:"name"`
							Key  string `json:"key"`
						} `json:"secret"`
					} `json:"ca"`
				} `json:"tlsConfig"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	unmarshal(t, *o, &mon)
	if mon.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("apiVersion %s", mon.APIVersion)
	}
	if mon.Metadata.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("labels %v lack the values'", mon.Metadata.Labels)
	}
	if !slices.Equal(mon.Spec.NamespaceSelector.MatchNames, []string{namespace}) {
		t.Errorf("namespaces %v, want %s", mon.Spec.NamespaceSelector.MatchNames, namespace)
	}
	if len(mon.Spec.Endpoints) != 1 {
		t.Fatalf("endpoints %+v", mon.Spec.Endpoints)
	}
	ep := mon.Spec.Endpoints[0]
	if ep.Scheme != "https" || ep.Path != "/metrics" || ep.Interval != "30s" ||
		ep.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("endpoint %+v", ep)
	}
	// The operator serves metrics with the webhook's certificate: the
	// scraper verifies it against the rotator's CA, for the metrics
	// Service's name.
	tc := ep.TLSConfig
	if tc.InsecureSkipVerify || tc.CA.Secret.Name != "muster-webhook-cert" || tc.CA.Secret.Key != "ca.crt" ||
		tc.ServerName != "muster-operator-metrics."+namespace+".svc" {
		t.Errorf("tlsConfig %+v: want the rotator's CA and the metrics Service's name", tc)
	}
	// The selector picks the metrics Service, not the webhook's, and the
	// endpoint's port is one of its ports.
	var selected []string
	for _, s := range got {
		if s.Kind != "Service" {
			continue
		}
		var svc struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Ports []struct {
					Name string `json:"name"`
				} `json:"ports"`
			} `json:"spec"`
		}
		unmarshal(t, s, &svc)
		matches := true
		for k, v := range mon.Spec.Selector.MatchLabels {
			matches = matches && svc.Metadata.Labels[k] == v
		}
		if !matches {
			continue
		}
		selected = append(selected, s.id())
		if !slices.ContainsFunc(svc.Spec.Ports, func(p struct {
			Name string `json:"name"`
		}) bool {
			return p.Name == ep.Port
		}) {
			t.Errorf("%s has no port %s", s.id(), ep.Port)
		}
	}
	if !slices.Equal(selected, []string{"Service muster-system/muster-operator-metrics"}) {
		t.Errorf("the ServiceMonitor selects %v", selected)
	}

	if _, err := renderErr(t, merge(sm, map[string]any{"metrics": map[string]any{"enabled": false}})); err == nil {
		t.Error("a ServiceMonitor without the metrics endpoint rendered")
	}
}

// monitoring enables the dashboard and the ServiceMonitor, for TestLint.
func monitoring() map[string]any {
	return map[string]any{
		"grafana": map[string]any{"dashboard": map[string]any{"enabled": true}},
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
	}
}
