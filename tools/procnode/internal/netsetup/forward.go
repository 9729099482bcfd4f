package netsetup

import (
	"errors"
	"io"
	"log"
	"net"
	"sync"
	"time"
)

// Rule forwards a loopback address inside a pod namespace to a host address.
type Rule struct {
	Proto  string // "tcp" or "udp"
	Listen string // inside the pod, e.g. 127.0.0.1:443
	Target string // on the host, e.g. 127.0.0.1:16443
}

// Forwarder owns the sockets opened inside one pod namespace. The listening
// sockets are created from a thread switched into the pod namespace, so they
// live there; connections to the target are dialled from the node's normal
// threads, i.e. in the host namespace, where the target listens.
type Forwarder struct {
	mu     sync.Mutex
	closed bool
	socks  []io.Closer
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// StartForwarders opens every rule's socket inside the namespace at nsPath.
func StartForwarders(nsPath string, rules []Rule) (*Forwarder, error) {
	f := &Forwarder{conns: map[net.Conn]struct{}{}}
	for _, r := range rules {
		var err error
		switch r.Proto {
		case "tcp":
			var l net.Listener
			err = InNetNS(nsPath, func() (e error) { l, e = net.Listen("tcp", r.Listen); return })
			if err == nil {
				f.socks = append(f.socks, l)
				f.wg.Add(1)
				go f.serveTCP(l, r.Target)
			}
		case "udp":
			var pc net.PacketConn
			err = InNetNS(nsPath, func() (e error) { pc, e = net.ListenPacket("udp", r.Listen); return })
			if err == nil {
				f.socks = append(f.socks, pc)
				f.wg.Add(1)
				go f.serveUDP(pc, r.Target)
			}
		default:
			err = errors.New("unknown protocol " + r.Proto)
		}
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (f *Forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	// Close may have closed it already; either way it is done.
	_ = c.Close()
}

func (f *Forwarder) serveTCP(l net.Listener, target string) {
	defer f.wg.Done()
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		if !f.track(in) {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(in)
			out, err := net.DialTimeout("tcp", target, 10*time.Second)
			if err != nil {
				log.Printf("forward %s -> %s: %v", l.Addr(), target, err)
				return
			}
			if !f.track(out) {
				return
			}
			defer f.untrack(out)
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite() // pass the half-close on
				}
				done <- struct{}{}
			}
			go pipe(out, in)
			go pipe(in, out)
			<-done
			<-done
		}()
	}
}

// serveUDP relays datagrams (DNS queries): each query gets its own host
// socket, and the one reply that arrives on it is sent back to the asker.
func (f *Forwarder) serveUDP(pc net.PacketConn, target string) {
	defer f.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		query := append([]byte(nil), buf[:n]...)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			out, err := net.Dial("udp", target)
			if err != nil {
				return
			}
			if !f.track(out) {
				return
			}
			defer f.untrack(out)
			if _, err := out.Write(query); err != nil {
				return
			}
			resp := make([]byte, 65535)
			_ = out.SetReadDeadline(time.Now().Add(5 * time.Second))
			if m, err := out.Read(resp); err == nil {
				_, _ = pc.WriteTo(resp[:m], from)
			}
		}()
	}
}

// Close closes the listening sockets and every relayed connection, then
// waits for the relay goroutines, so the pod namespace can be freed.
func (f *Forwarder) Close() {
	f.mu.Lock()
	f.closed = true
	// Closing only serves to unblock the relays, so errors do not matter.
	for _, s := range f.socks {
		_ = s.Close()
	}
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
