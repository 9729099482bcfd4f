package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/dnsconf"
	"github.com/muster-dev/muster/tools/procnode/internal/image"
	"github.com/muster-dev/muster/tools/procnode/internal/logs"
	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
	"github.com/muster-dev/muster/tools/procnode/internal/proc"
	"github.com/muster-dev/muster/tools/procnode/internal/shim"
	"github.com/muster-dev/muster/tools/procnode/internal/volume"
)

// configError is a container that cannot be configured yet (a missing
// ConfigMap key, say); the kubelet reports CreateContainerConfigError and
// retries without counting a restart.
type configError struct{ error }

// pullError is an image the node could not pull from its registry mirror;
// the kubelet reports ErrImagePull, then ImagePullBackOff, and retries
// without counting a restart.
type pullError struct{ error }

// startContainer prepares and starts one attempt of c. Called without r.mu;
// ctx ends when the container is to stop.
func (r *podRun) startContainer(ctx context.Context, c *ctr) (*attempt, error) {
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	podIP := r.podIP
	index := nextRestartCount(c) // committed by the caller once the process runs
	nsPath := ""
	if r.net != nil {
		nsPath = r.net.Path
	}
	vols := r.vols
	r.mu.Unlock()

	spec := &c.spec
	// As the kubelet: the image first, then the container's configuration.
	img, err := r.pullImage(ctx, c)
	if err != nil {
		return nil, err
	}
	env, mounts, err := r.containerConfig(pod, spec, podIP, vols)
	if err != nil {
		return nil, configError{err}
	}
	rc := hostRunConfig(pod, spec, env)
	if img != nil {
		if rc, err = imageRunConfig(pod, spec, env, img); err != nil {
			return nil, configError{err}
		}
	}
	runDir := filepath.Join(r.dir, "run")
	a, err := r.newAttempt(spec, index, runDir, mounts)
	if err != nil {
		return nil, err
	}
	a.env = rc.env
	a.workDir = rc.workingDir

	if a.cgroup, err = r.containerCgroup(pod, spec, index); err != nil {
		return nil, err
	}
	keep, all := capabilities(spec)
	s := &shim.Spec{
		Cgroups:          a.cgroup.Dirs,
		KeepCapabilities: keep,
		AllCapabilities:  all,
		Mounts:           r.shimMounts(pod, spec, mounts, a),
		WorkingDir:       rc.workingDir,
		Argv:             rc.argv,
		Env:              rc.env,
		UID:              rc.uid,
		GID:              rc.gid,
		Groups:           rc.groups,
		ScratchDir:       filepath.Join(runDir, "scratch", fmt.Sprintf("%s-%d", spec.Name, index)),
		TmpDir:           filepath.Join(r.dir, "tmp", spec.Name),
		ErrorFile:        a.errFile,
	}
	if rc.img != nil {
		s.Rootfs = rc.img.Rootfs
		s.RootfsRW = filepath.Join(r.dir, "rootfs", spec.Name)
		s.ReadOnlyRootfs = readOnlyRoot(spec)
	}
	if !pod.Spec.HostNetwork {
		s.NetNS = nsPath
		s.Hostname = dnsconf.Hostname(pod)
	}
	if err := prepareShimDirs(s); err != nil {
		return nil, err
	}
	specPath := filepath.Join(runDir, spec.Name+".spec.json")
	if err := shim.WriteSpec(specPath, s); err != nil {
		return nil, err
	}
	return r.launch(a, s, specPath)
}

// pullImage returns the image c runs from, nil for the host's programs
// (no registry mirror, or an image the mirror does not have).
func (r *podRun) pullImage(ctx context.Context, c *ctr) (*image.Image, error) {
	store := r.p.cfg.Images
	if store == nil {
		return nil, nil
	}
	policy := c.spec.ImagePullPolicy
	if policy == "" {
		policy = defaultPullPolicy(c.spec.Image)
	}
	img, err := store.Resolve(ctx, c.spec.Image, policy)
	if err != nil {
		return nil, pullError{err}
	}
	r.mu.Lock()
	c.imageID = ""
	if img != nil {
		c.imageID = img.Ref
	}
	r.mu.Unlock()
	return img, nil
}

// containerConfig resolves the container's environment and volume mounts.
// Its errors are configuration errors (a missing ConfigMap key, say).
func (r *podRun) containerConfig(pod *corev1.Pod, spec *corev1.Container, podIP string, vols map[string]volume.Volume) ([]podenv.Var, []volume.Mount, error) {
	env, err := podenv.Build(spec, podenv.Input{
		Pod:         pod,
		Addr:        podenv.Addresses{PodIP: podIP, HostIP: HostIP},
		Allocatable: r.p.cfg.Allocatable,
		Service:     r.serviceEnv(pod),
		Objects:     r.p.objects(),
	})
	if err != nil {
		return nil, nil, err
	}
	envMap := map[string]string{}
	for _, v := range env {
		envMap[v.Name] = v.Value
	}
	expand := func(s string) string { return podenv.Expand(s, podenv.MapLookup(envMap)) }
	mounts, err := volume.ContainerMounts(spec, vols, expand)
	if err != nil {
		return nil, nil, err
	}
	return env, mounts, nil
}

// newAttempt creates the directories and files of attempt index: the run and
// log directories, missing volume sub-paths, and empty error and
// termination-message files. Logs older than the previous attempt's go.
func (r *podRun) newAttempt(spec *corev1.Container, index int32, runDir string, mounts []volume.Mount) (*attempt, error) {
	logDir := filepath.Join(r.dir, "logs", spec.Name)
	for _, d := range []string{runDir, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// Sub-paths of volumes are created like the kubelet does.
	for _, m := range mounts {
		if _, err := os.Stat(m.Source); os.IsNotExist(err) {
			if err := os.MkdirAll(m.Source, 0o755); err != nil {
				return nil, err
			}
		}
	}
	a := &attempt{
		index:    index,
		logPath:  filepath.Join(logDir, fmt.Sprintf("%d.log", index)),
		errFile:  filepath.Join(runDir, spec.Name+".err"),
		termFile: filepath.Join(runDir, spec.Name+".termination-log"),
		workDir:  spec.WorkingDir,
	}
	for _, f := range []string{a.errFile, a.termFile} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			return nil, err
		}
	}
	pruneLogs(logDir, index)
	return a, nil
}

// prepareShimDirs creates the shim's scratch directory, the attempt's
// private /tmp and, in an image's root, its empty writable layer.
func prepareShimDirs(s *shim.Spec) error {
	if err := os.MkdirAll(s.ScratchDir, 0o700); err != nil {
		return err
	}
	// Each attempt starts with an empty /tmp, as a restarted container gets
	// a fresh writable layer; sticky and world-writable like /tmp.
	_ = os.RemoveAll(s.TmpDir)
	if err := os.MkdirAll(s.TmpDir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(s.TmpDir, 0o777|os.ModeSticky); err != nil {
		return err
	}
	if s.Rootfs == "" {
		return nil
	}
	if err := os.RemoveAll(s.RootfsRW); err != nil {
		return err
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.MkdirAll(filepath.Join(s.RootfsRW, d), 0o755); err != nil {
			return err
		}
	}
	// The upper directory's own owner and mode are what "/" shows: the
	// image's.
	var st syscall.Stat_t
	if err := syscall.Stat(s.Rootfs, &st); err != nil {
		return err
	}
	upper := filepath.Join(s.RootfsRW, "upper")
	if err := os.Chown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	return os.Chmod(upper, os.FileMode(st.Mode&0o777))
}

// launch starts the shim for attempt a with its output going to the
// attempt's log, and records the process for --cleanup.
func (r *podRun) launch(a *attempt, s *shim.Spec, specPath string) (*attempt, error) {
	w, err := logs.NewWriter(a.logPath)
	if err != nil {
		return nil, err
	}
	a.logw = w
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		w.CloseChildEnds()
		return nil, err
	}
	defer func() { _ = devnull.Close() }() // the child has its own copy
	cmd := exec.Command(r.p.cfg.ShimPath, "shim", "--spec", specPath)
	cmd.Env = []string{} // the shim gets the container's env from the spec
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, w.Stdout, w.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Cloneflags: syscall.CLONE_NEWNS,
		// If the node dies, its containers die with it.
		Pdeathsig: syscall.SIGKILL,
	}
	if s.Hostname != "" {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUTS
	}
	pr, err := proc.Start(cmd)
	w.CloseChildEnds()
	if err != nil {
		return nil, err
	}
	a.proc = pr
	recordProc(r.p.cfg.StateDir, pr.Pid)
	return a, nil
}

// defaultPath is the PATH a container gets when it sets none, as an
// image's default would be.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// finalEnv adds what an image would normally provide (PATH, HOME,
// HOSTNAME) to the container's resolved environment, for a container that
// runs the host's programs (no image config to take them from).
func finalEnv(env []podenv.Var, hostname string, hostNetwork bool) []string {
	out := make([]string, 0, len(env)+3)
	has := map[string]bool{}
	for _, v := range env {
		has[v.Name] = true
		out = append(out, v.Name+"="+v.Value)
	}
	if !has["PATH"] {
		// An image's usual PATH, not the node's: whatever the node's own
		// shell put first (a version manager's shims, say) must not decide
		// which python3 a pod runs.
		out = append(out, "PATH="+defaultPath)
	}
	if !has["HOME"] {
		out = append(out, "HOME=/root")
	}
	if !has["HOSTNAME"] {
		out = append(out, "HOSTNAME="+podHostname(hostname, hostNetwork))
	}
	return out
}

// identity returns runAsUser/runAsGroup, the container's overriding the pod's.
func identity(pod *corev1.Pod, c *corev1.Container) (uid, gid *int64) {
	if sc := pod.Spec.SecurityContext; sc != nil {
		uid, gid = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	return uid, gid
}

// shimMounts adds the node-managed files to the volume mounts.
func (r *podRun) shimMounts(pod *corev1.Pod, c *corev1.Container, mounts []volume.Mount, a *attempt) []shim.Mount {
	var out []shim.Mount
	etc := filepath.Join(r.dir, "etc")
	if !pod.Spec.HostNetwork {
		out = append(out,
			shim.Mount{Source: filepath.Join(etc, "hosts"), Target: "/etc/hosts", Optional: true},
			shim.Mount{Source: filepath.Join(etc, "hostname"), Target: "/etc/hostname", Optional: true})
	}
	if _, err := os.Stat(filepath.Join(etc, "resolv.conf")); err == nil {
		out = append(out, shim.Mount{Source: filepath.Join(etc, "resolv.conf"), Target: "/etc/resolv.conf", Optional: true})
	}
	tmp := c.TerminationMessagePath
	if tmp == "" {
		tmp = corev1.TerminationMessagePathDefault
	}
	out = append(out, shim.Mount{Source: a.termFile, Target: tmp, Optional: true})
	for _, m := range mounts {
		out = append(out, shim.Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	return out
}

// serviceEnv is what the kubelet injects for the "kubernetes" Service,
// pointed at the in-pod API forwarder (or, with host networking, at the API
// server itself).
func (r *podRun) serviceEnv(pod *corev1.Pod) []podenv.Var {
	host, port := "127.0.0.1", APIPortInPod
	if pod.Spec.HostNetwork {
		if h, p, ok := strings.Cut(r.p.cfg.APIServer, ":"); ok {
			host, port = h, p
		}
	}
	tcp := "tcp://" + host + ":" + port
	return []podenv.Var{
		{Name: "KUBERNETES_SERVICE_HOST", Value: host},
		{Name: "KUBERNETES_SERVICE_PORT", Value: port},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: port},
		{Name: "KUBERNETES_PORT", Value: tcp},
		{Name: "KUBERNETES_PORT_" + port + "_TCP", Value: tcp},
		{Name: "KUBERNETES_PORT_" + port + "_TCP_PROTO", Value: "tcp"},
		{Name: "KUBERNETES_PORT_" + port + "_TCP_PORT", Value: port},
		{Name: "KUBERNETES_PORT_" + port + "_TCP_ADDR", Value: host},
	}
}

// pruneLogs keeps the log files of the previous and current attempts only.
func pruneLogs(dir string, current int32) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err == nil && int32(n) < current-1 {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// result interprets a finished attempt the way container runtimes report it.
func (a *attempt) result(startedAt time.Time, c *corev1.Container) *corev1.ContainerStateTerminated {
	ws := a.proc.Status()
	t := &corev1.ContainerStateTerminated{
		StartedAt:  metav1.NewTime(startedAt),
		FinishedAt: metav1.Now(),
	}
	switch {
	case ws.Exited():
		t.ExitCode = int32(ws.ExitStatus())
	case ws.Signaled():
		t.ExitCode = 128 + int32(ws.Signal())
		t.Signal = int32(ws.Signal())
		t.Message = "terminated by signal " + signalName(ws.Signal())
	}
	if msg, _ := os.ReadFile(a.errFile); len(msg) > 0 {
		// The shim could not start the command.
		t.Reason = "StartError"
		t.Message = strings.TrimSpace(string(msg))
		return t
	}
	switch {
	case t.ExitCode == 0:
		t.Reason = "Completed"
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL && a.cgroup != nil && a.cgroup.OOMKilled():
		// The kernel killed it for going over limits.memory, as a
		// runtime reports it.
		t.Reason = "OOMKilled"
	default:
		t.Reason = "Error"
	}
	if msg := readLimited(a.termFile, 4096); msg != "" {
		t.Message = msg
	} else if t.ExitCode != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		t.Message = logs.Tail(a.logPath, 80, 2048)
	}
	return t
}

func readLimited(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	b := make([]byte, n)
	m, _ := f.Read(b)
	return string(b[:m])
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT",
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT", syscall.SIGHUP: "SIGHUP",
		syscall.SIGQUIT: "SIGQUIT", syscall.SIGBUS: "SIGBUS", syscall.SIGPIPE: "SIGPIPE",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGFPE: "SIGFPE",
		syscall.SIGILL: "SIGILL", syscall.SIGALRM: "SIGALRM",
	}
	if n, ok := names[s]; ok {
		return n + " (" + s.String() + ")"
	}
	return s.String()
}
