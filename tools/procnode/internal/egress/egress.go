// Package egress is the API server's way into the node's pod network. The
// API server runs on the host, and pod addresses exist only inside the
// node's own network namespaces, so it cannot call an admission webhook
// behind a Service, nor any pod, by itself. Given an egress selector
// configuration whose "cluster" traffic goes through this HTTP CONNECT
// proxy (and --enable-aggregator-routing, so a Service resolves to its pods'
// addresses), it can: the proxy dials pod addresses from the bridge
// namespace and loopback addresses (the node's kubelet API, hostPorts) on
// the host, and refuses everything else.
package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Dialers are where the proxy's connections come from.
type Dialers struct {
	// Pod dials a pod address; IsPod says whether an address is one.
	Pod   func(ctx context.Context, addr string) (net.Conn, error)
	IsPod func(net.IP) bool
	// Host dials a loopback address on the host.
	Host func(ctx context.Context, addr string) (net.Conn, error)
}

// Proxy serves HTTP CONNECT.
type Proxy struct {
	dial Dialers
	log  *slog.Logger
	wg   sync.WaitGroup
}

// New returns a proxy that dials with d.
func New(d Dialers, log *slog.Logger) *Proxy { return &Proxy{dial: d, log: log} }

// Route says how a CONNECT target is dialled: "pod", "host", or an error
// for a target the proxy must not reach.
func (p *Proxy) Route(target string) (string, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil || port == "" {
		return "", fmt.Errorf("target %q is not host:port", target)
	}
	if host == "localhost" {
		return "host", nil
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return "", fmt.Errorf("target %q: only addresses and localhost are reached", target)
	case ip.IsLoopback():
		return "host", nil
	case p.dial.IsPod(ip):
		return "pod", nil
	}
	return "", fmt.Errorf("target %q is neither a pod of this node nor loopback", target)
}

// Serve accepts CONNECT requests on l until it is closed.
func (p *Proxy) Serve(l net.Listener) error {
	for {
		c, err := l.Accept()
		if err != nil {
			p.wg.Wait()
			return err
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

func (p *Proxy) handle(client net.Conn) {
	defer func() { _ = client.Close() }()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(client)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = client.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(client, "HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
		return
	}
	target := req.Host
	route, err := p.Route(target)
	if err != nil {
		p.log.Warn("egress refused", "target", target, "err", err)
		fmt.Fprintf(client, "HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n%s\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := p.dial.Host
	if route == "pod" {
		dial = p.dial.Pod
	}
	upstream, err := dial(ctx, target)
	if err != nil {
		fmt.Fprintf(client, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n%s\n", err)
		return
	}
	defer func() { _ = upstream.Close() }()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// Whatever the client sent after its request line is already read.
		_, _ = io.Copy(upstream, io.MultiReader(br, client))
		closeWrite(upstream)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
