// Package ipam hands out pod addresses from the node's pod CIDR.
package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// Allocator assigns IPv4 addresses from a prefix. The first usable address is
// kept for the bridge (the pods' gateway); the network and broadcast
// addresses are never handed out.
type Allocator struct {
	mu      sync.Mutex
	prefix  netip.Prefix
	gateway netip.Addr
	used    map[netip.Addr]string
	next    netip.Addr
}

// ErrExhausted is returned when every address is in use.
var ErrExhausted = errors.New("ipam: pod CIDR exhausted")

// New parses cidr (for example 10.244.0.0/24).
func New(cidr string) (*Allocator, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, err
	}
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 29 {
		return nil, fmt.Errorf("ipam: %s must be an IPv4 prefix of /29 or larger", cidr)
	}
	gw := p.Addr().Next()
	return &Allocator{prefix: p, gateway: gw, used: map[netip.Addr]string{}, next: gw.Next()}, nil
}

// Prefix returns the pod network.
func (a *Allocator) Prefix() netip.Prefix { return a.prefix }

// Gateway returns the address reserved for the bridge.
func (a *Allocator) Gateway() netip.Addr { return a.gateway }

func (a *Allocator) usable(ip netip.Addr) bool {
	if !a.prefix.Contains(ip) || ip == a.prefix.Addr() || ip == a.gateway {
		return false
	}
	return a.prefix.Contains(ip.Next()) // the last address is the broadcast
}

// Allocate returns a free address for owner. Addresses are handed out
// round-robin so a just-released address is not reused at once, which keeps
// stale connections from reaching a new pod.
func (a *Allocator) Allocate(owner string) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ip, o := range a.used {
		if o == owner {
			return ip, nil
		}
	}
	ip := a.next
	for range 1 << (32 - a.prefix.Bits()) {
		if !a.usable(ip) {
			ip = a.gateway.Next() // wrap around to the first pod address
		}
		if _, taken := a.used[ip]; !taken {
			a.used[ip] = owner
			a.next = ip.Next()
			return ip, nil
		}
		ip = ip.Next()
	}
	return netip.Addr{}, ErrExhausted
}

// Release frees the address held by owner, if any.
func (a *Allocator) Release(owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for ip, o := range a.used {
		if o == owner {
			delete(a.used, ip)
		}
	}
}
