package provider

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// A hostPort is served on the node's address and forwarded to the pod.
func TestHostPortsForwardIntoThePod(t *testing.T) {
	// The pod's server: it answers every line with "pod: " and the line.
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				line, _ := bufio.NewReader(c).ReadString('\n')
				_, _ = c.Write([]byte("pod: " + line))
			}()
		}
	}()
	containerPort := int32(srv.Addr().(*net.TCPAddr).Port)
	hostPort := freePort(t)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
		{ContainerPort: containerPort, HostPort: hostPort},
		{ContainerPort: 1, Protocol: corev1.ProtocolUDP, HostPort: 1}, // not TCP: not served
		{ContainerPort: 2}, // no host port
	}}}}}
	var mu sync.Mutex
	var dialed []string
	dial := func(addr string, timeout time.Duration) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		return net.DialTimeout("tcp", addr, timeout)
	}
	hp, err := startHostPorts(pod, dial)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", net.JoinHostPort(HostIP, strconv.Itoa(int(hostPort))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || reply != "pod: hello\n" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	_ = c.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 || dialed[0] != net.JoinHostPort("127.0.0.1", strconv.Itoa(int(containerPort))) {
		t.Fatalf("dialed %v", dialed)
	}
	hp.close()
	if _, err := net.DialTimeout("tcp", net.JoinHostPort(HostIP, strconv.Itoa(int(hostPort))), time.Second); err == nil {
		t.Fatal("the host port is closed with the pod's network")
	}
}
