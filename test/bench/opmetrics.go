package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The operator's own counters the report shows: what its reconciles did
// while a side ran.
var operatorCounters = []string{
	`controller_runtime_reconcile_total{controller="trainingjob",result="success"}`,
	`controller_runtime_reconcile_total{controller="trainingjob",result="requeue_after"}`,
	`controller_runtime_reconcile_total{controller="trainingjob",result="requeue"}`,
	`controller_runtime_reconcile_total{controller="trainingjob",result="error"}`,
	`muster_status_writes_total{result="ok"}`,
	`muster_status_writes_total{result="conflict"}`,
	`muster_status_writes_total{result="error"}`,
	`muster_status_writes_deferred_total`,
	`muster_expectation_waits_total`,
}

// operatorTimings are the histograms the report breaks a replacement down
// by, the sum, count and buckets of every series of each: how long a job
// waited in the work queue, how long its reconcile took, and how long its
// status write and its pod writes took, and waited for a slot.
var operatorTimings = []string{
	"workqueue_queue_duration_seconds",
	"controller_runtime_reconcile_time_seconds",
	"muster_status_write_duration_seconds",
	"muster_pod_write_wait_seconds",
	"muster_pod_write_duration_seconds",
}

// counters are the operator's counters by "name{labels}", as it prints them.
type counters map[string]float64

func (c counters) minus(before counters) counters {
	out := counters{}
	for k, v := range c {
		out[k] = v - before[k]
	}
	return out
}

// mean is the mean of the histogram name over its series whose labels
// hold every one of labels (each "key=\"value\""); ok is false if none
// counted a sample, which is also what a renamed metric looks like.
func (c counters) mean(name string, labels ...string) (d time.Duration, ok bool) {
	var sum, count float64
	for k, v := range c {
		part, series, ok := histogramPart(k, name)
		if !ok || !containsAll(series, labels) {
			continue
		}
		switch part {
		case "_sum":
			sum += v
		case "_count":
			count += v
		}
	}
	if count == 0 {
		return 0, false
	}
	return time.Duration(sum / count * float64(time.Second)), true
}

// quantile is the q-quantile of the histogram name over its series whose
// labels hold every one of labels, read from their buckets as Prometheus'
// histogram_quantile reads them: linearly within the bucket it falls in,
// so it is as coarse as the buckets are. ok is false if none counted a
// sample.
func (c counters) quantile(name string, q float64, labels ...string) (d time.Duration, ok bool) {
	counts := map[float64]float64{} // by upper bound, summed over the series
	for k, v := range c {
		part, series, found := histogramPart(k, name)
		if !found || part != "_bucket" || !containsAll(series, labels) {
			continue
		}
		_, rest, _ := strings.Cut(series, `le="`)
		bound, _, _ := strings.Cut(rest, `"`)
		le, err := strconv.ParseFloat(bound, 64)
		if err != nil {
			continue
		}
		counts[le] += v
	}
	bounds := slices.Sorted(maps.Keys(counts))
	if len(bounds) == 0 || counts[bounds[len(bounds)-1]] == 0 {
		return 0, false
	}
	rank := q * counts[bounds[len(bounds)-1]]
	lower, below := 0.0, 0.0
	for _, upper := range bounds {
		if n := counts[upper]; n >= rank {
			if math.IsInf(upper, 1) {
				// Past the last finite bound: that bound is all that is known.
				return time.Duration(lower * float64(time.Second)), true
			}
			return time.Duration((lower + (upper-lower)*(rank-below)/(n-below)) * float64(time.Second)), true
		}
		lower, below = upper, counts[upper]
	}
	return 0, false
}

// meanCell is a histogram's mean and 99th percentile as a table cell:
// "none" when nothing was counted, never a time of 0 ms that was not
// measured.
func (c counters) meanCell(name string, labels ...string) string {
	d, ok := c.mean(name, labels...)
	if !ok {
		return "none"
	}
	p99, _ := c.quantile(name, 0.99, labels...)
	return msec(d) + " (p99 " + msec(p99) + ")"
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// reconciles is how many times the TrainingJob controller reconciled.
func (c counters) reconciles() float64 {
	n := 0.0
	for k, v := range c {
		if strings.HasPrefix(k, `controller_runtime_reconcile_total{controller="trainingjob"`) {
			n += v
		}
	}
	return n
}

// operatorMetrics reads the operator's Prometheus endpoint. The operator
// runs as a pod of the process node, whose pod network the host cannot
// route to; the bench runs as root and connects from inside the pod's
// network namespace instead. The endpoint authenticates and authorizes its
// callers through the API server, so the bench scrapes with a
// ServiceAccount token bound to the muster-metrics-reader ClusterRole, as a
// Prometheus would.
type operatorMetrics struct {
	http  *http.Client
	token string
	// netns is the operator's network namespace, by one of its process's
	// /proc entries: follow moves it to the operator's next process.
	netns atomic.Pointer[string]
}

// follow makes the scrapes enter the network namespace of process pid:
// the operator's next instance, in the same pod.
func (m *operatorMetrics) follow(pid int) {
	netns := fmt.Sprintf("/proc/%d/ns/net", pid)
	m.netns.Store(&netns)
	m.http.CloseIdleConnections()
}

const (
	benchReader         = "muster-bench-metrics"
	benchReaderNS       = "default"
	operatorMetricsAddr = "127.0.0.1:8443" // in the operator pod's network namespace
)

func newOperatorMetrics(ctx context.Context, cs kubernetes.Interface, operatorPID int) (*operatorMetrics, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: benchReader, Namespace: benchReaderNS}}
	if _, err := cs.CoreV1().ServiceAccounts(benchReaderNS).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: benchReader},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "muster-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: benchReader, Namespace: benchReaderNS}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	lifetime := int64(6 * 3600) // seconds: longer than any bench run
	tr, err := cs.CoreV1().ServiceAccounts(benchReaderNS).CreateToken(ctx, benchReader,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &lifetime}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("a token to read the operator's metrics: %w", err)
	}
	m := &operatorMetrics{token: tr.Status.Token}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialIn(ctx, *m.netns.Load(), network, addr)
		},
		// The operator serves its metrics with a certificate it made
		// itself at start; the bench trusts the process it found by PID.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
	}
	m.http = &http.Client{Transport: transport, Timeout: 10 * time.Second}
	m.follow(operatorPID)
	return m, nil
}

// timing is whether a series is the sum, count or a bucket of one of the
// operatorTimings.
func timing(key string) bool {
	for _, name := range operatorTimings {
		if _, _, ok := histogramPart(key, name); ok {
			return true
		}
	}
	return false
}

// histogramPart splits a series key of the histogram name into its part,
// "_sum", "_count" or "_bucket", and its labels ("{...}", or "" for none);
// ok is false for any other series.
func histogramPart(key, name string) (part, labels string, ok bool) {
	rest, found := strings.CutPrefix(key, name)
	if !found {
		return "", "", false
	}
	part, labels, _ = strings.Cut(rest, "{")
	if part != "_sum" && part != "_count" && part != "_bucket" {
		return "", "", false
	}
	return part, labels, true
}

// dialIn connects from inside the network namespace at path: the socket
// is made while the calling thread is in that namespace, and keeps it.
func dialIn(ctx context.Context, path, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer func() { _ = own.Close() }()
	target, err := os.Open(path)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer func() { _ = target.Close() }()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering the operator's network namespace: %w", err)
	}
	conn, dialErr := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, so the runtime retires it rather than
		// run other goroutines in the wrong namespace.
		if conn != nil {
			_ = conn.Close()
		}
		return nil, fmt.Errorf("leaving the operator's network namespace: %w", err)
	}
	runtime.UnlockOSThread()
	return conn, dialErr
}

// scrape reads the counters the report shows.
func (m *operatorMetrics) scrape(ctx context.Context) (counters, error) {
	want := map[string]bool{}
	for _, k := range operatorCounters {
		want[k] = true
	}
	return m.read(ctx, func(key string) bool { return want[key] || timing(key) })
}

// scrapeAll reads every series but the histograms' buckets.
func (m *operatorMetrics) scrapeAll(ctx context.Context) (counters, error) {
	return m.read(ctx, func(key string) bool { return !strings.Contains(key, "_bucket{") })
}

// read reads the series keep keeps.
func (m *operatorMetrics) read(ctx context.Context, keep func(string) bool) (counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+operatorMetricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the operator's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("reading the operator's metrics: %s: %s", resp.Status, body)
	}
	out := counters{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(key, "#") || !keep(key) {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[key] = v
		}
	}
	return out, sc.Err()
}
