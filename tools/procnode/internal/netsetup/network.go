package netsetup

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Network is the node's pod network: the bridge namespace and its subnet.
type Network struct {
	node    string
	prefix  netip.Prefix
	gateway netip.Addr
	path    string // bridge namespace file
}

// handleIn opens a netlink handle whose socket lives in the namespace at
// path, so later calls need no thread switching.
func handleIn(path string) (*netlink.Handle, error) {
	var h *netlink.Handle
	err := InNetNS(path, func() error {
		var err error
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	return h, err
}

func addrOf(ip netip.Addr, bits int) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(ip.AsSlice()), Mask: net.CIDRMask(bits, 32)}}
}

// NewNetwork creates the bridge namespace with a bridge that carries the
// gateway address (in that namespace only). Call Cleanup first to remove
// leftovers of a previous run.
func NewNetwork(node string, prefix netip.Prefix, gateway netip.Addr) (*Network, error) {
	path, err := createNamed(BridgeNS(node))
	if err != nil {
		return nil, fmt.Errorf("creating bridge namespace: %w", err)
	}
	n := &Network{node: node, prefix: prefix, gateway: gateway, path: path}
	if err := n.setupBridge(); err != nil {
		_ = deleteNamed(BridgeNS(node))
		return nil, err
	}
	return n, nil
}

func (n *Network) setupBridge() error {
	h, err := handleIn(n.path)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := linkUp(h, "lo"); err != nil {
		return err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("adding bridge: %w", err)
	}
	if err := h.AddrAdd(br, addrOf(n.gateway, n.prefix.Bits())); err != nil {
		return fmt.Errorf("bridge address: %w", err)
	}
	return h.LinkSetUp(br)
}

func linkUp(h *netlink.Handle, name string) error {
	l, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("link %s: %w", name, err)
	}
	return h.LinkSetUp(l)
}

// Close removes the bridge namespace (and with it every pod's veth end).
func (n *Network) Close() error { return deleteNamed(BridgeNS(n.node)) }

// PodNet is a pod's network namespace.
type PodNet struct {
	Name string
	Path string
	IP   netip.Addr
	uid  string
	n    *Network
}

// AddPod creates the pod's namespace with loopback up, and eth0 (a veth
// whose other end is enslaved to the bridge) holding ip, with a default
// route via the bridge.
func (n *Network) AddPod(podUID string, ip netip.Addr) (*PodNet, error) {
	name := PodNS(n.node, podUID)
	// A leftover from an interrupted attempt would make creation fail.
	_ = deleteNamed(name)
	path, err := createNamed(name)
	if err != nil {
		return nil, fmt.Errorf("creating pod namespace: %w", err)
	}
	p := &PodNet{Name: name, Path: path, IP: ip, uid: podUID, n: n}
	if err := p.setup(); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

func (p *PodNet) setup() error {
	bh, err := handleIn(p.n.path)
	if err != nil {
		return err
	}
	defer bh.Close()
	br, err := bh.LinkByName(BridgeName)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	// A veth left by an earlier attempt for the same pod would clash.
	if old, err := bh.LinkByName(HostVeth(p.uid)); err == nil {
		_ = bh.LinkDel(old)
	}
	nsf, err := os.Open(p.Path)
	if err != nil {
		return err
	}
	defer func() { _ = nsf.Close() }()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: HostVeth(p.uid), MasterIndex: br.Attrs().Index},
		PeerName:      "eth0",
		PeerNamespace: netlink.NsFd(nsf.Fd()),
	}
	if err := bh.LinkAdd(veth); err != nil {
		return fmt.Errorf("adding veth: %w", err)
	}
	if err := linkUp(bh, HostVeth(p.uid)); err != nil {
		return err
	}

	ph, err := handleIn(p.Path)
	if err != nil {
		return err
	}
	defer ph.Close()
	if err := linkUp(ph, "lo"); err != nil {
		return err
	}
	eth, err := ph.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("eth0: %w", err)
	}
	if err := ph.AddrAdd(eth, addrOf(p.IP, p.n.prefix.Bits())); err != nil {
		return fmt.Errorf("eth0 address: %w", err)
	}
	if err := ph.LinkSetUp(eth); err != nil {
		return err
	}
	// Some programs find "their" address through the default route.
	gw := net.IP(p.n.gateway.AsSlice())
	if err := ph.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("default route: %w", err)
	}
	return nil
}

// Close removes the pod's veth and namespace. Forwarder sockets inside the
// namespace must be closed first, or the kernel keeps it alive.
func (p *PodNet) Close() error {
	var errs []error
	if bh, err := handleIn(p.n.path); err == nil {
		if l, err := bh.LinkByName(HostVeth(p.uid)); err == nil {
			errs = append(errs, bh.LinkDel(l))
		}
		bh.Close()
	}
	errs = append(errs, deleteNamed(p.Name))
	return errors.Join(errs...)
}

// Exists reports whether a pod namespace file is present (for tests and
// diagnostics).
func Exists(name string) bool {
	_, err := os.Stat(filepath.Join(NetnsDir, name))
	return err == nil
}
