package provider

import (
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// hostPorts serves each TCP container port that asks for a hostPort on the
// node's loopback address and forwards it into the pod, as a real node's
// hostPort handling does. It is how something on the host reaches a pod,
// whose address lives in a network namespace the host has no route to: the
// API server calling an admission webhook, say.
type hostPorts struct {
	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
}

// startHostPorts listens for every hostPort of pod; dial connects to an
// address inside the pod's namespace.
func startHostPorts(pod *corev1.Pod, dial func(addr string, timeout time.Duration) (net.Conn, error)) (*hostPorts, error) {
	h := &hostPorts{conns: map[net.Conn]struct{}{}}
	for _, c := range pod.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort == 0 || (port.Protocol != "" && port.Protocol != corev1.ProtocolTCP) {
				continue
			}
			l, err := net.Listen("tcp", net.JoinHostPort(HostIP, strconv.Itoa(int(port.HostPort))))
			if err != nil {
				h.close()
				return nil, err
			}
			target := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port.ContainerPort)))
			h.listeners = append(h.listeners, l)
			h.wg.Add(1)
			go h.serve(l, target, dial)
		}
	}
	return h, nil
}

func (h *hostPorts) serve(l net.Listener, target string, dial func(string, time.Duration) (net.Conn, error)) {
	defer h.wg.Done()
	for {
		in, err := l.Accept()
		if err != nil {
			return // closed
		}
		out, err := dial(target, 5*time.Second)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !h.track(in, out) {
			return
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			pipe(in, out)
			h.untrack(in, out)
		}()
	}
}

func (h *hostPorts) track(conns ...net.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conns == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		h.conns[c] = struct{}{}
	}
	return true
}

func (h *hostPorts) untrack(conns ...net.Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range conns {
		delete(h.conns, c)
	}
}

// pipe copies both ways until either side is done, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		// A reset or closed connection ends the pipe as an EOF does.
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	_ = a.Close()
	_ = b.Close()
	<-done
}

// close stops listening and cuts every forwarded connection.
func (h *hostPorts) close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	for _, l := range h.listeners {
		_ = l.Close()
	}
	for c := range h.conns {
		_ = c.Close()
	}
	h.conns = nil
	h.mu.Unlock()
	h.wg.Wait()
}
