package provider

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/dnsconf"
	"github.com/muster-dev/muster/tools/procnode/internal/netsetup"
	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
	"github.com/muster-dev/muster/tools/procnode/internal/volume"
)

// setupSandboxWithRetry prepares the pod's network, files and volumes,
// retrying (e.g. until a referenced ConfigMap exists) like the kubelet's
// volume manager. It reports false if the pod was stopped meanwhile.
func (r *podRun) setupSandboxWithRetry() bool {
	delay := time.Second
	for {
		err := r.setupSandbox()
		if err == nil {
			r.mu.Lock()
			r.sandbox = sandboxState{ready: true}
			mainReason := "ContainerCreating"
			if len(r.inits) > 0 {
				mainReason = "PodInitializing"
			}
			for _, c := range r.inits {
				c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			}
			for _, c := range r.mains {
				c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: mainReason}}
			}
			r.mu.Unlock()
			r.changed()
			go func() {
				defer r.guard()
				r.refreshVolumes()
			}()
			return true
		}
		r.logf("sandbox: %v", err)
		r.mu.Lock()
		r.sandbox = sandboxState{message: err.Error()}
		for _, c := range append(append([]*ctr(nil), r.inits...), r.mains...) {
			c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: err.Error()}}
		}
		r.mu.Unlock()
		r.changed()
		if !sleep(r.halt, delay) {
			return false
		}
		delay = min(delay*2, 30*time.Second)
	}
}

func (r *podRun) setupSandbox() error {
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	r.mu.Unlock()
	for _, d := range []string{"etc", "run", "logs", "volumes"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := r.setupNetwork(pod); err != nil {
		return err
	}
	r.mu.Lock()
	podIP := r.podIP
	r.mu.Unlock()
	if err := r.writeEtc(pod, podIP); err != nil {
		return err
	}
	vols, err := volume.Plan(pod, r.dir, r.p.cfg.StateDir)
	if err != nil {
		return err
	}
	if r.tokens == nil {
		r.tokens = newTokenCache(r.p.cfg.Client, pod)
	}
	for _, v := range pod.Spec.Volumes {
		if err := r.prepareVolume(pod, v, vols[v.Name], podIP); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.vols = vols
	r.mu.Unlock()
	return nil
}

// setupNetwork gives the pod its namespace, address and forwarders once.
func (r *podRun) setupNetwork(pod *corev1.Pod) error {
	if pod.Spec.HostNetwork {
		r.mu.Lock()
		r.podIP = HostIP
		r.mu.Unlock()
		return nil
	}
	r.mu.Lock()
	ready := r.net != nil && r.fwd != nil
	r.mu.Unlock()
	if ready {
		return nil
	}
	r.releaseNetwork() // a half-built earlier attempt
	ip, err := r.p.cfg.IPAM.Allocate(string(pod.UID))
	if err != nil {
		return err
	}
	pn, err := r.p.cfg.Network.AddPod(string(pod.UID), ip)
	if err != nil {
		r.p.cfg.IPAM.Release(string(pod.UID))
		return fmt.Errorf("pod network: %w", err)
	}
	rules := []netsetup.Rule{{Proto: "tcp", Listen: "127.0.0.1:" + APIPortInPod, Target: r.p.cfg.APIServer}}
	if r.p.cfg.DNS != "" {
		rules = append(rules,
			netsetup.Rule{Proto: "udp", Listen: "127.0.0.1:53", Target: r.p.cfg.DNS},
			netsetup.Rule{Proto: "tcp", Listen: "127.0.0.1:53", Target: r.p.cfg.DNS})
	}
	rules = append(rules, r.p.cfg.Forwards...)
	fwd, err := netsetup.StartForwarders(pn.Path, rules)
	if err != nil {
		_ = pn.Close()
		r.p.cfg.IPAM.Release(string(pod.UID))
		return fmt.Errorf("forwarders: %w", err)
	}
	r.mu.Lock()
	r.net, r.fwd, r.podIP = pn, fwd, netip.Addr.String(ip)
	r.mu.Unlock()
	hp, err := startHostPorts(pod, r.dialPod)
	if err != nil {
		r.releaseNetwork()
		return fmt.Errorf("host ports: %w", err)
	}
	r.mu.Lock()
	r.hports = hp
	r.mu.Unlock()
	return nil
}

// releaseNetwork closes the forwarders, removes the namespace and frees the
// address. The pod keeps reporting its IP, as finished pods do.
func (r *podRun) releaseNetwork() {
	r.mu.Lock()
	pn, fwd, hp := r.net, r.fwd, r.hports
	r.net, r.fwd, r.hports = nil, nil, nil
	uid := string(r.pod.UID)
	r.mu.Unlock()
	hp.close()
	if fwd != nil {
		fwd.Close()
	}
	if pn != nil {
		if err := pn.Close(); err != nil {
			r.logf("removing network namespace: %v", err)
		}
		r.p.cfg.IPAM.Release(uid)
	}
}

func (r *podRun) writeEtc(pod *corev1.Pod, podIP string) error {
	etc := filepath.Join(r.dir, "etc")
	files := []volume.File{
		{Path: "hosts", Data: []byte(dnsconf.Hosts(pod, podIP)), Mode: 0o644},
		{Path: "hostname", Data: []byte(dnsconf.Hostname(pod) + "\n"), Mode: 0o644},
	}
	if rc, ok := dnsconf.ResolvConf(pod); ok {
		files = append(files, volume.File{Path: "resolv.conf", Data: []byte(rc), Mode: 0o644})
	}
	return volume.WriteFiles(etc, files)
}

func (r *podRun) prepareVolume(pod *corev1.Pod, v corev1.Volume, vol volume.Volume, podIP string) error {
	switch vol.Kind {
	case volume.KindEmptyDir:
		if err := os.MkdirAll(vol.HostPath, 0o777); err != nil {
			return err
		}
		return os.Chmod(vol.HostPath, 0o777) // writable for any runAsUser, like the kubelet's
	case volume.KindHostPath:
		return prepareHostPath(vol)
	case volume.KindClaim:
		return r.prepareClaim(vol)
	case volume.KindFiles:
		files, err := volume.Files(v, r.fileSource(pod, podIP))
		if err != nil {
			return err
		}
		return volume.WriteAtomic(vol.HostPath, files)
	}
	return nil
}

func (r *podRun) fileSource(pod *corev1.Pod, podIP string) volume.Source {
	return volume.Source{
		Pod:         pod,
		Objects:     r.p.objects(),
		Addr:        podenv.Addresses{PodIP: podIP, HostIP: HostIP},
		Allocatable: r.p.cfg.Allocatable,
		Token:       r.tokens.get,
	}
}

func prepareHostPath(vol volume.Volume) error {
	p := vol.HostPath
	st, err := os.Stat(p)
	switch vol.HostPathType {
	case corev1.HostPathDirectoryOrCreate:
		return os.MkdirAll(p, 0o755)
	case corev1.HostPathFileOrCreate:
		if err == nil {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case corev1.HostPathDirectory:
		if err != nil || !st.IsDir() {
			return fmt.Errorf("hostPath %s is not a directory", p)
		}
	case corev1.HostPathFile:
		if err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("hostPath %s is not a file", p)
		}
	case corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev:
		if err != nil {
			return fmt.Errorf("hostPath %s: %w", p, err)
		}
	}
	return nil
}

// prepareClaim requires the claim to exist and makes sure its folder does;
// the folder normally comes from the node's provisioner.
func (r *podRun) prepareClaim(vol volume.Volume) error {
	ns, name, _ := strings.Cut(vol.Claim, "/")
	if _, err := r.p.objects().Claim(ns, name); err != nil {
		return fmt.Errorf("persistentVolumeClaim %s: %w", vol.Claim, err)
	}
	return os.MkdirAll(vol.HostPath, 0o777)
}

// volumeRefresh is how often API-backed volumes are re-rendered.
const volumeRefresh = 10 * time.Second

// refreshVolumes re-renders API-backed volumes, like the kubelet's sync:
// ConfigMap and Secret changes show up, and projected service-account
// tokens are renewed before they expire. Every 10 s rather than the
// kubelet's minute: on a development cluster a Secret that a controller has
// just filled (the webhook's certificate) should not hold everything up.
// An update of the pod's labels or annotations renders them at once, so its
// downward-API files follow as the kubelet's do.
func (r *podRun) refreshVolumes() {
	t := time.NewTicker(volumeRefresh)
	defer t.Stop()
	for {
		select {
		case <-r.halt.done():
			return
		case <-t.C:
		case <-r.refresh:
		}
		r.renderVolumes()
	}
}

// renderVolumes writes the API-backed volumes from the pod as the node sees
// it now, each replaced as a whole (see volume.WriteAtomic).
func (r *podRun) renderVolumes() {
	r.mu.Lock()
	pod := r.pod.DeepCopy()
	podIP := r.podIP
	vols := r.vols
	r.mu.Unlock()
	for _, v := range pod.Spec.Volumes {
		if vol := vols[v.Name]; vol.Kind == volume.KindFiles {
			files, err := volume.Files(v, r.fileSource(pod, podIP))
			if err == nil {
				err = volume.WriteAtomic(vol.HostPath, files)
			}
			if err != nil {
				r.logf("refreshing volume %s: %v", v.Name, err)
			}
		}
	}
}
