package main

import (
	"context"
	"log"
	"log/slog"
	"net"
	"os"

	"github.com/muster-dev/muster/tools/procnode/internal/egress"
	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
)

// serveEgress serves the API server's egress proxy (internal/egress) on a
// unix socket, which only root can reach: pod addresses are dialled from
// the bridge namespace, loopback ones on the host.
func serveEgress(path string, network *netsetup.Network) (stop func(), err error) {
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return nil, err
	}
	var d net.Dialer
	p := egress.New(egress.Dialers{
		Pod:   network.DialPod,
		IsPod: network.Contains,
		Host: func(ctx context.Context, a string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", a)
		},
	}, slog.Default().With("component", "egress"))
	go func() { _ = p.Serve(l) }()
	log.Printf("egress proxy for the API server on %s", path)
	return func() { _ = l.Close() }, nil
}
