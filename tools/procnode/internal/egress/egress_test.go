package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

func echoServer(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer func() { _ = c.Close() }(); _, _ = io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// A pod address is dialled in the pod network, loopback on the host, and
// anything else is refused with 403 without a dial.
func TestProxyRoutes(t *testing.T) {
	echo := echoServer(t)
	var podDials, hostDials []string
	d := Dialers{
		IsPod: func(ip net.IP) bool { return ip.Equal(net.ParseIP("10.244.0.7")) },
		Pod: func(ctx context.Context, addr string) (net.Conn, error) {
			podDials = append(podDials, addr)
			var dl net.Dialer
			return dl.DialContext(ctx, "tcp", echo.Addr().String())
		},
		Host: func(ctx context.Context, addr string) (net.Conn, error) {
			hostDials = append(hostDials, addr)
			var dl net.Dialer
			return dl.DialContext(ctx, "tcp", echo.Addr().String())
		},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() { _ = New(d, slog.New(slog.NewTextHandler(io.Discard, nil))).Serve(l) }()

	connect := func(target string) (int, net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatal(err)
		}
		// A CONNECT response's body is the tunnel: it is read through br.
		_ = resp.Body.Close()
		return resp.StatusCode, c, br
	}
	for target, want := range map[string]int{
		"10.244.0.7:9443": 200, "127.0.0.1:16250": 200, "localhost:9443": 200,
		"10.244.0.8:9443": 403, "192.168.1.1:443": 403, "example.com:443": 403,
	} {
		code, c, br := connect(target)
		if code != want {
			t.Errorf("CONNECT %s: %d, want %d", target, code, want)
		}
		if code == 200 {
			fmt.Fprint(c, "ping\n")
			if line, _ := br.ReadString('\n'); line != "ping\n" {
				t.Errorf("through %s: read %q", target, line)
			}
		}
		_ = c.Close()
	}
	if strings.Join(podDials, ",") != "10.244.0.7:9443" {
		t.Errorf("pod dials %v", podDials)
	}
	if len(hostDials) != 2 {
		t.Errorf("host dials %v, want the two loopback targets", hostDials)
	}
}
