package controller

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// throughputReader reads one throughput sample of a job from its pods.
type throughputReader struct {
	cs   kubernetes.Interface
	http *http.Client
}

// Read returns the newest sample the pods reported since since, or nil.
func (t *throughputReader) Read(ctx context.Context, m musterv1.ThroughputMetric, pods []*corev1.Pod, since time.Time) (*float64, error) {
	if m.Endpoint.Port != 0 {
		return t.scrape(ctx, &m.Endpoint, pods)
	}
	re, err := regexp.Compile(m.LogRegex)
	if err != nil {
		// Admission rejects such a job; one that came in without the
		// webhook is told so in the autoscaler's status.
		return nil, fmt.Errorf("spec.scaling.autoscaling.metric.logRegex: %w", err)
	}
	var newest *float64
	for _, pod := range pods {
		if v := t.readLog(ctx, pod, re, since); v != nil {
			newest = v // the job-wide rate comes from one rank; any pod's newest line will do
		}
	}
	return newest, nil
}

// readLog reads what pod logged since since, bounded in time and size so
// that one slow or chatty pod cannot hold up the autoscaler.
func (t *throughputReader) readLog(ctx context.Context, pod *corev1.Pod, re *regexp.Regexp, since time.Time) *float64 {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	st := metav1.NewTime(since)
	opts := &corev1.PodLogOptions{SinceTime: &st, LimitBytes: new(int64(maxReadBytes))}
	rc, err := t.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		return nil // a pod starting or going away has no logs to read
	}
	defer func() { _ = rc.Close() }()
	return lastMatch(rc, re)
}

// readTimeout and maxReadBytes bound one read of a pod's log or metrics.
const (
	readTimeout  = 5 * time.Second
	maxReadBytes = 4 << 20
)

// newMetricsClient is the HTTP client that scrapes pods' metrics
// endpoints. It follows no redirect: a pod must not be able to send the
// operator's request anywhere else.
func newMetricsClient() *http.Client {
	return &http.Client{
		Timeout:       2 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// lastMatch is the value of re's first group on the last matching line.
func lastMatch(r io.Reader, re *regexp.Regexp) *float64 {
	var out *float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if len(m) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(m[1], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = &v
		}
	}
	return out
}

// scrape sums a gauge over the pods' metrics endpoints.
func (t *throughputReader) scrape(ctx context.Context, e *musterv1.MetricEndpoint, pods []*corev1.Pod) (*float64, error) {
	var sum float64
	found := false
	for _, pod := range pods {
		if pod.Status.PodIP == "" {
			continue
		}
		// Built as a URL, never as a string: the path cannot name another
		// host (admission also allows only a plain absolute path).
		u := url.URL{Scheme: "http", Host: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(e.Port))), Path: cmp.Or(e.Path, "/metrics")}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := t.http.Do(req)
		if err != nil {
			continue
		}
		var v float64
		ok := false
		if resp.StatusCode == http.StatusOK {
			v, ok = gauge(io.LimitReader(resp.Body, maxReadBytes), e.Name)
		}
		_ = resp.Body.Close()
		if ok {
			sum, found = sum+v, true
		}
	}
	if !found {
		return nil, nil
	}
	return &sum, nil
}

// gauge reads a metric's value from Prometheus text format, summing its
// series.
func gauge(r io.Reader, name string) (float64, bool) {
	var sum float64
	found := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		metric, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if base, _, _ := strings.Cut(metric, "{"); base != name {
			continue
		}
		if i := strings.LastIndex(metric, "}"); i >= 0 && i < len(metric)-1 {
			continue // a space inside the labels; not a line we can read simply
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}
