package chaos

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// faults are what a proxy between the operator and the API server does
// to the operator's requests.
type faults struct {
	// lag holds back each chunk of a watch of a resource (the collection
	// path's last element: "trainingjobs", "pods") by its duration; each
	// chunk keeps its own due time, so the lag does not pile up.
	lag map[string]time.Duration
	// stalePods serves the pod lists an informer starts from (resource
	// version "0": any state the server has) as the store was that long
	// ago, so that an operator that starts has a pod cache older than its
	// job cache, as it can behind a loaded API server. Reads the operator
	// asks to be current are left alone. The operator must list before it
	// watches (KUBE_FEATURE_WatchListClient=false): a streamed list is
	// always current.
	stalePods time.Duration
	// failStatus says, for each write to a job's status, whether to fail
	// it with a server error, before or after it lands.
	failStatus func() (fail, landed bool)
	// pause, if set, holds the operator's watches and writes when told
	// (a leader about to be paused).
	pause *pauseGate
	// failPodPatches, while true, fails every patch of a pod (not of its
	// status) with a server error, before it lands.
	failPodPatches *atomic.Bool
}

// proxyStats count what the proxy did, so a test can tell it tested
// something.
type proxyStats struct {
	delayed, staleLists, failedWrites, failedPodPatches atomic.Int64
}

// faultProxy serves the API server on plain HTTP, authenticating as the
// test's admin, with f's faults, and returns a kubeconfig that talks to it.
func faultProxy(t *testing.T, f faults) (kubeconfig string, stats *proxyStats) {
	t.Helper()
	target, err := url.Parse(cluster.REST.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cluster.REST)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1
	stats = &proxyStats{}
	var past *revisions
	if f.stalePods > 0 {
		past = recordRevisions(t)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		resource := collection(r.URL.Path)
		switch {
		case f.pause != nil && isWrite(r) && resource != "leases" && resource != "events":
			if !f.pause.write(r) {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"held by the chaos tier","reason":"ServiceUnavailable","code":503}`, http.StatusServiceUnavailable)
				return
			}
		case q.Get("watch") == "true" && (f.lag[resource] > 0 || f.pause != nil):
			lw := newLaggingWriter(w, f.lag[resource], &stats.delayed)
			lw.pause = f.pause
			// Deferred: the reverse proxy panics (http.ErrAbortHandler)
			// when its client goes, and no write may follow the
			// handler's return.
			defer lw.drain()
			rp.ServeHTTP(lw, r)
			return
		case past != nil && r.Method == http.MethodGet && resource == "pods" && q.Get("watch") != "true" &&
			q.Get("resourceVersion") == "0" && q.Get("continue") == "":
			if rv := past.at(time.Now().Add(-f.stalePods)); rv != "" {
				q.Set("resourceVersion", rv)
				q.Set("resourceVersionMatch", "Exact")
				r.URL.RawQuery = q.Encode()
				stats.staleLists.Add(1)
			}
		case f.failPodPatches != nil && f.failPodPatches.Load() && r.Method == http.MethodPatch && resource == "pods" && !strings.HasSuffix(r.URL.Path, "/status"):
			stats.failedPodPatches.Add(1)
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the chaos tier","reason":"InternalError","code":500}`, http.StatusInternalServerError)
			return
		case f.failStatus != nil && (r.Method == http.MethodPut || r.Method == http.MethodPatch) && isJobStatus(r.URL.Path):
			if fail, landed := f.failStatus(); fail {
				stats.failedWrites.Add(1)
				if landed {
					rp.ServeHTTP(discard{header: http.Header{}}, r)
				}
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the chaos tier","reason":"InternalError","code":500}`, http.StatusInternalServerError)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return proxyKubeconfig(t, srv.URL), stats
}

// isWrite is whether a request changes something.
func isWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// pauseGate holds an operator's world still around a pause: from
// holdWrites its writes wait, and fail when drop is called; from
// holdWatches its watches deliver nothing more; from count, writes pass
// and are counted.
type pauseGate struct {
	mu       sync.Mutex
	held     chan struct{} // closed by drop; nil when not holding
	heldAt   time.Time
	waiting  int
	counting bool
	counted  []string
}

// holdWrites starts holding writes.
func (g *pauseGate) holdWrites() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = make(chan struct{})
}

// holdWatches stops the watches for good.
func (g *pauseGate) holdWatches() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.heldAt = time.Now()
}

// drop fails the writes held so far: they never landed.
func (g *pauseGate) drop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.held)
}

// count lets writes through from now on, counting them. Watches stay
// held: the operator wakes with the view it was paused with.
func (g *pauseGate) count() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.counting = true
}

// write is whether a write may pass; it waits while writes are held.
func (g *pauseGate) write(r *http.Request) bool {
	g.mu.Lock()
	held, counting := g.held, g.counting
	if counting {
		g.counted = append(g.counted, r.Method+" "+r.URL.Path)
	} else if held != nil {
		g.waiting++
	}
	g.mu.Unlock()
	if counting || held == nil {
		return true
	}
	<-held
	return false
}

// holding is when watches were held from, zero if they are not.
func (g *pauseGate) holding() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heldAt
}

// heldWrites is how many writes waited; counted are the writes that
// passed since count.
func (g *pauseGate) heldWrites() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

func (g *pauseGate) countedWrites() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.counted...)
}

// collection is the resource a request's path names: the element after
// the namespace's name, or after the API version for a cluster-wide one
// (".../namespaces/ns/pods/name" and ".../v1/pods" are both "pods").
func collection(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "namespaces" && i+2 < len(parts) {
			return parts[i+2]
		}
	}
	return parts[len(parts)-1]
}

// isJobStatus is whether a path is a TrainingJob's status subresource.
func isJobStatus(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	n := len(parts)
	return n >= 3 && parts[n-1] == "status" && parts[n-3] == "trainingjobs"
}

// discard is a response nobody reads: a write that lands while its
// client is told it failed.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// revisions is the store's revision over time, read every 100 ms.
type revisions struct {
	mu   sync.Mutex
	seen []revisionAt
}

type revisionAt struct {
	at time.Time
	rv string
}

func recordRevisions(t *testing.T) *revisions {
	r := &revisions{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			var list corev1.PodList
			// A consistent read: the revision the store is at now.
			if err := k8s.List(ctx, &list, client.Limit(1)); err == nil {
				r.mu.Lock()
				r.seen = append(r.seen, revisionAt{time.Now(), list.ResourceVersion})
				r.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return r
}

// at is the last revision read at or before when, or "" if none was.
func (r *revisions) at(when time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv := ""
	for _, s := range r.seen {
		if s.at.After(when) {
			break
		}
		rv = s.rv
	}
	return rv
}

// laggingWriter hands each write to a goroutine that writes it lag later.
type laggingWriter struct {
	http.ResponseWriter
	lag time.Duration
	// pause, if set, holds for good every chunk that comes once it holds.
	pause   *pauseGate
	delayed *atomic.Int64
	queue   chan chunk
	done    chan struct{}
	once    sync.Once
}

type chunk struct {
	data []byte
	at   time.Time
	due  time.Time
}

func newLaggingWriter(w http.ResponseWriter, lag time.Duration, delayed *atomic.Int64) *laggingWriter {
	lw := &laggingWriter{ResponseWriter: w, lag: lag, delayed: delayed, queue: make(chan chunk, 4096), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		for c := range lw.queue {
			time.Sleep(time.Until(c.due))
			if lw.pause != nil {
				if since := lw.pause.holding(); !since.IsZero() && !c.at.Before(since) {
					continue
				}
			}
			if _, err := w.Write(c.data); err != nil {
				continue
			}
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
	}()
	return lw
}

func (lw *laggingWriter) Write(b []byte) (int, error) {
	lw.delayed.Add(1)
	now := time.Now()
	lw.queue <- chunk{data: append([]byte(nil), b...), at: now, due: now.Add(lw.lag)}
	return len(b), nil
}

// Flush is done by the writing goroutine, after the lag.
func (lw *laggingWriter) Flush() {}

func (lw *laggingWriter) drain() {
	lw.once.Do(func() { close(lw.queue) })
	<-lw.done
}

// proxyKubeconfig writes a kubeconfig that talks to the proxy.
func proxyKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
