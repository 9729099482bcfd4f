package provider

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/tools/procnode/internal/dnsconf"
	"github.com/muster-dev/muster/tools/procnode/internal/image"
	"github.com/muster-dev/muster/tools/procnode/internal/podenv"
)

// runConfig is how one attempt of a container runs.
type runConfig struct {
	argv       []string
	env        []string
	workingDir string
	uid, gid   *int64
	groups     []int64
	img        *image.Image // nil: the host's programs and root
}

// hostRunConfig runs the container with the host's programs: there is no
// image config, so command and args are all there is.
func hostRunConfig(pod *corev1.Pod, c *corev1.Container, env []podenv.Var) runConfig {
	uid, gid := identity(pod, c)
	return runConfig{
		argv:       podenv.ExpandArgs(append(append([]string(nil), c.Command...), c.Args...), env),
		env:        finalEnv(env, dnsconf.Hostname(pod), pod.Spec.HostNetwork),
		workingDir: c.WorkingDir,
		uid:        uid, gid: gid,
	}
}

// imageRunConfig merges the container with its image's config by
// Kubernetes' rules. Its errors are configuration errors of the container.
func imageRunConfig(pod *corev1.Pod, c *corev1.Container, env []podenv.Var, img *image.Image) (runConfig, error) {
	u, err := imageUser(pod, c, img)
	if err != nil {
		return runConfig{}, err
	}
	rc := runConfig{
		argv:       imageArgv(c, env, img.Config.Entrypoint, img.Config.Cmd),
		env:        imageEnv(env, img.Config.Env, u.Home, dnsconf.Hostname(pod), pod.Spec.HostNetwork),
		workingDir: c.WorkingDir,
		uid:        &u.UID, gid: &u.GID, groups: u.Groups,
		img: img,
	}
	if rc.workingDir == "" {
		rc.workingDir = img.Config.WorkingDir
	}
	return rc, nil
}

// imageArgv is the command line: the container's command replaces the
// image's Entrypoint, and then the image's Cmd is not used; its args
// replace the image's Cmd. Only the pod's own strings get $(VAR) expansion.
func imageArgv(c *corev1.Container, env []podenv.Var, entrypoint, cmd []string) []string {
	args := podenv.ExpandArgs(c.Args, env)
	if len(c.Command) > 0 {
		return append(podenv.ExpandArgs(c.Command, env), args...)
	}
	argv := append([]string(nil), entrypoint...)
	if len(c.Args) > 0 {
		return append(argv, args...)
	}
	return append(argv, cmd...)
}

// imageEnv is the image's Env with the container's env (which carries the
// node's KUBERNETES_SERVICE_* and the like) replacing it by name, then
// PATH, HOME (the user's home in the image) and HOSTNAME if still unset.
func imageEnv(env []podenv.Var, imageEnv []string, home, hostname string, hostNetwork bool) []string {
	pod := map[string]string{}
	for _, v := range env {
		pod[v.Name] = v.Value
	}
	out := make([]string, 0, len(imageEnv)+len(env)+3)
	has := map[string]bool{}
	for _, kv := range imageEnv {
		k, v, _ := strings.Cut(kv, "=")
		if has[k] {
			continue
		}
		has[k] = true
		if pv, ok := pod[k]; ok {
			v = pv
		}
		out = append(out, k+"="+v)
	}
	for _, v := range env {
		if !has[v.Name] {
			has[v.Name] = true
			out = append(out, v.Name+"="+v.Value)
		}
	}
	if !has["PATH"] {
		out = append(out, "PATH="+defaultPath)
	}
	if !has["HOME"] {
		out = append(out, "HOME="+home)
	}
	if !has["HOSTNAME"] {
		out = append(out, "HOSTNAME="+podHostname(hostname, hostNetwork))
	}
	return out
}

// imageUser is who the container runs as: runAsUser/runAsGroup when set,
// else the image's User, resolved in the image's /etc/passwd and
// /etc/group. runAsNonRoot is checked as the kubelet does it, including
// its refusal of a user name it cannot check.
func imageUser(pod *corev1.Pod, c *corev1.Container, img *image.Image) (*image.User, error) {
	uid, gid := identity(pod, c)
	var u *image.User
	if uid != nil {
		u = image.LookupUID(img.Rootfs, *uid)
	} else {
		var err error
		if u, err = image.ResolveUser(img.Rootfs, img.Config.User); err != nil {
			return nil, err
		}
	}
	if gid != nil {
		u.GID = *gid
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		u.Groups = append(u.Groups, sc.SupplementalGroups...)
	}
	if runAsNonRoot(pod, c) {
		podName := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
		switch {
		case uid != nil && *uid == 0:
			return nil, fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podName, c.Name)
		case uid == nil && !numericUser(img.Config.User):
			return nil, fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", img.Config.User, podName, c.Name)
		case u.UID == 0:
			return nil, fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podName, c.Name)
		}
	}
	return u, nil
}

// numericUser reports whether an image's User names its uid by number
// (an empty User is root, uid 0).
func numericUser(user string) bool {
	u, _, _ := strings.Cut(user, ":")
	if u == "" {
		return true
	}
	_, err := strconv.ParseInt(u, 10, 64)
	return err == nil
}

func runAsNonRoot(pod *corev1.Pod, c *corev1.Container) bool {
	var v *bool
	if sc := pod.Spec.SecurityContext; sc != nil {
		v = sc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		v = sc.RunAsNonRoot
	}
	return v != nil && *v
}

func readOnlyRoot(c *corev1.Container) bool {
	sc := c.SecurityContext
	return sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
}

// defaultPullPolicy is the API server's default: Always for :latest or
// no tag, else IfNotPresent.
func defaultPullPolicy(ref string) corev1.PullPolicy {
	if strings.Contains(ref, "@") {
		return corev1.PullIfNotPresent
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if _, tag, ok := strings.Cut(last, ":"); !ok || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// podHostname is HOSTNAME's value: the pod's, or the node's with host
// networking.
func podHostname(hostname string, hostNetwork bool) string {
	if hostNetwork {
		hostname, _ = os.Hostname()
	}
	return hostname
}
