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

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

// throughputReader reads one throughput sample of a job from its pods.
type throughputReader struct {
	cs   kubernetes.Interface
	http *http.Client
	// deadline bounds a whole sample; zero is sampleDeadline.
	deadline time.Duration
}

// A sample reads its pods sampleReads at a time, and within sampleDeadline
// in all: it runs inside the job's reconcile, and a job of 500 pods read
// one after another, each up to its own timeout, would hold a worker for
// minutes.
const (
	sampleDeadline = 10 * time.Second
	sampleReads    = 16
)

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
	values := make([]*float64, len(pods))
	t.eachPod(ctx, len(pods), func(ctx context.Context, i int) { values[i] = t.readLog(ctx, pods[i], re, since) })
	// The job-wide rate comes from one rank: the first pod's that logged
	// one will do.
	for _, v := range values {
		if v != nil {
			return v, nil
		}
	}
	return nil, nil
}

// eachPod runs read for pods 0..n-1 within the reader's deadline (see
// eachWithin).
func (t *throughputReader) eachPod(ctx context.Context, n int, read func(ctx context.Context, i int)) bool {
	return eachWithin(ctx, t.deadline, n, read)
}

// eachWithin runs read for pods 0..n-1, sampleReads at a time, within
// deadline (zero: sampleDeadline), and reports whether every read had its
// whole time: false when the deadline cut one short.
func eachWithin(ctx context.Context, deadline time.Duration, n int, read func(ctx context.Context, i int)) bool {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(deadline, sampleDeadline))
	defer cancel()
	var g errgroup.Group
	g.SetLimit(sampleReads)
	for i := range n {
		g.Go(func() error {
			if ctx.Err() == nil {
				read(ctx, i)
			}
			return nil
		})
	}
	_ = g.Wait()
	return ctx.Err() == nil
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

// scrape sums a gauge over the pods' metrics endpoints. A pod that does
// not answer is left out of the sum; a sample its deadline cut short is no
// sample, since the sum would be short of the pods not read yet.
func (t *throughputReader) scrape(ctx context.Context, e *musterv1.MetricEndpoint, pods []*corev1.Pod) (*float64, error) {
	values := make([]*float64, len(pods))
	complete := t.eachPod(ctx, len(pods), func(ctx context.Context, i int) { values[i] = t.scrapeOne(ctx, e, pods[i]) })
	if !complete {
		return nil, fmt.Errorf("scraping %d pods took over %s: no sample this time", len(pods), cmp.Or(t.deadline, sampleDeadline))
	}
	var sum float64
	found := false
	for _, v := range values {
		if v != nil {
			sum, found = sum+*v, true
		}
	}
	if !found {
		return nil, nil
	}
	return &sum, nil
}

// scrapeOne reads the gauge from one pod's endpoint, or nil.
func (t *throughputReader) scrapeOne(ctx context.Context, e *musterv1.MetricEndpoint, pod *corev1.Pod) *float64 {
	body, ok := getFromPod(ctx, t.http, pod, e.Port, cmp.Or(e.Path, "/metrics"))
	if !ok {
		return nil
	}
	defer func() { _ = body.Close() }()
	if v, ok := gauge(io.LimitReader(body, maxReadBytes), e.Name); ok {
		return &v
	}
	return nil
}

// getFromPod GETs path from port of the pod's own address, and returns
// the body of a 200 answer; false for a pod with no address yet, no
// answer, or another status. The caller bounds what it reads and closes
// the body.
func getFromPod(ctx context.Context, c *http.Client, pod *corev1.Pod, port int32, path string) (io.ReadCloser, bool) {
	if pod.Status.PodIP == "" {
		return nil, false
	}
	// Built as a URL, never as a string: the path cannot name another
	// host (admission also allows only a plain absolute path).
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))), Path: path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, false
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, false
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, false
	}
	return resp.Body, true
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
