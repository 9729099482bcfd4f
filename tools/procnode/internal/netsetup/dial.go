package netsetup

import (
	"context"
	"net"
	"net/netip"
)

// DialPod dials addr (a pod's address and port) from inside the bridge
// namespace, the one place with a route to every pod. The socket is made
// there and stays there; the caller reads and writes it from any thread.
func (n *Network) DialPod(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := InNetNS(n.path, func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// Contains is whether ip is a pod address of this network.
func (n *Network) Contains(ip net.IP) bool {
	a, ok := netipFrom(ip)
	return ok && n.prefix.Contains(a)
}

func netipFrom(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}
