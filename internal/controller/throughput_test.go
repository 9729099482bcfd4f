package controller

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	musterv1 "github.com/muster-dev/muster/api/v1beta1"
)

func TestLastMatch(t *testing.T) {
	re := regexp.MustCompile(`throughput=([0-9.]+)`)
	cases := map[string]struct {
		log  string
		want *float64
	}{
		"the newest line wins": {"event=epoch throughput=10.5\nnoise\n[default0]:event=epoch throughput=12\n", new(12.0)},
		"no match":             {"nothing here\n", nil},
		"unparsable skipped":   {"throughput=1.5\nthroughput=.\n", new(1.5)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := lastMatch(strings.NewReader(tc.log), re)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("lastMatch = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGauge(t *testing.T) {
	text := `# HELP training_samples_per_second samples
# TYPE training_samples_per_second gauge
training_samples_per_second{rank="0"} 120.5
training_samples_per_second{rank="1"} 119.5
training_samples_per_second_total 99
other 3
`
	if v, ok := gauge(strings.NewReader(text), "training_samples_per_second"); !ok || v != 240 {
		t.Errorf("gauge = %v, %v; want 240, true", v, ok)
	}
	if _, ok := gauge(strings.NewReader(text), "missing"); ok {
		t.Error("a missing gauge is not found")
	}
}

// A pod's metrics endpoint cannot send the operator elsewhere: redirects
// are not followed, and the path never changes the host.
func TestScrapeFollowsNoRedirect(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "samples 100\n")
	}))
	defer elsewhere.Close()
	var paths []string
	pod := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		if r.URL.Path == "/metrics" {
			_, _ = io.WriteString(w, "samples 7\n")
			return
		}
		http.Redirect(w, r, elsewhere.URL+"/metrics", http.StatusFound)
	}))
	defer pod.Close()
	u, _ := url.Parse(pod.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(port)
	pods := []*corev1.Pod{{Status: corev1.PodStatus{PodIP: host}}}
	reader := &throughputReader{http: newMetricsClient()}

	got, err := reader.scrape(context.Background(), &musterv1.MetricEndpoint{Port: int32(n), Path: "/metrics", Name: "samples"}, pods)
	if err != nil || got == nil || *got != 7 {
		t.Fatalf("the pod's own endpoint: %v, %v", got, err)
	}
	got, err = reader.scrape(context.Background(), &musterv1.MetricEndpoint{Port: int32(n), Path: "/moved", Name: "samples"}, pods)
	if err != nil || got != nil {
		t.Fatalf("a redirect must not be followed: got %v, %v", got, err)
	}
	got, _ = reader.scrape(context.Background(), &musterv1.MetricEndpoint{Port: int32(n), Path: "@" + strings.TrimPrefix(elsewhere.URL, "http://") + "/metrics", Name: "samples"}, pods)
	if got != nil || paths[len(paths)-1] != "/@"+strings.TrimPrefix(elsewhere.URL, "http://")+"/metrics" {
		t.Fatalf("the path stays a path on the pod: got %v, paths %v", got, paths)
	}
}

// A pod's metrics endpoint cannot hold the autoscaler up or make it read
// without end: a scrape that gets no answer ends with the client's
// timeout, and no more than maxReadBytes of a body is read.
func TestScrapeIsBounded(t *testing.T) {
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer stalled.Close()
	defer close(release)
	chatty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("# filler\n", maxReadBytes/9+1))
		_, _ = io.WriteString(w, "samples 5\n")
	}))
	defer chatty.Close()
	endpoint := func(srv *httptest.Server) (*musterv1.MetricEndpoint, []*corev1.Pod) {
		u, _ := url.Parse(srv.URL)
		host, port, _ := net.SplitHostPort(u.Host)
		n, _ := strconv.Atoi(port)
		return &musterv1.MetricEndpoint{Port: int32(n), Name: "samples"}, []*corev1.Pod{{Status: corev1.PodStatus{PodIP: host}}}
	}
	reader := &throughputReader{http: newMetricsClient()}

	e, pods := endpoint(stalled)
	start := time.Now()
	got, err := reader.scrape(context.Background(), e, pods)
	if err != nil || got != nil {
		t.Fatalf("a pod that never answers gives no sample: %v, %v", got, err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("the scrape waited %s for a pod that never answers", took)
	}
	e, pods = endpoint(chatty)
	if got, err := reader.scrape(context.Background(), e, pods); err != nil || got != nil {
		t.Fatalf("a sample past the first %d bytes was read: %v, %v", maxReadBytes, got, err)
	}
}

// A sample reads its pods side by side and within one deadline: 32 pods
// whose endpoints never answer take about one client timeout, not 32; and
// a sample its deadline cuts short is no sample (a sum short of pods would
// read as a drop in throughput).
func TestSampleReadsPodsSideBySideWithinADeadline(t *testing.T) {
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer stalled.Close()
	defer close(release)
	u, _ := url.Parse(stalled.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	n, _ := strconv.Atoi(port)
	e := &musterv1.MetricEndpoint{Port: int32(n), Name: "samples"}
	pods := make([]*corev1.Pod, 2*sampleReads)
	for i := range pods {
		pods[i] = &corev1.Pod{Status: corev1.PodStatus{PodIP: host}}
	}

	start := time.Now()
	got, err := (&throughputReader{http: newMetricsClient()}).scrape(context.Background(), e, pods)
	if err != nil || got != nil {
		t.Fatalf("pods that never answer give no sample: %v, %v", got, err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("%d stalled pods took %s: read one after another", len(pods), took)
	}

	start = time.Now()
	got, err = (&throughputReader{http: newMetricsClient(), deadline: 500 * time.Millisecond}).scrape(context.Background(), e, pods)
	if err == nil || got != nil {
		t.Fatalf("a sample cut short by its deadline: %v, %v", got, err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Fatalf("the sample outlived its deadline: %s", took)
	}
}
