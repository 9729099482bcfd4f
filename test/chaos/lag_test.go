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

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// watchLag is how far the operator's view of its jobs trails the truth.
const watchLag = 2 * time.Second

// TestLaggingJobWatch puts a proxy between the operator and the API server
// that holds back every event of the TrainingJob watch by watchLag, while
// pod events pass at once: the operator's job cache lags its pod cache, as
// it does on a loaded API server. Every job must still end as undisturbed,
// and no pod of a suspended or finished job may come back.
func TestLaggingJobWatch(t *testing.T) {
	want := undisturbed(t)
	ns := namespace(t, "chaos-lag")
	m := startMonitor(t, ns)
	d := &driver{ctx: context.Background(), ns: ns}

	proxy, delayed := lagProxy(t, watchLag)
	op := startOperator(t, proxyKubeconfig(t, proxy.URL))
	got := runRound(t, d, m, "lag")
	if delayed.Load() == 0 {
		t.Error("the proxy held back no job event: the test did not test a lagging watch")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the jobs ended differently from the undisturbed run (-want +got):\n%s", diff)
	}
	m.check(t)
	for _, c := range op.crashed() {
		t.Error("operator crashed:", c)
	}
}

// lagProxy serves the API server on plain HTTP, authenticating as the
// test's admin, and delays each chunk of a TrainingJob watch stream by lag
// (each chunk keeps its own due time, so the lag does not pile up).
func lagProxy(t *testing.T, lag time.Duration) (*httptest.Server, *atomic.Int64) {
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
	var delayed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" || !strings.HasSuffix(r.URL.Path, "/trainingjobs") {
			rp.ServeHTTP(w, r)
			return
		}
		lw := newLaggingWriter(w, lag, &delayed)
		// Deferred: the reverse proxy panics (http.ErrAbortHandler) when
		// its client goes, and no write may follow the handler's return.
		defer lw.drain()
		rp.ServeHTTP(lw, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &delayed
}

// laggingWriter hands each write to a goroutine that writes it lag later.
type laggingWriter struct {
	http.ResponseWriter
	lag     time.Duration
	delayed *atomic.Int64
	queue   chan chunk
	done    chan struct{}
	once    sync.Once
}

type chunk struct {
	data []byte
	due  time.Time
}

func newLaggingWriter(w http.ResponseWriter, lag time.Duration, delayed *atomic.Int64) *laggingWriter {
	lw := &laggingWriter{ResponseWriter: w, lag: lag, delayed: delayed, queue: make(chan chunk, 4096), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		for c := range lw.queue {
			time.Sleep(time.Until(c.due))
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
	lw.queue <- chunk{data: append([]byte(nil), b...), due: time.Now().Add(lw.lag)}
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
	cfg.Clusters["lag"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["lag"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["lag"] = &clientcmdapi.Context{Cluster: "lag", AuthInfo: "lag"}
	cfg.CurrentContext = "lag"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
