package controller

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	musterv1 "github.com/muster-dev/muster/api/v1alpha1"
)

// throughputReader reads one throughput sample of a job from its pods.
type throughputReader struct {
	cs   kubernetes.Interface
	http *http.Client
}

// read returns the newest sample the pods reported since since, or nil.
func (t *throughputReader) read(ctx context.Context, m musterv1.ThroughputMetric, pods []*corev1.Pod, since time.Time) (*float64, error) {
	if m.Endpoint != nil {
		return t.scrape(ctx, m.Endpoint, pods)
	}
	re, err := regexp.Compile(m.LogRegex)
	if err != nil {
		return nil, fmt.Errorf("spec.autoscaling.metric.logRegex: %w", err)
	}
	var newest *float64
	for _, pod := range pods {
		st := metav1.NewTime(since)
		rc, err := t.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{SinceTime: &st}).Stream(ctx)
		if err != nil {
			continue // a pod starting or going away has no logs to read
		}
		if v := lastMatch(rc, re); v != nil {
			newest = v // the job-wide rate comes from one rank; any pod's newest line will do
		}
		_ = rc.Close()
	}
	return newest, nil
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
		path := e.Path
		if path == "" {
			path = "/metrics"
		}
		url := fmt.Sprintf("http://%s:%d%s", pod.Status.PodIP, e.Port, path)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := t.http.Do(req)
		if err != nil {
			continue
		}
		v, ok := gauge(resp.Body, e.Name)
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
