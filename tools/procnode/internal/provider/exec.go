package provider

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"

	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
	"github.com/muster-dev/muster/tools/procnode/internal/proc"
)

// runningProcess returns the main process and environment of a running
// container.
func (p *Provider) runningProcess(ns, podName, name string) (int, []string, error) {
	r := p.lookup(ns, podName)
	if r == nil {
		return 0, nil, errdefs.NotFoundf("pod %s/%s not found on this node", ns, podName)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range append(append([]*ctr(nil), r.inits...), r.mains...) {
		if c.spec.Name != name && name != "" {
			continue
		}
		if c.state.Running == nil || c.cur == nil {
			return 0, nil, errdefs.InvalidInputf("container %s is not running", c.spec.Name)
		}
		return c.cur.proc.Pid, c.cur.env, nil
	}
	return 0, nil, errdefs.NotFoundf("container %s not found in pod %s", name, podName)
}

// RunInContainer runs a command inside a running container's namespaces
// (mount, UTS, network, root and working directory) with nsenter(1), with
// the container's environment. Terminals are not supported: output is
// passed through as plain streams.
func (p *Provider) RunInContainer(ctx context.Context, ns, podName, name string, cmd []string, attach api.AttachIO) error {
	pid, env, err := p.runningProcess(ns, podName, name)
	if err != nil {
		return err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return fmt.Errorf("exec needs nsenter (util-linux): %w", err)
	}
	args := append([]string{"--target", strconv.Itoa(pid), "--mount", "--uts", "--net", "--root", "--wd", "--"}, cmd...)
	c := exec.Command(nsenter, args...)
	c.Env = env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var copies sync.WaitGroup
	var childEnds []*os.File
	defer func() {
		for _, f := range childEnds {
			_ = f.Close()
		}
	}()
	output := func(w io.Writer) (*os.File, error) {
		if w == nil {
			return nil, nil
		}
		r, wr, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		childEnds = append(childEnds, wr)
		copies.Add(1)
		go func() {
			defer copies.Done()
			defer func() { _ = r.Close() }()
			_, _ = io.Copy(w, r)
		}()
		return wr, nil
	}
	if c.Stdout, err = output(attach.Stdout()); err != nil {
		return err
	}
	if c.Stderr, err = output(attach.Stderr()); err != nil {
		return err
	}
	if in := attach.Stdin(); in != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		childEnds = append(childEnds, r)
		c.Stdin = r
		go func() {
			_, _ = io.Copy(w, in)
			_ = w.Close() // EOF on the command's stdin
		}()
	}
	pp, err := proc.Start(c)
	if err != nil {
		return err
	}
	// The child has its own copies; ours would keep the pipes open.
	for _, f := range childEnds {
		_ = f.Close()
	}
	childEnds = nil
	select {
	case <-pp.Done():
	case <-ctx.Done():
		_ = pp.SignalGroup(syscall.SIGKILL)
		<-pp.Done()
	}
	_ = pp.SignalGroup(syscall.SIGKILL) // leftovers would hold the output pipes open
	copies.Wait()
	ws := pp.Status()
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// AttachToContainer is not supported: containers have no terminal or stdin.
func (p *Provider) AttachToContainer(context.Context, string, string, string, api.AttachIO) error {
	return errdefs.InvalidInput("attach is not supported by the process node")
}

// PortForward connects the stream to 127.0.0.1:port inside the pod's
// network namespace, as container runtimes do.
func (p *Provider) PortForward(ctx context.Context, ns, podName string, port int32, stream io.ReadWriteCloser) error {
	defer func() { _ = stream.Close() }()
	r := p.lookup(ns, podName)
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s not found on this node", ns, podName)
	}
	r.mu.Lock()
	nsPath := ""
	if r.net != nil {
		nsPath = r.net.Path
	}
	hostNet := r.pod.Spec.HostNetwork
	r.mu.Unlock()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	var conn net.Conn
	var err error
	switch {
	case hostNet:
		conn, err = net.DialTimeout("tcp", addr, 10*time.Second)
	case nsPath == "":
		return errdefs.InvalidInputf("pod %s/%s has no network (not running)", ns, podName)
	default:
		err = netsetup.InNetNS(nsPath, func() (e error) {
			conn, e = net.DialTimeout("tcp", addr, 10*time.Second)
			return
		})
	}
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// GetStatsSummary reports the node only; per-pod usage is not measured.
func (p *Provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.cfg.NodeName, StartTime: metav1.Now()}}, nil
}

// GetMetricsResource returns no metrics.
func (p *Provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, nil
}
